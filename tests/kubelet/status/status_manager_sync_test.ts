/**
 * The status manager's sync to the API server, ported from kubelet's
 * pkg/kubelet/status/status_manager_test.go under the Go names, with the FakeClientset.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Pod, PodCondition, PodStatus } from "../../../src/api/core/v1/mod.ts";
import { newInternalError, newNotFound } from "../../../src/client/errors.ts";
import { BasicPodManager } from "../../../src/kubelet/pod/pod_manager.ts";
import {
  isPodStatusByKubeletEqual,
  Manager,
  mergePodStatus,
  normalizeStatus,
} from "../../../src/kubelet/status/mod.ts";
import {
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  isMirrorPod,
  isStaticPod,
} from "../../../src/kubelet/types/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";
import { FakeClientset } from "../../testing/fake_clientset.ts";

setLogSink(() => {});

function getTestPod(): Pod {
  return {
    kind: "Pod",
    apiVersion: "v1",
    metadata: { uid: "12345678", name: "foo", namespace: "new" },
    spec: { containers: [] },
  };
}

let messages = 0;
function getRandomPodStatus(): PodStatus {
  return { message: `message-${++messages}` };
}

function newTestManager(client: FakeClientset) {
  const podManager = new BasicPodManager();
  podManager.addPod(getTestPod());
  const m = new Manager({
    podManager,
    clock: new FakeClock(Date.UTC(2026, 10, 23)),
    kubeClient: client,
  });
  return { m, podManager, client };
}

type ActionKey = [verb: string, resource: string, subresource: string];
const getAction: ActionKey = ["get", "pods", ""];
const patchAction: ActionKey = ["patch", "pods", "status"];
const deleteAction: ActionKey = ["delete", "pods", ""];

// Go's consumeUpdates: a pending change means one syncBatch(false).
async function consumeUpdates(m: Manager): Promise<number> {
  let updates = 0;
  while (m.consumeUpdate()) updates += await m.syncBatch(false);
  return updates;
}

async function verifyActions(m: Manager, client: FakeClientset, expected: ActionKey[]) {
  await consumeUpdates(m);
  const actions = client.actions.map((a): ActionKey => [a.verb, a.resource, a.subresource]);
  client.clearActions();
  assertEquals(actions, expected);
}

// Go's testSyncBatch: make the pod manager's (API) statuses equal the cache first, so that
// syncBatch(true) finds nothing to reconcile.
async function testSyncBatch(m: Manager, podManager: BasicPodManager): Promise<number> {
  for (const pod of podManager.getPods()) {
    const status = m.getPodStatus(pod.metadata.uid!);
    if (!status) continue;
    podManager.updatePod({ ...pod, status });
    const mirror = podManager.getMirrorPodByPod(pod);
    if (mirror) podManager.updatePod({ ...mirror, status });
  }
  return await m.syncBatch(true);
}

Deno.test("TestSyncPodIgnoresNotFound", async () => {
  const client = new FakeClientset();
  const { m } = newTestManager(client);
  client.prependReactor("get", "pods", () => ({
    handled: true,
    err: newNotFound({ group: "", resource: "pods" }, "test-pod"),
  }));
  m.setPodStatus(getTestPod(), getRandomPodStatus());
  await verifyActions(m, client, [getAction]);
});

Deno.test("TestSyncPod", async () => {
  const testPod = getTestPod();
  const client = new FakeClientset(testPod);
  const { m } = newTestManager(client);
  m.setPodStatus(testPod, getRandomPodStatus());
  await verifyActions(m, client, [getAction, patchAction]);
  // The patch carries the UID precondition and the new status.
  const stored = await client.coreV1.pods("new").get("foo");
  assertEquals(stored.status?.message, m.getPodStatus("12345678")?.message);
});

Deno.test("TestSyncPodChecksMismatchedUID", async () => {
  const pod = getTestPod();
  pod.metadata.uid = "first";
  const differentPod = getTestPod();
  differentPod.metadata.uid = "second";
  const client = new FakeClientset(pod);
  const { m, podManager } = newTestManager(client);
  podManager.addPod(pod);
  podManager.addPod(differentPod);
  m.setPodStatus(differentPod, getRandomPodStatus());
  await verifyActions(m, client, [getAction]);
  // "Deleted and then recreated": the stale status is dropped.
  assertEquals(m.getPodStatus("second"), undefined);
});

Deno.test("TestSyncPodNoDeadlock", async (t) => {
  const client = new FakeClientset();
  const { m } = newTestManager(client);
  const pod = getTestPod();
  let ret: Pod | undefined;
  let err: Error | undefined;
  client.prependReactor("*", "pods", (action) => {
    if (action.verb === "get") {
      assertEquals(action.name, pod.metadata.name);
      return err ? { handled: true, err } : { handled: true, ret };
    }
    return { handled: false };
  });
  pod.status = {
    containerStatuses: [{ name: "c", ready: false, restartCount: 0, state: { running: {} } }],
  };
  await t.step("Pod not found.", async () => {
    err = newNotFound({ group: "", resource: "pods" }, "foo");
    m.setPodStatus(pod, getRandomPodStatus());
    await verifyActions(m, client, [getAction]);
  });
  await t.step("Pod was recreated.", async () => {
    err = undefined;
    ret = { ...getTestPod(), metadata: { ...getTestPod().metadata, uid: "other_pod" } };
    m.setPodStatus(pod, getRandomPodStatus());
    await verifyActions(m, client, [getAction]);
  });
  await t.step("Error case.", async () => {
    ret = undefined;
    err = newInternalError("intentional test error");
    m.setPodStatus(pod, getRandomPodStatus());
    await verifyActions(m, client, [getAction]);
  });
});

Deno.test("TestStaleUpdates", async () => {
  const pod = getTestPod();
  const client = new FakeClientset(pod);
  const { m } = newTestManager(client);
  const status: PodStatus = { message: "initial status" };
  m.setPodStatus(pod, status);
  status.message = "first version bump";
  m.setPodStatus(pod, status);
  status.message = "second version bump";
  m.setPodStatus(pod, status);
  // A full batch sends the latest status once.
  await m.syncBatch(true);
  assertEquals(await consumeUpdates(m), 0);
  await verifyActions(m, client, [getAction, patchAction]);
  await verifyActions(m, client, []);
  // An unchanged status sends nothing...
  m.setPodStatus(pod, status);
  assertEquals(await consumeUpdates(m), 0);
  // ...even when its version looks stale, as long as nothing changed.
  m.apiStatusVersions.set("12345678", m.apiStatusVersions.get("12345678")! - 1);
  m.setPodStatus(pod, status);
  await m.syncBatch(true);
  await verifyActions(m, client, [getAction]);
  assertEquals(await consumeUpdates(m), 0);
});

Deno.test("TestStatusEquality", () => {
  const pod: Pod = { metadata: {}, spec: { containers: [] } };
  const containerStatuses = Array.from({ length: 10 }, (_, i) => ({
    name: `container${i}`,
    ready: false,
    restartCount: 0,
  }));
  const podStatus: PodStatus = { containerStatuses };
  for (let i = 0; i < 10; i++) {
    const shuffled = [...containerStatuses].sort(() => Math.random() - 0.5);
    const old = normalizeStatus(pod, { containerStatuses: structuredClone(shuffled) });
    assert(
      isPodStatusByKubeletEqual(old, normalizeStatus(pod, structuredClone(podStatus))),
      "Order of container statuses should not affect normalized equality.",
    );
  }
  const withFeature: PodStatus = {
    ...structuredClone(podStatus),
    conditions: [{ type: "www.example.com/feature", status: "True" }],
  };
  const withOtherFeature: PodStatus = {
    ...structuredClone(podStatus),
    conditions: [{ type: "www.example.com/feature", status: "False" }],
  };
  assert(
    isPodStatusByKubeletEqual(withOtherFeature, withFeature),
    "Differences in pod condition not owned by kubelet should not affect normalized equality.",
  );
});

Deno.test("TestStaticPod", async (t) => {
  const staticPod = getTestPod();
  staticPod.metadata.annotations = { [ConfigSourceAnnotationKey]: "file" };
  const mirrorPod = getTestPod();
  mirrorPod.metadata.uid = "mirror-12345678";
  mirrorPod.metadata.annotations = {
    [ConfigSourceAnnotationKey]: "api",
    [ConfigMirrorAnnotationKey]: "mirror",
  };
  const client = new FakeClientset(mirrorPod);
  const { m, podManager } = newTestManager(client);

  podManager.addPod(staticPod);
  assert(isStaticPod(staticPod), "SetUp error: staticPod");
  const status = getRandomPodStatus();
  status.startTime = "2026-11-23T05:00:00Z";
  m.setPodStatus(staticPod, status);

  await t.step("the static pod's status is in the status manager", () => {
    const retrieved = m.getPodStatus(staticPod.metadata.uid!)!;
    assert(
      isPodStatusByKubeletEqual(normalizeStatus(staticPod, structuredClone(status)), retrieved),
    );
  });
  await t.step("no sync without a mirror pod", async () => {
    await m.syncBatch(true);
    assertEquals(client.actions, []);
  });
  await t.step("with the mirror pod, its UID finds the static pod's status", () => {
    podManager.addPod(mirrorPod);
    assert(isMirrorPod(mirrorPod), "SetUp error: mirrorPod");
    assertEquals(podManager.translatePodUID(mirrorPod.metadata.uid!), staticPod.metadata.uid);
    const retrieved = m.getPodStatus(mirrorPod.metadata.uid!)!;
    assert(
      isPodStatusByKubeletEqual(normalizeStatus(staticPod, structuredClone(status)), retrieved),
    );
  });
  await t.step("the status is synced to the mirror pod", async () => {
    assertEquals(await m.syncBatch(true), 1);
    await verifyActions(m, client, [getAction, patchAction]);
    assertEquals(
      (await client.coreV1.pods("new").get("foo")).status?.message,
      status.message,
    );
    client.clearActions();
  });
  await t.step("nothing changed: no sync", async () => {
    await testSyncBatch(m, podManager);
    await verifyActions(m, client, []);
  });
  await t.step("a new mirror pod identity: no update to the old mirror", async () => {
    podManager.removePod(mirrorPod);
    mirrorPod.metadata.uid = "new-mirror-pod";
    mirrorPod.status = {};
    podManager.addPod(mirrorPod);
    assertEquals(await m.syncBatch(true), 1);
    await verifyActions(m, client, [getAction]);
  });
});

Deno.test("TestDeletePodBeforeFinished", async () => {
  const pod = getTestPod();
  pod.metadata.deletionTimestamp = "2026-11-23T05:00:00Z";
  const client = new FakeClientset(pod);
  const { m, podManager } = newTestManager(client);
  podManager.addPod(pod);
  const status = getRandomPodStatus();
  status.phase = "Failed";
  m.setPodStatus(pod, status);
  // Not deleted: the pod is not finished yet (terminatePod was not called).
  await verifyActions(m, client, [getAction, patchAction]);
});

Deno.test("TestDeletePodFinished", async () => {
  const pod = getTestPod();
  pod.metadata.deletionTimestamp = "2026-11-23T05:00:00Z";
  const client = new FakeClientset(pod);
  const { m, podManager } = newTestManager(client);
  podManager.addPod(pod);
  m.terminatePod(pod);
  await consumeUpdates(m);
  // Finished: patched to a terminal phase, then deleted with grace 0 and the UID precondition.
  const del = client.actions.find((a) => a.verb === "delete");
  assertEquals(del?.deleteOptions, { gracePeriodSeconds: 0, preconditions: { uid: "12345678" } });
  await verifyActions(m, client, [getAction, patchAction, deleteAction]);
  assertEquals(m.getPodStatus("12345678"), undefined);
});

Deno.test("TestDoNotDeleteMirrorPods", async () => {
  const staticPod = getTestPod();
  staticPod.metadata.annotations = { [ConfigSourceAnnotationKey]: "file" };
  const mirrorPod = getTestPod();
  mirrorPod.metadata.uid = "mirror-12345678";
  mirrorPod.metadata.annotations = {
    [ConfigSourceAnnotationKey]: "api",
    [ConfigMirrorAnnotationKey]: "mirror",
  };
  mirrorPod.metadata.deletionTimestamp = "2026-11-23T05:00:00Z";
  const client = new FakeClientset(mirrorPod);
  const { m, podManager } = newTestManager(client);
  podManager.addPod(staticPod);
  podManager.addPod(mirrorPod);
  const status = getRandomPodStatus();
  status.startTime = "2026-11-23T05:00:00Z";
  m.setPodStatus(staticPod, status);
  await verifyActions(m, client, [getAction, patchAction]);
});

Deno.test("sync loop: a change is patched once; an unchanged pod is never patched again", async () => {
  const pod = getTestPod();
  const client = new FakeClientset(pod);
  const clock = new FakeClock(Date.UTC(2026, 10, 23));
  const podManager = new BasicPodManager();
  podManager.addPod(pod);
  const m = new Manager({ podManager, clock, kubeClient: client });
  m.start();
  try {
    m.setPodStatus(pod, {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [{ name: "b", ready: true, restartCount: 0 }, {
        name: "a",
        ready: true,
        restartCount: 0,
      }],
    });
    await clock.step(0);
    const patches = () => client.actions.filter((a) => a.verb === "patch").length;
    assertEquals(patches(), 1);
    // The watch would bring the patched pod back into the pod manager.
    podManager.updatePod(await client.coreV1.pods("new").get("foo"));
    client.clearActions();
    for (let i = 0; i < 6; i++) await clock.step(10_000);
    // Six reconcile passes, no request at all: the statuses were equal.
    assertEquals(client.actions, []);
  } finally {
    await m.stop();
  }
});

function getPodStatus(): PodStatus {
  return {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True" }, { type: "PodScheduled", status: "True" }],
    message: "Message",
  };
}

function conditionsEqual(left: PodCondition[] = [], right: PodCondition[] = []): boolean {
  if (left.length !== right.length) return false;
  return left.every((l) => {
    const r = right.find((c) => c.type === l.type);
    return r !== undefined && r.status === l.status && (r.reason ?? "") === (l.reason ?? "");
  });
}

Deno.test("TestMergePodStatus", async (t) => {
  const cases: {
    desc: string;
    delay: boolean;
    old: (s: PodStatus) => PodStatus;
    next: (s: PodStatus) => PodStatus;
    expect: PodStatus;
  }[] = [
    { desc: "no change", delay: false, old: (s) => s, next: (s) => s, expect: getPodStatus() },
    {
      desc: "add DisruptionTarget condition when transitioning into failed phase",
      delay: false,
      old: (s) => s,
      next: (s) => ({
        ...s,
        phase: "Failed",
        conditions: [...s.conditions!, {
          type: "DisruptionTarget",
          status: "True",
          reason: "TerminationByKubelet",
        }],
      }),
      expect: {
        phase: "Failed",
        conditions: [
          { type: "DisruptionTarget", status: "True", reason: "TerminationByKubelet" },
          { type: "Ready", status: "False", reason: "PodFailed" },
          { type: "PodScheduled", status: "True" },
          { type: "ContainersReady", status: "False", reason: "PodFailed" },
        ],
        message: "Message",
      },
    },
    {
      desc:
        "don't add DisruptionTarget condition when transitioning into failed phase, but there might still be running containers",
      delay: true,
      old: (s) => s,
      next: (s) => ({
        ...s,
        phase: "Failed",
        conditions: [...s.conditions!, {
          type: "DisruptionTarget",
          status: "True",
          reason: "TerminationByKubelet",
        }],
      }),
      expect: {
        phase: "Running",
        conditions: [{ type: "Ready", status: "True" }, { type: "PodScheduled", status: "True" }],
        message: "Message",
      },
    },
    {
      desc: "preserve DisruptionTarget condition",
      delay: false,
      old: (s) => ({
        ...s,
        conditions: [...s.conditions!, {
          type: "DisruptionTarget",
          status: "True",
          reason: "TerminationByKubelet",
        }],
      }),
      next: (s) => s,
      expect: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True" },
          { type: "PodScheduled", status: "True" },
          { type: "DisruptionTarget", status: "True", reason: "TerminationByKubelet" },
        ],
        message: "Message",
      },
    },
    {
      desc: "override DisruptionTarget condition",
      delay: false,
      old: (s) => ({
        ...s,
        conditions: [...s.conditions!, {
          type: "DisruptionTarget",
          status: "True",
          reason: "EvictedByEvictionAPI",
        }],
      }),
      next: (s) => ({
        ...s,
        phase: "Failed",
        conditions: [...s.conditions!, {
          type: "DisruptionTarget",
          status: "True",
          reason: "TerminationByKubelet",
        }],
      }),
      expect: {
        phase: "Failed",
        conditions: [
          { type: "Ready", status: "False", reason: "PodFailed" },
          { type: "ContainersReady", status: "False", reason: "PodFailed" },
          { type: "PodScheduled", status: "True" },
          { type: "DisruptionTarget", status: "True", reason: "TerminationByKubelet" },
        ],
        message: "Message",
      },
    },
    {
      desc: "don't override DisruptionTarget condition when remaining in running phase",
      delay: false,
      old: (s) => ({
        ...s,
        conditions: [...s.conditions!, {
          type: "DisruptionTarget",
          status: "True",
          reason: "EvictedByEvictionAPI",
        }],
      }),
      next: (s) => ({
        ...s,
        conditions: [...s.conditions!, {
          type: "DisruptionTarget",
          status: "True",
          reason: "TerminationByKubelet",
        }],
      }),
      expect: {
        phase: "Running",
        conditions: [
          { type: "DisruptionTarget", status: "True", reason: "EvictedByEvictionAPI" },
          { type: "Ready", status: "True" },
          { type: "PodScheduled", status: "True" },
        ],
        message: "Message",
      },
    },
    {
      desc: "readiness changes",
      delay: false,
      old: (s) => s,
      next: (s) => ({
        ...s,
        conditions: [{ type: "Ready", status: "False" }, s.conditions![1]],
      }),
      expect: {
        phase: "Running",
        conditions: [{ type: "Ready", status: "False" }, { type: "PodScheduled", status: "True" }],
        message: "Message",
      },
    },
    {
      desc: "additional pod condition",
      delay: false,
      old: (s) => ({
        ...s,
        conditions: [...s.conditions!, { type: "example.com/feature", status: "True" }],
      }),
      next: (s) => s,
      expect: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True" },
          { type: "PodScheduled", status: "True" },
          { type: "example.com/feature", status: "True" },
        ],
        message: "Message",
      },
    },
    {
      desc: "additional pod condition and readiness changes",
      delay: false,
      old: (s) => ({
        ...s,
        conditions: [...s.conditions!, { type: "example.com/feature", status: "True" }],
      }),
      next: (s) => ({
        ...s,
        conditions: [{ type: "Ready", status: "False" }, s.conditions![1]],
      }),
      expect: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "False" },
          { type: "PodScheduled", status: "True" },
          { type: "example.com/feature", status: "True" },
        ],
        message: "Message",
      },
    },
    {
      desc: "additional pod condition changes",
      delay: false,
      old: (s) => ({
        ...s,
        conditions: [...s.conditions!, { type: "example.com/feature", status: "True" }],
      }),
      next: (s) => ({
        ...s,
        conditions: [...s.conditions!, { type: "example.com/feature", status: "False" }],
      }),
      expect: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True" },
          { type: "PodScheduled", status: "True" },
          { type: "example.com/feature", status: "True" },
        ],
        message: "Message",
      },
    },
    {
      desc: "phase is transitioning to failed and no containers running",
      delay: false,
      old: (s) => ({ ...s, phase: "Running", reason: "Unknown", message: "Message" }),
      next: (s) => ({ ...s, phase: "Failed", reason: "Evicted", message: "Was Evicted" }),
      expect: {
        phase: "Failed",
        conditions: [
          { type: "Ready", status: "False", reason: "PodFailed" },
          { type: "ContainersReady", status: "False", reason: "PodFailed" },
          { type: "PodScheduled", status: "True" },
        ],
        reason: "Evicted",
        message: "Was Evicted",
      },
    },
    {
      desc: "phase is transitioning to failed and containers running",
      delay: true,
      old: (s) => ({ ...s, phase: "Running", reason: "Unknown", message: "Message" }),
      next: (s) => ({ ...s, phase: "Failed", reason: "Evicted", message: "Was Evicted" }),
      expect: {
        phase: "Running",
        conditions: [{ type: "Ready", status: "True" }, { type: "PodScheduled", status: "True" }],
        reason: "Unknown",
        message: "Message",
      },
    },
  ];
  for (const c of cases) {
    await t.step(c.desc, () => {
      const old = c.old(getPodStatus());
      const oldCopy = structuredClone(old);
      const output = mergePodStatus(old, c.next(getPodStatus()), {
        delayTransitioningToTerminal: c.delay,
        now: "2026-11-23T05:00:00Z",
      });
      assert(
        conditionsEqual(output.conditions, c.expect.conditions),
        `conditions: ${JSON.stringify(output.conditions)}`,
      );
      const { conditions: _a, ...rest } = output;
      const { conditions: _b, ...want } = c.expect;
      assertEquals(rest, want);
      assertEquals(old, oldCopy, "the old status is not modified");
    });
  }
});

Deno.test("a Ready flip is patched as kubelet sends it (Go-shaped statuses, SMP with the UID)", async () => {
  const pod = getTestPod();
  pod.spec.containers = [{ name: "app", image: "busybox" }];
  // The API's copy, as kube-apiserver serialises it.
  pod.status = {
    phase: "Running",
    conditions: [{
      type: "Ready",
      status: "False",
      reason: "ContainersNotReady",
      message: "containers with unready status: [app]",
      lastProbeTime: null,
      lastTransitionTime: "2026-11-23T05:00:00Z",
    }],
    containerStatuses: [{
      name: "app",
      ready: false,
      restartCount: 0,
      image: "busybox",
      imageID: "",
      state: { running: { startedAt: "2026-11-23T05:00:00Z" } },
      lastState: {},
    }],
    startTime: "2026-11-23T05:00:00Z",
  };
  const client = new FakeClientset(pod);
  const podManager = new BasicPodManager();
  podManager.addPod(pod);
  const clock = new FakeClock(Date.parse("2026-11-23T05:00:05Z"));
  const m = new Manager({ podManager, clock, kubeClient: client });
  m.setPodStatus(pod, {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True" }],
    containerStatuses: [{
      name: "app",
      ready: true,
      restartCount: 0,
      image: "busybox",
      state: { running: { startedAt: "2026-11-23T05:00:00Z" } },
    }],
  });
  await consumeUpdates(m);
  const patch = client.actions.find((a) => a.verb === "patch");
  assertEquals(patch?.patchType, "application/strategic-merge-patch+json");
  assertEquals(
    patch?.patch,
    '{"metadata":{"uid":"12345678"},"status":{"$setElementOrder/conditions":[{"type":"Ready"}],' +
      '"conditions":[{"lastTransitionTime":"2026-11-23T05:00:05Z","message":null,"reason":null,' +
      '"status":"True","type":"Ready"}],"containerStatuses":[{"image":"busybox","imageID":"",' +
      '"lastState":{},"name":"app","ready":true,"restartCount":0,' +
      '"state":{"running":{"startedAt":"2026-11-23T05:00:00Z"}}}]}}',
  );
});

const expectUnknownState = {
  terminated: {
    reason: "ContainerStatusUnknown",
    message: "The container could not be located when the pod was terminated",
    exitCode: 137,
  },
};

Deno.test("TestTerminatePod", () => {
  const { m } = newTestManager(new FakeClientset());
  const testPod = getTestPod();
  // The pod's status was Failed; terminatePod keeps that.
  const firstStatus: PodStatus = {
    ...getRandomPodStatus(),
    phase: "Failed",
    initContainerStatuses: [
      { name: "init-test-1", ready: false, restartCount: 0 },
      {
        name: "init-test-2",
        ready: false,
        restartCount: 0,
        state: { terminated: { reason: "InitTest", exitCode: 0 } },
      },
      {
        name: "init-test-3",
        ready: false,
        restartCount: 0,
        state: { terminated: { reason: "InitTest", exitCode: 3 } },
      },
    ],
    containerStatuses: [
      { name: "test-1", ready: false, restartCount: 0 },
      {
        name: "test-2",
        ready: false,
        restartCount: 0,
        state: { terminated: { reason: "Test", exitCode: 2 } },
      },
      {
        name: "test-3",
        ready: false,
        restartCount: 0,
        state: { terminated: { reason: "Test", exitCode: 0 } },
      },
    ],
  };
  m.setPodStatus(testPod, firstStatus);
  // A stale copy of the pod says Running.
  testPod.status = { ...getRandomPodStatus(), phase: "Running" };
  m.terminatePod(testPod);
  const status = m.getPodStatus(testPod.metadata.uid!)!;
  for (const c of [...status.containerStatuses!, ...status.initContainerStatuses!]) {
    assert(c.state?.terminated, `${c.name} terminated`);
  }
  assertEquals(status.initContainerStatuses![0].state, expectUnknownState);
  assertEquals(status.initContainerStatuses![1].state, firstStatus.initContainerStatuses![1].state);
  assertEquals(status.initContainerStatuses![2].state, firstStatus.initContainerStatuses![2].state);
  assertEquals(status.containerStatuses![0].state, expectUnknownState);
  assertEquals(status.containerStatuses![1].state, firstStatus.containerStatuses![1].state);
  assertEquals(status.containerStatuses![2].state, firstStatus.containerStatuses![2].state);
  assertEquals(status.phase, firstStatus.phase);
  assertEquals(status.message, firstStatus.message);
});

Deno.test("TestTerminatePodWaiting", () => {
  const { m } = newTestManager(new FakeClientset());
  const testPod = getTestPod();
  const firstStatus: PodStatus = {
    ...getRandomPodStatus(),
    phase: "Failed",
    initContainerStatuses: [
      { name: "init-test-1", ready: false, restartCount: 0 },
      {
        name: "init-test-2",
        ready: false,
        restartCount: 0,
        state: { terminated: { reason: "InitTest", exitCode: 0 } },
      },
      {
        name: "init-test-3",
        ready: false,
        restartCount: 0,
        state: { waiting: { reason: "InitTest" } },
      },
    ],
    containerStatuses: [
      { name: "test-1", ready: false, restartCount: 0 },
      {
        name: "test-2",
        ready: false,
        restartCount: 0,
        state: { terminated: { reason: "Test", exitCode: 2 } },
      },
      { name: "test-3", ready: false, restartCount: 0, state: { waiting: { reason: "Test" } } },
    ],
  };
  m.setPodStatus(testPod, firstStatus);
  testPod.status = { ...getRandomPodStatus(), phase: "Running" };
  m.terminatePod(testPod);
  const status = m.getPodStatus(testPod.metadata.uid!)!;
  for (const c of status.containerStatuses!) assert(c.state?.terminated, `${c.name} terminated`);
  // The trailing init container never started: it stays waiting.
  assert(status.initContainerStatuses![0].state?.terminated);
  assert(status.initContainerStatuses![1].state?.terminated);
  assert(status.initContainerStatuses![2].state?.waiting);
  assertEquals(status.initContainerStatuses![0].state, expectUnknownState);
  assertEquals(status.containerStatuses![0].state, expectUnknownState);
  assertEquals(status.containerStatuses![2].state, expectUnknownState);
  assertEquals(status.phase, firstStatus.phase);
  assertEquals(status.message, firstStatus.message);
});

Deno.test("TerminatePod: a running API pod becomes Failed; a static pod keeps its phase", () => {
  const { m } = newTestManager(new FakeClientset());
  const pod = getTestPod();
  pod.spec.containers = [{ name: "app" }];
  m.setPodStatus(pod, {
    phase: "Running",
    containerStatuses: [{ name: "app", ready: true, restartCount: 0, state: { running: {} } }],
  });
  m.terminatePod(pod);
  assertEquals(m.getPodStatus(pod.metadata.uid!)?.phase, "Failed");
  assertEquals(m.getPodStatus(pod.metadata.uid!)?.containerStatuses?.[0].state, expectUnknownState);

  const staticPod = getTestPod();
  staticPod.metadata.uid = "static";
  staticPod.metadata.annotations = { [ConfigSourceAnnotationKey]: "file" };
  m.setPodStatus(staticPod, { phase: "Running" });
  m.terminatePod(staticPod);
  assertEquals(m.getPodStatus("static")?.phase, "Running");
});

Deno.test("stop: a status patch in flight finishes unaborted; no other pod is synced after it", async () => {
  const pods: Pod[] = ["a", "b"].map((name) => ({
    ...getTestPod(),
    metadata: { uid: `uid-${name}`, name, namespace: "new" },
  }));
  const client = new FakeClientset(...pods);
  const clock = new FakeClock(Date.UTC(2026, 10, 23));
  const podManager = new BasicPodManager();
  for (const p of pods) podManager.addPod(p);
  let entered!: () => void;
  const inPatch = new Promise<void>((r) => entered = r);
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  const signals: (AbortSignal | undefined)[] = [];
  client.prependReactor("patch", "pods", async (_action, { signal }) => {
    signals.push(signal);
    entered();
    await released;
    return { handled: false };
  });
  const m = new Manager({ podManager, clock, kubeClient: client });
  m.start();
  for (const p of pods) m.setPodStatus(p, getRandomPodStatus());
  await clock.step(0);
  await inPatch;
  let stopped = false;
  const stopping = m.stop().then(() => stopped = true);
  await clock.step(2_000);
  assert(!stopped, "stop waits for the patch in flight");
  assert(signals.length === 1 && signals[0] && !signals[0].aborted, "the patch was not cut");
  release();
  await stopping;
  const verbs = client.actions.map((a) => `${a.verb} ${a.name}`);
  // The first pod's get and patch; the second pod is left for the next start.
  assertEquals(verbs, ["get a", "patch a"]);
});

Deno.test("stop: a status patch hanging past the drain time is cut, and stop ends", async () => {
  const pod = getTestPod();
  const client = new FakeClientset(pod);
  const clock = new FakeClock(Date.UTC(2026, 10, 23));
  const podManager = new BasicPodManager();
  podManager.addPod(pod);
  let entered!: () => void;
  const inPatch = new Promise<void>((r) => entered = r);
  client.prependReactor("patch", "pods", (_action, { signal }) => {
    entered();
    // A server that never answers: only the client hanging up ends the call.
    return new Promise((_, reject) =>
      signal!.addEventListener("abort", () => reject(signal!.reason))
    );
  });
  const m = new Manager({ podManager, clock, kubeClient: client });
  m.start();
  m.setPodStatus(pod, getRandomPodStatus());
  await clock.step(0);
  await inPatch;
  let stopped = false;
  const stopping = m.stop().then(() => stopped = true);
  await clock.step(2_999);
  assert(!stopped);
  await clock.step(1);
  await stopping;
  assert(stopped);
});
