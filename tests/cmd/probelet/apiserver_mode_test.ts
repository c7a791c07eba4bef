/**
 * API-server mode's assembly: the node identity check against the client certificate (a
 * start-up error naming both names, exit 1 through the CLI), and runKubelet with clients wiring
 * registration, status, the lease and node events (kept at /events) on the embedded runtime.
 */
import { deepStrictEqual as assertEquals, ok as assert, throws } from "node:assert/strict";
import { parseQuantity } from "../../../src/api/resource/quantity.ts";
import { join } from "node:path";
import type { Lease } from "../../../src/api/coordination/v1/mod.ts";
import type { Node } from "../../../src/api/core/v1/mod.ts";
import { runKubelet } from "../../../src/cmd/probelet/app.ts";
import { kubeletVersion } from "../../../src/cmd/probelet/apiserver_mode.ts";
import { checkNodeIdentity } from "../../../src/cmd/probelet/kube_clients.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";
import { FakeClientset } from "../../testing/fake_clientset.ts";
import { makeTestPki, opensslAvailable } from "../../testing/apiserver/mod.ts";

const mainPath = new URL("../../../src/cmd/probelet/main.ts", import.meta.url).pathname;

const haveOpenssl = await opensslAvailable();
if (!haveOpenssl) console.log("apiserver_mode_test: identity tests skipped: openssl not found");

Deno.test({
  name: "TestCheckNodeIdentity",
  ignore: !haveOpenssl,
  fn: async () => {
    const previous = setLogSink(() => {});
    try {
      const pki = await makeTestPki({
        node: { cn: "system:node:node-a", groups: ["system:nodes"] },
        admin: { cn: "kubernetes-admin", groups: ["system:masters"] },
      });
      const { cert, key } = pki.clients.node;
      const config = { host: "https://127.0.0.1:6443", certData: cert, keyData: key };
      checkNodeIdentity(config, "node-a", "kc");
      throws(
        () => checkNodeIdentity(config, "node-b", "/etc/kc"),
        (e: Error) => {
          assertEquals(
            e.message,
            'node name "node-b" does not match the client certificate\'s identity ' +
              '"system:node:node-a" (/etc/kc): the API server only lets a kubelet act as the ' +
              "node its certificate names; run with --node-name=node-a or use a certificate for " +
              '"system:node:node-b"',
          );
          return true;
        },
      );
      // Not a node identity (an admin certificate), or no certificate: not checked.
      checkNodeIdentity({ host: "h", certData: pki.clients.admin.cert }, "node-b", "kc");
      checkNodeIdentity({ host: "h", bearerToken: "t" }, "node-b", "kc");
    } finally {
      setLogSink(previous);
    }
  },
});

