/**
 * The kubelet in API-server mode on a fake runtime and the FakeClientset (the fake clock drives
 * time): admission, mirror pods, graceful and forced deletion, and deletions seen at start-up.
 * Kubelet's kubelet_test.go covers these through HandlePodAdditions/HandlePodUpdates with a fake
 * pod worker; here the whole path runs, from the watch to the runtime and back to the API.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Node, Pod } from "../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { newMainKubelet } from "../../src/kubelet/kubelet.ts";
import { cgroupV1UnlimitedMemoryBytes } from "../../src/kubelet/cm/helpers_linux.ts";
import { FakeClock, settle } from "../../src/util/clock.ts";
import * as log from "../../src/util/log.ts";
import { FakeClientset } from "../testing/fake_clientset.ts";
import { FakeRuntime } from "./kuberuntime/fake_runtime.ts";

const nodeName = "node";

function node(): Node & { kind: string } {
  return {
    kind: "Node",
    apiVersion: "v1",
    metadata: { name: nodeName, uid: "node-uid", labels: { "probelet.io/agent": "true" } },
    spec: { taints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }] },
    status: { allocatable: { pods: "110" } },
  };
}

function apiPod(name: string, extra: Partial<Pod["spec"]> = {}): Pod & { kind: string } {
  return {
    kind: "Pod",
    apiVersion: "v1",
    metadata: { name, namespace: "default", uid: `uid-${name}`, resourceVersion: "1" },
    spec: {
      nodeName,
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      tolerations: [{ key: "probelet.io/agent", operator: "Exists" }],
      containers: [{ name: "app", image: "busybox", command: ["sleep", "600"] }],
      ...extra,
    },
    status: { phase: "Pending" },
  };
}

let clockForUntil: FakeClock;
async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`condition never held: ${what}`);
    await clockForUntil.step(0);
    await settle();
  }
}

async function setup(
  objects: (Pod | Node)[],
  prepare?: (runtime: FakeRuntime) => Promise<void>,
  options: { runtimeName?: string } = {},
) {
  const clock = new FakeClock(Date.parse("2026-11-23T05:00:00Z"));
  clockForUntil = clock;
  const runtime = new FakeRuntime(clock);
  await prepare?.(runtime);
  // deno-lint-ignore no-explicit-any
  const client = new FakeClientset(...(objects as any[]));
  // Like the API server (and unlike client-go's tracker), a created pod gets a UID and a
  // resourceVersion; the reflector needs the latter, mirror pods need the former.
  let seq = 0;
  client.prependReactor("create", "pods", (action) => {
    const obj = structuredClone(action.object!);
    obj.metadata.uid = `created-${++seq}`;
    obj.metadata.resourceVersion = String(100 + seq);
    return { handled: true, ret: client.tracker.create("pods", action.namespace, obj) };
  });
  const recorder = new FakeRecorder();
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-kubelet-api-test-" });
  const previous = log.setLogSink(() => {});
  const kubelet = await newMainKubelet({
    runtime,
    runtimeName: options.runtimeName ?? "embedded",
    clock,
    nodeName,
    rootDir,
    recorders: [recorder],
    random: () => 0,
    kubeClient: client,
  });
  await kubelet.run();
  const apiGet = (name: string) =>
    client.coreV1.pods("default").get(name).then((p) => p, () => undefined);
  const cleanup = async () => {
    await kubelet.stop();
    log.setLogSink(previous);
    await Deno.remove(rootDir, { recursive: true });
  };
  return { clock, runtime, client, recorder, kubelet, apiGet, cleanup };
}

const sandboxesOf = (runtime: FakeRuntime, name: string) =>
  [...runtime.sandboxes.values()].filter((s) => s.config.metadata.name === name);

// A pod's sandbox and running "app" container left on the runtime by an earlier run of this node's
// agent (kubelet's labels plus the node label).
async function runOnRuntime(
  runtime: FakeRuntime,
  name: string,
): Promise<{ sandbox: string; container: string }> {
  const labels = {
    "io.kubernetes.pod.name": name,
    "io.kubernetes.pod.namespace": "default",
    "io.kubernetes.pod.uid": `uid-${name}`,
    "io.probelet.node": nodeName,
  };
  const sandbox = await runtime.runPodSandbox({
    metadata: { name, namespace: "default", uid: `uid-${name}`, attempt: 0 },
    labels,
  });
  const container = await runtime.createContainer(sandbox, {
    metadata: { name: "app", attempt: 0 },
    image: { image: "busybox" },
    labels: { ...labels, "io.kubernetes.container.name": "app" },
  });
  await runtime.startContainer(container);
  return { sandbox, container };
}

Deno.test("API pods run, their status is patched; a wildcard toleration is rejected and never runs", async () => {
  const s = await setup([
    node(),
    apiPod("web"),
    apiPod("daemon", { tolerations: [{ operator: "Exists" }] }),
  ]);
  try {
    await until(
      "web Running in the API",
      async () => (await s.apiGet("web"))?.status?.phase === "Running",
    );
    const daemon = await s.apiGet("daemon");
    await until(
      "daemon Failed in the API",
      async () => (await s.apiGet("daemon"))?.status?.phase === "Failed",
    );
    const rejected = (await s.apiGet("daemon"))!;
    assertEquals(rejected.status?.reason, "AgentTaintNotTolerated");
    assert(
      rejected.status?.message?.startsWith("Pod was rejected: "),
      String(daemon?.status?.message),
    );
    assertEquals(sandboxesOf(s.runtime, "daemon"), []);
    assert(
      s.recorder.events.some((e) => e.startsWith("Warning AgentTaintNotTolerated ")),
      JSON.stringify(s.recorder.events),
    );
    // Every status write was a patch of the status subresource, never a PUT.
    assertEquals(
      s.client.actions.filter((a) => a.resource === "pods" && a.verb === "update"),
      [],
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("a pod setting a field the runtime does not honour ends Failed with PodFeatureUnsupported, an event, and nothing started (containerd and embedded)", async (t) => {
  for (const runtimeName of ["containerd", "embedded"]) {
    await t.step(runtimeName, async () => {
      const s = await setup(
        [
          node(),
          // A claim volume and SELinux options: refused on both runtimes.
          apiPod("tokened", {
            volumes: [{ name: "data", persistentVolumeClaim: { claimName: "c" } }],
            securityContext: { seLinuxOptions: { level: "s0" } },
          }),
          apiPod("plain", {
            dnsPolicy: "ClusterFirst",
            securityContext: {},
            enableServiceLinks: false,
            schedulerName: "default-scheduler",
          }),
          // A DaemonSet's pod: on the embedded runtime the agent-taint rule (predicate handler)
          // refuses it first, as kubelet runs the predicate handler before the feature handlers.
          apiPod("daemon", {
            tolerations: [{ operator: "Exists" }],
            volumes: [{ name: "data", persistentVolumeClaim: { claimName: "c" } }],
          }),
        ],
        undefined,
        { runtimeName },
      );
      try {
        await until(
          "tokened Failed in the API",
          async () => (await s.apiGet("tokened"))?.status?.phase === "Failed",
        );
        const rejected = (await s.apiGet("tokened"))!;
        assertEquals(rejected.status?.reason, "PodFeatureUnsupported");
        assertEquals(
          rejected.status?.message,
          "Pod was rejected: spec.volumes[0].persistentVolumeClaim is not supported by this node; " +
            "spec.securityContext.seLinuxOptions is not supported by this node",
        );
        assert(
          s.recorder.events.includes(
            "Warning PodFeatureUnsupported spec.volumes[0].persistentVolumeClaim is not supported " +
              "by this node; spec.securityContext.seLinuxOptions is not supported by this node",
          ),
          JSON.stringify(s.recorder.events),
        );
        // The ordinary pod beside it runs; the refused one never got a sandbox.
        await until(
          "plain Running in the API",
          async () => (await s.apiGet("plain"))?.status?.phase === "Running",
        );
        assertEquals(sandboxesOf(s.runtime, "tokened"), []);
        await until(
          "daemon Failed in the API",
          async () => (await s.apiGet("daemon"))?.status?.phase === "Failed",
        );
        assertEquals(
          (await s.apiGet("daemon"))?.status?.reason,
          runtimeName === "embedded" ? "AgentTaintNotTolerated" : "PodFeatureUnsupported",
        );
        assertEquals(sandboxesOf(s.runtime, "daemon"), []);
        assertEquals(
          s.kubelet.pods().find((p) => p.metadata.name === "tokened")?.status.phase,
          "Failed",
        );
      } finally {
        await s.cleanup();
      }
    });
  }
});

Deno.test("a static pod gets a Node-owned mirror, which is never run and carries its status", async () => {
  const s = await setup([node()]);
  try {
    const staticPod: Pod = {
      metadata: {
        name: `web-${nodeName}`,
        namespace: "default",
        uid: "static-uid",
        annotations: { "kubernetes.io/config.hash": "static-uid" },
      },
      spec: { nodeName, containers: [{ name: "app", image: "busybox", command: ["sleep", "1"] }] },
      status: { phase: "Pending" },
    };
    s.kubelet.setPods([staticPod]);
    await until(
      "mirror Running",
      async () => (await s.apiGet(`web-${nodeName}`))?.status?.phase === "Running",
    );
    const mirror = (await s.apiGet(`web-${nodeName}`))!;
    assertEquals(mirror.metadata.annotations?.["kubernetes.io/config.mirror"], "static-uid");
    assertEquals(mirror.metadata.ownerReferences, [{
      apiVersion: "v1",
      kind: "Node",
      name: nodeName,
      uid: "node-uid",
      controller: true,
    }]);
    // The mirror came back through the watch; only the static pod runs.
    await until(
      "mirror known",
      () => s.kubelet.podManager.getMirrorPodByPod(staticPod) !== undefined,
    );
    assertEquals(sandboxesOf(s.runtime, `web-${nodeName}`).length, 1);
    // Deleted: recreated at the next sync.
    await s.client.coreV1.pods("default").delete(`web-${nodeName}`);
    await until("mirror recreated", async () => (await s.apiGet(`web-${nodeName}`)) !== undefined);
    assertEquals(sandboxesOf(s.runtime, `web-${nodeName}`).length, 1);
    // The static pod gone: its mirror is an orphan and is deleted.
    // Housekeeping (every 2 s) deletes it once the static pod's teardown (volumes included)
    // has finished: a teardown still running at one housekeeping waits for the next.
    s.kubelet.setPods([]);
    await until("orphaned mirror deleted", async () => {
      await s.clock.step(2_000);
      return (await s.apiGet(`web-${nodeName}`)) === undefined;
    });
  } finally {
    await s.cleanup();
  }
});

Deno.test("graceful deletion kills with the deletion's grace, patches a terminal phase, then deletes; a forced removal kills with the pod's grace", async () => {
  const s = await setup([node(), apiPod("graceful"), apiPod("forced")]);
  try {
    await until(
      "both running",
      async () =>
        (await s.apiGet("graceful"))?.status?.phase === "Running" &&
        (await s.apiGet("forced"))?.status?.phase === "Running",
    );
    s.client.clearActions();
    const lines: string[] = [];
    log.setLogSink((line) => lines.push(line));
    const graceful = (await s.apiGet("graceful"))!;
    graceful.metadata.deletionTimestamp = "2026-11-23T05:00:10Z";
    graceful.metadata.deletionGracePeriodSeconds = 3;
    await s.client.coreV1.pods("default").update(graceful);
    await until("graceful deleted", async () => (await s.apiGet("graceful")) === undefined);
    assertEquals(s.runtime.stopTimeouts.at(-1), 3_000);
    const writes = s.client.actions.filter((a) =>
      a.name === "graceful" && (a.verb === "patch" || a.verb === "delete")
    );
    const terminal = writes.find((a) => a.verb === "patch" && /"phase":"Failed"/.test(a.patch!));
    assert(terminal, JSON.stringify(writes.map((w) => w.patch)));
    // The pod IP from before the sandbox stopped stays (preserveDataFromBeforeStopping).
    const cleared = writes.filter((w) => /"podIPs?":null/.test(w.patch ?? ""));
    assertEquals(cleared.map((w) => w.patch), []);
    const del = writes.at(-1)!;
    assertEquals(del.verb, "delete");
    assertEquals(del.deleteOptions, {
      gracePeriodSeconds: 0,
      preconditions: { uid: "uid-graceful" },
    });
    assert(writes.indexOf(terminal) < writes.indexOf(del));
    // The final status already carries the terminal phase (SyncTerminatingPod generates it with
    // podIsTerminal): the status manager never has to force it.
    assertEquals(lines.filter((l) => l.includes("programmer error")), []);
    log.setLogSink(() => {});

    // `kubectl delete --force --grace-period=0`: the object is gone at once (REMOVE).
    await s.client.coreV1.pods("default").delete("forced");
    await until("forced torn down", () => sandboxesOf(s.runtime, "forced").length === 0);
    assertEquals(s.runtime.stopTimeouts.at(-1), 30_000);
  } finally {
    await s.cleanup();
  }
});

Deno.test("a pod deleted while the agent was away is killed, then deleted", async () => {
  const deleted = apiPod("leftover");
  deleted.metadata.deletionTimestamp = "2026-11-23T04:59:00Z";
  deleted.metadata.deletionGracePeriodSeconds = 5;
  deleted.status = { phase: "Running" };
  const s = await setup([node(), deleted], async (runtime) => {
    await runOnRuntime(runtime, "leftover");
  });
  try {
    await until("leftover deleted", async () => (await s.apiGet("leftover")) === undefined);
    assertEquals(s.runtime.stopTimeouts, [5_000]);
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("runPodSandbox")).length, 1);
  } finally {
    await s.cleanup();
  }
});

Deno.test("a readiness gate set in the API makes the pod Ready, and the gate condition is kept", async () => {
  const gated = apiPod("gated", { readinessGates: [{ conditionType: "example.com/gate" }] });
  const s = await setup([node(), gated]);
  try {
    const ready = async () =>
      (await s.apiGet("gated"))?.status?.conditions?.find((c) => c.type === "Ready");
    await until(
      "Ready False for the gate",
      async () => (await ready())?.reason === "ReadinessGatesNotReady",
    );
    // A controller sets the gate's condition.
    await s.client.coreV1.pods("default").patchStatus(
      "gated",
      "application/strategic-merge-patch+json",
      JSON.stringify({ status: { conditions: [{ type: "example.com/gate", status: "True" }] } }),
    );
    await until("Ready True", async () => (await ready())?.status === "True");
    const conditions = (await s.apiGet("gated"))!.status!.conditions!;
    assertEquals(conditions.find((c) => c.type === "example.com/gate")?.status, "True");
  } finally {
    await s.cleanup();
  }
});

Deno.test("without --node-ip, pods report the Node's InternalIP as hostIP (getHostIPsAnyWay)", async () => {
  const withAddresses = node();
  withAddresses.status!.addresses = [
    { type: "InternalIP", address: "192.168.7.9" },
    { type: "Hostname", address: nodeName },
  ];
  const s = await setup([withAddresses, apiPod("web"), apiPod("host", { hostNetwork: true })]);
  try {
    for (const name of ["web", "host"]) {
      await until(
        `${name} Running in the API`,
        async () => (await s.apiGet(name))?.status?.phase === "Running",
      );
    }
    for (const name of ["web", "host"]) {
      const status = (await s.apiGet(name))!.status!;
      assertEquals([status.hostIP, status.hostIPs], ["192.168.7.9", [{ ip: "192.168.7.9" }]]);
    }
    // A host-network pod's IP is the node's, too.
    assertEquals((await s.apiGet("host"))!.status!.podIPs, [{ ip: "192.168.7.9" }]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("a pod already Succeeded in the API when the agent starts keeps its exited container and stopped sandbox until it is deleted", async () => {
  const done = apiPod("done", { restartPolicy: "Never" });
  done.status = { phase: "Succeeded" };
  let sandbox = "";
  const s = await setup([node(), done], async (runtime) => {
    const run = await runOnRuntime(runtime, "done");
    sandbox = run.sandbox;
    const c = run.container;
    runtime.exit(c, 0);
    await runtime.stopPodSandbox(sandbox);
  });
  try {
    // Housekeeping (orphan clean-up) and container GC both run within two minutes.
    for (let i = 0; i < 130; i++) await s.clock.step(1000);
    await settle();
    // Kubelet's pod worker knows the terminal pod (ShouldPodContentBeRemoved is false until it is
    // deleted): its remains stay, for its logs and statuses, as they do for a pod that ended
    // while the agent ran. Nothing of it is started again.
    assertEquals(sandboxesOf(s.runtime, "done").length, 1);
    assertEquals(s.runtime.containersNamed("app").map((c) => c.state), ["CONTAINER_EXITED"]);
    // Only the set-up's own sandbox and start.
    assertEquals(
      s.runtime.calls.filter((c) => /^(runPodSandbox|startContainer)/.test(c)).length,
      2,
    );
    assertEquals((await s.apiGet("done"))?.status?.phase, "Succeeded");
    await s.client.coreV1.pods("default").delete("done");
    // Deleted: the next housekeeping removes them as an orphan's.
    for (let i = 0; i < 5 && sandboxesOf(s.runtime, "done").length > 0; i++) {
      await s.clock.step(1000);
      await settle();
    }
    assertEquals(sandboxesOf(s.runtime, "done").length, 0);
    assertEquals(s.runtime.containersNamed("app"), []);
  } finally {
    await s.cleanup();
  }
});

Deno.test("a pod already Failed in the API whose container still runs is stopped, not removed, then removed when deleted", async () => {
  const failed = apiPod("gone-bad");
  failed.status = { phase: "Failed", reason: "NodeLost" };
  const s = await setup([node(), failed], async (runtime) => {
    await runOnRuntime(runtime, "gone-bad");
  });
  try {
    for (let i = 0; i < 130; i++) await s.clock.step(1000);
    await settle();
    assertEquals(s.runtime.containersNamed("app").map((c) => c.state), ["CONTAINER_EXITED"]);
    assertEquals(sandboxesOf(s.runtime, "gone-bad").map((b) => b.status.state), [
      "SANDBOX_NOTREADY",
    ]);
    await s.client.coreV1.pods("default").delete("gone-bad");
    for (let i = 0; i < 5 && sandboxesOf(s.runtime, "gone-bad").length > 0; i++) {
      await s.clock.step(1000);
      await settle();
    }
    assertEquals(sandboxesOf(s.runtime, "gone-bad").length, 0);
  } finally {
    await s.cleanup();
  }
});

// The status patches sent for `name` since the actions were last cleared, decoded.
function statusPatches(client: FakeClientset, name: string) {
  return client.actions
    .filter((a) => a.name === name && a.verb === "patch" && a.subresource === "status")
    .map((a) => JSON.parse(a.patch!) as { status?: Pod["status"] });
}

Deno.test("TestJobPodStatusSequence", async () => {
  // kubelet v1.36.3: when a Job's container completes, the status manager sends the container
  // terminated while the phase is still Running (the terminal phase is held back until
  // SyncTerminatingPod has stopped the pod), then phase Succeeded.
  const s = await setup([node(), apiPod("job", { restartPolicy: "Never" })]);
  try {
    await until("running", async () => (await s.apiGet("job"))?.status?.phase === "Running");
    s.client.clearActions();
    s.runtime.exit(s.runtime.containersNamed("app")[0].id, 0);
    // The PLEG notices within its 1 s relist period.
    for (let i = 0; i < 30 && (await s.apiGet("job"))?.status?.phase !== "Succeeded"; i++) {
      await s.clock.step(1000);
      await settle();
    }
    assertEquals((await s.apiGet("job"))?.status?.phase, "Succeeded");
    const patches = statusPatches(s.client, "job");
    const phases = patches.map((p) => p.status?.phase);
    const terminated = patches.map((p) =>
      p.status?.containerStatuses?.[0]?.state?.terminated?.reason
    );
    assertEquals(phases.at(-1), "Succeeded");
    // The final status is generated once the sandbox is stopped: not ready to start containers.
    const final = (await s.apiGet("job"))!.status!;
    assertEquals(
      final.conditions?.find((c) => c.type === "PodReadyToStartContainers")?.status,
      "False",
      JSON.stringify(final.conditions),
    );
    assertEquals(
      [phases[0], terminated[0]],
      [undefined, "Completed"],
      `first patch: ${JSON.stringify(patches[0])}`,
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestGracefulDeletePostsTerminalStatusOnce", async () => {
  // kubelet v1.36.3: the final status of a gracefully deleted pod (containers terminated, phase
  // terminal) goes out in one update once SyncTerminatingPod completed; then the pod is deleted.
  const s = await setup([node(), apiPod("graceful")]);
  try {
    await until("running", async () => (await s.apiGet("graceful"))?.status?.phase === "Running");
    s.client.clearActions();
    const pod = (await s.apiGet("graceful"))!;
    pod.metadata.deletionTimestamp = "2026-11-23T05:00:10Z";
    pod.metadata.deletionGracePeriodSeconds = 3;
    // kube-apiserver v1.36 bumps the generation when it sets the deletion timestamp.
    pod.metadata.generation = 2;
    await s.client.coreV1.pods("default").update(pod);
    await until("deleted", async () => (await s.apiGet("graceful")) === undefined);
    const patches = statusPatches(s.client, "graceful");
    assertEquals(patches.length, 1, JSON.stringify(patches));
    assertEquals(patches[0].status?.phase, "Failed");
    // The final status observed the deletion's generation, in the status and each condition.
    assertEquals(patches[0].status?.observedGeneration, 2, JSON.stringify(patches[0]));
    assert(patches[0].status?.containerStatuses?.[0]?.state?.terminated, "container terminated");
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestPodLevelResourcesOnceTheAPIShowsRunning", async () => {
  // kubelet v1.36.3 reads the pod cgroup once the API's copy of the pod is Running: a BestEffort
  // pod then shows cgroup v1's unlimited memory number as its limit (nothing on cgroup v2).
  const s = await setup([node(), apiPod("be")]);
  try {
    await until("running", async () => (await s.apiGet("be"))?.status?.phase === "Running");
    assertEquals((await s.apiGet("be"))?.status?.resources, {});
    // The next resync (within 90 s) generates the status from the API's Running copy.
    for (let i = 0; i < 95; i++) {
      await s.clock.step(1000);
      await settle();
    }
    const unlimited = cgroupV1UnlimitedMemoryBytes();
    assertEquals(
      (await s.apiGet("be"))?.status?.resources,
      unlimited === undefined ? {} : { limits: { memory: `${unlimited / 1024n}Ki` } },
    );
  } finally {
    await s.cleanup();
  }
});
