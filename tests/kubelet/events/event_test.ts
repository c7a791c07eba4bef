import assert from "node:assert/strict";
import { FakeRecorder, LogRecorder } from "../../../src/kubelet/events/mod.ts";
import { getVerbosity, setLogSink, setVerbosity } from "../../../src/util/log.ts";

const ref = {
  kind: "Pod",
  name: "web",
  namespace: "default",
  fieldPath: "spec.containers{app}",
};

Deno.test("TestFakeRecorder", () => {
  const r = new FakeRecorder();
  r.event(ref, { type: "Warning", reason: "Unhealthy", message: "Liveness probe failed: boom" });
  r.event(ref, {
    type: "Normal",
    reason: "Killing",
    message: "Container app failed liveness probe",
  });
  assert.deepEqual(r.events, [
    "Warning Unhealthy Liveness probe failed: boom",
    "Normal Killing Container app failed liveness probe",
  ]);
  assert.equal(r.refs[1], ref);
});

Deno.test("TestLogRecorder", async (t) => {
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  const verbosity = getVerbosity();
  const record = () =>
    new LogRecorder().event(ref, {
      type: "Warning",
      reason: "Unhealthy",
      message: "Readiness probe failed: HTTP probe failed with statuscode: 500",
    });
  try {
    await t.step("below -v=3 nothing is logged (kubelet: StartStructuredLogging(3))", () => {
      setVerbosity(2);
      record();
      assert.deepEqual(lines, []);
    });
    setVerbosity(3);
    record();
  } finally {
    setLogSink(previous);
    setVerbosity(verbosity);
  }
  assert.equal(lines.length, 1);
  assert.match(lines[0], /^I\d{4} [\d:.]+ +\d+ event\.ts:\d+\] /);
  assert.equal(
    lines[0].slice(lines[0].indexOf("] ") + 2),
    '"Event occurred" object="default/web" fieldPath="spec.containers{app}" kind="Pod" ' +
      'type="Warning" reason="Unhealthy" ' +
      'message="Readiness probe failed: HTTP probe failed with statuscode: 500"',
  );
});