Deno.test({
  name: "TestCLINodeIdentityMismatchIsAStartupError",
  ignore: !haveOpenssl,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const pki = await makeTestPki({
        node: { cn: "system:node:node-a", groups: ["system:nodes"] },
      });
      const { cert, key } = pki.clients.node;
      const b64 = (s: string) => btoa(s);
      const kubeconfig = join(dir, "kubeconfig");
      await Deno.writeTextFile(
        kubeconfig,
        [
          "apiVersion: v1",
          "kind: Config",
          "clusters:",
          "- name: c",
          "  cluster:",
          "    server: https://127.0.0.1:1",
          `    certificate-authority-data: ${b64(cert)}`,
          "users:",
          "- name: u",
          "  user:",
          `    client-certificate-data: ${b64(cert)}`,
          `    client-key-data: ${b64(key)}`,
          "contexts:",
          "- name: x",
          "  context: {cluster: c, user: u}",
          "current-context: x",
        ].join("\n"),
      );
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          mainPath,
          "--kubeconfig",
          kubeconfig,
          "--node-name",
          "node-b",
          "--root-dir",
          join(dir, "root"),
          "--read-only-port",
          "0",
          "--port",
          "0",
          "--live-view",
          "never",
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assertEquals(out.code, 1, stderr);
      assert(
        stderr.includes('node name \\"node-b\\"') || stderr.includes('node name "node-b"'),
        stderr,
      );
      assert(stderr.includes("system:node:node-a"), stderr);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("TestRunKubeletAPIServerModeWiring", async () => {
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  const dir = await Deno.makeTempDir();
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0));
  const client = new FakeClientset();
  let agent;
  try {
    agent = await runKubelet({
      clock,
      clients: { kubeClient: client, heartbeatClient: client, eventClient: client },
      nodeName: "probelet-test",
      nodeIP: "",
      nodeLabels: { "probelet.io/agent": "true" },
      registerWithTaints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }],
      rootDir: join(dir, "root"),
      port: 0,
      random: () => 0,
    });
    // Registration after 100 ms, then the lease; a 10 s tick renews it. Start-up does real I/O
    // (files of the embedded runtime), so wait for the lease in fake-time steps before timing.
    const leaseCreated = () => client.tracker.get("leases", "kube-node-lease", "probelet-test");
    for (let i = 0; i < 100 && !leaseCreated(); i++) await clock.step(100);
    assert(leaseCreated(), "lease created after registration");
    for (let i = 0; i < 11; i++) await clock.step(1000);
    const node = client.tracker.get("nodes", "", "probelet-test") as Node;
    assert(node, "node registered");
    assertEquals(node.metadata.labels?.["probelet.io/agent"], "true");
    assertEquals(node.spec?.taints, [
      { key: "probelet.io/agent", value: "true", effect: "NoExecute" },
    ]);
    assertEquals(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, agent.server?.port);
    assertEquals(node.status?.nodeInfo?.containerRuntimeVersion.split("://")[0], "embedded");
    assertEquals(node.status?.nodeInfo?.kubeletVersion, kubeletVersion);
    assertEquals(node.status?.capacity?.pods, "110");
    assert(node.status?.capacity?.["ephemeral-storage"], "ephemeral-storage capacity");
    // Allocatable: capacity less kubelet's default hard eviction thresholds (memory.available
    // 100Mi, nodefs.available 10 % as Go's float32), as kubelet's node allocatable reservation.
    const capacity = (name: string) => parseQuantity(node.status!.capacity![name]);
    const allocatable = (name: string) => parseQuantity(node.status!.allocatable![name]);
    assertEquals(allocatable("memory"), capacity("memory") - 100 * 1024 * 1024);
    assertEquals(
      allocatable("ephemeral-storage"),
      capacity("ephemeral-storage") -
        Math.trunc(capacity("ephemeral-storage") * Math.fround(0.1)),
    );
    assertEquals(node.status?.allocatable?.cpu, node.status?.capacity?.cpu);
    assertEquals(node.status?.conditions?.at(-1)?.status, "True");
    const lease = client.tracker.get("leases", "kube-node-lease", "probelet-test") as Lease;
    assertEquals(lease.spec?.holderIdentity, "probelet-test");
    assertEquals(lease.spec?.leaseDurationSeconds, 40);
    assertEquals(lease.metadata.ownerReferences?.[0]?.kind, "Node");
    assertEquals(agent.node?.summary(), "Ready, lease renewed 1s ago");
    const leaseWrites = client.actions.filter((a) =>
      a.resource === "leases" && (a.verb === "create" || a.verb === "update")
    );
    assertEquals(leaseWrites.map((a) => a.verb), ["create", "update"]);
    // Node events land in the agent's event list (/events), as kubelet records them.
    const reasons = agent.kubelet.events.list().filter((e) => e.involvedObject.kind === "Node")
      .map((e) => e.reason);
    assertEquals(reasons, [
      "Starting",
      "NodeHasSufficientMemory",
      "NodeHasNoDiskPressure",
      "NodeHasSufficientPID",
    ]);
    // ... and reach the API server through the event client, as kubelet's recorder sends them.
    const created = client.actions.filter((a) => a.resource === "events" && a.verb === "create")
      // deno-lint-ignore no-explicit-any
      .map((a) => a.object as any);
    assertEquals(created.map((e) => e.reason), [
      "Starting",
      "NodeHasSufficientMemory",
      "NodeHasNoDiskPressure",
      "NodeHasSufficientPID",
    ]);
    assertEquals(created[0].message, "Starting kubelet.");
    assertEquals(created[1].metadata.namespace, "default");
    assertEquals(created[1].source, { component: "kubelet", host: "probelet-test" });
    assertEquals(created[1].involvedObject.kind, "Node");
    assertEquals(created[1].message, "Node probelet-test status is now: NodeHasSufficientMemory");
  } finally {
    await agent?.stop();
    setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
  assertEquals(clock.pendingTimers(), 0, "nothing left registered after stop");
});
