/**
 * Figures for the secure port (docs/kubelet_server.md): the cost of a request on a new connection
 * over TLS with client-certificate authentication against the plain read-only port, the rate at
 * which /containerLogs serves a large log, and memory with many open follows. Everything on
 * 127.0.0.1 in this process.
 *
 *   deno run -A scripts/secure_port_figures.ts
 * @module
 */
import { X509Certificate } from "node:crypto";
import {
  alwaysAllowAuthorizer,
  newDelegatingAuthenticator,
  newKubeletAuth,
  newX509Authenticator,
} from "../src/kubelet/server/delegating_auth.ts";
import { serve, serveKubeletServer, type ServerSource } from "../src/kubelet/server/server.ts";
import { generateSelfSignedCertKey, newCertificateAuthority } from "../src/util/cert/cert.ts";
import { RealClock } from "../src/util/clock.ts";
import * as log from "../src/util/log.ts";

log.setLogSink(() => {});
const dir = await Deno.makeTempDir();
const logPath = `${dir}/0.log`;
const line = `2016-10-06T00:17:09.669794202Z stdout F ${"x".repeat(100)}\n`;
const lines = 100_000;
await Deno.writeTextFile(logPath, line.repeat(lines));
const clock = new RealClock();
const source = {
  events: { list: () => [] },
  metrics: { registry: { metrics: () => "", contentType: "text/plain" } },
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
    containerStatus: () => Promise.resolve({ status: { logPath, state: "CONTAINER_RUNNING" } }),
  },
} as unknown as ServerSource;

const t0 = performance.now();
const serving = await generateSelfSignedCertKey("127.0.0.1");
const selfSignedMs = performance.now() - t0;
const ca = await newCertificateAuthority("figures-ca");
const client = await ca.sign({ commonName: "kube-apiserver-kubelet-client" });
const secure = await serveKubeletServer(source, {
  hostname: "127.0.0.1",
  port: 0,
  certificate: serving,
  auth: newKubeletAuth(
    newDelegatingAuthenticator(
      [newX509Authenticator(() => [new X509Certificate(ca.certPem)], clock)],
      { anonymous: false },
    ),
    "node-1",
    alwaysAllowAuthorizer,
  ),
  requestClientCert: true,
});
const plain = serve(source, { hostname: "127.0.0.1", port: 0 });

// One request per new connection: what the API server's proxy does for each kubectl call.
async function perRequestMs(url: string, n: number, tls: boolean): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const c = tls
      ? Deno.createHttpClient({
        caCerts: [serving.certPem],
        cert: client.certPem,
        key: client.keyPem,
      })
      : Deno.createHttpClient({});
    const res = await fetch(url, { client: c });
    await res.text();
    c.close();
  }
  return (performance.now() - start) / n;
}
const n = 200;
const plainMs = await perRequestMs(`http://127.0.0.1:${plain.port}/healthz`, n, false);
const secureMs = await perRequestMs(`https://127.0.0.1:${secure.port}/healthz`, n, true);

// A whole large log through /containerLogs.
const c = Deno.createHttpClient({
  caCerts: [serving.certPem],
  cert: client.certPem,
  key: client.keyPem,
});
let start = performance.now();
const res = await fetch(`https://127.0.0.1:${secure.port}/containerLogs/default/web/app`, {
  client: c,
});
let bytes = 0;
for await (const chunk of res.body!) bytes += chunk.length;
const logMs = performance.now() - start;

// Many open follows of the same log, each at its end, waiting.
const follows = 100;
const rssBefore = Deno.memoryUsage().rss;
start = performance.now();
const open: { ac: AbortController; reader: ReadableStreamDefaultReader<Uint8Array> }[] = [];
for (let i = 0; i < follows; i++) {
  const ac = new AbortController();
  const r = await fetch(
    `https://127.0.0.1:${secure.port}/containerLogs/default/web/app?follow=true&tailLines=1`,
    { client: c, signal: ac.signal },
  );
  const reader = r.body!.getReader();
  await reader.read();
  open.push({ ac, reader });
}
const followsMs = performance.now() - start;
const rssAfter = Deno.memoryUsage().rss;
for (const f of open) {
  f.ac.abort();
  await f.reader.cancel().catch(() => {});
}
c.close();
await secure.shutdown();
await plain.shutdown();
await Deno.remove(dir, { recursive: true });

console.log(`self_signed_cert_ms=${selfSignedMs.toFixed(0)}`);
console.log(`request_new_conn_plain_ms=${plainMs.toFixed(2)} requests=${n}`);
console.log(`request_new_conn_tls_client_cert_ms=${secureMs.toFixed(2)} requests=${n}`);
console.log(
  `container_logs_bytes=${bytes} lines=${lines} ms=${logMs.toFixed(0)} MiB_per_s=${
    (bytes / 1048576 / (logMs / 1000)).toFixed(1)
  }`,
);
console.log(
  `follows_open=${follows} open_ms=${followsMs.toFixed(0)} rss_delta_MiB=${
    ((rssAfter - rssBefore) / 1048576).toFixed(1)
  } per_follow_KiB=${((rssAfter - rssBefore) / 1024 / follows).toFixed(0)}`,
);
