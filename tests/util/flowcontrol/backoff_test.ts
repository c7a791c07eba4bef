import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { Backoff } from "../../../src/util/flowcontrol/backoff.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const second = 1000;

Deno.test("TestSlowBackoff", async (t) => {
  const clock = new FakeClock(0);
  const b = new Backoff(clock, { initialMs: 10 * second, maxMs: 300 * second });
  const id = "_idSlow";
  const want = [10, 20, 40, 80, 160, 300, 300];
  for (const [i, w] of want.entries()) {
    await t.step(`step ${i} → ${w}s`, async () => {
      b.next(id, clock.now());
      assertEquals(b.get(id), w * second);
      await clock.step(w * second); // the back-off elapses before the next event
    });
  }
});

Deno.test("TestIsInBackOffSince", async (t) => {
  const clock = new FakeClock(0);
  const b = new Backoff(clock, { initialMs: 10 * second, maxMs: 300 * second });
  const id = "pod_app";
  await t.step("unknown key is not backing off", () => {
    assertEquals(b.isInBackOffSince(id, clock.now()), false);
  });
  await t.step("within the first 10s after an event", async () => {
    const event = clock.now();
    b.next(id, event);
    assertEquals(b.isInBackOffSince(id, event), true);
    await clock.step(9 * second);
    assertEquals(b.isInBackOffSince(id, event), true);
    assertEquals(b.remaining(id, event), 1 * second);
    await clock.step(1 * second);
    assertEquals(b.isInBackOffSince(id, event), false);
  });
});

Deno.test("TestBackoffReset", async (t) => {
  const clock = new FakeClock(0);
  const b = new Backoff(clock, { initialMs: 10 * second, maxMs: 300 * second });
  const id = "pod_app";
  b.next(id, clock.now());
  b.next(id, clock.now());
  assertEquals(b.get(id), 20 * second);
  await t.step("an event 10 min + 1 ms after the last update starts again at 10s", async () => {
    await clock.step(600 * second + 1);
    assertEquals(b.isInBackOffSince(id, clock.now()), false);
    b.next(id, clock.now());
    assertEquals(b.get(id), 10 * second);
  });
  await t.step("gc forgets entries idle for more than 2 × max", async () => {
    await clock.step(600 * second);
    b.gc();
    assertEquals(b.size, 1);
    await clock.step(1);
    b.gc();
    assertEquals(b.size, 0);
  });
});
