/** The jittered loops and the two-step stop of src/util/wait, on the fake clock. */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { FakeClock } from "../../../src/util/clock.ts";
import { DrainingStop, jitter, jitterUntil } from "../../../src/util/wait/wait.ts";

Deno.test("jitter: adds up to maxFactor of the duration; maxFactor <= 0 means 1", () => {
  assertEquals(jitter(10_000, 0.04, () => 0.5), 10_200);
  assertEquals(jitter(10_000, 0, () => 1), 20_000);
});

Deno.test("jitterUntil (sliding): the period starts after each run; a stop ends the loop", async () => {
  const clock = new FakeClock(0);
  const stop = new AbortController();
  const runs: number[] = [];
  const loop = jitterUntil(
    () => {
      runs.push(clock.now());
    },
    1_000,
    0,
    true,
    { clock, signal: stop.signal },
  );
  await clock.step(0);
  await clock.step(1_000);
  await clock.step(1_000);
  assertEquals(runs, [0, 1_000, 2_000]);
  stop.abort();
  await loop;
  await clock.step(5_000);
  assertEquals(runs.length, 3);
});

Deno.test("DrainingStop: loops stop at once, a request in flight finishes unaborted", async () => {
  const clock = new FakeClock(0);
  const stop = new DrainingStop();
  let finish!: () => void;
  const request = new Promise<void>((r) => finish = r);
  let stopped = false;
  const done = stop.stop(request, { clock, drainMs: 3_000 }).then(() => stopped = true);
  assert(stop.stopping.aborted, "loops see the stop at once");
  await clock.step(2_999);
  assert(!stop.requests.aborted, "the request is not cut within the drain time");
  assert(!stopped, "stop waits for the request");
  finish();
  await done;
  await clock.step(10_000);
  assert(!stop.requests.aborted, "the drain timer is gone once the request ended");
  assertEquals(clock.pendingTimers(), 0);
});

Deno.test("DrainingStop: a request past the drain time is aborted, then stop resolves", async () => {
  const clock = new FakeClock(0);
  const stop = new DrainingStop();
  // Like fetch: the request only ends when its signal aborts.
  const request = new Promise<void>((resolve) => {
    stop.requests.addEventListener("abort", () => resolve());
  });
  let stopped = false;
  const done = stop.stop(request, { clock, drainMs: 3_000 }).then(() => stopped = true);
  await clock.step(2_999);
  assert(!stopped && !stop.requests.aborted);
  await clock.step(1);
  assert(stop.requests.aborted);
  await done;
  assert(stopped);
});
