import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { EventStore } from "../../src/kubelet/kubelet_events.ts";
import { FakeClock } from "../../src/util/clock.ts";

Deno.test("TestEventStoreFoldsByKey", async (t) => {
  const clock = new FakeClock(0);
  const events = new EventStore({ clock, limit: 3 });
  const app = {
    kind: "Pod",
    name: "web",
    namespace: "default",
    uid: "u",
    fieldPath: "spec.containers{app}",
  };
  const side = { ...app, fieldPath: "spec.containers{side}" };
  const backOff = { type: "Warning", reason: "BackOff", message: "Back-off restarting" } as const;
  const summary = () =>
    events.list().map((e) => `${e.involvedObject.fieldPath} ${e.reason} x${e.count}`);

  await t.step("interleaved repeats fold into their first entry, which moves last", async () => {
    events.event(app, backOff);
    await clock.step(1000);
    events.event(side, backOff);
    await clock.step(1000);
    events.event(app, backOff);
    assertEquals(summary(), [
      "spec.containers{side} BackOff x1",
      "spec.containers{app} BackOff x2",
    ]);
    const folded = events.list().at(-1)!;
    assertEquals([folded.firstTimestamp < folded.lastTimestamp, folded.lastMs], [true, 2000]);
  });

  await t.step("a different message is another event; evicted events start over", () => {
    events.event(app, { ...backOff, message: "other" });
    events.event(app, { type: "Normal", reason: "Started", message: "Started container app" });
    assertEquals(events.list().length, 3); // side's BackOff was evicted
    events.event(side, backOff);
    assertEquals(events.list().at(-1)!.count, 1);
  });
});
