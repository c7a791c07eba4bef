/**
 * Kubeconfig loading (contexts, `*-data`, relative file paths, tokens, plugin refusal) and an mTLS
 * round trip: certificates made with openssl at test time (the double's `makeTestPki`), a node:https
 * server that requires a client certificate, and the clientset built from the kubeconfig.
 * @module
 */
import assert from "node:assert/strict";
import https from "node:https";
import type { AddressInfo } from "node:net";
import {
  certificateIdentity,
  KubeconfigError,
  loadKubeconfig,
} from "../../src/client/kubeconfig.ts";
import { newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { makeTestPki, opensslAvailable } from "../testing/apiserver/mod.ts";

const b64 = (s: string) => btoa(s);

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "probelet-kubeconfig-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const hasOpenssl = await opensslAvailable();
if (!hasOpenssl) console.log("kubeconfig_test: openssl not found; the mTLS test is skipped");

Deno.test({
  name: "kubeconfig: client certificate over mTLS reaches a server that requires it",
  ignore: !hasOpenssl,
  async fn() {
    await withTempDir(async (dir) => {
      const pki = await makeTestPki({
        node: { cn: "system:node:node-1", groups: ["system:nodes"] },
      });
      await Deno.writeTextFile(`${dir}/node.crt`, pki.clients.node.cert);
      await Deno.writeTextFile(`${dir}/node.key`, pki.clients.node.key);
      const seen: { subject?: Record<string, string>; authorized: boolean; path?: string }[] = [];
      const server = https.createServer({
        key: pki.server.key,
        cert: pki.server.cert,
        ca: [pki.ca.cert],
        requestCert: true,
        rejectUnauthorized: true,
      }, (req, res) => {
        // deno-lint-ignore no-explicit-any
        const socket = req.socket as any;
        seen.push({
          subject: { ...socket.getPeerCertificate?.()?.subject },
          authorized: socket.authorized,
          path: req.url,
        });
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"kind":"Node","apiVersion":"v1","metadata":{"name":"node-1"}}');
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      try {
        const port = (server.address() as AddressInfo).port;
        // CA inline as data, client cert and key as paths relative to the kubeconfig.
        await Deno.writeTextFile(
          `${dir}/kubeconfig`,
          [
            "apiVersion: v1",
            "kind: Config",
            "clusters:",
            "- name: test",
            "  cluster:",
            `    server: https://127.0.0.1:${port}`,
            `    certificate-authority-data: ${b64(pki.ca.cert)}`,
            "users:",
            "- name: node",
            "  user:",
            "    client-certificate: node.crt",
            "    client-key: node.key",
            "contexts:",
            "- name: node@test",
            "  context: {cluster: test, user: node}",
            "current-context: node@test",
          ].join("\n"),
        );
        const loaded = await loadKubeconfig(`${dir}/kubeconfig`);
        assert.deepStrictEqual(certificateIdentity(loaded.config.certData!), {
          commonName: "system:node:node-1",
          organizations: ["system:nodes"],
        });
        const client = newForConfig(loaded.config);
        const node = await client.coreV1.nodes().get("node-1");
        client.close();
        assert.equal(node.metadata.name, "node-1");
        assert.deepStrictEqual(seen, [{
          subject: { O: "system:nodes", CN: "system:node:node-1" },
          authorized: true,
          path: "/api/v1/nodes/node-1",
        }]);

        // Without the client certificate the server refuses the handshake.
        const anonymous = newForConfig({ host: loaded.config.host, caData: loaded.config.caData });
        await assert.rejects(() => anonymous.coreV1.nodes().get("node-1"));
        anonymous.close();
      } finally {
        await new Promise((r) => server.close(r));
      }
    });
  },
});

Deno.test("kubeconfig: contexts, tokens and clear errors", async (t) => {
  await withTempDir(async (dir) => {
    const path = `${dir}/config`;
    const write = (lines: string[]) => Deno.writeTextFile(path, lines.join("\n"));
    const base = [
      "clusters:",
      "- name: a",
      "  cluster: {server: 'https://a:6443'}",
      "- name: b",
      "  cluster: {server: 'https://b:6443', insecure-skip-tls-verify: true}",
      "users:",
      "- name: tok",
      "  user: {token: abc}",
      "- name: file",
      "  user: {tokenFile: secrets/token}",
      "- name: exec",
      "  user:",
      "    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}",
      "- name: missing-key",
      "  user: {client-certificate-data: " + b64("-----BEGIN CERTIFICATE-----\nx\n") + "}",
      "contexts:",
      "- name: one",
      "  context: {cluster: a, user: tok, namespace: ns1}",
      "- name: two",
      "  context: {cluster: b, user: file}",
      "- name: plugin",
      "  context: {cluster: a, user: exec}",
      "- name: half",
      "  context: {cluster: a, user: missing-key}",
      "- name: nowhere",
      "  context: {cluster: zz, user: tok}",
    ];

    await t.step("current-context selects cluster, user and namespace", async () => {
      await write([...base, "current-context: one"]);
      const loaded = await loadKubeconfig(path);
      assert.deepStrictEqual(loaded.config, { host: "https://a:6443", bearerToken: "abc" });
      assert.equal(loaded.namespace, "ns1");
    });

    await t.step("an explicit context wins; tokenFile resolves relative to the file", async () => {
      const loaded = await loadKubeconfig(path, { context: "two" });
      assert.equal(loaded.config.bearerTokenFile, `${dir}/secrets/token`);
      assert.equal(loaded.config.insecureSkipTLSVerify, true);
      assert.equal(loaded.namespace, "default");
    });

    const fails = async (context: string | undefined, pattern: RegExp) => {
      const err = await loadKubeconfig(path, context ? { context } : {}).catch((e) => e);
      assert.ok(err instanceof KubeconfigError, String(err));
      assert.match(err.message, pattern);
      assert.ok(err.message.includes(path), err.message);
    };
    await t.step(
      "exec plugins are refused naming the user",
      () =>
        fails("plugin", /users\["exec"\]\.user\.exec: exec credential plugins are not supported/),
    );
    await t.step(
      "a certificate without its key",
      () => fails("half", /client-certificate and client-key must be set together/),
    );
    await t.step(
      "an unknown cluster",
      () => fails("nowhere", /context "nowhere": cluster "zz" does not exist/),
    );
    await t.step("an unknown context", () => fails("zzz", /context "zzz" does not exist/));
    await t.step("no current-context", async () => {
      await write(base);
      await fails(undefined, /no current-context is set/);
    });
    await t.step("a missing file names the path", async () => {
      const err = await loadKubeconfig(`${dir}/nope`).catch((e) => e);
      assert.match(err.message, new RegExp(`kubeconfig ${dir}/nope: `));
    });
  });
});
