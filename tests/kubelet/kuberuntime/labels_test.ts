/**
 * Labels and annotations written on sandboxes and containers read back to the same values, as
 * kubelet's labels_test.go (TestContainerLabels, TestContainerAnnotations, TestPodLabels,
 * TestPodAnnotations).
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  getPodSandboxInfoFromLabels,
  newContainerAnnotations,
  newContainerLabels,
  newPodAnnotations,
  newPodLabels,
} from "../../../src/kubelet/kuberuntime/labels.ts";
import * as log from "../../../src/util/log.ts";

function pod(): Pod {
  return {
    metadata: {
      name: "web",
      namespace: "default",
      uid: "uid-1",
      labels: { app: "web" },
      annotations: { note: "x" },
      deletionGracePeriodSeconds: 5,
    },
    spec: {
      terminationGracePeriodSeconds: 30,
      initContainers: [{ name: "setup" }],
      containers: [{
        name: "app",
        ports: [{ containerPort: 80, protocol: "TCP" }],
        terminationMessagePath: "/tmp/msg",
      }],
    },
  };
}

Deno.test("TestContainerLabels", () => {
  const labels = newContainerLabels(pod().spec.containers[0], pod(), { nodeName: "node-a" });
  assertEquals(labels, {
    "io.kubernetes.pod.name": "web",
    "io.kubernetes.pod.namespace": "default",
    "io.kubernetes.pod.uid": "uid-1",
    "io.kubernetes.container.name": "app",
    "io.probelet.node": "node-a",
  });
  assertEquals(getContainerInfoFromLabels(labels), {
    containerName: "app",
    podName: "web",
    podNamespace: "default",
    podUID: "uid-1",
  });
});

Deno.test("TestContainerAnnotations", () => {
  const p = pod();
  const annotations = newContainerAnnotations(p.spec.containers[0], p, {
    restartCount: 3,
    hash: "1a2b3c4d",
  });
  assertEquals(
    annotations["io.kubernetes.container.ports"],
    '[{"containerPort":80,"protocol":"TCP"}]',
  );
  assertEquals(getContainerInfoFromAnnotations(annotations), {
    hash: "1a2b3c4d",
    restartCount: 3,
    podDeletionGracePeriod: 5,
    podTerminationGracePeriod: 30,
    terminationMessagePath: "/tmp/msg",
    terminationMessagePolicy: "File",
    containerType: "container",
  });
  const init = newContainerAnnotations(p.spec.initContainers![0], p, {
    restartCount: 0,
    hash: "0",
  });
  assertEquals(init["io.kubernetes.container.type"], "init");
  assertEquals(init["io.kubernetes.container.terminationMessagePath"], "/dev/termination-log");

  // Without a deletion grace period the annotation is absent and reads back as absent.
  delete p.metadata.deletionGracePeriodSeconds;
  const plain = newContainerAnnotations(p.spec.containers[0], p, { restartCount: 0, hash: "0" });
  assertEquals(plain["io.kubernetes.pod.deletionGracePeriod"], undefined);
  assertEquals(getContainerInfoFromAnnotations(plain).podDeletionGracePeriod, undefined);
});

Deno.test("TestContainerAnnotations: a bad restart count reads as 0 and is logged", () => {
  const lines: string[] = [];
  const previous = log.setLogSink((l) => lines.push(l));
  try {
    const info = getContainerInfoFromAnnotations({ "io.kubernetes.container.restartCount": "x1" });
    assertEquals(info.restartCount, 0);
    assertEquals(lines.length, 1);
    assertEquals(lines[0].includes("io.kubernetes.container.restartCount"), true);
  } finally {
    log.setLogSink(previous);
  }
});

Deno.test("TestPodLabels", () => {
  const labels = newPodLabels(pod(), { nodeName: "node-a" });
  assertEquals(getPodSandboxInfoFromLabels(labels), {
    labels: { app: "web" },
    podName: "web",
    podNamespace: "default",
    podUID: "uid-1",
    nodeName: "node-a",
  });
});

Deno.test("TestPodAnnotations", () => {
  assertEquals(newPodAnnotations(pod()), { note: "x" });
});
