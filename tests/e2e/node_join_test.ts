/**
 * The CLI joins the API-server double as a node over HTTPS with a node client certificate (node
 * authorizer and NodeRestriction on): the Node is registered with the flags' labels and taints
 * and turns Ready, the lease in kube-node-lease is owned by the Node and renewed, node events are
 * written, no request is refused, and SIGTERM stops it with exit 0. Real clock; the lease is
 * shortened to 4 s (renewal every 1 s) so two renewals come within seconds. Conditions are polled,
 * never slept on.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import {
  kubeconfigYaml,
  makeTestPki,
  opensslAvailable,
  startApiServer,
} from "../testing/apiserver/mod.ts";
import { waitFor } from "./helpers.ts";

const mainPath = new URL("../../src/cmd/probelet/main.ts", import.meta.url).pathname;
const haveOpenssl = await opensslAvailable();
if (!haveOpenssl) {
  console.log("node_join_test: skipped: openssl is needed for the node certificate");
}

Deno.test({
  name: "TestCLIJoinsAsANode",
  ignore: !haveOpenssl,
  fn: async () => {
    const pki = await makeTestPki({
      node: { cn: "system:node:e2e-node", groups: ["system:nodes"] },
    });
    const server = await startApiServer({
      tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
    });
    const dir = await Deno.makeTempDir({ prefix: "probelet-join-" });
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(
      kubeconfig,
      kubeconfigYaml({ server: server.url, caCert: pki.ca.cert, client: pki.clients.node }),
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        mainPath,
        "--kubeconfig",
        kubeconfig,
        "--node-name",
        "e2e-node",
        "--node-labels",
        "probelet.io/agent=true",
        "--register-with-taints",
        "probelet.io/agent=true:NoExecute",
        "--node-lease-duration-seconds",
        "4",
        "--root-dir",
        join(dir, "root"),
        "--read-only-port",
        "0",
        "--port",
        "0",
        "--live-view",
        "never",
      ],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const double = server.double;
    try {
      // deno-lint-ignore no-explicit-any
      const node = await waitFor<any>("the Node to be Ready", () => {
        const n = double.get("nodes", undefined, "e2e-node");
        // deno-lint-ignore no-explicit-any
        const ready = (n?.status as any)?.conditions?.find((c: any) => c.type === "Ready");
        return ready?.status === "True" ? n : undefined;
      });
      assertEquals(node.metadata.labels["probelet.io/agent"], "true");
      // The API server's TaintNodesByCondition admission adds not-ready; ours is kept.
      assert(
        node.spec.taints.some((t: { key: string; value?: string; effect: string }) =>
          t.key === "probelet.io/agent" && t.value === "true" && t.effect === "NoExecute"
        ),
        JSON.stringify(node.spec.taints),
      );
      assertEquals(node.status.nodeInfo.containerRuntimeVersion.split("://")[0], "embedded");
      assert(node.status.daemonEndpoints.kubeletEndpoint.Port > 0);
      // Two renewals after the lease was created.
      const renewTimes = new Set<string>();
      await waitFor("two lease renewals", () => {
        const lease = double.get("leases", "kube-node-lease", "e2e-node");
        // deno-lint-ignore no-explicit-any
        const t = (lease?.spec as any)?.renewTime;
        if (t) renewTimes.add(t);
        return renewTimes.size >= 3;
      }, { timeoutMs: 15_000 });
      // deno-lint-ignore no-explicit-any
      const lease = double.get("leases", "kube-node-lease", "e2e-node") as any;
      assertEquals(lease.spec.holderIdentity, "e2e-node");
      assertEquals(lease.spec.leaseDurationSeconds, 4);
      assertEquals(lease.metadata.ownerReferences, [
        { apiVersion: "v1", kind: "Node", name: "e2e-node", uid: node.metadata.uid },
      ]);
      for (const t of renewTimes) assert(/\.\d{6}Z$/.test(t), t);
      const events = double.list("events", "default")
        // deno-lint-ignore no-explicit-any
        .map((e: any) =>
          `${e.involvedObject.kind} ${e.reason} ${e.source?.component}/${e.source?.host}`
        );
      assert(events.includes("Node NodeHasSufficientMemory kubelet/e2e-node"), events.join("\n"));
      const users = new Set(double.requests.map((r) => r.user));
      assertEquals([...users], ["system:node:e2e-node"]);
      const refused = double.requests.filter((r) => r.status === 401 || r.status === 403);
      assertEquals(refused, []);
      const patches = double.requests.filter((r) =>
        r.method === "PATCH" && r.path.endsWith("/status")
      );
      for (const p of patches) {
        assertEquals(p.contentType, "application/strategic-merge-patch+json");
        assertEquals(p.path, "/api/v1/nodes/e2e-node/status");
      }
      child.kill("SIGTERM");
      const status = await child.status;
      assertEquals(status.code, 0, await stderr);
    } finally {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await child.status;
      await stderr;
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
