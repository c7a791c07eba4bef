// The serving certificate through the CSR API on the local control plane (kube-apiserver and
// kube-controller-manager v1.36.3, embedded runtime, no containerd): an agent started with
// --rotate-server-certificates posts a CertificateSigningRequest (signer kubernetes.io/kubelet-serving,
// O=system:nodes, CN=system:node:<node>, its addresses as SANs); until an operator approves it with
// `kubectl certificate approve`, the secure port completes no handshake; then the certificate the
// controller-manager signs with the cluster CA is served, verified here against that CA for the
// node's InternalIP, and `kubectl logs` of a static pod goes through it (with PROBELET_KUBELET_CA=1,
// `scripts/kube-apiserver.sh up` makes the API server verify it too).
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import tls from "node:tls";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { repoRoot } from "../integration/helpers.ts";
import { waitFor } from "./helpers.ts";
import { kubectl, nodeIP, secureAgentOptions, secureNodeSkipReason } from "./secure_node.ts";

const real = await realKubeApiServer();
const state = join(repoRoot, ".run", "kube-apiserver");
// Whether the API server verifies kubelets' certificates (PROBELET_KUBELET_CA=1 at `up`).
const apiServerVerifies = await Deno.readTextFile(join(state, "kube-apiserver.pid"))
  .then((pid) => Deno.readTextFile(`/proc/${pid.trim()}/cmdline`))
  .then((c) => c.includes("--kubelet-certificate-authority"), () => false);
// The signer is kube-controller-manager's (`scripts/kube-apiserver.sh controllers`).
const skip = await secureNodeSkipReason(real) ||
  (typeof real !== "string" && !await real.controllersRunning()
    ? "kube-controller-manager is not running (scripts/kube-apiserver.sh controllers)"
    : "");
if (skip) console.log(`serving_cert_test: skipped: ${skip}`);
if (!skip && !apiServerVerifies) {
  console.log(
    "serving_cert_test: the API server does not verify kubelet certificates " +
      "(start it with PROBELET_KUBELET_CA=1 for that); this test still verifies them itself",
  );
}

// One handshake with the node's secure port, verifying against `ca` for the node's IP.
function handshake(port: number, ca: string): Promise<{ subject: string; issuer: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: nodeIP, port, ca, timeout: 10_000 }, () => {
      const c = socket.getPeerCertificate();
      resolve({ subject: `O=${c.subject.O}, CN=${c.subject.CN}`, issuer: String(c.issuer.CN) });
      socket.destroy();
    });
    socket.on("timeout", () => socket.destroy(new Error("handshake timed out")));
    socket.on("error", (e) => {
      socket.destroy();
      reject(e);
    });
  });
}

const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: talker
spec:
  containers:
    - name: app
      image: probelet.local/host
      command: [sh, -c, 'i=0; while :; do i=$((i+1)); echo line $i; sleep 0.2; done']
`;

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; username: string; usages: string[]; request: string };
  status?: { conditions?: { type: string }[]; certificate?: string };
}

Deno.test({
  name: "serving certificate through the CSR API, approved with kubectl, used by kubectl logs",
  ignore: skip !== "",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const api = real as Exclude<typeof real, string>;
    const admin = api.adminKubeconfig;
    const caPem = await Deno.readTextFile(join(state, "pki", "ca.crt"));
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-serving-cert-" });
    await Deno.mkdir(join(dir, "pods"));
    await Deno.writeTextFile(join(dir, "pods", "talker.yaml"), manifest);
    await api.admin("DELETE", `/api/v1/nodes/${api.nodeName}`);
    const ours = (csrs: Csr[]) =>
      csrs.filter((c) =>
        c.spec.signerName === "kubernetes.io/kubelet-serving" &&
        c.spec.username === `system:node:${api.nodeName}`
      );
    const listCsrs = async () => {
      const r = await kubectl(admin, ["get", "csr", "-o", "json"]);
      assertEquals(r.code, 0, r.stderr);
      return ours(JSON.parse(r.stdout).items as Csr[]);
    };
    const before = new Set((await listCsrs()).map((c) => c.metadata.name));
    let agent: RunningKubelet | undefined;
    try {
      agent = await runKubelet(
        secureAgentOptions(api, dir, {
          containerRuntimeEndpoint: "",
          rotateServerCertificates: true,
          stopPodsOnExit: true,
        }),
      );
      const port = agent.secureServer!.port;
      // The node's CSR, for the addresses its status reports.
      const csr = await waitFor("the node's CSR", async () => {
        const fresh = (await listCsrs()).filter((c) => !before.has(c.metadata.name));
        return fresh.length > 0 && fresh[0];
      }, { timeoutMs: 60_000 });
      assertEquals([...csr.spec.usages].sort(), ["digital signature", "server auth"]);
      const request = new TextDecoder().decode(
        Uint8Array.from(atob(csr.spec.request), (ch) => ch.charCodeAt(0)),
      );
      const text = await new Deno.Command("openssl", {
        args: ["req", "-noout", "-text"],
        stdin: "piped",
        stdout: "piped",
      }).spawn();
      const w = text.stdin.getWriter();
      await w.write(new TextEncoder().encode(request));
      await w.close();
      const parsed = new TextDecoder().decode((await text.output()).stdout);
      assert(
        /Subject: O ?= ?system:nodes, CN ?= ?system:node:/.test(parsed),
        parsed,
      );
      assert(parsed.includes(`IP Address:${nodeIP}`), parsed);
      assert(parsed.includes("prime256v1") || parsed.includes("P-256"), parsed);
      // Not approved yet: the controller-manager does not approve kubelet-serving requests, and
      // the secure port completes no handshake.
      assert(!csr.status?.conditions?.length, JSON.stringify(csr.status));
      await handshake(port, caPem).then(
        () => assert(false, "a handshake succeeded before the certificate was issued"),
        () => {},
      );
      const approve = await kubectl(admin, ["certificate", "approve", csr.metadata.name]);
      assertEquals(approve.code, 0, approve.stderr);
      // Signed by the controller-manager with the cluster CA, then served.
      const peer = await waitFor(
        "the issued certificate served",
        () => handshake(port, caPem).catch(() => undefined),
        { timeoutMs: 60_000 },
      );
      assertEquals(peer.subject, `O=system:nodes, CN=system:node:${api.nodeName}`);
      assertEquals(peer.issuer, "probelet-test-ca");
      const current = join(dir, "root", "pki", "kubelet-server-current.pem");
      assert((await Deno.lstat(current)).isSymlink, current);
      // kubectl logs of the static pod's mirror pod, through the API server to the node.
      const logs = await waitFor("kubectl logs of the static pod", async () => {
        const r = await kubectl(admin, ["logs", `talker-${api.nodeName}`, "--tail", "3"]);
        return r.code === 0 && /^line \d+\nline \d+\nline \d+\n$/.test(r.stdout) && r.stdout;
      }, { timeoutMs: 60_000 });
      // With PROBELET_KUBELET_CA=1 the API server verified the served certificate to get here.
      assert(logs.startsWith("line "), logs);
    } finally {
      await agent?.stop();
      for (const c of await listCsrs().catch(() => [])) {
        if (!before.has(c.metadata.name)) await kubectl(admin, ["delete", "csr", c.metadata.name]);
      }
      await kubectl(admin, [
        "delete",
        "pod",
        `talker-${api.nodeName}`,
        "--grace-period=0",
        "--force",
      ]);
      await api.admin("DELETE", `/api/v1/nodes/${api.nodeName}`);
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
