/**
 * Tests for the injectable clock: the fake clock only moves when stepped and fires timers in time
 * order; timers can be stopped; sleeps can be aborted.
 * @module
 */
import assert from "node:assert/strict";
import { FakeClock, RealClock } from "../../src/util/clock.ts";

Deno.test("TestFakeClock", async (t) => {
  await t.step("timers fire only when stepped, in time order", async () => {
    const clock = new FakeClock(1000);
    const fired: string[] = [];
    clock.afterFunc(300, () => fired.push("300"));
    clock.afterFunc(100, () => fired.push("100"));
    clock.afterFunc(200, () => fired.push("200"));
    assert.deepEqual(fired, []);
    assert.equal(clock.pendingTimers(), 3);
    assert.equal(clock.nextTimerAt(), 1100);

    await clock.step(99);
    assert.deepEqual(fired, []);
    await clock.step(1);
    assert.deepEqual(fired, ["100"]);
    await clock.step(500);
    assert.deepEqual(fired, ["100", "200", "300"]);
    assert.equal(clock.now(), 1600);
    assert.equal(clock.pendingTimers(), 0);
  });

  await t.step("timers due at the same time fire in registration order", async () => {
    const clock = new FakeClock(0);
    const fired: number[] = [];
    for (let i = 0; i < 5; i++) clock.afterFunc(10, () => fired.push(i));
    await clock.step(10);
    assert.deepEqual(fired, [0, 1, 2, 3, 4]);
  });

  await t.step("each timer sees the time it was due at", async () => {
    const clock = new FakeClock(0);
    const seen: number[] = [];
    clock.afterFunc(10, () => seen.push(clock.now()));
    clock.afterFunc(25, () => seen.push(clock.now()));
    await clock.step(100);
    assert.deepEqual(seen, [10, 25]);
    assert.equal(clock.now(), 100);
  });

  await t.step("a timer set by a firing timer fires in the same step if due", async () => {
    const clock = new FakeClock(0);
    const fired: number[] = [];
    clock.afterFunc(10, () => {
      fired.push(clock.now());
      clock.afterFunc(10, () => fired.push(clock.now()));
      clock.afterFunc(1000, () => fired.push(clock.now()));
    });
    await clock.step(50);
    assert.deepEqual(fired, [10, 20]);
    assert.equal(clock.pendingTimers(), 1);
  });

  await t.step("stop() cancels a pending timer once", async () => {
    const clock = new FakeClock(0);
    let fired = false;
    const timer = clock.afterFunc(10, () => fired = true);
    assert.equal(timer.stop(), true);
    assert.equal(timer.stop(), false);
    await clock.step(100);
    assert.equal(fired, false);
    assert.equal(clock.pendingTimers(), 0);
  });

  await t.step("stop() after firing returns false", async () => {
    const clock = new FakeClock(0);
    const timer = clock.afterFunc(10, () => {});
    await clock.step(10);
    assert.equal(timer.stop(), false);
  });

  await t.step("since() measures fake time", async () => {
    const clock = new FakeClock(5000);
    const start = clock.now();
    await clock.step(1234);
    assert.equal(clock.since(start), 1234);
  });

  await t.step("setTime() moves the time without firing", async () => {
    const clock = new FakeClock(0);
    let fired = false;
    clock.afterFunc(10, () => fired = true);
    clock.setTime(100);
    assert.equal(fired, false);
    await clock.step(0);
    assert.equal(fired, true);
  });

  await t.step("sleep resolves when the time is stepped past it", async () => {
    const clock = new FakeClock(0);
    let woke = false;
    const sleeping = clock.sleep(1000).then(() => woke = true);
    await clock.step(999);
    assert.equal(woke, false);
    await clock.step(1);
    await sleeping;
    assert.equal(woke, true);
  });

  await t.step("an aborted sleep rejects with the reason and leaves no timer", async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const sleeping = clock.sleep(1000, { signal: controller.signal });
    assert.equal(clock.pendingTimers(), 1);
    controller.abort(new Error("stopped"));
    await assert.rejects(sleeping, { message: "stopped" });
    assert.equal(clock.pendingTimers(), 0);
  });

  await t.step("a sleep with an already aborted signal rejects at once", async () => {
    const clock = new FakeClock(0);
    const signal = AbortSignal.abort(new Error("too late"));
    await assert.rejects(clock.sleep(1000, { signal }), { message: "too late" });
    assert.equal(clock.pendingTimers(), 0);
  });
});

