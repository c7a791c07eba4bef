/**
 * Figures for the serving certificate (docs/kubelet_server.md): the cost of a rotation's local
 * steps (a P-256 key and its CSR, storing and parsing the pair), of swapping the TLS context, and
 * of a handshake with the CSR-issued ECDSA certificate against the self-signed RSA 2048 one; and
 * a whole rotation against the fake API with a test signer. Everything on 127.0.0.1 in this
 * process.
 *
 *   deno run -A scripts/serving_cert_figures.ts
 * @module
 */
import tls from "node:tls";
import { join } from "node:path";
import { generateCSR } from "../src/kubelet/certificate/certificate_manager.ts";
import { newFileStore, x509KeyPair } from "../src/kubelet/certificate/certificate_store.ts";
import { newKubeletServerCertificateManager } from "../src/kubelet/certificate/kubelet.ts";
import {
  alwaysAllowAuthorizer,
  newDelegatingAuthenticator,
  newKubeletAuth,
} from "../src/kubelet/server/delegating_auth.ts";
import { serveKubeletServer } from "../src/kubelet/server/server.ts";
import { generateSelfSignedCertKey } from "../src/util/cert/cert.ts";
import { RealClock, settle } from "../src/util/clock.ts";
import * as log from "../src/util/log.ts";
import { FakeClientset } from "../tests/testing/fake_clientset.ts";
import { newTestSigner } from "../tests/testing/csr_signer.ts";

log.setLogSink(() => {});
const dir = await Deno.makeTempDir();
const template = {
  commonName: "system:node:node-1",
  organizations: ["system:nodes"],
  dnsNames: ["node-1"],
  ipAddresses: ["127.0.0.1"],
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timeIt(n: number, fn: () => Promise<unknown> | unknown): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return median(times);
}

const csrMs = await timeIt(50, () => generateCSR(template));

// A rotation against the fake API: key, CSR, create, watch, issue, store, hand-over.
const client = new FakeClientset();
const signer = await newTestSigner(client);
const clock = new RealClock();
const toRequest: number[] = [];
const toServed: number[] = [];
for (let i = 0; i < 20; i++) {
  const certDir = join(dir, `rot-${i}`);
  let done = Promise.withResolvers<void>();
  const m = await newKubeletServerCertificateManager({
    kubeClient: client,
    nodeName: "node-1",
    getAddresses: () => [{ type: "InternalIP", address: "127.0.0.1" }],
    certDirectory: certDir,
    clock,
    onCertificate: () => done.resolve(),
  });
  const before = signer.requests().length;
  const t = performance.now();
  m.start();
  while (
    signer.requests().length === before ||
    client.tracker.watchCount("certificatesigningrequests") === 0
  ) await settle();
  toRequest.push(performance.now() - t);
  const name = signer.requests().at(-1)!.metadata.name!;
  // The signer's own time is the control plane's, not the node's: timed from its answer on.
  await signer.issue(name, { notBefore: Date.now() - 1000, notAfter: Date.now() + 3600_000 });
  const answered = performance.now();
  await done.promise;
  toServed.push(performance.now() - answered);
  done = Promise.withResolvers<void>();
  await m.stop();
}

const issued = signer.requests().at(-1)!;
const store = await newFileStore({
  pairNamePrefix: "kubelet-server",
  certDirectory: join(dir, "rot-19"),
  keyDirectory: join(dir, "rot-19"),
  certFile: "",
  keyFile: "",
});
const pair = await store.current();
const parseMs = await timeIt(200, () => x509KeyPair(pair.certPem, pair.keyPem));
const storeMs = await timeIt(50, () => store.update(pair.certPem, pair.keyPem));
const rsa = await generateSelfSignedCertKey("127.0.0.1");

const server = await serveKubeletServer(undefined, {
  hostname: "127.0.0.1",
  port: 0,
  auth: newKubeletAuth(
    newDelegatingAuthenticator([], { anonymous: true }),
    "node-1",
    alwaysAllowAuthorizer,
  ),
  requestClientCert: false,
});
const swapMs = await timeIt(200, () => server.setCertificate(pair));

function handshake(): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = tls.connect(
      { host: "127.0.0.1", port: server.port, rejectUnauthorized: false },
      () => {
        s.destroy();
        resolve();
      },
    );
    s.on("error", reject);
  });
}
server.setCertificate(pair);
await handshake();
const ecdsaMs = await timeIt(200, handshake);
server.setCertificate(rsa);
await handshake();
const rsaMs = await timeIt(200, handshake);
await server.shutdown();

const f = (ms: number) => `${ms.toFixed(2)} ms`;
console.log(`CSR request name of the last rotation: ${issued.metadata.name}`);
console.log("| | median |");
console.log("| --- | --- |");
console.log(`| P-256 key + CSR (generateCSR) | ${f(csrMs)} |`);
console.log(`| rotation start → CSR created and watched (fake API) | ${f(median(toRequest))} |`);
console.log(`| CSR issued → stored and served (fake API) | ${f(median(toServed))} |`);
console.log(`| store a pair (dated file, fsync, symlink swap) | ${f(storeMs)} |`);
console.log(`| parse and check a pair (x509KeyPair) | ${f(parseMs)} |`);
console.log(`| swap the TLS context (setSecureContext) | ${f(swapMs)} |`);
console.log(`| TLS handshake, CSR-issued ECDSA P-256 | ${f(ecdsaMs)} |`);
console.log(`| TLS handshake, self-signed RSA 2048 | ${f(rsaMs)} |`);
await Deno.remove(dir, { recursive: true });
