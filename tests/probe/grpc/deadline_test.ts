/**
 * The gRPC probe's deadline against a target that floods PINGs and never reads (issue 21, row 3):
 * our PING ACKs fill the socket's buffers, the write blocks, and before util/socket.ts closing the
 * connection at the deadline left the socket (and megabytes of kernel buffers) behind, one per
 * probe. kubelet uses one connection per probe and closes it at the deadline. Real sockets and the
 * wall clock, 1 s timeouts.
 */
import { strictEqual as assertEquals } from "node:assert/strict";
import { newGrpcProber } from "../../../src/probe/grpc/grpc.ts";
import { ProbeResult } from "../../../src/probe/probe.ts";
import { concat, frame, FrameType, settingsFrame } from "../../../src/util/h2/frame.ts";
import { libc } from "../../../src/util/libc.ts";
import { findTcpDescriptor } from "../../../src/util/socket.ts";

const timeoutMs = 1000;
const solSocket = 1;
const soSndBuf = 7;

/** The probe's end of an accepted connection (it lives in this process). */
function clientEnd(conn: Deno.Conn): number | undefined {
  return findTcpDescriptor({ localAddr: conn.remoteAddr, remoteAddr: conn.localAddr } as Deno.Conn);
}

/** An HTTP/2 "server" that sends its SETTINGS, then PINGs without end, and never reads. */
function startPingFlood() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const pings = concat(
    Array.from({ length: 1024 }, (_, i) => frame(FrameType.Ping, 0, 0, new Uint8Array(8).fill(i))),
  );
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      // A small send buffer on the probe's socket, as a slow network would give: our PING ACKs
      // then fill it well within the timeout instead of after ~4 MB (autotuning on loopback).
      const fd = clientEnd(conn);
      if (fd !== undefined) {
        const size = new Uint8Array(new Int32Array([4096]).buffer);
        libc()?.setsockopt(fd, solSocket, soSndBuf, size, size.length);
      }
      (async () => {
        await conn.write(settingsFrame([]));
        for (;;) {
          for (let off = 0; off < pings.length;) off += await conn.write(pings.subarray(off));
        }
      })().catch(() => {});
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    conns,
    /** Accepted connections whose client end (the probe's socket, in this process) is open. */
    clientSocketsOpen(): number {
      return conns.filter((conn) => clientEnd(conn) !== undefined).length;
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

/** Lets the event loop run until `fn` holds, for at most 2 s (sockets close asynchronously). */
async function until(what: string, fn: () => boolean): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

Deno.test("gRPC probe: a target that floods PINGs and never reads leaves no socket", async () => {
  const server = startPingFlood();
  try {
    const prober = newGrpcProber();
    for (let i = 0; i < 2; i++) {
      const outcome = await prober.probe("127.0.0.1", {
        service: "",
        port: server.port,
        timeoutMs,
      });
      assertEquals(outcome.result, ProbeResult.Failure);
      assertEquals(outcome.output, "timeout: health rpc did not complete within 1s");
    }
    // One connection per probe, each closed at its deadline.
    assertEquals(server.conns.length, 2);
    await until("the probes' sockets to close", () => server.clientSocketsOpen() === 0);
  } finally {
    await server.close();
  }
});
