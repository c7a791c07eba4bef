import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { buildRows, LiveView, renderTable } from "../../../src/cmd/probelet/live_view.ts";
import { EventStore } from "../../../src/kubelet/kubelet_events.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import type { PodWithStatus } from "../../../src/kubelet/kubelet.ts";

function source(clock: FakeClock) {
  const events = new EventStore({ clock });
  const pods: PodWithStatus[] = [{
    metadata: { name: "web-node", namespace: "default", uid: "u1" },
    spec: {
      containers: [{ name: "app", livenessProbe: { exec: {} }, readinessProbe: { exec: {} } }],
    },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "False" }],
      containerStatuses: [{
        name: "app",
        ready: false,
        started: true,
        restartCount: 2,
        containerID: "embedded://abc",
        state: { waiting: { reason: "CrashLoopBackOff" } },
      }],
    },
  }];
  const results = (r: number) => ({ get: () => r });
  return {
    events,
    pods: () => pods,
    livenessManager: results(1),
    readinessManager: results(0),
    startupManager: results(-1),
  };
}

Deno.test("TestLiveViewTable", () => {
  const clock = new FakeClock(10_000);
  const s = source(clock);
  s.events.event(
    { name: "web-node", uid: "u1", fieldPath: "spec.containers{app}" },
    {
      type: "Normal",
      reason: "Killing",
      message: "Container app failed liveness probe, will be restarted",
    },
  );
  const rows = buildRows(s, clock.now() + 3000);
  assertEquals(rows.length, 1);
  assertEquals(rows[0].state, "CrashLoopBackOff");
  assertEquals(rows[0].restarts, 2);
  assertEquals(rows[0].probes, "L:fail R:ok");
  assertEquals(
    rows[0].lastEvent,
    "3s ago Killing: Container app failed liveness probe, will be restarted",
  );
  const lines = renderTable(rows, { width: 200 });
  assert(lines[0].startsWith("POD"));
  assert(lines[1].includes("default/web-node"));
  for (const l of renderTable(rows, { width: 40 })) assert(l.length <= 40);
});

Deno.test("TestLiveViewRedrawsInPlace", () => {
  const clock = new FakeClock(0);
  const out: string[] = [];
  const view = new LiveView(source(clock), {
    tty: true,
    clock,
    write: (t) => out.push(t),
    columns: () => 120,
  });
  view.render();
  view.render();
  assert(!out[0].includes("\x1b[J"));
  const esc = String.fromCharCode(27);
  assert(
    new RegExp(`^${esc}\\[\\d+A\r${esc}\\[J`).test(out[1]),
    "second frame moves up and clears",
  );
});

Deno.test("buildRows reads the pods shared and leaves them as they were", () => {
  const clock = new FakeClock(10_000);
  const s = source(clock);
  const asked: ({ shared?: boolean } | undefined)[] = [];
  const pods = s.pods();
  const before = structuredClone(pods);
  const rows = buildRows({
    ...s,
    pods: (options?: { shared?: boolean }) => {
      asked.push(options);
      return pods;
    },
  }, clock.now());
  assertEquals(rows.length, 1);
  // Every redraw would otherwise deep-copy every pod and its status.
  assertEquals(asked, [{ shared: true }]);
  assertEquals(pods, before);
});
