/**
 * The pod workers (kubelet's pod_workers_test.go): one sync of a pod at a time, termination and
 * its retries, the work queue's requeue periods, and the effective grace period of a termination.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import {
  backOffPeriodMs,
  calculateEffectiveGracePeriod,
  type PodSyncResult,
  type PodSyncStatus,
  PodWorkers,
} from "../../src/kubelet/pod_workers.ts";
import { FakeClock, settle } from "../../src/util/clock.ts";

function pod(terminationGracePeriodSeconds?: number, deletionGracePeriodSeconds?: number): Pod {
  return {
    metadata: deletionGracePeriodSeconds === undefined ? {} : { deletionGracePeriodSeconds },
    spec: { containers: [], terminationGracePeriodSeconds },
  };
}

Deno.test("calculateEffectiveGracePeriod", async (t) => {
  const cases: [string, number, Pod, { override?: number }, number][] = [
    ["the pod's own grace period by default", 0, pod(30), {}, 30],
    ["a shorter deletion grace period wins", 0, pod(30, 5), {}, 5],
    ["a longer deletion grace period wins too when none is in force", 0, pod(30, 60), {}, 60],
    ["it only decreases once termination started", 5, pod(30, 10), {}, 5],
    ["an override (eviction) shortens it", 30, pod(30), { override: 2 }, 2],
    ["grace 0 becomes 1 s", 0, pod(30, 0), {}, 1],
    ["no grace period at all becomes 1 s", 0, pod(), {}, 1],
  ];
  for (const [name, current, p, options, want] of cases) {
    await t.step(name, () => {
      assertEquals(calculateEffectiveGracePeriod(current, p, options), {
        gracePeriod: want,
        hasGracePeriod: true,
      });
    });
  }
});

// A podSyncer that records its calls; syncPod waits on `gate` when one is set.
function recordingSyncer(result: PodSyncResult | undefined = { failed: false }) {
  const calls: string[] = [];
  let active = 0;
  let overlapped = false;
  const syncer = {
    calls,
    gate: undefined as Promise<void> | undefined,
    failTerminating: false,
    get overlapped() {
      return overlapped;
    },
    async syncPod(status: PodSyncStatus) {
      calls.push(`sync ${status.pod.metadata.uid}`);
      if (++active > 1) overlapped = true;
      await syncer.gate;
      active--;
      return result;
    },
    syncTerminatingPod(status: PodSyncStatus, gracePeriod: number) {
      calls.push(`terminating ${status.pod.metadata.uid} ${gracePeriod}`);
      return syncer.failTerminating ? Promise.reject(new Error("runtime down")) : Promise.resolve();
    },
    syncTerminatedPod(status: PodSyncStatus) {
      calls.push(`terminated ${status.pod.metadata.uid}`);
    },
  };
  return syncer;
}

function namedPod(name: string, uid: string, terminationGracePeriodSeconds = 30): Pod {
  return {
    metadata: { name, namespace: "default", uid },
    spec: { containers: [], terminationGracePeriodSeconds },
  };
}

Deno.test("TestUpdatePod", async (t) => {
  await t.step("syncs of one pod never overlap; requests meanwhile coalesce into one", async () => {
    const syncer = recordingSyncer();
    const gate = Promise.withResolvers<void>();
    syncer.gate = gate.promise;
    const podWorkers = new PodWorkers(syncer, { clock: new FakeClock(0), random: () => 0 });
    const pod = namedPod("web", "u1");
    podWorkers.updatePod({ updateType: "create", pod });
    podWorkers.updatePod({ updateType: "sync", pod });
    podWorkers.updatePod({ updateType: "sync", pod });
    await settle();
    assertEquals(syncer.calls, ["sync u1"]);
    syncer.gate = undefined;
    gate.resolve();
    await settle();
    assertEquals(syncer.calls, ["sync u1", "sync u1"]);
    assertEquals(syncer.overlapped, false);
  });

  await t.step(
    "kill: SyncTerminatingPod with the grace period, then SyncTerminatedPod",
    async () => {
      const syncer = recordingSyncer();
      const podWorkers = new PodWorkers(syncer, { clock: new FakeClock(0) });
      const pod = namedPod("web", "u1", 7);
      podWorkers.updatePod({ updateType: "create", pod, start: false });
      podWorkers.updatePod({ updateType: "kill", pod });
      assertEquals(podWorkers.isPodTerminationRequested("u1"), true);
      await podWorkers.getPodSyncStatus("u1")!.terminated;
      assertEquals(syncer.calls, ["terminating u1 7", "terminated u1"]);
      assertEquals(podWorkers.isKnown("u1"), false);
    },
  );

  await t.step("a failed termination stays requested and is retried at the next tick", async () => {
    const syncer = recordingSyncer();
    syncer.failTerminating = true;
    const podWorkers = new PodWorkers(syncer, { clock: new FakeClock(0) });
    const pod = namedPod("web", "u1", 7);
    podWorkers.updatePod({ updateType: "create", pod, start: false });
    const terminated = podWorkers.terminatePod(podWorkers.getPodSyncStatus("u1")!);
    await settle();
    assertEquals(syncer.calls, ["terminating u1 7"]);
    assertEquals(podWorkers.isPodTerminationRequested("u1"), true);
    syncer.failTerminating = false;
    podWorkers.syncDuePods(() => false);
    await terminated;
    assertEquals(syncer.calls, ["terminating u1 7", "terminating u1 7", "terminated u1"]);
  });

  await t.step("a same-name pod starts only after its predecessor is torn down", async () => {
    const syncer = recordingSyncer();
    const podWorkers = new PodWorkers(syncer, { clock: new FakeClock(0) });
    podWorkers.updatePod({ updateType: "create", pod: namedPod("web", "old"), start: false });
    const gone = podWorkers.terminatePod(podWorkers.getPodSyncStatus("old")!);
    podWorkers.updatePod({ updateType: "create", pod: namedPod("web", "new") });
    await gone;
    await settle();
    assertEquals(syncer.calls, ["terminating old 30", "terminated old", "sync new"]);
  });
});

Deno.test("TestCompleteWork", async (t) => {
  const resync = 60_000;
  const cases: [string, PodSyncResult, number][] = [
    ["a clean sync: the resync interval", { failed: false }, resync],
    ["an error: the back-off period", { failed: true }, backOffPeriodMs],
    ["a restart back-off: until it ends", { failed: false, retryAt: 3_000 }, 3_000],
    ["a long restart back-off: at most the resync interval", {
      failed: false,
      retryAt: 10 * resync,
    }, resync],
  ];
  for (const [name, result, want] of cases) {
    await t.step(name, async () => {
      const clock = new FakeClock(0);
      const syncer = recordingSyncer(result);
      const podWorkers = new PodWorkers(syncer, {
        clock,
        resyncIntervalMs: resync,
        random: () => 0,
      });
      podWorkers.updatePod({ updateType: "create", pod: namedPod("web", "u1") });
      await settle();
      assertEquals(podWorkers.getPodSyncStatus("u1")!.nextSyncAt, want);
      clock.setTime(want - 1);
      podWorkers.syncDuePods(() => false);
      await settle();
      assertEquals(syncer.calls.length, 1);
      clock.setTime(want);
      podWorkers.syncDuePods(() => false);
      await settle();
      assertEquals(syncer.calls.length, 2);
    });
  }
});
