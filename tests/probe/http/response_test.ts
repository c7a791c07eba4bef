/**
 * HTTP/1.x responses read as kubelet's Go client reads them, against raw servers on 127.0.0.1:
 * the verdict table (response_cases.ts), a chunked body's trailer read within the probe deadline,
 * and the 10 MiB limit on response heads (issue 21 rows 7, 8 and 9).
 * Mirrors the cases of Go's net/http response_test.go, transfer_test.go and
 * internal/chunked_test.go, judged by kubelet's pkg/probe/http verdicts.
 * @module
 */
import assert from "node:assert/strict";
import { maxRespBodyLength, newHttpProber, newProbeRequest } from "../../../src/probe/http/mod.ts";
import {
  type ByteConn,
  ConnExchange,
  type ExchangeDeadline,
} from "../../../src/probe/http/conn.ts";
import {
  BufReader,
  maxResponseHeaderBytes,
  newBodyReader,
  readMIMEHeader,
  readResponse,
} from "../../../src/probe/http/response.ts";
import type { ProbeOutcome } from "../../../src/probe/probe.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { responseCases } from "./response_cases.ts";
import { startRawServer } from "./test_server.ts";

const bodyTimeout =
  "context deadline exceeded (Client.Timeout or context cancellation while reading body)";

// One probe of a raw answer; the clock never moves, so no case can end by the deadline.
async function probeRaw(answer: string): Promise<{ outcome: ProbeOutcome; url: string }> {
  const server = startRawServer(answer);
  try {
    const url = `${server.url}/`;
    const { request } = newProbeRequest(url);
    const prober = newHttpProber({ clock: new FakeClock(0) });
    return { outcome: await prober.probe(request!, { timeoutMs: 1000 }), url };
  } finally {
    await server.close();
  }
}

Deno.test("TestHTTPProbe response verdicts equal to Go's net/http", async (t) => {
  for (const c of responseCases) {
    await t.step(c.name, async () => {
      const { outcome, url } = await probeRaw(c.response);
      assert.deepEqual(
        { result: outcome.result, output: outcome.output, error: outcome.error?.message },
        { result: c.result, output: c.output.replaceAll("{url}", url), error: c.error },
      );
    });
  }
});

/** A deadline the test expires by hand. */
class ManualDeadline implements ExchangeDeadline {
  expired = false;
  #onExpire = new Set<() => void>();

  watch(fn: () => void): () => void {
    this.#onExpire.add(fn);
    return () => this.#onExpire.delete(fn);
  }