Deno.test("TestRealClock", async (t) => {
  const clock = new RealClock();

  await t.step("afterFunc runs the callback", async () => {
    const fired = await new Promise<boolean>((resolve) => clock.afterFunc(1, () => resolve(true)));
    assert.equal(fired, true);
  });

  await t.step("a stopped timer never runs", async () => {
    let fired = false;
    const timer = clock.afterFunc(1, () => fired = true);
    assert.equal(timer.stop(), true);
    assert.equal(timer.stop(), false);
    // A later timer firing shows the stopped one had its chance and did not run.
    await clock.sleep(5);
    assert.equal(fired, false);
  });

  await t.step("sleep aborts with the signal's reason", async () => {
    const controller = new AbortController();
    const sleeping = clock.sleep(60_000, { signal: controller.signal });
    controller.abort(new Error("cancelled"));
    await assert.rejects(sleeping, { message: "cancelled" });
  });

  await t.step("now and since use the wall clock", () => {
    const start = clock.now();
    assert.ok(Math.abs(start - Date.now()) < 1000);
    assert.ok(clock.since(start) >= 0);
  });
});

Deno.test("TestRealClockLongDelay", async (t) => {
  // Global fake timers stand in for setTimeout/Date, so 30 days pass without waiting.
  const { install } = await import("@sinonjs/fake-timers");
  const fake = install({ toFake: ["setTimeout", "clearTimeout", "Date", "performance"], now: 0 });
  try {
    const clock = new RealClock();
    const day = 24 * 3600 * 1000;

    await t.step("a delay beyond setTimeout's 2^31-1 ms fires on time, not at once", () => {
      let firedAt = -1;
      clock.afterFunc(30 * day, () => firedAt = Date.now());
      fake.tick(1);
      assert.equal(firedAt, -1, "fired at once: the delay overflowed setTimeout");
      fake.tick(2 ** 31); // the first leg ends; a second one is armed
      assert.equal(firedAt, -1);
      fake.tick(30 * day - 2 ** 31 - 2);
      assert.equal(firedAt, -1);
      fake.tick(1);
      assert.equal(firedAt, 30 * day);
    });

    await t.step("stop() cancels a long delay in its second leg", () => {
      let fired = false;
      const timer = clock.afterFunc(40 * day, () => fired = true);
      fake.tick(2 ** 31 + 5);
      assert.equal(timer.stop(), true);
      fake.tick(40 * day);
      assert.equal(fired, false);
    });
  } finally {
    fake.uninstall();
  }
});

Deno.test("TestRealClockTimerWheel", async (t) => {
  const { install } = await import("@sinonjs/fake-timers");
  const fake = install({ toFake: ["setTimeout", "clearTimeout", "Date", "performance"], now: 0 });
  try {
    const clock = new RealClock();

    await t.step("timers due in the same millisecond fire together, in order added", () => {
      const fired: number[] = [];
      for (let i = 0; i < 5; i++) clock.afterFunc(10, () => fired.push(i));
      clock.afterFunc(5, () => fired.push(-1));
      fake.tick(9);
      assert.deepEqual(fired, [-1]);
      fake.tick(1);
      assert.deepEqual(fired, [-1, 0, 1, 2, 3, 4]);
    });

    await t.step("a timer added by a firing callback waits for a later turn", () => {
      const fired: string[] = [];
      clock.afterFunc(1, () => {
        fired.push("a");
        clock.afterFunc(0, () => fired.push("c"));
      });
      clock.afterFunc(1, () => fired.push("b"));
      fake.tick(1);
      assert.deepEqual(fired, ["a", "b"]);
      fake.tick(1);
      assert.deepEqual(fired, ["a", "b", "c"]);
    });

    await t.step("a throwing callback does not keep the others from running", () => {
      const fired: number[] = [];
      clock.afterFunc(3, () => fired.push(1));
      clock.afterFunc(3, () => {
        throw new Error("boom");
      });
      clock.afterFunc(3, () => fired.push(3));
      assert.throws(() => fake.tick(3), { message: "boom" });
      assert.deepEqual(fired, [1, 3]);
      // The wheel keeps working afterwards.
      clock.afterFunc(2, () => fired.push(4));
      fake.tick(2);
      assert.deepEqual(fired, [1, 3, 4]);
    });

    await t.step("stopping every timer leaves no setTimeout armed", () => {
      const timers = [clock.afterFunc(50, () => {}), clock.afterFunc(60_000, () => {})];
      assert.ok(fake.countTimers() > 0);
      for (const timer of timers) timer.stop();
      assert.equal(fake.countTimers(), 0);
    });
  } finally {
    fake.uninstall();
  }
});
