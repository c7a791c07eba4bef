/**
 * Figures for the secure port's streaming proxy (docs/kubelet_server.md): the time from an
 * upgrade request to the relayed 101 over TLS, the rate of bytes through an upgraded stream in
 * each direction, and the memory of many open idle streams. A fake streaming server on 127.0.0.1
 * answers 101 and then discards what it reads or sends what it is asked for; everything runs in
 * this process.
 *
 *   deno run -A scripts/streaming_proxy_figures.ts
 * @module
 */
import type { Pod } from "../src/api/core/v1/mod.ts";
import {
  alwaysAllowAuthorizer,
  newDelegatingAuthenticator,
  newKubeletAuth,
} from "../src/kubelet/server/delegating_auth.ts";
import { serveKubeletServer } from "../src/kubelet/server/server.ts";
import type { StreamingHost } from "../src/kubelet/kubelet_streaming.ts";
import { generateSelfSignedCertKey } from "../src/util/cert/cert.ts";
import * as log from "../src/util/log.ts";
import { writeAll } from "../src/util/socket.ts";

log.setLogSink(() => {});
const enc = new TextEncoder();
const payloadMiB = 64;
const chunk = new Uint8Array(64 * 1024).fill(120);

// The streaming server: 101, then "sink" (read and drop) or "source" (send payloadMiB).
const backend = Deno.listen({ hostname: "127.0.0.1", port: 0 });
(async () => {
  for await (const conn of backend) {
    (async () => {
      const buf = new Uint8Array(64 * 1024);
      let head = "";
      while (!head.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) return;
        head += new TextDecoder().decode(buf.subarray(0, n));
      }
      await writeAll(conn, enc.encode("HTTP/1.1 101 Switching Protocols\r\n\r\n"));
      try {
        if (head.startsWith("POST /source")) {
          for (let i = 0; i < payloadMiB * 16; i++) await writeAll(conn, chunk);
          conn.close();
          return;
        }
        while (await conn.read(buf) !== null) {
          // dropped
        }
      } catch {
        // closed
      }
    })();
  }
})();
const backendPort = (backend.addr as Deno.NetAddr).port;

const pod: Pod = {
  metadata: { name: "web", namespace: "default", uid: "u1" },
  spec: { containers: [] },
};
let mode = "sink";
const host: StreamingHost = {
  getPodByName: () => pod,
  getExec: () => Promise.resolve(new URL(`http://127.0.0.1:${backendPort}/${mode}/tok`)),
  getAttach: () => Promise.reject(new Error("unused")),
  getPortForward: () => Promise.reject(new Error("unused")),
  runInContainer: () => Promise.reject(new Error("unused")),
};
const serving = await generateSelfSignedCertKey("127.0.0.1");
const server = await serveKubeletServer({
  events: { list: () => [] },
  // deno-lint-ignore no-explicit-any
  metrics: { registry: {} as any },
  pods: () => [],
  streaming: host,
}, {
  hostname: "127.0.0.1",
  port: 0,
  certificate: serving,
  auth: newKubeletAuth(
    newDelegatingAuthenticator([], { anonymous: true }),
    "node",
    alwaysAllowAuthorizer,
  ),
  requestClientCert: false,
  maxConnections: 1024,
});

const request = enc.encode(
  "POST /exec/default/web/app?command=sh&input=1&output=1 HTTP/1.1\r\nHost: n\r\n" +
    "Content-Length: 0\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n" +
    "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n",
);

async function open(): Promise<Deno.TlsConn> {
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port: server.port,
    caCerts: [serving.certPem],
  });
  await writeAll(conn, request);
  const buf = new Uint8Array(1024);
  let got = "";
  while (!got.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) throw new Error("closed before the 101");
    got += new TextDecoder().decode(buf.subarray(0, n));
  }
  if (!got.startsWith("HTTP/1.1 101")) throw new Error(got);
  return conn;
}

// Upgrade latency: a new TLS connection, the request, the 101.
const rounds = 50;
let t0 = performance.now();
for (let i = 0; i < rounds; i++) (await open()).close();
const upgradeMs = (performance.now() - t0) / rounds;

// Client to runtime (stdin): payloadMiB written through the proxy into the sink.
mode = "sink";
let conn = await open();
t0 = performance.now();
for (let i = 0; i < payloadMiB * 16; i++) await writeAll(conn, chunk);
conn.close();
const upMiBs = payloadMiB / ((performance.now() - t0) / 1000);

// Runtime to client (stdout): payloadMiB read through the proxy from the source.
mode = "source";
conn = await open();
t0 = performance.now();
const buf = new Uint8Array(64 * 1024);
let read = 0;
for (;;) {
  const n = await conn.read(buf);
  if (n === null) break;
  read += n;
}
const downMiBs = read / 1048576 / ((performance.now() - t0) / 1000);
conn.close();

// Idle streams: memory of 200 open upgraded connections (both sides in this process).
mode = "sink";
const streams = 200;
const before = Deno.memoryUsage().rss;
const open200: Deno.TlsConn[] = [];
for (let i = 0; i < streams; i++) open200.push(await open());
const after = Deno.memoryUsage().rss;
for (const c of open200) c.close();

console.log(`upgrade to 101 over TLS (new connection):  ${upgradeMs.toFixed(1)} ms`);
console.log(`client → runtime through the proxy:         ${upMiBs.toFixed(0)} MiB/s`);
console.log(`runtime → client through the proxy:         ${downMiBs.toFixed(0)} MiB/s`);
console.log(
  `${streams} idle streams:                          +${
    ((after - before) / 1048576).toFixed(1)
  } MiB RSS (${
    ((after - before) / streams / 1024).toFixed(0)
  } KiB each, client and backend ends included)`,
);
await server.shutdown();
backend.close();
Deno.exit(0);
