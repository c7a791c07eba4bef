import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { EventStore } from "../../../src/kubelet/kubelet_events.ts";
import { newHandler } from "../../../src/kubelet/server/server.ts";
import { newProberMetrics } from "../../../src/kubelet/prober/metrics.ts";
import { FakeClock } from "../../../src/util/clock.ts";

function source() {
  const events = new EventStore({ clock: new FakeClock(0), limit: 3 });
  const metrics = newProberMetrics();
  return {
    events,
    metrics,
    pods: () => [{
      metadata: { name: "web", namespace: "default", uid: "u1" },
      spec: { containers: [{ name: "app" }] },
      status: { phase: "Running" as const },
    }],
  };
}

Deno.test("TestServerEndpoints", async (t) => {
  const s = source();
  const handler = newHandler(s);
  const get = (path: string) => handler(new Request(`http://127.0.0.1${path}`));
  await t.step("/healthz", async () => {
    assertEquals(await (await get("/healthz")).text(), "ok");
  });
  await t.step("/pods", async () => {
    const body = await (await get("/pods")).json();
    assertEquals(body.kind, "PodList");
    assertEquals(body.items[0].status.phase, "Running");
  });
  await t.step("/events folds repeats and keeps the newest `limit`", async () => {
    const ref = { kind: "Pod", name: "web", namespace: "default", uid: "u1" };
    for (const m of ["a", "b", "b", "c", "d"]) {
      s.events.event(ref, { type: "Normal", reason: "R", message: m });
    }
    const body = await (await get("/events")).json();
    assertEquals(body.items.map((e: { message: string; count: number }) => [e.message, e.count]), [
      ["b", 2],
      ["c", 1],
      ["d", 1],
    ]);
  });
  await t.step("/metrics/probes", async () => {
    s.metrics.proberResults.inc({
      probe_type: "Liveness",
      result: "failed",
      container: "app",
      pod: "web",
      namespace: "default",
      pod_uid: "u1",
    });
    const res = await get("/metrics/probes");
    assert(res.headers.get("content-type")?.startsWith("text/plain"));
    assert((await res.text()).includes("prober_probe_total{"));
  });
  await t.step("unknown path → 404, POST → 405", async () => {
    assertEquals((await get("/nope")).status, 404);
    assertEquals((await handler(new Request("http://x/pods", { method: "POST" }))).status, 405);
  });
});
