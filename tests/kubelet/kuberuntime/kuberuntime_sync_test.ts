import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import type { ContainerID } from "../../../src/kubelet/container/container_id.ts";
import { KubeGenericRuntimeManager } from "../../../src/kubelet/kuberuntime/kuberuntime_manager.ts";
import { setTerminationGracePeriod } from "../../../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { CriError } from "../../../src/cri_client/connection.ts";
import { Backoff } from "../../../src/util/flowcontrol/backoff.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { FakeRuntime } from "./fake_runtime.ts";

class FakeResults {
  readonly cache = new Map<string, number>();
  get(id: ContainerID): number | undefined {
    return this.cache.get(id.id);
  }
}

function testPod(overrides: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { name: "web", namespace: "default", uid: "uid-1" },
    spec: {
      terminationGracePeriodSeconds: 30,
      containers: [{
        name: "app",
        image: "busybox",
        command: ["sleep", "600"],
        livenessProbe: { exec: { command: ["true"] }, terminationGracePeriodSeconds: 1 },
      }],
      ...overrides,
    },
  };
}

async function setup(pod: Pod) {
  const clock = new FakeClock(1_700_000_000_000);
  const runtime = new FakeRuntime(clock);
  const recorder = new FakeRecorder();
  const liveness = new FakeResults();
  const startup = new FakeResults();
  const logs = await Deno.makeTempDir({ prefix: "probelet-rm-test-" });
  const manager = new KubeGenericRuntimeManager({
    runtime,
    runtimeName: "fake",
    clock,
    recorder,
    lookups: { livenessManager: liveness, startupManager: startup },
    backoff: new Backoff(clock, { initialMs: 10_000, maxMs: 300_000 }),
    podLogsRootDir: logs,
    nodeName: "node",
  });
  const sync = async () => manager.syncPod(pod, await manager.getPodStatus(pod));
  const running = () =>
    runtime.containersNamed("app").filter((c) => c.state === "CONTAINER_RUNNING");
  const cleanup = () => Deno.remove(logs, { recursive: true });
  return { clock, runtime, recorder, liveness, startup, manager, sync, running, cleanup };
}

