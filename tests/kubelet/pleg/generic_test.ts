/**
 * The generic PLEG: events from consecutive relists of a scripted runtime, as kubelet's
 * pleg/generic_test.go (TestRelisting, TestEventChannelFull, TestRelistingWithSandboxes,
 * TestHealthy), plus the relist period on the fake clock.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type {
  RuntimeContainer,
  RuntimeContainerState,
  RuntimePod,
} from "../../../src/kubelet/container/runtime.ts";
import { GenericPLEG, type PodLifecycleEvent } from "../../../src/kubelet/pleg/generic.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";

log.setLogSink(() => {});

function container(id: string, state: RuntimeContainerState): RuntimeContainer {
  return { id: { type: "fake", id }, name: id, state, hash: "", createdAt: 0 };
}

function pod(id: string, containers: RuntimeContainer[], sandboxes: RuntimeContainer[] = []) {
  return { id, name: id, namespace: "ns", containers, sandboxes } satisfies RuntimePod;
}

class FakeLister {
  pods: RuntimePod[] = [];
  error?: Error;
  calls = 0;
  getPods(): Promise<RuntimePod[]> {
    this.calls++;
    return this.error ? Promise.reject(this.error) : Promise.resolve(structuredClone(this.pods));
  }
}

function drain(pleg: GenericPLEG): PodLifecycleEvent[] {
  const events: PodLifecycleEvent[] = [];
  for (;;) {
    const next = pleg.watch().tryReceive();
    if (!next || next.done) return events;
    events.push(next.value);
  }
}

const sortEvents = (events: PodLifecycleEvent[]) =>
  [...events].sort((a, b) =>
    `${a.id}${a.data}${a.type}`.localeCompare(`${b.id}${b.data}${b.type}`)
  );

Deno.test("TestRelisting", async () => {
  const runtime = new FakeLister();
  const pleg = new GenericPLEG({ runtime, clock: new FakeClock(0) });
  runtime.pods = [
    pod("1234", [
      container("c1", "exited"),
      container("c2", "running"),
      container("c3", "unknown"),
    ]),
    pod("4567", [container("c1", "exited")]),
  ];
  await pleg.relist();
  // Every container is new: events for running and exited ones; unknown is not sent.
  assertEquals(
    sortEvents(drain(pleg)),
    sortEvents([
      { id: "1234", type: "ContainerDied", data: "c1" },
      { id: "1234", type: "ContainerStarted", data: "c2" },
      { id: "4567", type: "ContainerDied", data: "c1" },
    ]),
  );

  // Nothing changed: no events.
  await pleg.relist();
  assertEquals(drain(pleg), []);

  runtime.pods = [
    pod("1234", [
      container("c2", "exited"),
      container("c3", "running"),
      container("c4", "running"),
    ]),
    pod("4567", [container("c4", "running")]),
  ];
  await pleg.relist();
  assertEquals(
    sortEvents(drain(pleg)),
    sortEvents([
      { id: "1234", type: "ContainerRemoved", data: "c1" },
      { id: "1234", type: "ContainerDied", data: "c2" },
      { id: "1234", type: "ContainerStarted", data: "c3" },
      { id: "1234", type: "ContainerStarted", data: "c4" },
      { id: "4567", type: "ContainerRemoved", data: "c1" },
      { id: "4567", type: "ContainerStarted", data: "c4" },
    ]),
  );

  // A running container that disappears died and was removed; a pod that disappears is forgotten.
  runtime.pods = [pod("1234", [container("c2", "exited"), container("c3", "running")])];
  await pleg.relist();
  assertEquals(
    sortEvents(drain(pleg)),
    sortEvents([
      { id: "1234", type: "ContainerDied", data: "c4" },
      { id: "1234", type: "ContainerRemoved", data: "c4" },
      { id: "4567", type: "ContainerDied", data: "c4" },
      { id: "4567", type: "ContainerRemoved", data: "c4" },
    ]),
  );
});

Deno.test("TestRelistingWithSandboxes", async () => {
  const runtime = new FakeLister();
  const pleg = new GenericPLEG({ runtime, clock: new FakeClock(0) });
  runtime.pods = [pod("1234", [], [container("s1", "running")])];
  await pleg.relist();
  assertEquals(drain(pleg), [{ id: "1234", type: "ContainerStarted", data: "s1" }]);
  runtime.pods = [pod("1234", [], [container("s1", "exited")])];
  await pleg.relist();
  assertEquals(drain(pleg), [{ id: "1234", type: "ContainerDied", data: "s1" }]);
});

Deno.test("TestRelistingEventOrder", async () => {
  // Events of one pod come in the order of the old listing's containers and sandboxes, then the
  // current listing's new ones (kubelet's getContainersFromPods over old, then new).
  const runtime = new FakeLister();
  const pleg = new GenericPLEG({ runtime, clock: new FakeClock(0) });
  runtime.pods = [pod("1234", [container("c1", "running")], [container("s1", "running")])];
  await pleg.relist();
  drain(pleg);
  runtime.pods = [
    pod("1234", [container("c2", "running"), container("c1", "exited")], [
      container("s2", "running"),
      container("s1", "running"),
    ]),
  ];
  await pleg.relist();
  assertEquals(drain(pleg), [
    { id: "1234", type: "ContainerDied", data: "c1" },
    { id: "1234", type: "ContainerStarted", data: "c2" },
    { id: "1234", type: "ContainerStarted", data: "s2" },
  ]);
  // Unchanged: nothing; then everything gone: died (if running) and removed, in the old order.
  await pleg.relist();
  assertEquals(drain(pleg), []);
  runtime.pods = [];
  await pleg.relist();
  assertEquals(drain(pleg), [
    { id: "1234", type: "ContainerDied", data: "c2" },
    { id: "1234", type: "ContainerRemoved", data: "c2" },
    { id: "1234", type: "ContainerRemoved", data: "c1" },
    { id: "1234", type: "ContainerDied", data: "s2" },
    { id: "1234", type: "ContainerRemoved", data: "s2" },
    { id: "1234", type: "ContainerDied", data: "s1" },
    { id: "1234", type: "ContainerRemoved", data: "s1" },
  ]);
});

Deno.test("TestEventChannelFull", async () => {
  const runtime = new FakeLister();
  const pleg = new GenericPLEG({ runtime, clock: new FakeClock(0), capacity: 2 });
  runtime.pods = [
    pod("1234", [
      container("c1", "running"),
      container("c2", "running"),
      container("c3", "running"),
    ]),
  ];
  await pleg.relist();
  // Events beyond the capacity are dropped, not queued without bound.
  assertEquals(drain(pleg).length, 2);
});

Deno.test("TestHealthy", async () => {
  const clock = new FakeClock(0);
  const runtime = new FakeLister();
  const pleg = new GenericPLEG({ runtime, clock, relistThresholdMs: 60_000 });
  assertEquals(pleg.healthy().ok, false);
  await pleg.relist();
  assertEquals(pleg.healthy().ok, true);
  // A failing runtime does not move the relist time.
  runtime.error = new Error("unavailable");
  await clock.step(61_500);
  await pleg.relist();
  // Go's %v of the two durations, as kubelet's Healthy prints them.
  assertEquals(pleg.healthy(), {
    ok: false,
    message: "pleg was last seen active 1m1.5s ago; threshold is 1m0s",
  });
});

Deno.test("TestRelistPeriod", async () => {
  const clock = new FakeClock(0);
  const runtime = new FakeLister();
  const pleg = new GenericPLEG({ runtime, clock });
  pleg.start();
  try {
    await clock.step(0);
    assertEquals(runtime.calls, 1);
    for (let i = 0; i < 5; i++) await clock.step(1000);
    // Once at start, then once a second.
    assertEquals(runtime.calls, 6);
  } finally {
    await pleg.stop();
  }
  await clock.step(5000);
  assertEquals(runtime.calls, 6);
  assertEquals(pleg.watch().closed, true);
});

Deno.test("TestWaitNewerThan", async (t) => {
  // kubelet's cache.GetNewerThan on the global timestamp: a relist that began after minTime, and
  // is done, lets the waiter go; a failed relist does not.
  const clock = new FakeClock(0);
  const runtime = new FakeLister();
  const pleg = new GenericPLEG({ runtime, clock });
  pleg.start();
  try {
    await clock.step(0);
    assertEquals(runtime.calls, 1);
    let released = false;
    const waiting = pleg.waitNewerThan(clock.now()).then(() => released = true);
    await t.step("not by the relist that began at minTime", async () => {
      await clock.step(500);
      assertEquals(released, false);
    });
    await t.step("not by a failed relist", async () => {
      runtime.error = new Error("unavailable");
      await clock.step(500);
      assertEquals(runtime.calls, 2);
      assertEquals(released, false);
    });
    await t.step("by the next relist that succeeds", async () => {
      runtime.error = undefined;
      await clock.step(1000);
      await waiting;
      assertEquals(released, true);
    });
    await t.step("at once when a newer relist is done already", async () => {
      let now = false;
      await pleg.waitNewerThan(clock.now() - 1).then(() => now = true);
      assertEquals(now, true);
    });
  } finally {
    await pleg.stop();
  }
  await t.step("at once when stopped", async () => {
    await pleg.waitNewerThan(clock.now() + 10_000);
  });
});

Deno.test("TestWaitNewerThanReleasedByStop", async () => {
  const clock = new FakeClock(0);
  const pleg = new GenericPLEG({ runtime: new FakeLister(), clock });
  pleg.start();
  await clock.step(0);
  const waiting = pleg.waitNewerThan(clock.now());
  await pleg.stop();
  await waiting;
});

Deno.test("TestWaitNewerThanAfterTheWallClockSteppedBack", async () => {
  // Go's times carry a monotonic reading; Date.now() does not. A relist begun after the wait
  // releases it even when its start reads earlier than minTime.
  const fake = new FakeClock(100_000);
  let stepBack = 0;
  const clock = {
    now: () => fake.now() - stepBack,
    since: (start: number) => fake.now() - stepBack - start,
    afterFunc: (ms: number, fn: () => void) => fake.afterFunc(ms, fn),
    sleep: (ms: number, options?: { signal?: AbortSignal }) => fake.sleep(ms, options),
  };
  const pleg = new GenericPLEG({ runtime: new FakeLister(), clock });
  pleg.start();
  try {
    await fake.step(0);
    let released = false;
    const waiting = pleg.waitNewerThan(clock.now()).then(() => released = true);
    stepBack = 60_000;
    await fake.step(1000);
    await waiting;
    assertEquals(released, true);
  } finally {
    await pleg.stop();
  }
});
