import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { type Kubelet, type KubeletOptions, newMainKubelet } from "../../src/kubelet/kubelet.ts";
import { probeletNodeLabel } from "../../src/kubelet/kuberuntime/labels.ts";
import { ExitError } from "../../src/util/exec/errors.ts";
import { FakeClock, settle } from "../../src/util/clock.ts";
import * as log from "../../src/util/log.ts";
import { FakeRuntime } from "./kuberuntime/fake_runtime.ts";

function probedPod(options: { restartPolicy?: "Always" | "OnFailure" | "Never" } = {}): Pod {
  return {
    metadata: { name: "web", namespace: "default", uid: "uid-web" },
    spec: {
      restartPolicy: options.restartPolicy ?? "Always",
      terminationGracePeriodSeconds: 30,
      containers: [{
        name: "app",
        image: "busybox",
        command: ["sleep", "600"],
        livenessProbe: {
          exec: { command: ["live"] },
          periodSeconds: 1,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 2,
        },
        readinessProbe: {
          exec: { command: ["ready"] },
          periodSeconds: 1,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 1,
        },
      }],
    },
  };
}

// Lets the agent's promise chains (and the small real I/O they do) finish without moving the fake
// time: fires timers already due (`step(0)`) and polls the condition between event-loop turns.
let clockForUntil: FakeClock;
async function until(what: string, cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition never held: ${what}`);
    await clockForUntil.step(0);
    await settle();
  }
}

// As `until`, moving the fake time one PLEG relist period (1 s) at a time: the pod worker's syncs
// after a terminal SyncPod each wait for the next relist (kubelet's podCache.GetNewerThan).
async function untilRelisted(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 10 && !cond(); i++) {
    await settle();
    if (cond()) return;
    await clockForUntil.step(1000);
    await settle();
  }
  await until(what, cond);
}

async function setup(
  prepare?: (runtime: FakeRuntime) => Promise<void>,
  overrides: Partial<KubeletOptions> = {},
) {
  const clock = new FakeClock(1_700_000_000_000);
  clockForUntil = clock;
  const runtime = new FakeRuntime(clock);
  await prepare?.(runtime);
  const recorder = new FakeRecorder();
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-kubelet-test-" });
  const previous = log.setLogSink(() => {});
  const kubelet = await newMainKubelet({
    runtime,
    clock,
    nodeName: "node",
    rootDir,
    recorders: [recorder],
    random: () => 0,
    syncFrequencyMs: 1000,
    ...overrides,
  });
  await kubelet.run();
  const status = () => kubelet.getPod("web")?.status;
  const app = () => status()?.containerStatuses?.find((c) => c.name === "app");
  // The runtime's ID of the app's current container (without the `<runtime>://` prefix).
  const appID = () => app()!.containerID!.replace(/^[a-z]+:\/\//, "");
  const cleanup = async () => {
    await kubelet.stop();
    log.setLogSink(previous);
    await Deno.remove(rootDir, { recursive: true });
  };
  return { clock, runtime, recorder, kubelet, status, app, appID, cleanup, rootDir };
}

Deno.test("TestSyncLoopProbeUpdates", async (t) => {
  const s = await setup();
  try {
    await t.step(
      "a new pod is created and becomes Ready through the readiness update",
      async () => {
        s.kubelet.setPods([probedPod()]);
        await until("running", () => s.app()?.state?.running !== undefined);
        assertEquals(s.status()?.phase, "Running");
        await until("ready", () => s.app()?.ready === true);
        assertEquals(s.status()?.conditions?.find((c) => c.type === "Ready")?.status, "True");
        assertEquals(s.app()?.started, true);
      },
    );

    await t.step(
      "liveness failing past its threshold kills and restarts the container",
      async () => {
        s.runtime.execSyncFunc = (_id, cmd) =>
          cmd[0] === "live" ? Promise.reject(new ExitError(1)) : Promise.resolve({
            stdout: new Uint8Array(),
            stderr: new Uint8Array(),
          });
        await s.clock.step(1000); // failure 1 of 2: nothing happens yet
        await until(
          "one failure",
          () => s.recorder.events.some((e) => e.includes("Liveness probe failed")),
        );
        assert(
          !s.recorder.events.some((e) => e.includes("Killing")),
        );
        await s.clock.step(1000); // failure 2: Failure result → sync → kill
        await until(
          "Killing",
          () =>
            s.recorder.events.includes(
              "Normal Killing Container app failed liveness probe, will be restarted",
            ),
        );
        await until(
          "restarted",
          () => s.app()?.restartCount === 1 && s.app()?.state?.running !== undefined,
        );
        assertEquals(s.app()?.lastState?.terminated?.exitCode, 137);
      },
    );

    await t.step("readiness failure: not Ready, never restarted", async () => {
      s.runtime.execSyncFunc = (_id, cmd) =>
        cmd[0] === "ready" ? Promise.reject(new ExitError(1)) : Promise.resolve({
          stdout: new Uint8Array(),
          stderr: new Uint8Array(),
        });
      const kills = s.recorder.events.filter((e) => e.includes("Killing")).length;
      for (let i = 0; i < 5; i++) await s.clock.step(1000);
      await until("not ready", () => s.app()?.ready === false);
      assertEquals(s.status()?.conditions?.find((c) => c.type === "Ready")?.status, "False");
      assertEquals(s.recorder.events.filter((e) => e.includes("Killing")).length, kills);
      assertEquals(s.app()?.restartCount, 1);
    });

    await t.step("a changed manifest (new UID) replaces the pod: old one down first", async () => {
      const changed = probedPod();
      changed.metadata.uid = "uid-web-2";
      changed.spec.containers[0].command = ["sleep", "700"];
      s.kubelet.setPods([changed]);
      await until(
        "replaced",
        () =>
          s.kubelet.getPod("web")?.metadata.uid === "uid-web-2" &&
          s.app()?.state?.running !== undefined,
      );
      await until("old pod gone", () => s.kubelet.pods().length === 1);
      assertEquals(s.runtime.sandboxes.size, 1);
      assertEquals(s.app()?.restartCount, 0);
      const creates = s.runtime.calls.filter((c) => c.startsWith("runPodSandbox"));
      assertEquals(creates.length, 2);
      // The old sandbox was removed before the new one was created.
      const removed = s.runtime.calls.findIndex((c) => c.startsWith("removePodSandbox"));
      const created = s.runtime.calls.lastIndexOf("runPodSandbox web");
      assert(removed >= 0 && removed < created, JSON.stringify(s.runtime.calls));
    });

    await t.step("removing the pod tears it down", async () => {
      s.kubelet.setPods([]);
      await until("gone", () => s.kubelet.getPod("web") === undefined);
      assertEquals(s.runtime.sandboxes.size, 0);
      assertEquals(s.runtime.containers.size, 0);
      assertEquals(s.kubelet.probeManager.workers.size, 0);
    });
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestPodReaddedDuringTeardownIsRestarted", async () => {
  const s = await setup();
  try {
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    // Removed, then re-added with the same UID before the teardown could finish.
    s.kubelet.setPods([]);
    s.kubelet.setPods([probedPod()]);
    await until(
      "old sandbox removed",
      () => s.runtime.calls.some((c) => c.startsWith("removePodSandbox")),
    );
    await until(
      "running again",
      () => s.app()?.state?.running !== undefined && s.runtime.sandboxes.size === 1,
    );
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("runPodSandbox")).length, 2);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestPodChangedUnderSameUIDIsRecreated", async () => {
  const s = await setup();
  try {
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const changed = probedPod(); // same explicit UID, different spec
    changed.spec.containers[0].command = ["sleep", "700"];
    s.kubelet.setPods([changed]);
    await until(
      "recreated with the new spec",
      () =>
        s.kubelet.getPod("web")?.spec.containers[0].command?.[1] === "700" &&
        s.app()?.state?.running !== undefined,
    );
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("runPodSandbox")).length, 2);
    assertEquals(s.runtime.sandboxes.size, 1);
    assertEquals(s.kubelet.pods().length, 1);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestFailedTeardownIsRetried", async () => {
  const s = await setup();
  try {
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const stopPodSandbox = s.runtime.stopPodSandbox.bind(s.runtime);
    let failures = 0;
    s.runtime.stopPodSandbox = () => {
      failures++;
      return Promise.reject(Object.assign(new Error("context deadline exceeded"), { code: 4 }));
    };
    const replacement = probedPod();
    replacement.metadata.uid = "uid-web-2";
    s.kubelet.setPods([replacement]);
    await until("first teardown attempt failed", () => failures === 1);
    await settle();
    // The old pod is kept (terminating) and the replacement waits for it.
    assertEquals(s.kubelet.pods().map((p) => p.metadata.uid), ["uid-web", "uid-web-2"]);
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("runPodSandbox")).length, 1);
    await s.clock.step(1000); // resync: retried, fails again
    await until("second attempt", () => failures === 2);
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("runPodSandbox")).length, 1);
    s.runtime.stopPodSandbox = stopPodSandbox;
    await s.clock.step(1000); // resync: the teardown succeeds, then the replacement starts
    await until(
      "replaced",
      () =>
        s.kubelet.pods().length === 1 && s.kubelet.getPod("web")?.metadata.uid === "uid-web-2" &&
        s.app()?.state?.running !== undefined,
    );
    assertEquals(s.runtime.sandboxes.size, 1);
    const removed = s.runtime.calls.findIndex((c) => c.startsWith("removePodSandbox"));
    const created = s.runtime.calls.lastIndexOf("runPodSandbox web");
    assert(removed >= 0 && removed < created, JSON.stringify(s.runtime.calls));
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestHousekeepingRemovesOrphanedPods", async () => {
  // What a previous run of the agent left behind, a sandbox some other client made, and a pod of
  // another agent (node-b) sharing the runtime.
  // node: the agent's own node, another agent's node, or undefined (not made by probelet).
  const leftover = async (runtime: FakeRuntime, name: string, uid: string, node?: string) => {
    const labels: Record<string, string> = {
      "io.kubernetes.pod.name": name,
      "io.kubernetes.pod.namespace": "default",
      "io.kubernetes.pod.uid": uid,
      ...(node ? { [probeletNodeLabel]: node } : {}),
    };
    const id = await runtime.runPodSandbox({
      metadata: { name, namespace: "default", uid, attempt: 0 },
      labels,
    });
    const c = await runtime.createContainer(id, {
      metadata: { name: "app", attempt: 0 },
      image: { image: "busybox" },
      labels,
      annotations: { "io.kubernetes.pod.terminationGracePeriod": "7" },
    });
    await runtime.startContainer(c);
  };
  const s = await setup(async (runtime) => {
    await leftover(runtime, "old", "uid-old", "node");
    await leftover(runtime, "foreign", "uid-foreign");
    await leftover(runtime, "neighbour", "uid-neighbour", "node-b");
  });
  try {
    const uidsOnRuntime = () =>
      [...s.runtime.sandboxes.values()].map((x) => x.config.metadata.uid).sort();
    // Nothing is removed before the pod source has reported (the pods may be adopted)...
    assertEquals(uidsOnRuntime(), ["uid-foreign", "uid-neighbour", "uid-old"]);
    // ...and once it reported, without them, they are cleaned up.
    s.kubelet.setPods([]);
    await s.clock.step(2000);
    await until("orphan removed", () => !uidsOnRuntime().includes("uid-old"));
    assertEquals(uidsOnRuntime(), ["uid-foreign", "uid-neighbour"]);
    // Stopped with the grace period its annotation recorded, not the 2 s minimum.
    assertEquals(s.runtime.stopTimeouts, [7000]);
    assertEquals(s.runtime.containers.size, 2);
    // And at a later housekeeping pass, while the desired pod is left alone.
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    await leftover(s.runtime, "old2", "uid-old-2", "node");
    await s.clock.step(2000);
    await until("orphan removed", () => !uidsOnRuntime().includes("uid-old-2"));
    assertEquals(uidsOnRuntime(), ["uid-foreign", "uid-neighbour", "uid-web"]);
    assertEquals(s.app()?.restartCount, 0);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestReadinessProbeRunsOnItsPeriod", async () => {
  // kubelet's default resync (1 min): only PLEG events, probe results and the period drive syncs.
  const s = await setup(undefined, { syncFrequencyMs: undefined });
  try {
    const pod = probedPod();
    const app = pod.spec.containers[0];
    delete app.livenessProbe;
    app.readinessProbe = { exec: { command: ["ready"] }, periodSeconds: 10, failureThreshold: 1 };
    let readinessRuns = 0;
    s.runtime.execSyncFunc = (_id, cmd) => {
      if (cmd[0] !== "ready") {
        return Promise.resolve({ stdout: new Uint8Array(), stderr: new Uint8Array() });
      }
      readinessRuns++;
      return Promise.reject(new ExitError(1));
    };
    s.kubelet.setPods([pod]);
    await until("running", () => s.app()?.state?.running !== undefined);
    await until("not ready", () => readinessRuns >= 1);
    const first = readinessRuns;
    for (let i = 0; i < 60; i++) await s.clock.step(1000);
    await settle();
    // 60 s at a 10 s period: six runs (a sync per second used to add a manual run each time).
    const runs = readinessRuns - first;
    assert(runs >= 6 && runs <= 7, `readiness probe ran ${runs} times in 60 s`);
    assertEquals(s.app()?.ready, false);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestRestartedAgentAdoptsRunningPods", async (t) => {
  const clock = new FakeClock(1_700_000_000_000);
  clockForUntil = clock;
  const runtime = new FakeRuntime(clock);
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-kubelet-test-" });
  const previous = log.setLogSink(() => {});
  const agent = async (recorder: FakeRecorder) =>
    await newMainKubelet({
      runtime,
      clock,
      nodeName: "node",
      rootDir,
      recorders: [recorder],
      random: () => 0,
    });
  const first = new FakeRecorder();
  const a = await agent(first);
  const second = new FakeRecorder();
  const b = await agent(second);
  try {
    await a.run();
    a.setPods([probedPod()]);
    const appOf = (k: Kubelet) => k.getPod("web")?.status?.containerStatuses?.[0];
    await until("ready", () => appOf(a)?.ready === true);
    const before = appOf(a)!;
    const startTime = a.getPod("web")?.status?.startTime;

    await t.step("stopping with leavePodsRunning stops nothing on the runtime", async () => {
      const calls = runtime.calls.length;
      await a.stop({ leavePodsRunning: true });
      assertEquals(
        runtime.calls.slice(calls).filter((c) => /^(stop|remove)/.test(c)),
        [],
      );
      assertEquals(runtime.containersNamed("app").map((c) => c.state), ["CONTAINER_RUNNING"]);
    });

    await clock.step(30_000);

    await t.step("a new agent adopts the pod: same ID, restarts, times; no events", async () => {
      await b.run();
      b.setPods([probedPod()]);
      await until("status", () => appOf(b)?.state?.running !== undefined);
      const after = appOf(b)!;
      assertEquals(after.containerID, before.containerID);
      assertEquals(after.restartCount, before.restartCount);
      assertEquals(after.state?.running?.startedAt, before.state?.running?.startedAt);
      assertEquals(b.getPod("web")?.status?.startTime, startTime);
      // Recorded on the sandbox by the first agent (creation can fall in a later second).
      assertEquals(
        [...runtime.sandboxes.values()].map((s) =>
          s.config.annotations?.["io.probelet.pod.startTime"]
        ),
        [startTime],
      );
      await until("ready again", () => appOf(b)?.ready === true);
      assertEquals(appOf(b)?.containerID, before.containerID);
      assertEquals(second.events.filter((e) => /Killing|Created|Started/.test(e)), []);
      assertEquals(runtime.containersNamed("app").length, 1);
    });

    await t.step("a pod no longer desired is stopped and removed", async () => {
      b.setPods([]);
      await clock.step(2000);
      await until("removed", () => runtime.containers.size === 0 && runtime.sandboxes.size === 0);
    });
  } finally {
    await a.stop();
    await b.stop();
    log.setLogSink(previous);
    await Deno.remove(rootDir, { recursive: true });
  }
});

