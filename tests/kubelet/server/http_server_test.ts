/**
 * The agent's HTTP server against hostile clients, on real sockets with the fake clock driving the
 * idle, header, write and accept back-off timers: a new connection that sends no request is closed
 * after the header timeout and a kept-alive one after the idle timeout, one connection past the
 * limit is closed at once when every connection is busy, failed accepts (EMFILE) are retried with
 * Go's back-off instead of ending the server, and requests on a kept-alive connection are
 * answered. Slowloris clients and clients that never read: http_server_deadline_test.ts.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  type ConnListener,
  HttpServer,
  type HttpServerOptions,
} from "../../../src/kubelet/server/http_server.ts";
import { defaultMaxConnections } from "../../../src/kubelet/server/server.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function start(options: Partial<HttpServerOptions> & { listener?: ConnListener } = {}) {
  const listener = options.listener ?? Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const server = new HttpServer(listener, {
    handler: (req) => new Response(`hello ${new URL(req.url).pathname}`),
    ...options,
  });
  const port = (listener.addr as Deno.NetAddr).port;
  return { server, port };
}

/** Reads until the server closes the connection; the bytes read. */
async function readToEnd(conn: Deno.Conn): Promise<string> {
  const chunks: string[] = [];
  const buf = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return chunks.join("");
    chunks.push(decoder.decode(buf.subarray(0, n)));
  }
}

/** Reads one response whose body is `bodyLength` bytes long. */
async function readResponse(conn: Deno.Conn, bodyLength: number): Promise<string> {
  let text = "";
  const buf = new Uint8Array(4096);
  while (!text.includes("\r\n\r\n") || text.split("\r\n\r\n")[1].length < bodyLength) {
    const n = await conn.read(buf);
    if (n === null) break;
    text += decoder.decode(buf.subarray(0, n));
  }
  return text;
}

/** Lets the event loop run until `fn` holds (the server reacts on real sockets). */
async function until(what: string, fn: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

Deno.test("HttpServer: keep-alive, pipelined requests, HEAD and bad requests", async () => {
  const { server, port } = start({ clock: new FakeClock(0) });
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(encoder.encode("GET /a HTTP/1.1\r\nhost: x\r\n\r\nGET /bb HTTP/1.1\r\n\r\n"));
    const both = await readResponse(conn, 0);
    let text = both;
    while (!text.includes("hello /bb")) text += decoder.decode((await readChunk(conn))!);
    assert(text.startsWith("HTTP/1.1 200 OK\r\n"), text);
    assert(text.includes("content-length: 8\r\n\r\nhello /a"), text);
    assert(text.includes("hello /bb"), text);
    await conn.write(encoder.encode("HEAD /c HTTP/1.1\r\nconnection: close\r\n\r\n"));
    const head = await readToEnd(conn);
    assert(head.includes("content-length: 8\r\n"), head);
    assert(head.includes("connection: close"), head);
    assert(!head.includes("hello"), head);
    conn.close();

    const bad = await Deno.connect({ hostname: "127.0.0.1", port });
    await bad.write(encoder.encode("NONSENSE\r\n\r\n"));
    assert((await readToEnd(bad)).startsWith("HTTP/1.1 400 Bad Request"));
    bad.close();

    const huge = await Deno.connect({ hostname: "127.0.0.1", port });
    await huge.write(encoder.encode(`GET / HTTP/1.1\r\nx: ${"a".repeat(70_000)}\r\n\r\n`))
      .catch(() => {});
    assert((await readToEnd(huge)).startsWith("HTTP/1.1 431"));
    huge.close();
  } finally {
    await server.shutdown();
  }
});

async function readChunk(conn: Deno.Conn): Promise<Uint8Array | undefined> {
  const buf = new Uint8Array(4096);
  const n = await conn.read(buf);
  return n === null ? undefined : buf.subarray(0, n);
}

