import assert from "node:assert/strict";
import {
  error,
  formatLine,
  getVerbosity,
  info,
  klogHeader,
  kObj,
  setLogFormat,
  setLogSink,
  setVerbosity,
  V,
  warning,
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

// The part after klog's header.
function body(line: string): string {
  return line.slice(line.indexOf("] ") + 2);
}

// 2026-11-23 03:04:05.123456 in local time, as klog prints it.
const at = new Date(2026, 10, 23, 3, 4, 5, 123).getTime() + 0.456;

Deno.test("TestKlogHeader", () => {
  assert.equal(
    klogHeader("I", { now: at, pid: 12345, caller: "kubelet.ts:42" }),
    "I1123 03:04:05.123456   12345 kubelet.ts:42] ",
  );
  // The pid is right-aligned in seven columns; a longer one pushes the rest right.
  assert.equal(
    klogHeader("E", { now: at, pid: 7, caller: "a.ts:1" }),
    "E1123 03:04:05.123456       7 a.ts:1] ",
  );
  assert.equal(
    klogHeader("W", { now: at, pid: 123456789, caller: "a.ts:1" }),
    "W1123 03:04:05.123456 123456789 a.ts:1] ",
  );
});

Deno.test("TestFormatLine", () => {
  assert.equal(
    formatLine("info", "Probe failed", {
      probeType: "Liveness",
      pod: "default/web",
      containerName: "app",
      output: "HTTP probe failed with statuscode: 500",
    }, { now: at, pid: 12345, caller: "prober.ts:120" }),
    'I1123 03:04:05.123456   12345 prober.ts:120] "Probe failed" probeType="Liveness" ' +
      'pod="default/web" containerName="app" output="HTTP probe failed with statuscode: 500"',
  );
  assert.equal(
    body(formatLine("info", "x", {
      empty: "",
      n: 3,
      ok: true,
      list: ["a", "b"],
      quote: 'say "hi"',
      missing: undefined,
    })),
    '"x" empty="" n=3 ok=true list=["a","b"] quote="say \\"hi\\"" missing=<nil>',
  );
});

Deno.test("TestCallerIsTheLoggingLine", () => {
  const lines = capture(() => info("here"));
  assert.match(lines[0], /^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ log_test\.ts:\d+\] "here"$/);
  assert.ok(lines[0].includes(` ${Deno.pid} `));
});

Deno.test("TestVerbosity", () => {
  const before = getVerbosity();
  try {
    setVerbosity(2);
    const lines = capture(() => {
      V(2).info("shown", { a: 1 });
      V(3).info("hidden");
      info("always");
      warning("careful");
      error(new Error("boom"), "failed", { pod: "ns/p" });
    });
    assert.deepEqual(lines.map((l) => [l[0], body(l)]), [
      ["I", '"shown" a=1'],
      ["I", '"always"'],
      ["W", '"careful"'],
      ["E", '"failed" err="boom" pod="ns/p"'],
    ]);
    assert.equal(V(2).enabled, true);
    assert.equal(V(3).enabled, false);
    // A logger keeps the verdict of the verbosity it was taken at; raising it enables level 3.
    const taken = V(3);
    setVerbosity(3);
    assert.equal(V(3).enabled, true);
    assert.equal(taken.enabled, false);
    assert.deepEqual(capture(() => V(3).info("now shown")).map(body), ['"now shown"']);
  } finally {
    setVerbosity(before);
  }
});

Deno.test("TestJSONFormat", () => {
  const before = getVerbosity();
  setLogFormat("json");
  try {
    setVerbosity(4);
    const lines = capture(() => {
      V(4).info("Probe failed", { probeType: "Liveness", n: 3 });
      error(new Error("boom"), "failed", { pod: "ns/p" });
    });
    const [a, b] = lines.map((l) => JSON.parse(l));
    assert.equal(typeof a.ts, "number");
    assert.match(a.caller, /^util\/log_test\.ts:\d+$/);
    assert.deepEqual(Object.keys(a), ["ts", "caller", "msg", "v", "probeType", "n"]);
    assert.deepEqual([a.msg, a.v, a.probeType, a.n], ["Probe failed", 4, "Liveness", 3]);
    assert.deepEqual(Object.keys(b), ["ts", "caller", "msg", "err", "pod"]);
    assert.deepEqual([b.msg, b.err, b.pod], ["failed", "boom", "ns/p"]);
    assert.ok(Math.abs(a.ts - Date.now()) < 60_000);
  } finally {
    setLogFormat("text");
    setVerbosity(before);
  }
});

Deno.test("TestKObj", () => {
  assert.equal(kObj({ metadata: { name: "web", namespace: "default" } }), "default/web");
  assert.equal(kObj({ metadata: { name: "web" } }), "web");
});
