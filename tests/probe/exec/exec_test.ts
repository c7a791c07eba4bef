/**
 * Tests for the exec probe and its limited writer; mirrors kubelet's pkg/probe/exec/exec_test.go.
 * @module
 */
import assert from "node:assert/strict";
import {
  BufferWriter,
  type Cmd,
  CommandTimedOutError,
  ExitError,
  LimitWriter,
  MaximumWriteError,
  maxReadLength,
  newExecProber,
  type Writer,
} from "../../../src/probe/exec/mod.ts";
import type { ProbeResult } from "../../../src/probe/probe.ts";

const encoder = new TextEncoder();

/** kubelet's FakeCmd: `start` writes `out` to the writer it was given, then fails with `err`. */
class FakeCmd implements Cmd {
  writer?: Writer;
  stdout?: Writer;
  stderr?: Writer;
  waited = false;

  constructor(readonly out: Uint8Array, readonly err?: Error) {}

  setStdout(w: Writer): void {
    this.stdout = w;
    this.writer = w;
  }

  setStderr(w: Writer): void {
    this.stderr = w;
    this.writer = w;
  }

  start(): Promise<void> {
    if (this.writer) {
      try {
        this.writer.write(this.out);
      } catch {
        // Like kubelet's adapter: a write error (maximum write) is only logged.
      }
    }
    return this.err ? Promise.reject(this.err) : Promise.resolve();
  }

  wait(): Promise<void> {
    this.waited = true;
    return Promise.resolve();
  }
}

const tenKilobyte = "logs-123".repeat(128 * 10); // 10240 bytes
const elevenKilobyte = "logs-123".repeat(128 * 11); // 11264 bytes

interface ExecCase {
  name: string;
  execProbeTimeout: boolean;
  input: string;
  err?: Error;
  expectedStatus: ProbeResult;
  expectError: boolean;
  output: string;
}

const timeoutErr = () =>
  new CommandTimedOutError(["testcmd"], {
    timeoutMs: 1000,
    detail: "command testcmd timed out",
  });

const cases: ExecCase[] = [
  {
    name: "Ok",
    execProbeTimeout: true,
    input: "OK",
    expectedStatus: "success",
    expectError: false,
    output: "OK",
  },
  {
    name: "Ok (exit status 0)",
    execProbeTimeout: true,
    input: "OK",
    err: new ExitError(0),
    expectedStatus: "success",
    expectError: false,
    output: "OK",
  },
  {
    name: "Ok - truncated output",
    execProbeTimeout: true,
    input: elevenKilobyte,
    expectedStatus: "success",
    expectError: false,
    output: tenKilobyte,
  },
  {
    name: "Run returns error",
    execProbeTimeout: true,
    input: "",
    err: new Error("test error"),
    expectedStatus: "unknown",
    expectError: true,
    output: "",
  },
  {
    name: "Unhealthy",
    execProbeTimeout: true,
    input: "",
    err: new ExitError(1),
    expectedStatus: "failure",
    expectError: false,
    output: "",
  },
  {
    name: "Timeout",
    execProbeTimeout: true,
    input: "",
    err: timeoutErr(),
    expectedStatus: "failure",
    expectError: false,
    output: "command timed out: command testcmd timed out",
  },
  {
    name: "ExecProbeTimeout feature gate disabled",
    execProbeTimeout: false,
    input: "",
    err: timeoutErr(),
    expectedStatus: "unknown",
    expectError: true,
    output: "",
  },
];

Deno.test("TestExec", async (t) => {
  for (const tc of cases) {
    await t.step(tc.name, async () => {
      const warnings: string[] = [];
      const prober = newExecProber({
        execProbeTimeout: tc.execProbeTimeout,
        logWarning: (line) => warnings.push(line),
      });
      const fake = new FakeCmd(encoder.encode(tc.input), tc.err);
      const outcome = await prober.probe(fake);
      assert.equal(outcome.result, tc.expectedStatus);
      assert.equal(outcome.error !== undefined, tc.expectError, `error: ${outcome.error}`);
      if (tc.expectError) assert.equal(outcome.error, tc.err);
      assert.equal(outcome.output, tc.output);
      assert.equal(warnings.length, tc.execProbeTimeout ? 0 : 1);
    });
  }
});