Deno.test("HttpServer: silent and idle connections are closed after their timeouts", async () => {
  const clock = new FakeClock(0);
  const { server, port } = start({ clock, idleTimeoutMs: 90_000, readHeaderTimeoutMs: 10_000 });
  try {
    // One connection never sends a request; one is kept alive after a response.
    const silent = await Deno.connect({ hostname: "127.0.0.1", port });
    const kept = await Deno.connect({ hostname: "127.0.0.1", port });
    await kept.write(encoder.encode("GET /x HTTP/1.1\r\n\r\n"));
    assert((await readResponse(kept, 8)).endsWith("hello /x"));
    await until("both connections accepted", () => server.stats.open === 2);
    await clock.step(9_999);
    assertEquals(server.stats.open, 2, "nothing is closed before the header timeout");
    await clock.step(1);
    // Go's ReadHeaderTimeout runs from the accept for a connection's first request.
    await until("the silent connection closed", () => server.stats.open === 1);
    assertEquals(server.stats.headerTimeouts, 1);
    assertEquals(await readToEnd(silent), "");
    await clock.step(79_999);
    assertEquals(server.stats.open, 1, "nothing more is closed before the idle timeout");
    await clock.step(1);
    await until("the idle connection closed", () => server.stats.open === 0);
    assertEquals(server.stats.idleClosed, 1);
    assertEquals(await readToEnd(kept), "");
    silent.close();
    kept.close();
  } finally {
    await server.shutdown();
  }
});

Deno.test("HttpServer: past the connection limit with every connection busy, a new one is closed at once", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const { server, port } = start({
    clock: new FakeClock(0),
    maxConnections: 2,
    handler: async (req) => {
      await released;
      return new Response(`hello ${new URL(req.url).pathname}`);
    },
  });
  const silence = log.setLogSink(() => {});
  try {
    const a = await Deno.connect({ hostname: "127.0.0.1", port });
    const b = await Deno.connect({ hostname: "127.0.0.1", port });
    await a.write(encoder.encode("GET /a HTTP/1.1\r\nconnection: close\r\n\r\n"));
    await b.write(encoder.encode("GET /b HTTP/1.1\r\nconnection: close\r\n\r\n"));
    await until("two connections open", () => server.stats.open === 2);
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    assertEquals(await readToEnd(c), "", "the third connection is closed without an answer");
    assertEquals(server.stats.rejected, 1);
    assertEquals(server.stats.evicted, 0, "a connection busy with a request is never evicted");
    release();
    assert((await readToEnd(a)).endsWith("hello /a"));
    assert((await readToEnd(b)).endsWith("hello /b"));
    await until("slots freed", () => server.stats.open === 0);
    const d = await Deno.connect({ hostname: "127.0.0.1", port });
    await d.write(encoder.encode("GET /d HTTP/1.1\r\nconnection: close\r\n\r\n"));
    assert((await readToEnd(d)).endsWith("hello /d"));
    a.close();
    b.close();
    c.close();
    d.close();
  } finally {
    log.setLogSink(silence);
    await server.shutdown();
  }
});

Deno.test("HttpServer: failed accepts are retried with Go's back-off", async () => {
  const clock = new FakeClock(0);
  const real = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let failures = 3;
  let calls = 0;
  // A listener whose first accepts fail as they do when descriptors run out.
  const listener: ConnListener = {
    addr: real.addr,
    accept: () => {
      calls++;
      if (failures-- > 0) {
        return Promise.reject(new Error("Too many open files (os error 24)"));
      }
      return real.accept();
    },
    close: () => real.close(),
  };
  const lines: string[] = [];
  const previous = log.setLogSink((line) => void lines.push(line));
  const { server, port } = start({ clock, listener });
  try {
    await until("the first failure", () => calls === 1 && clock.pendingTimers() === 1);
    await clock.step(4);
    assertEquals(calls, 1, "no retry before 5 ms");
    await clock.step(1);
    await until("the second attempt", () => calls === 2 && clock.pendingTimers() === 1);
    await clock.step(10); // 10 ms
    await until("the third attempt", () => calls === 3 && clock.pendingTimers() === 1);
    await clock.step(20); // 20 ms
    await until("accepting again", () => calls === 4);
    assertEquals(server.stats.acceptErrors, 3);
    assert(lines.some((l) => l.includes("http: Accept error; retrying") && l.includes("5ms")));
    assert(lines.some((l) => l.includes("20ms")));
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(encoder.encode("GET /ok HTTP/1.1\r\nconnection: close\r\n\r\n"));
    assert((await readToEnd(conn)).endsWith("hello /ok"));
    conn.close();
  } finally {
    log.setLogSink(previous);
    await server.shutdown();
  }
});

Deno.test("defaultMaxConnections: a quarter of the descriptor limit, 16 to 1024", () => {
  assertEquals(defaultMaxConnections(256), 64);
  assertEquals(defaultMaxConnections(40), 16);
  assertEquals(defaultMaxConnections(20_000), 1024);
  assertEquals(defaultMaxConnections(Infinity), 1024);
});
