/**
 * The secure port shares the read-only port's connection handling (http_server.ts): over TLS, a
 * connection that sends no request head is closed at the header timeout, and a follower of a log
 * that stopped reading is cut off at the write deadline, its socket reset (util/socket.ts finds the
 * node:tls socket's descriptor by its addresses). Real sockets on 127.0.0.1, the fake clock
 * driving the server's timers.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  alwaysAllowAuthorizer,
  newDelegatingAuthenticator,
  newKubeletAuth,
} from "../../../src/kubelet/server/delegating_auth.ts";
import { serveKubeletServer } from "../../../src/kubelet/server/server.ts";
import { generateSelfSignedCertKey } from "../../../src/util/cert/cert.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";

const encoder = new TextEncoder();

/** Lets the event loop run until `fn` holds, for at most 5 s (the server acts on real sockets). */
async function until(what: string, fn: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

Deno.test("secure port: header timeout and write deadline over TLS", async (t) => {
  const clock = new FakeClock(Date.now());
  const dir = await Deno.makeTempDir();
  const logPath = `${dir}/0.log`;
  // Far more than the socket buffers take: a follower that does not read blocks the write.
  const line = `2016-10-06T00:17:09.1Z stdout F ${"x".repeat(200)}\n`;
  await Deno.writeTextFile(logPath, line.repeat(40_000));
  const serving = await generateSelfSignedCertKey("127.0.0.1");
  const silence = log.setLogSink(() => {});
  let logsAsked = 0;
  const server = await serveKubeletServer({
    events: { list: () => [] },
    // deno-lint-ignore no-explicit-any
    metrics: { registry: {} as any },
    clock,
    pods: () => [{
      metadata: { name: "web", namespace: "default", uid: "u1" },
      spec: { containers: [{ name: "app" }] },
      status: {
        phase: "Running",
        containerStatuses: [{
          name: "app",
          ready: true,
          restartCount: 0,
          image: "i",
          imageID: "",
          containerID: "containerd://c1",
          state: { running: {} },
        }],
      },
    }],
    runtime: {
      containerStatus: () => {
        logsAsked++;
        return Promise.resolve({ status: { logPath, state: "CONTAINER_RUNNING" } });
      },
      // deno-lint-ignore no-explicit-any
    } as any,
  }, {
    hostname: "127.0.0.1",
    port: 0,
    certificate: serving,
    auth: newKubeletAuth(
      newDelegatingAuthenticator([], { anonymous: true }),
      "node-1",
      alwaysAllowAuthorizer,
    ),
    requestClientCert: false,
    clock,
  });
  const conns: Deno.TlsConn[] = [];
  const connect = async () => {
    const conn = await Deno.connectTls({
      hostname: "127.0.0.1",
      port: server.port,
      caCerts: [serving.certPem],
    });
    await conn.handshake();
    conns.push(conn);
    return conn;
  };
  try {
    await t.step("no request head within 10 s: closed", async () => {
      const conn = await connect();
      await until("the connection accepted", () => server.stats.open === 1);
      await clock.step(9_999);
      assertEquals(server.stats.headerTimeouts, 0);
      await clock.step(1);
      await until("the connection closed", () => server.stats.open === 0);
      assertEquals(server.stats.headerTimeouts, 1);
      assertEquals(await conn.read(new Uint8Array(16)).catch(() => null), null);
    });
    await t.step("a follower that stops reading: cut off at the write deadline", async () => {
      const conn = await connect();
      await conn.write(
        encoder.encode("GET /containerLogs/default/web/app?follow=true HTTP/1.1\r\n\r\n"),
      );
      await until("the request handled", () => logsAsked > 0);
      // The write deadline is per write: once a write blocks, the next 60 s step fires it. A step
      // may find the server between two writes (reading the file), so step until it closes.
      for (let steps = 0; server.stats.open > 0; steps++) {
        if (steps === 20) throw new Error("the follower was never cut off");
        await until("a timer armed", () => clock.pendingTimers() >= 1 || server.stats.open === 0);
        await clock.step(60_000);
        await until(
          "the connection closed or a new timer armed",
          () => server.stats.open === 0 || clock.pendingTimers() >= 1,
        );
      }
      assertEquals(server.stats.writeTimeouts, 1);
    });
  } finally {
    for (const c of conns) {
      try {
        c.close();
      } catch {
        // closed
      }
    }
    await server.shutdown();
    log.setLogSink(silence);
    await Deno.remove(dir, { recursive: true });
  }
});