  expire(): void {
    this.expired = true;
    for (const fn of [...this.#onExpire]) fn();
  }
}

/**
 * The TCP connection seen by the exchange, telling when the client waits for more bytes after
 * the server's whole answer arrived: the moment a stalled server holds it.
 */
class StallWatch implements ByteConn {
  #tcp: Deno.TcpConn;
  #left: number;
  #stalled!: () => void;
  /** Resolves when a read starts with the whole answer already delivered. */
  readonly stalled = new Promise<void>((resolve) => this.#stalled = resolve);

  constructor(tcp: Deno.TcpConn, answerBytes: number) {
    this.#tcp = tcp;
    this.#left = answerBytes;
  }

  async read(p: Uint8Array): Promise<number | null> {
    if (this.#left <= 0) this.#stalled();
    const n = await this.#tcp.read(p);
    this.#left -= n ?? 0;
    return n;
  }

  write(p: Uint8Array): Promise<number> {
    return this.#tcp.write(p);
  }

  close(): void {
    this.#tcp.close();
  }
}

// Sends a request to a server that answers `answer` and then holds the connection open; reads
// the body as the prober does, expiring the deadline if the client ends up waiting on the server.
async function readBodyFromStalledServer(
  answer: string,
): Promise<{ body: string; error?: string; expired: boolean }> {
  const server = startRawServer(answer, { hold: true });
  let watch!: StallWatch;
  const exchange = new ConnExchange("127.0.0.1", server.port, {
    upgrade: (tcp) => Promise.resolve(watch = new StallWatch(tcp, answer.length)),
  });
  const deadline = new ManualDeadline();
  try {
    const head = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    await exchange.send(head, deadline, { timeout: "timeout awaiting headers" });
    const reading = exchange.readBody(maxRespBodyLength, deadline, bodyTimeout);
    const first = await Promise.race([reading.then(() => "read"), watch.stalled]);
    if (first !== "read") deadline.expire();
    const { body, error } = await reading;
    return {
      body: new TextDecoder().decode(body),
      error: error?.message,
      expired: deadline.expired,
    };
  } finally {
    exchange.close();
    await server.close();
  }
}

Deno.test("TestHTTPProbe chunked trailer read within the deadline", async (t) => {
  const chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  await t.step("trailer that never comes: the body read fails at the deadline", async () => {
    const { error, expired } = await readBodyFromStalledServer(`${chunked}2\r\nok\r\n0\r\n`);
    assert.deepEqual({ error, expired }, { error: bodyTimeout, expired: true });
  });
  await t.step("trailer line that never ends: the body read fails at the deadline", async () => {
    const answer = `${chunked}2\r\nok\r\n0\r\nX-Trailer: y`;
    const { error, expired } = await readBodyFromStalledServer(answer);
    assert.deepEqual({ error, expired }, { error: bodyTimeout, expired: true });
  });
  await t.step("complete trailer: read without waiting", async () => {
    const read = await readBodyFromStalledServer(`${chunked}2\r\nok\r\n0\r\nX-Trailer: y\r\n\r\n`);
    assert.deepEqual(read, { body: "ok", error: undefined, expired: false });
  });
  await t.step("10 KiB limit reached inside a chunk: the trailer is never read", async () => {
    const data = "a".repeat(maxRespBodyLength + 10);
    const answer = `${chunked}${data.length.toString(16)}\r\n${data}\r\n0\r\n`;
    const read = await readBodyFromStalledServer(answer);
    assert.deepEqual(read, {
      body: data.slice(0, maxRespBodyLength),
      error: undefined,
      expired: false,
    });
  });
});

Deno.test("TestHTTPProbe response head limit", async (t) => {
  const exceeded = "net/http: HTTP/1.x transport connection broken: " +
    `net/http: server response headers exceeded ${maxResponseHeaderBytes} bytes; aborted`;
  const start = "HTTP/1.1 200 OK\r\nX-A: ";
  const end = "\r\nContent-Length: 2\r\n\r\n";
  // A head of exactly `size` bytes, the blank line included.
  const headOf = (size: number) => start + "a".repeat(size - start.length - end.length) + end;
  await t.step("a head of exactly 10 MiB is read", async () => {
    const { outcome } = await probeRaw(`${headOf(maxResponseHeaderBytes)}ok`);
    assert.deepEqual(outcome, { result: "success", output: "ok" });
  });
  await t.step("one byte more fails with Go's text", async () => {
    const { outcome, url } = await probeRaw(`${headOf(maxResponseHeaderBytes + 1)}ok`);
    assert.deepEqual(outcome, { result: "failure", output: `Get "${url}": ${exceeded}` });
  });
  const hint = `HTTP/1.1 103 Early Hints\r\nLink: ${"a".repeat(1 << 20)}\r\n\r\n`;
  const final = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  await t.step("1xx heads count against the same 10 MiB: nine of 1 MiB pass", async () => {
    const { outcome } = await probeRaw(hint.repeat(9) + final);
    assert.deepEqual(outcome, { result: "success", output: "ok" });
  });
  await t.step("1xx heads count against the same 10 MiB: eleven of 1 MiB fail", async () => {
    const { outcome, url } = await probeRaw(hint.repeat(11) + final);
    assert.deepEqual(outcome, { result: "failure", output: `Get "${url}": ${exceeded}` });
  });
});

// Reads `bytes` as the prober does, from a reader that delivers at most `step` bytes per read:
// the heads, then up to 10 KiB of body; the statuses, the body length and the error.
async function readInSteps(bytes: Uint8Array, step: number): Promise<string> {
  let off = 0;
  const br = new BufReader((p) => {
    const n = Math.min(p.length, step, bytes.length - off);
    p.set(bytes.subarray(off, off + n));
    off += n;
    return Promise.resolve(n === 0 ? null : n);
  });
  const seen: string[] = [];
  let length = 0;
  try {
    for (;;) {
      const head = await readResponse(br);
      seen.push(`${head.statusCode} ${JSON.stringify([...head.header])}`);
      if (head.statusCode >= 100 && head.statusCode <= 199 && head.statusCode !== 101) continue;
      const body = newBodyReader(br, head.framing);
      for (
        let chunk;
        length < maxRespBodyLength && (chunk = await body.read(maxRespBodyLength - length));
      ) {
        length += chunk.length;
      }
      return `${seen.join(", ")}; body ${length}`;
    }
  } catch (err) {
    return `${seen.join(", ")}; error ${(err as Error).message}`;
  }
}

Deno.test("TestReadResponse whatever the read sizes", async (t) => {
  // A line, a continuation or a chunk end split across reads takes the waiting paths; the
  // outcome must not change (no case here stops at the 10 KiB limit, where Go's own outcome
  // depends on what is buffered).
  for (const c of responseCases) {
    await t.step(c.name, async () => {
      const bytes = Uint8Array.from(c.response, (ch) => ch.charCodeAt(0));
      const whole = await readInSteps(bytes, bytes.length + 1);
      for (const step of [1, 2, 3, 7]) assert.equal(await readInSteps(bytes, step), whole);
    });
  }
});

Deno.test("TestReadMIMEHeader canonical names", async (t) => {
  // Go's textproto canonicalises every name made of token bytes (common ones answered from its
  // table, others built), keeps a name with a space as it is, and keeps repeated names' values
  // in order.
  const cases: { name: string; lines: string[]; want: [string, string[]][] }[] = [
    {
      name: "common names in any case",
      lines: ["content-LENGTH: 2", "ETAG: x", "cc: y", "x-FORWARDED-for: z", "Date: d"],
      want: [
        ["Content-Length", ["2"]],
        ["Etag", ["x"]],
        ["Cc", ["y"]],
        ["X-Forwarded-For", ["z"]],
        ["Date", ["d"]],
      ],
    },
    {
      name: "names not in the common table",
      lines: ["content-md5: a", "X-custom-HEADER: b", "a_b: c", "Contenttype: d"],
      want: [["Content-Md5", ["a"]], ["X-Custom-Header", ["b"]], ["A_b", ["c"]], [
        "Contenttype",
        ["d"],
      ]],
    },
    {
      name: "a name with a space is kept as it is",
      lines: ["content type: a"],
      want: [["content type", ["a"]]],
    },
    {
      name: "repeated names, different cases",
      lines: ["set-cookie: a=1", "SET-COOKIE: b=2", "Set-Cookie: c=3"],
      want: [["Set-Cookie", ["a=1", "b=2", "c=3"]]],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const bytes = new TextEncoder().encode(`${c.lines.join("\r\n")}\r\n\r\n`);
      let off = 0;
      const br = new BufReader((p) => {
        if (off >= bytes.length) return Promise.resolve(null);
        const n = Math.min(p.length, bytes.length - off);
        p.set(bytes.subarray(off, off + n));
        off += n;
        return Promise.resolve(n);
      });
      assert.deepEqual([...await readMIMEHeader(br)], c.want);
    });
  }
});

Deno.test("TestConnExchange closes a plain socket once", async () => {
  // Closing the socket a second time threw (and built) a BadResource error on every probe.
  const server = startRawServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  const probeConn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  const tcpProto = Object.getPrototypeOf(probeConn) as { close(): void };
  probeConn.close();
  const realClose = tcpProto.close;
  const closes: unknown[] = [];
  tcpProto.close = function (this: unknown) {
    closes.push(this);
    return realClose.call(this);
  };
  try {
    const exchange = new ConnExchange("127.0.0.1", server.port);
    const deadline = new ManualDeadline();
    await exchange.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", deadline, {
      timeout: "timeout awaiting headers",
    });
    const { body } = await exchange.readBody(maxRespBodyLength, deadline, bodyTimeout);
    assert.equal(new TextDecoder().decode(body), "ok");
    exchange.close();
    exchange.close();
    // Every socket (the server's too) closed once at most, and the client's was.
    assert.ok(closes.length >= 1);
    assert.equal(new Set(closes).size, closes.length);
  } finally {
    tcpProto.close = realClose;
    await server.close();
  }
});
