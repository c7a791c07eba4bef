import assert from "node:assert/strict";
import {
  error,
  formatLine,
  getVerbosity,
  info,
  kObj,
  setLogSink,
  setVerbosity,
  V,
} from "../../src/util/log.ts";

function capture(fn: () => void): string[] {
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  try {
    fn();
  } finally {
    setLogSink(previous);
  }
  return lines;
}

Deno.test("TestFormatLine", () => {
  assert.equal(
    formatLine("info", "Probe failed", {
      probeType: "Liveness",
      pod: "default/web",
      containerName: "app",
      output: "HTTP probe failed with statuscode: 500",
    }),
    'level=info msg="Probe failed" probeType=Liveness pod=default/web containerName=app ' +
      'output="HTTP probe failed with statuscode: 500"',
  );
  assert.equal(
    formatLine("info", "x", { empty: "", n: 3, ok: true, list: ["a", "b"], quote: 'say "hi"' }),
    'level=info msg="x" empty="" n=3 ok=true list="[\\"a\\",\\"b\\"]" quote="say \\"hi\\""',
  );
});

Deno.test("TestVerbosity", () => {
  const before = getVerbosity();
  try {
    setVerbosity(2);
    const lines = capture(() => {
      V(2).info("shown", { a: 1 });
      V(3).info("hidden");
      info("always");
      error(new Error("boom"), "failed", { pod: "ns/p" });
    });
    assert.deepEqual(lines, [
      'level=info msg="shown" a=1',
      'level=info msg="always"',
      'level=error msg="failed" err=boom pod=ns/p',
    ]);
    assert.equal(V(2).enabled, true);
    assert.equal(V(3).enabled, false);
  } finally {
    setVerbosity(before);
  }
});

Deno.test("TestKObj", () => {
  assert.equal(kObj({ metadata: { name: "web", namespace: "default" } }), "default/web");
  assert.equal(kObj({ metadata: { name: "web" } }), "web");
});
