/**
 * The read-only server against clients that hold connections (issue 21): row 6, clients that
 * never read, whose connections must close at the write deadline (before util/socket.ts the
 * write timeout's close() freed nothing: Deno 2.9.3 does not end a blocked write on close); row
 * 11, slowloris (connections sending one byte at a time), which must not keep the server from
 * answering: a connection at the limit takes the place of the slowest request head, and each head
 * has a read timeout (Go's ReadHeaderTimeout), instead of the limit refusing everyone new. Real
 * sockets, with the fake clock driving the server's timers.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { HttpServer, type HttpServerOptions } from "../../../src/kubelet/server/http_server.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function start(options: Partial<HttpServerOptions>) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const server = new HttpServer(listener, {
    handler: (req) => new Response(`hello ${new URL(req.url).pathname}`),
    ...options,
  });
  return { server, port: (listener.addr as Deno.NetAddr).port };
}

/** Reads until the server closes the connection; the text read. */
async function readToEnd(conn: Deno.Conn): Promise<string> {
  let text = "";
  const buf = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return text;
    text += decoder.decode(buf.subarray(0, n));
  }
}

/** Lets the event loop run until `fn` holds, for at most 2 s (the server acts on real sockets). */
async function until(what: string, fn: () => boolean): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

Deno.test("HttpServer: a client that never reads is closed at the write deadline", async () => {
  const clock = new FakeClock(0);
  // Far more than the socket buffers take: the write blocks for good.
  const body = new Uint8Array(16 << 20);
  let handled = 0;
  const { server, port } = start({
    clock,
    writeTimeoutMs: 60_000,
    handler: () => {
      handled++;
      return new Response(body);
    },
  });
  const clients: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      clients.push(conn);
      await conn.write(encoder.encode(`GET /big${i} HTTP/1.1\r\n\r\n`));
    }
    // Each connection's write timer is the only timer it has once its handler ran.
    await until("the responses being written", () => handled === 3 && clock.pendingTimers() === 3);
    await clock.step(59_999);
    assertEquals(server.stats.open, 3, "nothing is closed before the write timeout");
    await clock.step(1);
    await until("the connections closed", () => server.stats.open === 0);
    assertEquals(server.stats.writeTimeouts, 3);
    // The server answers as before.
    const next = await Deno.connect({ hostname: "127.0.0.1", port });
    clients.push(next);
    handled = -1000;
    await next.write(encoder.encode("GET /healthz HTTP/1.1\r\nconnection: close\r\n\r\n"));
    assert((await readToEnd(next)).startsWith("HTTP/1.1 200 OK"));
  } finally {
    for (const conn of clients) conn.close();
    await server.shutdown();
  }
});

Deno.test("HttpServer: slowloris connections at the limit do not keep the server from answering", async () => {
  const clock = new FakeClock(0);
  const maxConnections = 8;
  const { server, port } = start({ clock, maxConnections, readHeaderTimeoutMs: 10_000 });
  const silence = log.setLogSink(() => {});
  const slow: Deno.Conn[] = [];
  try {
    // Every slot taken by a request head that arrives one byte at a time.
    for (let i = 0; i < maxConnections; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      slow.push(conn);
      await conn.write(encoder.encode("G"));
    }
    await until("the slow connections accepted", () => server.stats.open === maxConnections);
    await clock.step(5_000);
    for (const conn of slow) await conn.write(encoder.encode("E"));

    // A client with a whole request is answered: the oldest slow head made room for it.
    const client = await Deno.connect({ hostname: "127.0.0.1", port });
    await client.write(encoder.encode("GET /healthz HTTP/1.1\r\nconnection: close\r\n\r\n"));
    assert((await readToEnd(client)).endsWith("hello /healthz"));
    client.close();
    assertEquals(server.stats.rejected, 0);
    assertEquals(server.stats.evicted, 1);
    assertEquals(await readToEnd(slow[0]), "", "the slowest head was closed");

    // The others get 10 s for their heads, however many bytes trickle in.
    await clock.step(4_999);
    assertEquals(server.stats.headerTimeouts, 0);
    await clock.step(1);
    await until("the slow heads timed out", () => server.stats.open === 0);
    assertEquals(server.stats.headerTimeouts, maxConnections - 1);
  } finally {
    log.setLogSink(silence);
    for (const conn of slow) conn.close();
    await server.shutdown();
  }
});