Deno.test("TestExecDetails", async (t) => {
  await t.step("stdout and stderr share one writer", async () => {
    const fake = new FakeCmd(encoder.encode("OK"));
    await newExecProber().probe(fake);
    assert.ok(fake.stdout);
    assert.equal(fake.stdout, fake.stderr);
  });

  await t.step("wait is called after a successful start", async () => {
    const fake = new FakeCmd(encoder.encode("OK"));
    await newExecProber().probe(fake);
    assert.equal(fake.waited, true);
  });

  await t.step("wait is skipped when start fails", async () => {
    const fake = new FakeCmd(encoder.encode(""), new Error("boom"));
    await newExecProber().probe(fake);
    assert.equal(fake.waited, false);
  });

  await t.step("non-zero exit keeps the command's output", async () => {
    const fake = new FakeCmd(encoder.encode("not ready\n"), new ExitError(3));
    assert.deepEqual(await newExecProber().probe(fake), {
      result: "failure",
      output: "not ready\n",
    });
  });

  await t.step("other errors drop the output", async () => {
    const err = new Error("container not found");
    const fake = new FakeCmd(encoder.encode("partial"), err);
    assert.deepEqual(await newExecProber().probe(fake), {
      result: "unknown",
      output: "",
      error: err,
    });
  });

  await t.step("an error from wait counts like one from start", async () => {
    const fake = new FakeCmd(encoder.encode("bye"));
    fake.wait = () => Promise.reject(new ExitError(2));
    assert.deepEqual(await newExecProber().probe(fake), { result: "failure", output: "bye" });
  });

  await t.step("gate disabled logs a warning with the error text", async () => {
    const warnings: string[] = [];
    const prober = newExecProber({
      execProbeTimeout: false,
      logWarning: (line) => warnings.push(line),
    });
    await prober.probe(new FakeCmd(new Uint8Array(), timeoutErr()));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /^W\d{4} [\d:.]+ +\d+ exec\.ts:\d+\] "Exec probe timed out/);
    assert.match(warnings[0], /command testcmd timed out/);
  });
});

Deno.test("TestLimitWriter", async (t) => {
  await t.step("writes under the limit pass through", () => {
    const buf = new BufferWriter();
    const w = new LimitWriter(buf, 10);
    w.write(encoder.encode("abc"));
    w.write(encoder.encode("defg"));
    assert.equal(buf.string(), "abcdefg");
  });

  await t.step("a write reaching the limit exactly is accepted", () => {
    const buf = new BufferWriter();
    new LimitWriter(buf, 4).write(encoder.encode("abcd"));
    assert.equal(buf.string(), "abcd");
  });

  await t.step("a write crossing the limit keeps the prefix and reports maximum write", () => {
    const buf = new BufferWriter();
    const w = new LimitWriter(buf, 4);
    w.write(encoder.encode("ab"));
    assert.throws(() => w.write(encoder.encode("cdef")), MaximumWriteError);
    assert.equal(buf.string(), "abcd");
  });

  await t.step("writes after the limit are dropped with an error", () => {
    const buf = new BufferWriter();
    const w = new LimitWriter(buf, 2);
    assert.throws(() => w.write(encoder.encode("abc")), { message: "maximum write" });
    assert.throws(() => w.write(encoder.encode("d")), { message: "maximum write" });
    assert.equal(buf.string(), "ab");
  });

  await t.step("the exec probe's limit is 10 KiB", () => {
    assert.equal(maxReadLength, 10240);
    assert.equal(tenKilobyte.length, 10240);
    assert.ok(elevenKilobyte.length > 10240);
  });

  await t.step("BufferWriter copies what it is given", () => {
    const buf = new BufferWriter();
    const chunk = encoder.encode("abc");
    buf.write(chunk);
    chunk[0] = 0x78; // "x"
    assert.equal(buf.string(), "abc");
    assert.equal(buf.length, 3);
  });
});
