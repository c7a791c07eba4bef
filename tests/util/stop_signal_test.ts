/**
 * Tests for the stop signal the kubelet's sync loop consumers wait on beside their channels: a
 * waiter per call that goes away when the call's promise settles (racing one long-lived promise
 * instead kept a reaction per update received, ~0.5 per second in a soak run, until stop).
 * @module
 */
import assert from "node:assert/strict";
import { Channel } from "../../src/util/channel.ts";
import { StopSignal } from "../../src/util/stop_signal.ts";

Deno.test("TestStopSignal", async (t) => {
  await t.step("stays bounded after many races whose promises settled", async () => {
    const stop = new StopSignal();
    const ch = new Channel<number>(1);
    for (let i = 0; i < 10_000; i++) {
      const next = stop.race(ch.receive());
      assert.equal(stop.waiting, 1);
      await ch.send(i);
      assert.deepEqual(await next, { done: false, value: i });
      assert.equal(stop.waiting, 0, `after ${i + 1} receives`);
    }
    // Rejections also release their waiter.
    await assert.rejects(stop.race(Promise.reject(new Error("boom"))), /boom/);
    assert.equal(stop.waiting, 0);
  });

  await t.step("stop ends a pending race with undefined and every later one at once", async () => {
    const stop = new StopSignal();
    const ch = new Channel<number>(0);
    const pending = stop.race(ch.receive());
    assert.equal(stop.stopped, false);
    stop.stop();
    stop.stop();
    assert.equal(stop.stopped, true);
    assert.equal(await pending, undefined);
    assert.equal(stop.waiting, 0);
    assert.equal(await stop.race(Promise.resolve(1)), undefined);
    assert.equal(stop.waiting, 0);
  });
});
