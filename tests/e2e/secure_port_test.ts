// The secure port of a standalone agent on the embedded runtime: a self-signed serving certificate
// made in <root-dir>/pki (kept for the next start), client certificates checked against
// --client-ca-file, /containerLogs reading the host process's CRI-format log, with a follow that
// sees new lines, and the host process's stats in /stats/summary and /metrics/resource. All on
// 127.0.0.1.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import { newCertificateAuthority } from "../../src/util/cert/cert.ts";
import * as log from "../../src/util/log.ts";
import { waitFor } from "./helpers.ts";

const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: talker
spec:
  containers:
    - name: app
      image: probelet.local/host
      command: [sh, -c, 'i=0; while :; do i=$((i+1)); echo out $i; echo err $i >&2; sleep 0.2; done']
`;

Deno.test({
  name: "secure port on the embedded runtime: self-signed TLS, client CA, /containerLogs",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "probelet-secure-" });
    await Deno.mkdir(join(dir, "pods"));
    await Deno.writeTextFile(join(dir, "pods", "talker.yaml"), manifest);
    const ca = await newCertificateAuthority("secure-port-test-ca");
    await Deno.writeTextFile(join(dir, "ca.crt"), ca.certPem);
    const client = await ca.sign({ commonName: "admin" });
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    let agent: RunningKubelet | undefined;
    let http: Deno.HttpClient | undefined;
    try {
      agent = await runKubelet({
        podManifestPath: join(dir, "pods"),
        rootDir: join(dir, "root"),
        nodeName: "secure-node",
        containerRuntimeEndpoint: "",
        port: -1,
        securePort: 0,
        address: "127.0.0.1",
        nodeIP: "127.0.0.1",
        clientCAFile: join(dir, "ca.crt"),
        stopPodsOnExit: true,
        // Rotated every few seconds, so that the follow below crosses rotations.
        containerLogMaxSizeBytes: 2048,
        containerLogMaxFiles: 5,
      });
      // kubelet's self-signed pair: kubelet.crt (certificate then its CA) and kubelet.key.
      const certPem = await Deno.readTextFile(join(dir, "root", "pki", "kubelet.crt"));
      const leaf = new X509Certificate(certPem);
      assert(/^CN=secure-node@\d+$/.test(leaf.subject), leaf.subject);
      assert(leaf.subjectAltName?.includes("DNS:secure-node"), String(leaf.subjectAltName));
      assert(leaf.subjectAltName?.includes("IP Address:127.0.0.1"), String(leaf.subjectAltName));
      const keyMode = (await Deno.stat(join(dir, "root", "pki", "kubelet.key"))).mode! & 0o777;
      assertEquals(keyMode, 0o600);
      const base = `https://127.0.0.1:${agent.secureServer!.port}`;
      // The CA of the self-signed pair is the second certificate of kubelet.crt.
      const caOfServing = certPem.slice(certPem.indexOf("-----BEGIN", 10));
      http = Deno.createHttpClient({
        caCerts: [caOfServing],
        cert: client.certPem,
        key: client.keyPem,
      });
      const get = async (path: string): Promise<[number, string]> => {
        const res = await fetch(base + path, { client: http });
        return [res.status, await res.text()];
      };
      assertEquals(await get("/healthz"), [200, "ok"]);
      const logs = await waitFor("three lines logged", async () => {
        const [code, text] = await get("/containerLogs/default/talker-secure-node/app");
        return code === 200 && text.includes("out 3\n") && text;
      });
      assert(logs.startsWith("out 1\nerr 1\n"), logs.slice(0, 40));
      const [, stderrOnly] = await get(
        "/containerLogs/default/talker-secure-node/app?stream=Stderr",
      );
      assert(stderrOnly.startsWith("err 1\nerr 2\n"), stderrOnly.slice(0, 40));
      // A follow: lines written after the request arrive on the open response.
      const ac = new AbortController();
      const res = await fetch(base + "/containerLogs/default/talker-secure-node/app?follow=true", {
        client: http,
        signal: ac.signal,
      });
      const reader = res.body!.getReader();
      let text = "";
      const dec = new TextDecoder();
      // Across rotations (about one every 2 KiB, ~2.5 s): every line, in order, none lost.
      const logDir = join(dir, "root");
      const rotatedFiles = async () => {
        const found: string[] = [];
        const walk = async (d: string) => {
          for await (const e of Deno.readDir(d)) {
            if (e.isDirectory) await walk(join(d, e.name));
            else if (/\.log\.\d{8}-\d{6}/.test(e.name)) found.push(e.name);
          }
        };
        await walk(logDir);
        return found.length;
      };
      const rotationsBefore = await rotatedFiles();
      let outs: number[] = [];
      // A follow that stopped at a rotation would wait for ever: give up after 30 s.
      const giveUp = setTimeout(() => ac.abort(), 30_000);
      while (outs.length < 60) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done || !value) break;
        text += dec.decode(value);
        outs = [...text.matchAll(/^out (\d+)$/gm)].map((m) => Number(m[1]));
      }
      clearTimeout(giveUp);
      ac.abort();
      await reader.cancel().catch(() => {});
      assert(outs.length >= 60, `the follow stopped at out ${outs.at(-1)}`);
      assert(await rotatedFiles() > rotationsBefore, "no rotation while following");
      for (let i = 1; i < outs.length; i++) {
        assertEquals(outs[i], outs[i - 1] + 1, `line lost after out ${outs[i - 1]}`);
      }
      // The summary on the embedded runtime: the container's CPU and memory from its cgroup (or
      // its process), its log folder's use; and the same in what metrics-server reads.
      const [summaryCode, summaryText] = await get("/stats/summary");
      assertEquals(summaryCode, 200, summaryText);
      const talker = JSON.parse(summaryText).pods.find((p: { podRef: { name: string } }) =>
        p.podRef.name === "talker-secure-node"
      );
      assert(talker, summaryText.slice(0, 300));
      const app = talker.containers[0];
      assertEquals(app.name, "app");
      assert(
        app.memory.workingSetBytes > 0 && app.cpu.usageCoreNanoSeconds > 0,
        JSON.stringify(app),
      );
      assert(app.logs.usedBytes > 0, JSON.stringify(app.logs));
      const [, resource] = await get("/metrics/resource");
      assert(
        /^container_memory_working_set_bytes\{container="app",namespace="default",pod="talker-secure-node"\} [1-9]\d* \d+$/m
          .test(resource),
        resource,
      );
      // Without a client certificate: kubelet's 401.
      const anon = Deno.createHttpClient({ caCerts: [caOfServing] });
      try {
        const r = await fetch(base + "/pods", { client: anon });
        assertEquals([r.status, await r.text()], [401, "Unauthorized"]);
      } finally {
        anon.close();
      }
    } finally {
      http?.close();
      await agent?.stop();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
