// The agent joins an API server as a node, through the same kubeconfig path a user takes: a client
// certificate for system:node:<name>, the node authorizer and NodeRestriction on. The same steps
// run against the double (always, where openssl exists) and against the real kube-apiserver that
// scripts/kube-apiserver.sh starts (CI); each target that cannot run here says why.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import {
  type ApiTarget,
  opensslAvailable,
  realKubeApiServer,
  startDoubleTarget,
} from "../testing/apiserver_targets.ts";
import { waitFor } from "./helpers.ts";

const haveOpenssl = await opensslAvailable();
const real = await realKubeApiServer();
const targets: { name: string; skip: string; start: () => Promise<ApiTarget> }[] = [
  {
    name: "the API-server double",
    skip: haveOpenssl ? "" : "openssl not found (the double's HTTPS needs test certificates)",
    start: () => startDoubleTarget("probelet-node"),
  },
  {
    name: "kube-apiserver v1.36.3",
    skip: typeof real === "string" ? real : "",
    start: () => Promise.resolve(real as ApiTarget),
  },
];
for (const t of targets) {
  if (t.skip) console.log(`apiserver_node_test: ${t.name}: skipped: ${t.skip}`);
}
// deno-lint-ignore no-explicit-any
type Json = any;

async function startAgentAgainst(
  target: ApiTarget,
): Promise<{ agent: RunningKubelet; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "probelet-apinode-" });
  await Deno.mkdir(join(dir, "pods"));
  const agent = await runKubelet({
    kubeconfig: target.nodeKubeconfig,
    nodeName: target.nodeName,
    podManifestPath: join(dir, "pods"),
    rootDir: join(dir, "root"),
    port: 0,
    address: "127.0.0.1",
    nodeLabels: { "probelet.io/agent": "true" },
    registerWithTaints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }],
    nodeStatusUpdateFrequencyMs: 1000,
    // Renew every second (duration × 0.25) so two renewals fit in a short test.
    nodeLeaseDurationSeconds: 4,
  });
  return { agent, dir };
}

for (const target of targets) {
  Deno.test({
    name: `agent joins ${target.name} as a node: registered, Ready, lease renewed, no 403`,
    ignore: target.skip !== "",
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const api = await target.start();
      const node = api.nodeName;
      const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
      // A Node or lease left by an earlier run on the real server would hide registration.
      await api.admin("DELETE", `/api/v1/nodes/${node}`);
      await api.admin(
        "DELETE",
        `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`,
      );
      let started: { agent: RunningKubelet; dir: string } | undefined;
      try {
        started = await startAgentAgainst(api);
        const port = Number(new URL(started.agent.url!).port);
        const ready = await waitFor("Node Ready=True", async () => {
          const res = await api.admin("GET", `/api/v1/nodes/${node}`);
          const conditions: Json[] = res.body?.status?.conditions ?? [];
          return conditions.some((c) => c.type === "Ready" && c.status === "True") && res.body;
        }, { timeoutMs: 40_000 });
        const labels = ready.metadata.labels;
        assertEquals(labels["kubernetes.io/hostname"], node);
        assertEquals(labels["probelet.io/agent"], "true");
        assert(
          (ready.spec.taints as Json[]).some((t) =>
            t.key === "probelet.io/agent" && t.effect === "NoExecute"
          ),
          JSON.stringify(ready.spec.taints),
        );
        assertEquals(ready.status.daemonEndpoints.kubeletEndpoint.Port, port);
        assert(ready.status.nodeInfo.kubeletVersion !== "", "nodeInfo.kubeletVersion set");
        assert(ready.status.nodeInfo.containerRuntimeVersion !== "", "containerRuntimeVersion set");
        assert(ready.status.addresses.length > 0, "addresses reported");

        const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`;
        const first = await waitFor("the node lease", async () => {
          const res = await api.admin("GET", leasePath);
          return res.status === 200 && res.body;
        });
        assertEquals(first.spec.holderIdentity, node);
        assertEquals(first.spec.leaseDurationSeconds, 4);
        const owner = await waitFor("the lease's Node owner reference", async () => {
          const res = await api.admin("GET", leasePath);
          return res.body?.metadata?.ownerReferences?.[0];
        });
        assertEquals(
          { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid },
          { apiVersion: "v1", kind: "Node", name: node, uid: ready.metadata.uid },
        );
        const renewals = new Set<string>([first.spec.renewTime]);
        await waitFor("two more lease renewals", async () => {
          const res = await api.admin("GET", leasePath);
          renewals.add(res.body.spec.renewTime);
          return renewals.size >= 3;
        }, { timeoutMs: 20_000, describe: () => [...renewals] });

        // With the node authorizer and NodeRestriction on, nothing the agent sent was refused.
        assertEquals(await api.nodeRefusals(), []);
      } finally {
        await started?.agent.stop();
        if (started) await Deno.remove(started.dir, { recursive: true });
        if (quiet) log.setLogSink(quiet);
        await api.admin("DELETE", `/api/v1/nodes/${node}`);
        await api.admin(
          "DELETE",
          `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`,
        );
        await api.close();
      }
    },
  });
}
