/**
 * The HTTP probe's deadline against a server that stops reading (issue 21, row 2): a redirect to a
 * ~6 MB path on a port that accepts and never reads, so the follow-up request cannot be written.
 * kubelet fails the probe at its timeout; before util/socket.ts the probe never returned, because
 * closing a connection in Deno 2.9.3 does not end a write the peer does not read. Real sockets and
 * the wall clock (the deadline must end a real blocked write), with a 1 s timeout.
 */
import { ok as assert, strictEqual as assertEquals } from "node:assert/strict";
import { newHttpProber, newProbeRequest } from "../../../src/probe/http/mod.ts";
import { ProbeResult } from "../../../src/probe/probe.ts";
import { findTcpDescriptor } from "../../../src/util/socket.ts";

const testdata = new URL("./testdata/", import.meta.url);
const timeoutMs = 1000;
const longPath = "/" + "a".repeat(6 << 20);

/** A port that accepts connections (completing TLS first when `tls`) and never reads from them. */
function startSink(options: { tls?: boolean } = {}) {
  const listener = options.tls
    ? Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: Deno.readTextFileSync(new URL("cert.pem", testdata)),
      key: Deno.readTextFileSync(new URL("key.pem", testdata)),
    })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      if ("handshake" in conn) await conn.handshake().catch(() => {});
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    conns,
    /**
     * Accepted connections whose client end (the probe's socket, in this process) still has a
     * descriptor. Never reads: reading would let a blocked write finish.
     */
    clientSocketsOpen(): number {
      return conns.filter((conn) =>
        findTcpDescriptor(
          { localAddr: conn.remoteAddr, remoteAddr: conn.localAddr } as Deno.Conn,
        ) !==
          undefined
      ).length;
    },
    async close() {
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // closed
        }
      }
      listener.close();
      await accepting.catch(() => {});
    },
  };
}

/** An HTTP server that reads each request head and answers with a 302 to `location`. */
function startRedirector(location: string) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const head = new TextEncoder().encode(
    `HTTP/1.1 302 Found\r\nLocation: ${location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
  );
  const serving = (async () => {
    for await (const conn of listener) {
      (async () => {
        const buf = new Uint8Array(1 << 16);
        // The last four bytes seen, to spot the end of the head across reads.
        let tail = "";
        while (!tail.includes("\r\n\r\n")) {
          const n = await conn.read(buf);
          if (n === null) return;
          tail = (tail + new TextDecoder().decode(buf.subarray(Math.max(0, n - 4), n))).slice(-8);
        }
        for (let off = 0; off < head.length;) off += await conn.write(head.subarray(off));
      })().catch(() => {}).finally(() => {
        try {
          conn.close();
        } catch {
          // closed
        }
      });
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`,
    async close() {
      listener.close();
      await serving.catch(() => {});
    },
  };
}

/** `promise`, or a rejection naming `what` after `ms` of wall time (a guard, not a wait). */
async function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** Lets the event loop run until `fn` holds, for at most 2 s (sockets close asynchronously). */
async function until(what: string, fn: () => boolean): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

for (const scheme of ["http", "https"] as const) {
  Deno.test(`HTTP probe: a redirect to a ${scheme} port that never reads fails at the timeout`, async () => {
    const sink = startSink({ tls: scheme === "https" });
    const target = `${scheme}://127.0.0.1:${sink.port}${longPath}`;
    const redirector = startRedirector(target);
    try {
      const { request } = newProbeRequest(redirector.url);
      const started = performance.now();
      const outcome = await within(
        "the probe's answer",
        timeoutMs + 4_000,
        newHttpProber().probe(request!, { timeoutMs }),
      );
      const tookMs = performance.now() - started;
      assertEquals(outcome.result, ProbeResult.Failure);
      const want =
        `Get "${target}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`;
      // Not assertEquals: a diff of two 6 MB texts says nothing.
      assert(
        outcome.output === want,
        `${outcome.output.slice(0, 120)}…${outcome.output.slice(-120)}`,
      );
      assert(tookMs < timeoutMs + 400, `answered after ${tookMs.toFixed(0)} ms`);
      // The probe's socket is gone at the deadline, not kept until the server reads.
      assertEquals(sink.conns.length, 1);
      await until("the probe's socket to close", () => sink.clientSocketsOpen() === 0);
    } finally {
      await redirector.close();
      await sink.close();
    }
  });
}
