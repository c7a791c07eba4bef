/**
 * The CRI log reader: options, the line format, tail offsets, limits, timestamps, stream
 * selection, and a follow that survives a rotation. Ports cri-client's pkg/logs/logs_test.go.
 * @module
 */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import {
  findTailLineStartIndex,
  type LogOptions,
  newLogOptions,
  parseCRILog,
  readLogs,
} from "../../../src/cri_client/logs/logs.ts";
import { FakeClock, RealClock } from "../../../src/util/clock.ts";

function assertThrows(fn: () => unknown, _type: ErrorConstructor, text: string): void {
  throws(fn, (e: Error) => e.message.includes(text));
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function collector() {
  const out = { stdout: "", stderr: "", both: "" };
  return {
    out,
    sinks: {
      stdout: (b: Uint8Array) => {
        out.stdout += dec.decode(b);
        out.both += dec.decode(b);
        return Promise.resolve();
      },
      stderr: (b: Uint8Array) => {
        out.stderr += dec.decode(b);
        out.both += dec.decode(b);
        return Promise.resolve();
      },
    },
  };
}

const running = {
  containerStatus: () => Promise.resolve({ status: { state: "CONTAINER_RUNNING" } }),
};
const exited = {
  containerStatus: () => Promise.resolve({ status: { state: "CONTAINER_EXITED" } }),
};

function opts(o: Partial<LogOptions>): LogOptions {
  return { tail: -1, bytes: -1, since: undefined, follow: false, timestamp: false, ...o };
}

const threeLines = "2016-10-06T00:17:09.669794202Z stdout F line1\n" +
  "2016-10-06T00:17:10.669794202Z stderr F line2\n" +
  "2016-10-06T00:17:11.669794202Z stdout F line3\n";

Deno.test("TestLogOptions", async (t) => {
  const now = Date.parse("2016-10-06T00:17:20Z");
  await t.step("defaults read everything", () => {
    assertEquals(newLogOptions({}, now), opts({}));
  });
  await t.step("tailLines, limitBytes, follow, timestamps", () => {
    assertEquals(
      newLogOptions({ tailLines: 2, limitBytes: 10, follow: true, timestamps: true }, now),
      opts({ tail: 2, bytes: 10, follow: true, timestamp: true }),
    );
  });
  await t.step("sinceSeconds before now", () => {
    assertEquals(newLogOptions({ sinceSeconds: 10 }, now).since, { ms: now - 10_000, nanos: 0 });
  });
  await t.step("the later of sinceSeconds and sinceTime wins", () => {
    assertEquals(
      newLogOptions({ sinceSeconds: 10, sinceTime: "2016-10-06T00:17:15Z" }, now).since,
      { ms: Date.parse("2016-10-06T00:17:15Z"), nanos: 0 },
    );
    assertEquals(
      newLogOptions({ sinceSeconds: 1, sinceTime: "2016-10-06T00:17:15Z" }, now).since,
      { ms: now - 1000, nanos: 0 },
    );
  });
});

Deno.test("TestParseLog", async (t) => {
  await t.step("full line", () => {
    const msg = parseCRILog(
      enc.encode("2016-10-20T18:39:20.57606443Z stdout F cri stdout test log\n"),
    );
    assertEquals(msg.stream, "stdout");
    assertEquals(dec.decode(msg.log), "cri stdout test log\n");
    assertEquals(msg.timestampText, "2016-10-20T18:39:20.57606443Z");
  });
  await t.step("partial line loses its newline", () => {
    const msg = parseCRILog(
      enc.encode("2016-10-20T18:39:20.57606443Z stderr P cri stderr partial\n"),
    );
    assertEquals(msg.stream, "stderr");
    assertEquals(dec.decode(msg.log), "cri stderr partial");
  });
  await t.step("tags after ':' are ignored", () => {
    const msg = parseCRILog(enc.encode("2016-10-20T18:39:20.57606443Z stdout P:TAG1:TAG2 x\n"));
    assertEquals(dec.decode(msg.log), "x");
  });
  await t.step("malformed lines", () => {
    assertThrows(() => parseCRILog(enc.encode("nospace\n")), Error, "timestamp is not found");
    assertThrows(
      () => parseCRILog(enc.encode("2016 stdout F x\n")),
      Error,
      "unexpected timestamp format",
    );
    assertThrows(
      () => parseCRILog(enc.encode("2016-10-20T18:39:20.57606443Z other F x\n")),
      Error,
      'unexpected stream type "other"',
    );
    assertThrows(
      () => parseCRILog(enc.encode("2016-10-20T18:39:20.57606443Z stdout F\n")),
      Error,
      "log tag is not found",
    );
  });
  await t.step("trailing zeros of the fraction are dropped as Go prints RFC3339Nano", () => {
    assertEquals(
      parseCRILog(enc.encode("2016-10-20T18:39:20.500000000Z stdout F x\n")).timestampText,
      "2016-10-20T18:39:20.5Z",
    );
    assertEquals(
      parseCRILog(enc.encode("2016-10-20T18:39:20.000Z stdout F x\n")).timestampText,
      "2016-10-20T18:39:20Z",
    );
  });
});

Deno.test("TestFindTailLineStartIndex", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/log`;
    // More than one 1024-byte block, so the search crosses blocks.
    const lines = Array.from({ length: 100 }, (_, i) => `line ${String(i).padStart(20, "0")}\n`);
    await Deno.writeTextFile(path, lines.join(""));
    using f = await Deno.open(path);
    assertEquals(await findTailLineStartIndex(f, -1), 0);
    assertEquals(await findTailLineStartIndex(f, 0), lines.join("").length);
    assertEquals(await findTailLineStartIndex(f, 3), lines.slice(0, 97).join("").length);
    assertEquals(await findTailLineStartIndex(f, 1000), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestReadLogs", async (t) => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/0.log`;
  await Deno.writeTextFile(path, threeLines);
  const cases: Array<{ name: string; o: Partial<LogOptions>; stdoutOnly?: boolean; want: string }> =
    [
      { name: "default log options should output all lines", o: {}, want: "line1\nline2\nline3\n" },
      {
        name: "using TailLines 2 should output last 2 lines",
        o: { tail: 2 },
        want: "line2\nline3\n",
      },
      {
        name: "using TailLines 4 should output all lines when the log has less than 4 lines",
        o: { tail: 4 },
        want: "line1\nline2\nline3\n",
      },
      { name: "using TailLines 0 should output nothing", o: { tail: 0 }, want: "" },
      {
        name: "using LimitBytes 9 should output first 9 bytes",
        o: { bytes: 9 },
        want: "line1\nlin",
      },
      {
        name: "using LimitBytes 100 should output all bytes when the log has less than 100 bytes",
        o: { bytes: 100 },
        want: "line1\nline2\nline3\n",
      },
      {
        name: "using LimitBytes 3 and TailLines 1 should output 3 bytes of the last line",
        o: { bytes: 3, tail: 1 },
        want: "lin",
      },
      {
        name: "using since skips older lines",
        o: { since: { ms: Date.parse("2016-10-06T00:17:10.669Z"), nanos: 794202 } },
        want: "line2\nline3\n",
      },
      {
        name: "using timestamps prefixes each line",
        o: { timestamp: true, tail: 1 },
        want: "2016-10-06T00:17:11.669794202Z line3\n",
      },
      { name: "only stdout", o: {}, stdoutOnly: true, want: "line1\nline3\n" },
      {
        name: "follow ends when the container has exited and the log is read",
        o: { follow: true },
        want: "line1\nline2\nline3\n",
      },
      {
        name: "follow with TailLines 1 still ends at the end",
        o: { follow: true, tail: 1 },
        want: "line3\n",
      },
    ];
  try {
    for (const tc of cases) {
      await t.step(tc.name, async () => {
        const { out, sinks } = collector();
        const clock = new FakeClock();
        const done = readLogs(
          path,
          "c1",
          opts(tc.o),
          tc.stdoutOnly ? { stdout: sinks.stdout } : sinks,
          {
            runtime: exited,
            clock,
          },
        );
        if (tc.o.follow) {
          // The follow waits for the state check, then sees the container gone.
          let finished = false;
          done.then(() => finished = true, () => finished = true);
          while (!finished) await clock.step(5_000);
        }
        await done;
        assertEquals(out.both, tc.want);
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestReadLogsPartialLinesWithTimestamps", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/0.log`;
    await Deno.writeTextFile(
      path,
      "2016-10-06T00:17:09.1Z stdout P part1 \n2016-10-06T00:17:09.2Z stdout F part2\n",
    );
    const { out, sinks } = collector();
    await readLogs(path, "c1", opts({ timestamp: true }), sinks, {
      runtime: exited,
      clock: new FakeClock(),
    });
    // Only the first piece of a line carries the prefix.
    assertEquals(out.both, "2016-10-06T00:17:09.1Z part1 part2\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestReadRotatedLog", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/0.log`;
  const ac = new AbortController();
  try {
    await Deno.writeTextFile(path, "2016-10-06T00:17:09.1Z stdout F a\n");
    const { out, sinks } = collector();
    let got = Promise.withResolvers<void>();
    let want = "a\n";
    const wrapped = {
      stdout: async (b: Uint8Array) => {
        await sinks.stdout(b);
        if (out.both === want) got.resolve();
      },
    };
    const done = readLogs(path, "c1", opts({ follow: true }), wrapped, {
      runtime: running,
      clock: new RealClock(),
      signal: ac.signal,
    });
    await got.promise;
    // Growth of the live file is followed.
    got = Promise.withResolvers();
    want = "a\nb\n";
    await Deno.writeTextFile(path, "2016-10-06T00:17:09.2Z stdout F b\n", { append: true });
    await got.promise;
    // kubelet's rotation: rename, then the runtime reopens a new file under the old name.
    // The runtime still writes to the renamed file until it reopens the log: that line is read
    // before the new file's.
    await Deno.rename(path, `${path}.20161006-001710`);
    await Deno.writeTextFile(`${path}.20161006-001710`, "2016-10-06T00:17:09.25Z stdout F b2\n", {
      append: true,
    });
    got = Promise.withResolvers();
    want = "a\nb\nb2\nc\n";
    await Deno.writeTextFile(path, "2016-10-06T00:17:09.3Z stdout F c\n");
    await got.promise;
    ac.abort();
    await done;
    assertEquals(out.both, "a\nb\nb2\nc\n");
  } finally {
    ac.abort();
    await Deno.remove(dir, { recursive: true });
  }
});
