/**
 * bench/startup_timeline.ts: each pod's phases from an agent's klog (the lines after its last
 * `SyncLoop ADD`) and its creation from the audit log, then p50 / p99 per phase.
 * @module
 */
import assert from "node:assert/strict";
import {
  addCreated,
  formatTimeline,
  parseAgentLog,
  summarise,
} from "../../bench/startup_timeline.ts";

// Two starts of fp-0 in one log (an agent started twice): only the second counts.
const log = [
  'I1127 10:00:00.000000    1 kubelet.go:2] "SyncLoop ADD" source="api" pods=["default/fp-0"]',
  'I1127 10:00:05.000000    1 kuberuntime_manager.go:1] "Created PodSandbox for pod" pod="default/fp-0"',
  'I1127 10:25:11.100000    1 kubelet.go:2] "SyncLoop ADD" source="api" pods=["default/fp-0"]',
  'I1127 10:25:11.100000    1 kubelet.go:2] "SyncLoop ADD" source="api" pods=["default/other"]',
  'I1127 10:25:13.000000    1 kuberuntime_manager.go:1] "Created PodSandbox for pod" podSandboxID="x" pod="default/fp-0"',
  'I1127 10:25:13.050000    1 event.go:3] "Event occurred" object="default/fp-0" kind="Pod" type="Normal" reason="Pulled" message="m"',
  'I1127 10:25:13.500000    1 event.go:3] "Event occurred" object="default/fp-0" kind="Pod" type="Normal" reason="Created" message="Container created"',
  'I1127 10:25:14.000000    1 event.go:3] "Event occurred" object="default/fp-0" kind="Pod" type="Normal" reason="Started" message="Container started"',
  'I1127 10:25:14.100000    1 prober.go:4] "Probe succeeded" probeType="Liveness" pod="default/fp-0"',
  'I1127 10:25:14.200000    1 prober.go:4] "Probe succeeded" probeType="Readiness" pod="default/fp-0"',
  'I1127 10:25:14.300000    1 status_manager.go:5] "Patch status for pod" pod="default/fp-0" patch="{\\"status\\":{\\"conditions\\":[{\\"status\\":\\"False\\",\\"type\\":\\"Ready\\"}]}}"',
  'I1127 10:25:14.400000    1 status_manager.go:5] "Patch status for pod" pod="default/fp-0" patch="{\\"status\\":{\\"conditions\\":[{\\"status\\":\\"True\\",\\"type\\":\\"Ready\\"}]}}"',
].join("\n");

const audit = [
  { verb: "create", ts: "2026-11-27T10:00:00.000000Z" },
  { verb: "create", ts: "2026-11-27T10:25:11.000000Z" },
  { verb: "create", ts: "2026-11-27T10:30:00.000000Z" }, // after the agent saw it: a later pod
].map((e) =>
  JSON.stringify({
    verb: e.verb,
    objectRef: { resource: "pods", namespace: "default", name: "fp-0" },
    requestReceivedTimestamp: e.ts,
  })
).join("\n");

Deno.test("startup timeline: phases after the last SyncLoop ADD, created from the audit log", () => {
  const timelines = parseAgentLog(log, { prefix: "fp-", year: 2026 });
  assert.deepEqual([...timelines.keys()], ["fp-0"]);
  addCreated(timelines, audit);
  const t = timelines.get("fp-0")!;
  const at = (hms: string) => Date.parse(`2026-11-27T${hms}Z`);
  assert.deepEqual(t, {
    created: at("10:25:11.000"),
    seen: at("10:25:11.100"),
    sandbox: at("10:25:13.000"),
    pulled: at("10:25:13.050"),
    containerCreated: at("10:25:13.500"),
    started: at("10:25:14.000"),
    probed: at("10:25:14.200"),
    ready: at("10:25:14.400"),
  });
  const figures = summarise(timelines);
  const ready = figures.find((f) => f.phase === "ready")!;
  assert.equal(ready.step.p50, 200);
  assert.equal(ready.since.p99, 3400);
  assert.match(
    formatTimeline(figures),
    /\| ready \| 1 \| 0\.20 \/ 0\.20 \/ 0\.20 \| 3\.40 \/ 3\.40/,
  );
});
