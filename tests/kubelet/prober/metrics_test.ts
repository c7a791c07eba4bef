/**
 * The probe metrics as a scraper sees them: kubelet's names, HELP texts (with component-base's
 * stability prefix), types and labels.
 */
import assert from "node:assert/strict";
import { newProberMetrics } from "../../../src/kubelet/prober/metrics.ts";

Deno.test("TestProberMetricsExposition", async () => {
  const metrics = newProberMetrics();
  const labels = {
    probe_type: "Readiness",
    container: "app",
    pod: "web",
    namespace: "default",
  };
  metrics.proberResults.inc({
    probe_type: "Readiness",
    result: "successful",
    container: "app",
    pod: "web",
    namespace: "default",
    pod_uid: "uid-1",
  });
  metrics.proberDuration.observe(labels, 0.02);
  const text = await metrics.registry.metrics();
  const lines = text.split("\n");
  assert.ok(lines.includes(
    "# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
  ));
  assert.ok(lines.includes("# TYPE prober_probe_total counter"));
  assert.ok(
    lines.includes(
      'prober_probe_total{probe_type="Readiness",result="successful",container="app",pod="web",namespace="default",pod_uid="uid-1"} 1',
    ),
    text,
  );
  assert.ok(lines.includes(
    "# HELP prober_probe_duration_seconds [ALPHA] Duration in seconds for a probe response.",
  ));
  assert.ok(lines.includes("# TYPE prober_probe_duration_seconds histogram"));
  assert.ok(
    lines.includes(
      'prober_probe_duration_seconds_bucket{le="0.025",probe_type="Readiness",container="app",pod="web",namespace="default"} 1',
    ),
    text,
  );
});