Deno.test("TestCrashLoopLeavesOneDeadInstance", async () => {
  const s = await setup(undefined, { backOff: { initialMs: 1000, maxMs: 2000 } });
  try {
    // The container exits with 1 right after each start.
    const start = s.runtime.startContainer.bind(s.runtime);
    s.runtime.startContainer = async (id: string) => {
      await start(id);
      s.runtime.exit(id, 1);
    };
    const pod = probedPod();
    delete pod.spec.containers[0].livenessProbe;
    delete pod.spec.containers[0].readinessProbe;
    s.kubelet.setPods([pod]);
    await until("first exit", () => s.app()?.state?.terminated !== undefined);
    const dead = () =>
      s.runtime.containersNamed("app").filter((c) => c.state === "CONTAINER_EXITED").length;
    let most = 0;
    for (let i = 0; i < 40; i++) {
      await s.clock.step(1000);
      await settle();
      most = Math.max(most, dead());
    }
    assert((s.app()?.restartCount ?? 0) >= 10, `restartCount ${s.app()?.restartCount}`);
    // Removed on ContainerDied: at most the newest dead one plus one that just died.
    assert(most <= 2, `${most} dead instances at once`);
    // Once the last death has been seen, one dead instance is left.
    s.runtime.startContainer = start;
    for (let i = 0; i < 4; i++) await s.clock.step(1000);
    await until("running again", () => s.app()?.state?.running !== undefined);
    await s.clock.step(1000);
    await until("one dead instance", () => dead() <= 1);
    assertEquals(dead(), 1);
    assertEquals(
      s.app()?.lastState?.terminated?.exitCode ?? s.app()?.state?.terminated?.exitCode,
      1,
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestContainerGC", async () => {
  const s = await setup();
  try {
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const sandbox = [...s.runtime.sandboxes.keys()][0];
    // Dead instances the agent never saw die (left by an older run): the minute GC removes all
    // but the newest; another node's dead containers are left alone.
    const labels = (node: string) => ({
      "io.kubernetes.pod.name": "web",
      "io.kubernetes.pod.namespace": "default",
      "io.kubernetes.pod.uid": "uid-web",
      "io.kubernetes.container.name": "app",
      "io.probelet.node": node,
    });
    const deadOnes: string[] = [];
    for (const node of ["node", "node", "node", "node-b"]) {
      const id = await s.runtime.createContainer(sandbox, {
        metadata: { name: "app", attempt: 0 },
        image: { image: "busybox" },
        labels: labels(node),
      });
      await s.runtime.startContainer(id);
      s.runtime.exit(id, 1);
      deadOnes.push(id);
    }
    // A pod that is gone left its log folder; the running pod's folder stays.
    const logs = join(s.rootDir, "pods");
    await Deno.mkdir(join(logs, "default_old_uid-old", "app"), { recursive: true });
    await Deno.writeTextFile(join(logs, "default_old_uid-old", "app", "0.log"), "x");
    await s.kubelet.garbageCollect();
    const left = [...s.runtime.containers.keys()];
    assertEquals(deadOnes.filter((id) => left.includes(id)), [deadOnes[2], deadOnes[3]]);
    assertEquals(s.app()?.state?.running !== undefined, true);
    const folders: string[] = [];
    for await (const e of Deno.readDir(logs)) folders.push(e.name);
    assertEquals(folders, ["default_web_uid-web"]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestContainerGCRunsEveryMinute", async () => {
  // kubelet's StartGarbageCollection: the container GC runs every minute on its own, with or
  // without an API server (standalone here).
  const s = await setup();
  try {
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const logs = join(s.rootDir, "pods");
    const gone = join(logs, "default_old_uid-old");
    await Deno.mkdir(join(gone, "app"), { recursive: true });
    const exists = () => Deno.stat(gone).then(() => true, () => false);
    for (let i = 0; i < 61; i++) await s.clock.step(1000);
    await settle();
    let left = true;
    await until("GC ran", () => {
      void exists().then((e) => left = e);
      return !left;
    });
    assertEquals(await exists(), false);
  } finally {
    await s.cleanup();
  }
});

Deno.test("stop: no container is started once the stop began (a restart would outlive it)", async () => {
  const s = await setup();
  try {
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const id = s.appID();
    // The container dies just as the agent is told to stop; the sync that would restart it is
    // asked for right after.
    s.runtime.exit(id, 1);
    s.runtime.calls.length = 0;
    const stopped = s.kubelet.stop({ gracePeriodOverrideSeconds: 30 });
    s.kubelet.syncPodByUID("uid-web");
    await stopped;
    assertEquals(s.runtime.calls.filter((c) => c.startsWith("createContainer")), []);
    assert(s.runtime.calls.some((c) => c.startsWith("removePodSandbox")), s.runtime.calls.join());
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestTerminalPodStopsItsSandbox", async () => {
  const s = await setup();
  try {
    const pod = probedPod({ restartPolicy: "Never" });
    s.kubelet.setPods([pod]);
    await until("running", () => s.app()?.state?.running !== undefined);
    assertEquals(s.kubelet.probeManager.workerCount(), 2);
    const id = s.appID();
    s.runtime.calls.length = 0;
    s.runtime.exit(id, 0);
    // The PLEG sees the exit; the sync finds the pod terminal (kubelet's SyncTerminatingPod).
    await s.clock.step(1000);
    await untilRelisted(
      "sandbox stopped",
      () => s.runtime.calls.some((c) => c.startsWith("stopPodSandbox")),
    );
    await untilRelisted("Succeeded", () => s.status()?.phase === "Succeeded");
    assertEquals(s.kubelet.probeManager.workerCount(), 0);
    assertEquals(s.app()?.state?.terminated?.exitCode, 0);
    // The stopped sandbox reports no IP; the final status keeps the one from before the stop
    // (kubelet's preserveDataFromBeforeStopping), so the API never sees podIP vanish.
    assertEquals(s.status()?.podIP, "10.0.0.7");
    assertEquals(s.status()?.podIPs, [{ ip: "10.0.0.7" }]);
    // The pod is not synced again (a sync would hand it to the prober manager first): nothing is
    // started and the exited container stays, with its status, until removal.
    let added = 0;
    const addPod = s.kubelet.probeManager.addPod.bind(s.kubelet.probeManager);
    s.kubelet.probeManager.addPod = (p: Pod) => {
      added++;
      addPod(p);
    };
    s.runtime.calls.length = 0;
    for (let i = 0; i < 5; i++) await s.clock.step(1000);
    await settle();
    assertEquals(added, 0);
    assertEquals(
      s.runtime.calls.filter((c) => /^(createContainer|startContainer|runPodSandbox)/.test(c)),
      [],
    );
    assertEquals(s.runtime.containersNamed("app").map((c) => c.state), ["CONTAINER_EXITED"]);
    assertEquals(s.status()?.phase, "Succeeded");
    // Removing the pod removes the container and the sandbox.
    s.kubelet.setPods([]);
    await until(
      "sandbox removed",
      () => s.runtime.calls.some((c) => c.startsWith("removePodSandbox")),
    );
    assertEquals(s.runtime.containersNamed("app"), []);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestTerminalPodSyncsWaitForTheNextRelist", async () => {
  // kubelet's pod worker takes the status for each sync from its pod cache, newer than the end of
  // the last sync (podCache.GetNewerThan(lastSyncTime)): after the SyncPod that found the pod
  // terminal, SyncTerminatingPod starts after the PLEG's next relist, and SyncTerminatedPod after
  // the one following SyncTerminatingPod. Meanwhile the status manager holds the terminal phase
  // back, so the API shows the containers terminated under the phase it had (issue 20).
  const s = await setup();
  try {
    const pod = probedPod({ restartPolicy: "Never" });
    s.kubelet.setPods([pod]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const statuses: string[] = [];
    const setPodStatus = s.kubelet.statusManager.setPodStatus.bind(s.kubelet.statusManager);
    s.kubelet.statusManager.setPodStatus = (p, status) => {
      const ready = status.conditions?.find((c) => c.type === "PodReadyToStartContainers");
      statuses.push(`${status.phase} PodReadyToStartContainers=${ready?.status}`);
      setPodStatus(p, status);
    };
    let terminated = 0;
    const terminatePod = s.kubelet.statusManager.terminatePod.bind(s.kubelet.statusManager);
    s.kubelet.statusManager.terminatePod = (p) => {
      terminated++;
      terminatePod(p);
    };
    s.runtime.calls.length = 0;
    s.runtime.exit(s.appID(), 0);
    // The relist sees the exit; SyncPod finds the pod terminal.
    await s.clock.step(1000);
    await until(
      "Succeeded generated",
      () => statuses.includes("Succeeded PodReadyToStartContainers=True"),
    );
    await settle();
    await s.clock.step(0);
    await settle();
    const stopped = () => s.runtime.calls.some((c) => c.startsWith("stopPodSandbox"));
    assert(!stopped(), `SyncTerminatingPod ran before the next relist: ${s.runtime.calls}`);
    // The next relist: SyncTerminatingPod stops the sandbox, its last status says so.
    await s.clock.step(1000);
    await until("sandbox stopped", stopped);
    await until(
      "SyncTerminatingPod's last status",
      () => statuses.at(-1) === "Succeeded PodReadyToStartContainers=False",
    );
    const afterTerminating = statuses.length;
    await settle();
    await s.clock.step(0);
    await settle();
    assertEquals(terminated, 0, "SyncTerminatedPod ran before the next relist");
    // The relist after it: SyncTerminatedPod generates the status once more (as terminal), then
    // the status manager's final version.
    await s.clock.step(1000);
    await until("SyncTerminatedPod", () => terminated === 1);
    assertEquals(statuses.length, afterTerminating + 1);
    assertEquals(statuses.at(-1), "Succeeded PodReadyToStartContainers=False");
    assertEquals(s.status()?.phase, "Succeeded");
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestForcedDeleteRecordsKilling", async () => {
  // A forced delete (grace 0) still goes through killContainer, which records Killing before it
  // applies the grace period override (kuberuntime_container.go), as on kubelet (issue 20).
  const s = await setup();
  try {
    const pod = probedPod({ restartPolicy: "Always" });
    s.kubelet.setPods([pod]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const id = s.appID();
    const deleted = structuredClone(pod);
    deleted.metadata.deletionTimestamp = "2023-11-14T22:13:20Z";
    deleted.metadata.deletionGracePeriodSeconds = 0;
    s.kubelet.setPods([deleted]);
    s.kubelet.setPods([]);
    await until("gone", () => s.kubelet.getPod("web") === undefined);
    assert(s.runtime.calls.includes(`stopContainer ${id}`), JSON.stringify(s.runtime.calls));
    assertEquals(
      s.recorder.events.filter((e) => e.startsWith("Normal Killing")),
      ["Normal Killing Stopping container app"],
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestTerminalPodSyncRequestedDuringItsTeardownDoesNotRunIt", async () => {
  const s = await setup();
  try {
    const pod = probedPod({ restartPolicy: "Never" });
    s.kubelet.setPods([pod]);
    await until("running", () => s.app()?.state?.running !== undefined);
    const id = s.appID();
    // Another sync is asked for (a second PLEG event, a probe result) while SyncTerminatingPod
    // runs: once it finished, the pod is never synced again.
    const stopPodSandbox = s.runtime.stopPodSandbox.bind(s.runtime);
    s.runtime.stopPodSandbox = (sandboxID: string) => {
      s.kubelet.syncPodByUID("uid-web");
      return stopPodSandbox(sandboxID);
    };
    // SyncTerminatingPod drops the pod's probe workers once per run.
    let terminatingSyncs = 0;
    const removePod = s.kubelet.probeManager.removePod.bind(s.kubelet.probeManager);
    s.kubelet.probeManager.removePod = (p: Pod) => {
      terminatingSyncs++;
      removePod(p);
    };
    s.runtime.exit(id, 0);
    await s.clock.step(1000);
    await until("Succeeded", () => s.status()?.phase === "Succeeded");
    for (let i = 0; i < 3; i++) await s.clock.step(1000);
    await settle();
    assertEquals(terminatingSyncs, 1);
  } finally {
    await s.cleanup();
  }
});

Deno.test("sync tick: a housekeeping error does not stop the periodic syncs", async () => {
  const s = await setup();
  try {
    s.kubelet.setPods([probedPod()]);
    await until("running", () => s.app()?.state?.running !== undefined);
    // The next housekeeping throws once.
    const cleanupPods = s.kubelet.probeManager.cleanupPods.bind(s.kubelet.probeManager);
    let thrown = 0;
    s.kubelet.probeManager.cleanupPods = (desired) => {
      if (thrown++ === 0) throw new Error("injected housekeeping failure");
      cleanupPods(desired);
    };
    await s.clock.step(1000);
    await settle();
    assertEquals(thrown, 1);
    // A container that dies afterwards is still restarted by a later sync.
    const id = s.appID();
    s.runtime.exit(id, 1);
    for (let i = 0; i < 3; i++) await s.clock.step(1000);
    await until("restarted", () => (s.app()?.restartCount ?? 0) >= 1);
    assert(thrown > 1, "housekeeping ran again");
  } finally {
    await s.cleanup();
  }
});

Deno.test("housekeeping runs every housekeepingPeriod (2 s), not at every sync tick", async () => {
  const s = await setup();
  try {
    // kubelet's housekeeping ticker (2 s) and sync ticker (1 s) are two tickers; probelet's sync
    // tick carries housekeeping every other tick.
    const cleanupPods = s.kubelet.probeManager.cleanupPods.bind(s.kubelet.probeManager);
    let runs = 0;
    s.kubelet.probeManager.cleanupPods = (desired) => {
      runs++;
      cleanupPods(desired);
    };
    for (let i = 0; i < 6; i++) await s.clock.step(1000);
    await settle();
    assertEquals(runs, 3);
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestSucceededPodWithSidecarIsInitialized", async () => {
  // The job container succeeds; the sidecar is then stopped (exit 137). kubelet's
  // GeneratePodInitializedCondition: a Succeeded pod whose init containers all have a status is
  // Initialized (reason PodCompleted), whatever the stopped sidecar reports.
  const s = await setup();
  try {
    const pod = probedPod({ restartPolicy: "Never" });
    pod.spec.containers[0].livenessProbe = undefined;
    pod.spec.containers[0].readinessProbe = undefined;
    pod.spec.initContainers = [{
      name: "proxy",
      image: "busybox",
      command: ["sleep", "600"],
      restartPolicy: "Always",
    }];
    s.kubelet.setPods([pod]);
    // The sidecar starts first; the PLEG's next relist lets the app start.
    for (let i = 0; i < 3 && s.app()?.state?.running === undefined; i++) {
      await s.clock.step(1000);
      await settle();
    }
    await until("app running", () => s.app()?.state?.running !== undefined);
    const initialized = () => s.status()?.conditions?.find((c) => c.type === "Initialized");
    assertEquals(initialized()?.status, "True");
    const id = s.appID();
    s.runtime.exit(id, 0);
    await s.clock.step(1000);
    await until("Succeeded", () => s.status()?.phase === "Succeeded");
    await until(
      "sidecar stopped",
      () => s.status()?.initContainerStatuses?.[0]?.state?.terminated !== undefined,
    );
    assertEquals(initialized()?.status, "True");
    assertEquals(initialized()?.reason, "PodCompleted");
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestSyncLoopLogVerbosity", async (t) => {
  // kubelet's syncLoopIteration logs each ADD/UPDATE/REMOVE/DELETE at V(2): a chatty watch must
  // not fill the default log (issue 21 row 14: 215,012 `SyncLoop UPDATE` lines in 60 s).
  const s = await setup();
  const lines: string[] = [];
  const previous = log.setLogSink((l) => lines.push(l));
  const verbosity = log.getVerbosity();
  const labelled = (value: string) => {
    const pod = probedPod();
    pod.metadata.labels = { rev: value };
    return pod;
  };
  try {
    await t.step("V(0): no SyncLoop lines for an ADD and an UPDATE", async () => {
      log.setVerbosity(0);
      s.kubelet.setPods([labelled("1")]);
      await until("running", () => s.app()?.state?.running !== undefined);
      s.kubelet.setPods([labelled("2")]);
      await until("updated", () => s.kubelet.getPod("web")?.metadata.labels?.rev === "2");
      assertEquals(lines.filter((l) => l.includes('"SyncLoop ')), []);
    });
    await t.step("V(2): each update is logged", async () => {
      log.setVerbosity(2);
      s.kubelet.setPods([labelled("3")]);
      await until("updated", () => s.kubelet.getPod("web")?.metadata.labels?.rev === "3");
      const syncLoop = lines.filter((l) => l.includes('"SyncLoop '));
      assert(syncLoop.some((l) => l.includes('"SyncLoop UPDATE"')), syncLoop.join("\n"));
    });
  } finally {
    log.setVerbosity(verbosity);
    log.setLogSink(previous);
    await s.cleanup();
  }
});

Deno.test("TestCrashLoopBackOffStatus", async (t) => {
  // kubelet v1.36.3: after a crash the container shows terminated(Error) with its previous
  // termination as lastState (kept once the older instance is removed); the sync that meets the
  // back-off does not change that, the pod worker requeues at the back-off's end jittered up to
  // 50 % later (wait.Jitter), and that sync shows waiting CrashLoopBackOff before restarting.
  const s = await setup(undefined, {
    backOff: { initialMs: 10_000, maxMs: 300_000 },
    syncFrequencyMs: 60_000,
    random: () => 0.5,
    // Off the 1 s sync ticker, so the relist that sees the restart comes after the restart sync.
    plegRelistPeriodMs: 1500,
  });
  try {
    const starts: number[] = [];
    const start = s.runtime.startContainer.bind(s.runtime);
    s.runtime.startContainer = async (id: string) => {
      await start(id);
      starts.push(s.clock.now());
    };
    type Seen = { at: number; state: string; lastExit?: number; restartCount: number };
    const seen: Seen[] = [];
    s.kubelet.statusManager.subscribe((_uid, status) => {
      const app = status.containerStatuses?.find((c) => c.name === "app");
      if (!app) return;
      const state = app.state?.terminated
        ? `terminated(${app.state.terminated.reason})`
        : app.state?.waiting
        ? `waiting(${app.state.waiting.reason ?? ""})`
        : "running";
      seen.push({
        at: s.clock.now(),
        state,
        lastExit: app.lastState?.terminated?.exitCode,
        restartCount: app.restartCount,
      });
    });
    const pod = probedPod();
    delete pod.spec.containers[0].livenessProbe;
    delete pod.spec.containers[0].readinessProbe;
    s.kubelet.setPods([pod]);
    await until("running", () => s.app()?.state?.running !== undefined);
    // First crash: restarted at once (no back-off yet).
    s.runtime.exit(s.appID(), 1);
    for (let i = 0; i < 10 && starts.length < 2; i++) await s.clock.step(1000);
    await until("running again", () => s.app()?.state?.running !== undefined);
    for (let i = 0; i < 3; i++) await s.clock.step(1000);
    assertEquals(s.app()?.lastState?.terminated?.exitCode, 1);
    // Second crash: a 10 s back-off.
    const crash = s.clock.now();
    s.runtime.exit(s.appID(), 1);
    for (let i = 0; i < 30 && starts.length < 3; i++) {
      await s.clock.step(1000);
      await settle();
    }
    assertEquals(starts.length, 3, "restarted within 30 s");
    // The PLEG's next relist reports the restarted container.
    for (let i = 0; i < 2; i++) await s.clock.step(1000);
    const afterCrash = seen.filter((x) => x.at >= crash && x.at <= starts[2]);

    await t.step("terminated(Error) with lastState for most of the back-off", () => {
      const first = afterCrash[0];
      assertEquals([first.state, first.lastExit, first.restartCount], ["terminated(Error)", 1, 1]);
      for (const x of afterCrash.filter((x) => x.state === "terminated(Error)")) {
        assertEquals(x.lastExit, 1, `lastState kept at +${x.at - crash} ms`);
      }
      // The older instance is gone by now: lastState came from the previous status.
      assertEquals(
        s.runtime.containersNamed("app").filter((c) => c.state === "CONTAINER_EXITED").length,
        1,
      );
      const waiting = afterCrash.filter((x) => x.state.startsWith("waiting"));
      assertEquals(waiting.map((x) => x.state), ["waiting(CrashLoopBackOff)"]);
      // It stays until the PLEG reports the restarted container (its next relist), as on kubelet.
      const running = seen.find((x) => x.at > crash && x.state === "running");
      assert(running && running.at > waiting[0].at, JSON.stringify(seen.slice(-3)));
      // CrashLoopBackOff only in the sync that restarts it, never right after the crash.
      assert(
        waiting[0].at - crash >= 9_000,
        `CrashLoopBackOff early: ${JSON.stringify(afterCrash)}`,
      );
    });

    await t.step("restart at the back-off's end plus the pod worker's jitter", () => {
      // The sync right after the crash has 9-10 s of back-off left; jittered by half of it
      // (random 0.5 → +25 %), the restart comes 12-15 s after the crash, not at 10 s (a second
      // more when a sync's real I/O straddles a step of the fake clock).
      const delay = starts[2] - crash;
      assert(delay >= 12_000 && delay <= 16_000, `restart ${delay} ms after the crash`);
    });
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestGenerateAPIPodStatusV136Fields", async (t) => {
  // Fields kubelet v1.36.3 reports by default: status.observedGeneration and each kubelet
  // condition's observedGeneration (PodObservedGenerationTracking, GA), PodReadyToStartContainers
  // (beta, on), containerStatuses[].resources / allocatedResources (InPlacePodVerticalScaling,
  // GA; `{}` when the container sets none), regular containers' statuses sorted by name.
  const s = await setup();
  try {
    const pod = probedPod();
    pod.metadata.generation = 3;
    const app = pod.spec.containers[0];
    delete app.livenessProbe;
    delete app.readinessProbe;
    app.resources = { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "128Mi" } };
    pod.spec.containers.push({ name: "aaa", image: "busybox", command: ["sleep", "600"] });
    s.kubelet.setPods([pod]);
    await until(
      "both running",
      () => (s.status()?.containerStatuses ?? []).filter((c) => c.state?.running).length === 2,
    );
    const status = s.status()!;

    await t.step("status.observedGeneration", () => assertEquals(status.observedGeneration, 3));

    await t.step("kubelet's conditions in its order, each with observedGeneration", () => {
      assertEquals(
        status.conditions!.map((c) => [c.type, c.status, c.observedGeneration]),
        [
          ["PodReadyToStartContainers", "True", 3],
          ["Initialized", "True", 3],
          ["Ready", "True", 3],
          ["ContainersReady", "True", 3],
          ["PodScheduled", "True", 3],
        ],
      );
    });

    await t.step("container statuses by name, with resources", () => {
      const statuses = status.containerStatuses!;
      assertEquals(statuses.map((c) => c.name), ["aaa", "app"]);
      assertEquals(statuses[0].resources, {});
      assertEquals(statuses[0].allocatedResources, undefined);
      assertEquals(statuses[1].resources, app.resources);
      assertEquals(statuses[1].allocatedResources, { cpu: "100m", memory: "64Mi" });
    });

    await t.step("pod-level resources and allocatedResources", () => {
      // The API never showed the pod Running (no API server here): the effective allocation.
      assertEquals(status.resources, {
        requests: { cpu: "100m", memory: "64Mi" },
        limits: { memory: "128Mi" },
      });
      assertEquals(status.allocatedResources, { cpu: "100m", memory: "64Mi" });
    });
  } finally {
    await s.cleanup();
  }
});

Deno.test("TestActiveDeadlineFailsThePodAtItsDeadline", async () => {
  // The periodic resync is a minute away: only the sync loop's deadline check syncs the pod.
  const s = await setup(undefined, { syncFrequencyMs: 60_000 });
  try {
    const pod = probedPod({ restartPolicy: "Always" });
    pod.spec.activeDeadlineSeconds = 3;
    s.kubelet.setPods([pod]);
    await until("running", () => s.app()?.state?.running !== undefined);
    assertEquals(s.status()?.phase, "Running");
    const started = Date.parse(s.status()!.startTime!);
    // Still running just before the deadline.
    await s.clock.step(started + 2_000 - s.clock.now());
    await settle();
    assertEquals(s.status()?.phase, "Running");
    assertEquals(s.recorder.events.filter((e) => e.includes("DeadlineExceeded")), []);
    // The next sync tick finds the pod past its deadline: it is failed and its containers killed.
    await s.clock.step(1_000);
    await until("Failed", () => s.status()?.phase === "Failed");
    assertEquals(s.status()?.reason, "DeadlineExceeded");
    assertEquals(
      s.status()?.message,
      "Pod was active on the node longer than the specified deadline",
    );
    await untilRelisted(
      "sandbox stopped",
      () => s.runtime.calls.some((c) => c.startsWith("stopPodSandbox")),
    );
    await untilRelisted("app terminated", () => s.app()?.state?.terminated !== undefined);
    assertEquals(s.runtime.containersNamed("app").map((c) => c.state), ["CONTAINER_EXITED"]);
    assert(s.recorder.events.includes(
      "Normal DeadlineExceeded Pod was active on the node longer than the specified deadline",
    ));
    assert(s.recorder.events.includes("Normal Killing Stopping container app"));
    // Terminal: it is not restarted, and stays Failed with its reason.
    for (let i = 0; i < 3; i++) await s.clock.step(1_000);
    await settle();
    assertEquals(s.status()?.phase, "Failed");
    assertEquals(s.status()?.reason, "DeadlineExceeded");
    assertEquals(s.runtime.containersNamed("app").length, 1);
  } finally {
    await s.cleanup();
  }
});
