/**
 * Static pods through the kubelet's admission without an API server: a pod setting a field the
 * runtime does not honour ends Failed with `PodFeatureUnsupported`, a Warning event and nothing
 * started, on the fake CRI runtime and on the real embedded runtime (host processes), where a pod
 * asking for the agent's own uid runs. Kubelet's HandlePodAdditions → canAdmitPod → rejectPod.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { newMainKubelet } from "../../src/kubelet/kubelet.ts";
import { EmbeddedRuntimeService } from "../../src/runtime/embedded/mod.ts";
import { FakeClock, settle } from "../../src/util/clock.ts";
import * as log from "../../src/util/log.ts";
import { FakeRuntime } from "./kuberuntime/fake_runtime.ts";

function staticPod(name: string, spec: Partial<Pod["spec"]>, command: string[]): Pod {
  return {
    metadata: {
      name,
      namespace: "default",
      uid: `uid-${name}`,
      annotations: { "kubernetes.io/config.source": "file" },
    },
    spec: {
      nodeName: "node",
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 1,
      ...spec,
      containers: [{ name: "app", image: "busybox:1", command, ...spec.containers?.[0] }],
    },
  };
}

const stopSignalPod = (command: string[]) =>
  staticPod("hooked", {
    containers: [{ name: "app", lifecycle: { stopSignal: "SIGUSR1" } }],
  }, command);

const refusal = "spec.containers[0].lifecycle.stopSignal is not supported by this node";

Deno.test("TestStaticPodRejectedForUnsupportedField (fake CRI runtime)", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const runtime = new FakeRuntime(clock);
  const recorder = new FakeRecorder();
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-admission-test-" });
  const previous = log.setLogSink(() => {});
  const kubelet = await newMainKubelet({
    runtime,
    runtimeName: "containerd",
    clock,
    nodeName: "node",
    rootDir,
    recorders: [recorder],
    random: () => 0,
  });
  try {
    await kubelet.run();
    kubelet.setPods([stopSignalPod(["sleep", "600"])]);
    await kubelet.podUpdatesHandled();
    await clock.step(0);
    await settle();
    const pod = kubelet.pods().find((p) => p.metadata.name === "hooked");
    assertEquals(pod?.status.phase, "Failed");
    assertEquals(pod?.status.reason, "PodFeatureUnsupported");
    assertEquals(pod?.status.message, `Pod was rejected: ${refusal}`);
    assert(
      recorder.events.includes(`Warning PodFeatureUnsupported ${refusal}`),
      JSON.stringify(recorder.events),
    );
    assertEquals([...runtime.sandboxes.values()], []);
  } finally {
    await kubelet.stop();
    log.setLogSink(previous);
    await Deno.remove(rootDir, { recursive: true });
  }
});

async function waitForFile(path: string): Promise<void> {
  // A real host process writes it: poll the file, not the time.
  const deadline = Date.now() + 20_000;
  while (!(await Deno.stat(path).then(() => true, () => false))) {
    if (Date.now() > deadline) throw new Error(`${path} never appeared`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test({
  name: "TestStaticPodRejectedForUnsupportedField (embedded runtime)",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const rootDir = await Deno.makeTempDir({ prefix: "probelet-admission-embedded-" });
    const markers = await Deno.makeTempDir({ prefix: "probelet-admission-markers-" });
    const runtime = new EmbeddedRuntimeService({ rootDir: join(rootDir, "runtime") });
    const recorder = new FakeRecorder();
    const previous = log.setLogSink(() => {});
    const kubelet = await newMainKubelet({
      runtime,
      nodeName: "node",
      rootDir,
      recorders: [recorder],
      random: () => 0,
    });
    try {
      await kubelet.run();
      const touch = (name: string) => ["sh", "-c", `touch ${markers}/${name}; sleep 600`];
      kubelet.setPods([
        stopSignalPod(touch("hooked")),
        // A host process runs as the agent: asking for exactly that is honoured.
        staticPod("own-uid", { securityContext: { runAsUser: Deno.uid()! } }, touch("own-uid")),
      ]);
      await kubelet.podUpdatesHandled();
      await waitForFile(join(markers, "own-uid"));
      const hooked = kubelet.pods().find((p) => p.metadata.name === "hooked");
      assertEquals(hooked?.status.phase, "Failed");
      assertEquals(hooked?.status.reason, "PodFeatureUnsupported");
      assertEquals(hooked?.status.message, `Pod was rejected: ${refusal}`);
      assert(
        recorder.events.includes(`Warning PodFeatureUnsupported ${refusal}`),
        JSON.stringify(recorder.events),
      );
      // Only the admitted pod's container exists; the refused pod's command never ran.
      const containers = await runtime.listContainers();
      assertEquals(containers.map((c) => c.labels?.["io.kubernetes.pod.name"]), ["own-uid"]);
      assertEquals(await Deno.stat(join(markers, "hooked")).then(() => true, () => false), false);
    } finally {
      await kubelet.stop();
      await runtime.shutdown();
      log.setLogSink(previous);
      await Deno.remove(rootDir, { recursive: true });
      await Deno.remove(markers, { recursive: true });
    }
  },
});

Deno.test("TestStaticPodRejectedForUnsafeSysctl (fake CRI runtime)", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const runtime = new FakeRuntime(clock);
  const recorder = new FakeRecorder();
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-admission-test-" });
  const previous = log.setLogSink(() => {});
  const kubelet = await newMainKubelet({
    runtime,
    runtimeName: "containerd",
    clock,
    nodeName: "node",
    rootDir,
    recorders: [recorder],
    random: () => 0,
  });
  try {
    await kubelet.run();
    kubelet.setPods([
      staticPod("unsafe", {
        securityContext: { sysctls: [{ name: "kernel.msgmax", value: "65536" }] },
      }, ["sleep", "600"]),
      staticPod("safe", {
        securityContext: {
          sysctls: [{ name: "net.ipv4.ip_local_port_range", value: "2000 3000" }],
        },
      }, ["sleep", "600"]),
    ]);
    await kubelet.podUpdatesHandled();
    await clock.step(0);
    await settle();
    const message = `forbidden sysctl: "kernel.msgmax" not allowlisted`;
    const pod = kubelet.pods().find((p) => p.metadata.name === "unsafe");
    assertEquals(pod?.status.phase, "Failed");
    assertEquals(pod?.status.reason, "SysctlForbidden");
    assertEquals(pod?.status.message, `Pod was rejected: ${message}`);
    assert(
      recorder.events.includes(`Warning SysctlForbidden ${message}`),
      JSON.stringify(recorder.events),
    );
    // Only the safe pod got a sandbox, with its sysctl.
    const sandboxes = [...runtime.sandboxes.values()];
    assertEquals(sandboxes.map((s) => s.config.metadata.name), ["safe"]);
    assertEquals(sandboxes[0].config.linux?.sysctls, {
      "net.ipv4.ip_local_port_range": "2000 3000",
    });
  } finally {
    await kubelet.stop();
    log.setLogSink(previous);
    await Deno.remove(rootDir, { recursive: true });
  }
});
