/**
 * Token-bucket limiter on the fake clock (client-go throttle_test.go: TestBasicThrottle,
 * TestIncrementThrottle, TestThrottle; plus cancellation of a waiting caller).
 * @module
 */
import assert from "node:assert/strict";
import { FakeClock } from "../../../src/util/clock.ts";
import { TokenBucketRateLimiter } from "../../../src/util/flowcontrol/throttle.ts";

Deno.test("TestBasicThrottle", () => {
  const r = new TokenBucketRateLimiter(new FakeClock(0), { qps: 1, burst: 3 });
  for (let i = 0; i < 3; i++) assert.equal(r.tryAccept(), true, `token ${i}`);
  assert.equal(r.tryAccept(), false);
});

Deno.test("TestIncrementThrottle", async () => {
  const clock = new FakeClock(0);
  const r = new TokenBucketRateLimiter(clock, { qps: 1, burst: 1 });
  assert.equal(r.tryAccept(), true);
  assert.equal(r.tryAccept(), false);
  await clock.step(999);
  assert.equal(r.tryAccept(), false);
  await clock.step(1);
  assert.equal(r.tryAccept(), true);
});

Deno.test("TestThrottle: waiters are served at qps after the burst", async () => {
  const clock = new FakeClock(0);
  const r = new TokenBucketRateLimiter(clock, { qps: 50, burst: 100 });
  const doneAt: number[] = [];
  const all: Promise<void>[] = [];
  for (let i = 0; i < 110; i++) all.push(r.wait().then(() => void doneAt.push(clock.now())));
  await clock.step(0);
  assert.equal(doneAt.length, 100, "the burst passes at once");
  await clock.step(200);
  assert.equal(doneAt.length, 110, "ten more after 10 × 20 ms");
  await Promise.all(all);
  assert.deepStrictEqual(doneAt.slice(100), [20, 40, 60, 80, 100, 120, 140, 160, 180, 200]);
});

Deno.test("TestThrottle: an aborted waiter gives its reservation back", async () => {
  const clock = new FakeClock(0);
  const r = new TokenBucketRateLimiter(clock, { qps: 1, burst: 1 });
  await r.wait();
  const ctrl = new AbortController();
  const waiting = r.wait({ signal: ctrl.signal });
  ctrl.abort(new Error("cancelled"));
  await assert.rejects(waiting, /cancelled/);
  await clock.step(1000);
  assert.equal(r.tryAccept(), true, "the token refilled after 1 s is still there");
  assert.equal(clock.pendingTimers(), 0);
});
