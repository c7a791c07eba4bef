import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod, PodStatus } from "../../src/api/core/v1/mod.ts";
import {
  ActiveDeadlineHandler,
  DeadlineExceeded,
  deadlineExceededMessage,
} from "../../src/kubelet/active_deadline.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { rfc3339 } from "../../src/kubelet/kubelet_pods.ts";
import { FakeClock } from "../../src/util/clock.ts";

// kubelet's newTestPods, reduced: pods named pod0.. with UIDs uid0..
function newTestPods(count: number): Pod[] {
  return Array.from({ length: count }, (_, i) => ({
    metadata: { name: `pod${i}`, namespace: "default", uid: `uid${i}` },
    spec: { containers: [{ name: "app", image: "busybox" }] },
    status: {},
  }));
}

// kubelet's mockPodStatusProvider: the status of the pod with that UID.
function mockPodStatusProvider(pods: Pod[]) {
  return {
    getPodStatus: (uid: string): PodStatus | undefined =>
      pods.find((p) => p.metadata.uid === uid)?.status,
  };
}

Deno.test("TestActiveDeadlineHandler", async (t) => {
  const pods = newTestPods(5);
  const clock = new FakeClock(1_700_000_000_000);
  const recorder = new FakeRecorder();
  const handler = new ActiveDeadlineHandler(mockPodStatusProvider(pods), recorder, clock);
  const startTime = rfc3339(clock.now() - 60_000);
  pods[0].status = { startTime };
  pods[0].spec.activeDeadlineSeconds = 30;
  pods[1].status = { startTime };
  pods[1].spec.activeDeadlineSeconds = 120;
  pods[2].status = { startTime };
  pods[3].spec.activeDeadlineSeconds = 120;
  const cases: [string, Pod, boolean][] = [
    ["started 60 s ago, deadline 30 s → past", pods[0], true],
    ["started 60 s ago, deadline 120 s → not yet", pods[1], false],
    ["no deadline → never", pods[2], false],
    ["no start time → not yet", pods[3], false],
    ["neither → never", pods[4], false],
  ];
  for (const [name, pod, expected] of cases) {
    await t.step(name, () => {
      recorder.events.length = 0;
      assertEquals(handler.shouldSync(pod), expected);
      const actual = handler.shouldEvict(pod);
      assertEquals(actual.evict, expected);
      if (expected) {
        assertEquals(actual.reason, DeadlineExceeded);
        assertEquals(actual.message, deadlineExceededMessage);
        assertEquals(recorder.events, [`Normal DeadlineExceeded ${deadlineExceededMessage}`]);
        assertEquals(recorder.refs[0].name, pod.metadata.name);
      } else {
        assertEquals(recorder.events, []);
      }
    });
  }
  await t.step("the deadline is reached exactly at start + activeDeadlineSeconds", async () => {
    pods[1].status = { startTime: rfc3339(clock.now()) };
    await clock.step(119_999);
    assertEquals(handler.shouldSync(pods[1]), false);
    await clock.step(1);
    assertEquals(handler.shouldSync(pods[1]), true);
  });
  await t.step("the status provider's start time wins over the API's", () => {
    const pod: Pod = {
      ...newTestPods(1)[0],
      metadata: { name: "other", namespace: "default", uid: "uid-other" },
    };
    pod.spec.activeDeadlineSeconds = 30;
    pod.status = { startTime: rfc3339(clock.now() - 60_000) };
    // Unknown to the provider: the API's status is read.
    assertEquals(handler.shouldSync(pod), true);
    const known = { ...pod, metadata: { ...pod.metadata, uid: "uid0" } };
    pods[0].status = { startTime: rfc3339(clock.now()) };
    assertEquals(handler.shouldSync(known), false);
  });
});
