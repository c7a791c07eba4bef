/**
 * The probe pool's own deadline (issue 21, "What to build" 1): a probe whose handler does not
 * answer (stuck on a write the peer never reads) is failed at its timeout plus the grace with
 * kubelet's timeout text, and its thread is replaced and terminated, which releases its sockets.
 * Before, such a probe never returned and its worker stopped probing for good. A test thread
 * (testdata/stuck_worker.ts) plays the stuck handler; the fake clock drives the deadline.
 */
import { ok as assert, strictEqual as assertEquals } from "node:assert/strict";
import { newProbeRequest } from "../../../src/probe/http/mod.ts";
import { ProbePool } from "../../../src/probe/pool/mod.ts";
import { ProbeResult } from "../../../src/probe/probe.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";
import { findTcpDescriptor } from "../../../src/util/socket.ts";

/** Lets the event loop run until `fn` holds, for at most 5 s (threads and sockets are real). */
async function until(what: string, fn: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

Deno.test("ProbePool: a probe that does not answer fails at its timeout plus the grace", async () => {
  // A server that accepts and never reads.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const accepted: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) accepted.push(conn);
  })();
  const clock = new FakeClock(0);
  const pool = new ProbePool(1, {
    inlineBelowPerSecond: 0,
    clock,
    deadlineGraceMs: 1_000,
    workerModule: new URL("./testdata/stuck_worker.ts", import.meta.url),
  });
  const silence = log.setLogSink(() => {});
  // The probe's socket, held by the pool thread in this process.
  const clientSocketOpen = () =>
    findTcpDescriptor(
      { localAddr: accepted[0].remoteAddr, remoteAddr: accepted[0].localAddr } as Deno.Conn,
    ) !== undefined;
  try {
    const { request } = newProbeRequest(`http://u:secret@127.0.0.1:${port}/healthz`);
    let answer: { result: string; output: string } | undefined;
    pool.http.probe(request!, { timeoutMs: 1_000 }).then((o) => answer = o);
    await until("the thread's connection", () => accepted.length === 1 && clientSocketOpen());
    await clock.step(1_999);
    assertEquals(answer, undefined, "no verdict before the timeout plus the grace");
    await clock.step(1);
    await until("the pool's verdict", () => answer !== undefined);
    assertEquals(answer!.result, ProbeResult.Failure);
    assertEquals(
      answer!.output,
      `Get "http://u:***@127.0.0.1:${port}/healthz": context deadline exceeded ` +
        "(Client.Timeout exceeded while awaiting headers)",
    );
    assertEquals(pool.overran, 1);
    assertEquals(pool.recycled, 1);
    assertEquals(pool.inFlight, 0);
    // Terminating the thread released the socket it held.
    await until("the thread's socket to close", () => !clientSocketOpen());
    assert(clock.pendingTimers() === 0, "no deadline timer left behind");
  } finally {
    log.setLogSink(silence);
    pool.close();
    for (const conn of accepted) conn.close();
    listener.close();
    await accepting.catch(() => {});
  }
});