Deno.test("TestSyncPodCreatesSandboxAndContainers", async () => {
  const s = await setup(testPod());
  try {
    const result = await s.sync();
    assert(result.changed);
    assertEquals(s.runtime.calls.slice(0, 2), [
      "runPodSandbox web",
      "createContainer app attempt=0",
    ]);
    assertEquals(s.running().length, 1);
    assertEquals(s.running()[0].annotations["io.kubernetes.container.restartCount"], "0");
    assertEquals(s.recorder.events, [
      "Normal Created Container created",
      "Normal Started Container started",
    ]);
    // Nothing to do on the next sync.
    const again = await s.sync();
    assertEquals(again.changed, false);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestLivenessFailureRestartsWithCrashLoopBackOff", async (t) => {
  const s = await setup(testPod());
  try {
    await s.sync();
    const failCurrent = () => s.liveness.cache.set(s.running()[0].id, 1);

    await t.step(
      "first failure: killed with the probe's grace period (min 2 s), restarted",
      async () => {
        failCurrent();
        s.recorder.events.length = 0;
        await s.sync();
        assertEquals(s.recorder.events, [
          "Normal Killing Container app failed liveness probe, will be restarted",
          "Normal Created Container created",
          "Normal Started Container started",
        ]);
        assertEquals(s.runtime.stopTimeouts, [2000]);
        assertEquals(s.running()[0].metadata.attempt, 1);
      },
    );

    await t.step(
      "second failure 3 s later: restarted at once, back-off starts at 10 s",
      async () => {
        await s.clock.step(3000);
        failCurrent();
        await s.sync();
        assertEquals(s.running()[0].metadata.attempt, 2);
      },
    );

    let killedAt = 0;
    await t.step("third failure: killed, then CrashLoopBackOff", async () => {
      await s.clock.step(3000);
      failCurrent();
      s.recorder.events.length = 0;
      killedAt = s.clock.now();
      const result = await s.sync();
      assertEquals(s.running(), []);
      const failure = result.startResults.get("app");
      assertEquals(failure?.reason, "CrashLoopBackOff");
      assertEquals(
        failure?.message,
        "back-off 10s restarting failed container=app pod=web_default(uid-1)",
      );
      assert(s.recorder.events.includes(
        "Warning BackOff Back-off restarting failed container app in pod web_default(uid-1)",
      ));
    });

    await t.step("no start before 10 s have passed since the last exit", async () => {
      s.recorder.events.length = 0;
      for (let i = 0; i < 9; i++) {
        await s.clock.step(1000);
        await s.sync(); // resyncs in the window: no more BackOff events
      }
      await s.clock.step(999);
      const result = await s.sync();
      assertEquals(result.startResults.get("app")?.reason, "CrashLoopBackOff");
      assertEquals(s.running(), []);
      assertEquals(s.recorder.events, []);
    });

    await t.step("started once the back-off has elapsed; the next one is 20 s", async () => {
      await s.clock.step(1);
      const result = await s.sync();
      assertEquals(result.startResults.get("app"), null);
      assertEquals(s.running()[0].metadata.attempt, 3);
      assertEquals(s.clock.now() - killedAt, 10_000);
      // Exit at once: now 20 s.
      s.runtime.exit(s.running()[0].id, 1);
      s.recorder.events.length = 0;
      const r2 = await s.sync();
      assertEquals(r2.startResults.get("app")?.message?.startsWith("back-off 20s"), true);
      // A new back-off window: one BackOff event again.
      assertEquals(s.recorder.events.filter((e) => e.includes("BackOff")).length, 1);
    });
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestLivenessFailureWithRestartPolicyNever", async () => {
  const s = await setup(testPod({ restartPolicy: "Never" }));
  try {
    await s.sync();
    s.liveness.cache.set(s.running()[0].id, 1);
    s.recorder.events.length = 0;
    await s.sync();
    // As in kubelet: with nothing left to keep or start, the whole pod is killed (KillPod), and
    // KillPod's kills carry no message, so the event is the generic one.
    assertEquals(s.recorder.events, ["Normal Killing Stopping container app"]);
    assertEquals(s.running(), []);
    // The pod is done: the next sync stops the sandbox and starts nothing.
    await s.sync();
    assertEquals(s.runtime.containersNamed("app").length, 1);
    assertEquals([...s.runtime.sandboxes.values()][0].status.state, "SANDBOX_NOTREADY");
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestStartupFailureRestarts", async () => {
  const pod = testPod();
  pod.spec.containers[0].startupProbe = {
    exec: { command: ["true"] },
    terminationGracePeriodSeconds: 7,
  };
  const s = await setup(pod);
  try {
    await s.sync();
    s.startup.cache.set(s.running()[0].id, 1);
    s.recorder.events.length = 0;
    await s.sync();
    assertEquals(
      s.recorder.events[0],
      "Normal Killing Container app failed startup probe, will be restarted",
    );
    assertEquals(s.runtime.stopTimeouts, [7000]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestInitContainersRunInOrder", async () => {
  const pod = testPod({
    initContainers: [
      { name: "init1", image: "busybox", command: ["true"] },
      { name: "sidecar", image: "busybox", command: ["sleep", "600"], restartPolicy: "Always" },
    ],
  });
  const s = await setup(pod);
  try {
    await s.sync();
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("createContainer")), [
      "createContainer init1 attempt=0",
    ]);
    s.runtime.exit(s.runtime.containersNamed("init1")[0].id, 0);
    await s.sync();
    await s.sync();
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("createContainer")), [
      "createContainer init1 attempt=0",
      "createContainer sidecar attempt=0",
      "createContainer app attempt=0",
    ]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestSetTerminationGracePeriod", async (t) => {
  const pod = testPod();
  const c = pod.spec.containers[0];
  c.startupProbe = { exec: {}, terminationGracePeriodSeconds: 5 };
  await t.step("liveness kill uses the probe's value", () => {
    assertEquals(setTerminationGracePeriod(pod, c, "LivenessProbe"), 1);
  });
  await t.step("startup kill uses the startup probe's value", () => {
    assertEquals(setTerminationGracePeriod(pod, c, "StartupProbe"), 5);
  });
  await t.step("other kills use the pod's", () => {
    assertEquals(setTerminationGracePeriod(pod, c, ""), 30);
  });
  await t.step("deletion grace period wins", () => {
    const deleting = { ...pod, metadata: { ...pod.metadata, deletionGracePeriodSeconds: 0 } };
    assertEquals(setTerminationGracePeriod(deleting, c, "LivenessProbe"), 0);
  });
  await t.step("no pod value: the 2 s minimum", () => {
    const bare = testPod({ terminationGracePeriodSeconds: undefined });
    assertEquals(setTerminationGracePeriod(bare, bare.spec.containers[0], "LivenessProbe"), 2);
  });
});

Deno.test("TestGetPodStatusFailsOnTransientErrors", async (t) => {
  const s = await setup(testPod());
  try {
    await s.sync();
    assertEquals(s.runtime.sandboxes.size, 1);
    assertEquals(s.running().length, 1);
    const transient = (code: number) => Object.assign(new Error(`code ${code}`), { code });
    for (
      const [name, kind, code] of [
        ["PodSandboxStatus DEADLINE_EXCEEDED", "sandbox", 4],
        ["ContainerStatus UNAVAILABLE", "c", 14],
      ] as const
    ) {
      await t.step(`${name}: the sync fails, nothing is created`, async () => {
        s.runtime.statusFailure = (id) => id.startsWith(kind) ? transient(code) : undefined;
        const calls = s.runtime.calls.length;
        let failed = false;
        await s.sync().catch(() => failed = true);
        assert(failed, "getPodStatus should reject");
        assertEquals(s.runtime.calls.slice(calls), []);
        assertEquals(s.runtime.sandboxes.size, 1);
        assertEquals(s.runtime.containersNamed("app").length, 1);
        s.runtime.statusFailure = undefined;
      });
    }
    await t.step("NotFound (removed since the listing) is skipped", async () => {
      s.runtime.statusFailure = (id) =>
        id.startsWith("c") ? Object.assign(new Error("gone"), { code: 5 }) : undefined;
      const status = await s.manager.getPodStatus(testPod());
      assertEquals(status.containerStatuses, []);
      assertEquals(status.sandboxStatuses.length, 1);
      s.runtime.statusFailure = undefined;
    });
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestStartFailureEventCarriesStatusMessage", async () => {
  const s = await setup(testPod());
  try {
    s.runtime.createContainer = () =>
      Promise.reject(
        new CriError(2, "failed to create containerd container: no such image", {
          endpoint: "unix:///x",
          method: "/runtime.v1.RuntimeService/CreateContainer",
        }),
      );
    const result = await s.sync();
    assertEquals(result.startResults.get("app"), {
      reason: "CreateContainerError",
      message: "failed to create containerd container: no such image",
    });
    assert(
      s.recorder.events.includes(
        "Warning Failed Error: failed to create containerd container: no such image",
      ),
      JSON.stringify(s.recorder.events),
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestBackOffContinuesAfterAgentRestart", async () => {
  const s = await setup(testPod());
  try {
    await s.sync();
    // The container crashed for the fourth time (three restarts before this instance).
    const instance = s.running()[0];
    instance.annotations["io.kubernetes.container.restartCount"] = "3";
    s.runtime.exit(instance.id, 1);
    const finishedAt = s.clock.now();
    await s.clock.step(5000);
    // A new agent: a new manager with an empty back-off table, on the same runtime.
    const logs = await Deno.makeTempDir({ prefix: "probelet-rm-test-" });
    const restarted = new KubeGenericRuntimeManager({
      runtime: s.runtime,
      runtimeName: "fake",
      clock: s.clock,
      recorder: s.recorder,
      lookups: { livenessManager: s.liveness, startupManager: s.startup },
      backoff: new Backoff(s.clock, { initialMs: 10_000, maxMs: 300_000 }),
      podLogsRootDir: logs,
      nodeName: "node",
    });
    await Deno.remove(logs, { recursive: true });
    const pod = testPod();
    const result = await restarted.syncPod(pod, await restarted.getPodStatus(pod));
    // Three steps from 10 s: 40 s from the last exit, not a restart at once.
    assertEquals(result.startResults.get("app"), {
      reason: "CrashLoopBackOff",
      message: "back-off 40s restarting failed container=app pod=web_default(uid-1)",
    });
    assertEquals(result.retryAt, finishedAt + 40_000);
    assertEquals(s.running(), []);
  } finally {
    await s.cleanup();
  }
});
