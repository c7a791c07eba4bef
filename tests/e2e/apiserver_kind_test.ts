// probelet as a node of a real cluster (brief §3.3), checked through the cluster's own view: every
// assertion reads `kubectl get ... -o json`, never the agent's memory. Two clusters can host it:
// - kind: `deno task e2e:kind` (PROBELET_E2E_KIND=1) where kind, docker (with a running daemon),
//   kubectl and openssl exist;
// - the local control plane of scripts/kube-apiserver.sh (etcd, kube-apiserver,
//   kube-controller-manager, kube-scheduler built from Go modules; CI starts it) where kubectl and
//   openssl exist.
// Where neither can run, the test is skipped and prints why.
//
// Steps: the node's client certificate is minted through the CSR API (signer
// kubernetes.io/kube-apiserver-client-kubelet, approved with kubectl, signed by the controller
// manager); the agent starts in-process on the embedded runtime with the probelet.io/agent taint
// and label; then the Node, its lease, a scheduled and a pinned pod (readiness, liveness restarts
// and events), a graceful delete, a static pod's mirror (recreated after deletion), DaemonSet pods
// rejected, and finally Ready=Unknown once the agent is stopped.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { waitFor } from "./helpers.ts";

const clusterName = "probelet-e2e";
const nodeName = "probelet-e2e";
const namespace = "default";

// deno-lint-ignore no-explicit-any
type Json = any;

async function onPath(tool: string): Promise<boolean> {
  try {
    const out = await new Deno.Command("sh", {
      args: ["-c", `command -v ${tool}`],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

async function missingTools(tools: string[]): Promise<string> {
  const missing = [];
  for (const tool of tools) {
    if (!(await onPath(tool))) missing.push(tool);
  }
  return missing.length > 0 ? `not on PATH: ${missing.join(", ")}` : "";
}

async function kindSkipReason(): Promise<string> {
  if (!Deno.env.get("PROBELET_E2E_KIND")) {
    return "PROBELET_E2E_KIND is not set (run `deno task e2e:kind` where kind and docker exist)";
  }
  const missing = await missingTools(["kind", "docker", "kubectl", "openssl"]);
  if (missing) return missing;
  const docker = await new Deno.Command("docker", {
    args: ["info"],
    stdout: "null",
    stderr: "null",
  }).output();
  if (!docker.success) {
    return "docker is installed but its daemon does not answer (`docker info` failed)";
  }
  return "";
}

// The local control plane counts when its kube-apiserver answers and the script started the
// controller manager and scheduler next to it (CSR signing, scheduling, node lifecycle).
async function localSkipReason(): Promise<{ skip: string; adminKubeconfig?: string }> {
  if (Deno.env.get("PROBELET_E2E_KIND")) {
    return { skip: "PROBELET_E2E_KIND is set: kind runs instead" };
  }
  const real = await realKubeApiServer();
  if (typeof real === "string") return { skip: real };
  await real.close();
  if (!(await real.controllersRunning())) {
    return { skip: "the local kube-apiserver runs without kube-controller-manager/kube-scheduler" };
  }
  const missing = await missingTools(["kubectl", "openssl"]);
  if (missing) return { skip: missing };
  return { skip: "", adminKubeconfig: real.adminKubeconfig };
}

interface Provider {
  name: string;
  skip: string;
  open(dir: string): Promise<Cluster>;
}

const local = await localSkipReason();
const providers: Provider[] = [
  { name: "kind", skip: await kindSkipReason(), open: ensureKindCluster },
  {
    name: "the local control plane (scripts/kube-apiserver.sh)",
    skip: local.skip,
    open: () => Promise.resolve({ kubeconfig: local.adminKubeconfig!, created: false }),
  },
];
for (const p of providers) {
  if (p.skip) console.log(`apiserver_kind_test: ${p.name}: skipped: ${p.skip}`);
}

/** Runs a command; returns stdout, throws with stderr on failure. */
async function run(
  cmd: string,
  args: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: options.env,
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const out = await child.output();
  const text = new TextDecoder();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${text.decode(out.stderr).trim()}`);
  }
  return text.decode(out.stdout);
}

interface Cluster {
  kubeconfig: string;
  created: boolean;
}

async function ensureKindCluster(dir: string): Promise<Cluster> {
  const existing = (await run("kind", ["get", "clusters"])).split("\n").map((s) => s.trim());
  let created = false;
  if (!existing.includes(clusterName)) {
    await run("kind", ["create", "cluster", "--name", clusterName, "--wait", "120s"]);
    created = true;
  }
  const kubeconfig = join(dir, "admin.kubeconfig");
  await Deno.writeTextFile(
    kubeconfig,
    await run("kind", ["get", "kubeconfig", "--name", clusterName]),
  );
  return { kubeconfig, created };
}

function kubectl(cluster: Cluster) {
  const call = (args: string[], stdin?: string) =>
    run("kubectl", ["--kubeconfig", cluster.kubeconfig, ...args], { stdin });
  return {
    call,
    json: async (args: string[]): Promise<Json> => JSON.parse(await call([...args, "-o", "json"])),
    /** The object, or undefined when kubectl says NotFound. */
    tryJson: async (args: string[]): Promise<Json | undefined> => {
      try {
        return JSON.parse(await call([...args, "-o", "json"]));
      } catch (e) {
        if (/NotFound|not found/.test((e as Error).message)) return undefined;
        throw e;
      }
    },
    apply: (obj: unknown) => call(["apply", "-f", "-"], JSON.stringify(obj)),
  };
}

/** A node kubeconfig whose client certificate was issued through the CSR API. */
async function nodeKubeconfig(
  cluster: Cluster,
  dir: string,
): Promise<{ path: string; csrName: string }> {
  const k = kubectl(cluster);
  const key = join(dir, "node.key");
  const csrFile = join(dir, "node.csr");
  await run("openssl", ["genrsa", "-out", key, "2048"]);
  await run("openssl", [
    "req",
    "-new",
    "-key",
    key,
    "-subj",
    `/CN=system:node:${nodeName}/O=system:nodes`,
    "-out",
    csrFile,
  ]);
  const csrName = `probelet-e2e-${Date.now()}`;
  await k.apply({
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name: csrName },
    spec: {
      request: btoa(await Deno.readTextFile(csrFile)),
      signerName: "kubernetes.io/kube-apiserver-client-kubelet",
      usages: ["digital signature", "client auth"],
      expirationSeconds: 86400,
    },
  });
  await k.call(["certificate", "approve", csrName]);
  const certB64 = await waitFor("the approved CSR's certificate", async () => {
    const csr = await k.json(["get", "csr", csrName]);
    return csr.status?.certificate as string | undefined;
  }, { timeoutMs: 60_000 });
  const admin = parseYaml(await Deno.readTextFile(cluster.kubeconfig)) as Json;
  const server = admin.clusters[0].cluster;
  const path = join(dir, "node.kubeconfig");
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: clusterName, cluster: server }],
      users: [{
        name: `system:node:${nodeName}`,
        user: {
          "client-certificate-data": certB64,
          "client-key-data": btoa(await Deno.readTextFile(key)),
        },
      }],
      contexts: [{
        name: nodeName,
        context: { cluster: clusterName, user: `system:node:${nodeName}` },
      }],
      "current-context": nodeName,
    }),
  );
  return { path, csrName };
}

const toleration = {
  key: "probelet.io/agent",
  operator: "Equal",
  value: "true",
  effect: "NoExecute",
};

function hostPod(name: string, options: { pinned?: boolean; liveness?: "pass" | "fail" }): Json {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: { app: "probelet-e2e" } },
    spec: {
      // The hostname label too: nodes left by earlier runs against the same API server carry
      // probelet.io/agent as well, and the scheduler may still see them Ready.
      ...(options.pinned
        ? { nodeName }
        : { nodeSelector: { "probelet.io/agent": "true", "kubernetes.io/hostname": nodeName } }),
      tolerations: [toleration],
      // Without these the API server adds the service-account token volume and service links,
      // which probelet refuses (PodFeatureUnsupported) until volumes and service env exist.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 5,
      containers: [{
        name: "app",
        image: "probelet.local/host",
        command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"],
        readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 },
        ...(options.liveness === "fail"
          ? {
            livenessProbe: { exec: { command: ["false"] }, periodSeconds: 1, failureThreshold: 1 },
          }
          : {}),
      }],
    },
  };
}

// The static pod tolerates the node's own NoExecute taint: otherwise the controller manager's
// taint-based eviction deletes its mirror pod as soon as the agent creates it, many times a second.
const staticPod = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
spec:
  tolerations:
    - key: probelet.io/agent
      operator: Equal
      value: "true"
      effect: NoExecute
  containers:
    - name: app
      image: probelet.local/host
      command: [sh, -c, "while :; do sleep 1; done"]
`;

function conditionStatus(obj: Json, type: string): string | undefined {
  return (obj?.status?.conditions ?? []).find((c: Json) => c.type === type)?.status;
}

for (const provider of providers) {
  Deno.test({
    name:
      `cluster (${provider.name}): probelet joins; kubectl sees the Node, lease, pods, events, mirror pod, Ready=Unknown after stop`,
    ignore: provider.skip !== "",
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async (t) => {
      const dir = await Deno.makeTempDir({ prefix: "probelet-kind-" });
      const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
      let cluster: Cluster | undefined;
      let agent: RunningKubelet | undefined;
      let csrName = "";
      try {
        cluster = await provider.open(dir);
        const k = kubectl(cluster);
        const identity = await nodeKubeconfig(cluster, dir);
        csrName = identity.csrName;
        const kubeconfig = identity.path;
        await Deno.mkdir(join(dir, "pods"));
        await Deno.writeTextFile(join(dir, "pods", "static-web.yaml"), staticPod);
        agent = await runKubelet({
          kubeconfig,
          nodeName,
          podManifestPath: join(dir, "pods"),
          rootDir: join(dir, "root"),
          port: 0,
          address: "127.0.0.1",
          nodeLabels: { "probelet.io/agent": "true" },
          registerWithTaints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }],
        });

        await t.step("Node Ready=True within 40 s, with nodeInfo and daemonEndpoints", async () => {
          const node = await waitFor("Node Ready", async () => {
            const n = await k.tryJson(["get", "node", nodeName]);
            return conditionStatus(n, "Ready") === "True" && n;
          }, { timeoutMs: 40_000 });
          assert(node.status.nodeInfo.kubeletVersion, "kubeletVersion");
          assert(node.status.nodeInfo.containerRuntimeVersion, "containerRuntimeVersion");
          assertEquals(
            node.status.daemonEndpoints.kubeletEndpoint.Port,
            Number(new URL(agent!.url!).port),
          );
          assert(
            node.spec.taints.some((x: Json) =>
              x.key === "probelet.io/agent" && x.effect === "NoExecute"
            ),
          );
        });

        await t.step("lease: holder, Node owner, renewTime advancing twice in 25 s", async () => {
          const node = await k.json(["get", "node", nodeName]);
          const lease = await waitFor(
            "the lease",
            () => k.tryJson(["-n", "kube-node-lease", "get", "lease", nodeName]),
          );
          assertEquals(lease.spec.holderIdentity, nodeName);
          const owner = await waitFor(
            "lease owner reference",
            async () =>
              (await k.json(["-n", "kube-node-lease", "get", "lease", nodeName])).metadata
                .ownerReferences?.[0],
          );
          assertEquals([owner.kind, owner.name, owner.uid], ["Node", nodeName, node.metadata.uid]);
          const seen = new Set<string>([lease.spec.renewTime]);
          await waitFor("two renewals", async () => {
            seen.add(
              (await k.json(["-n", "kube-node-lease", "get", "lease", nodeName])).spec.renewTime,
            );
            return seen.size >= 3;
          }, { timeoutMs: 25_000, describe: () => [...seen] });
        });

        await t.step("pods: scheduled and pinned pods run and turn Ready", async () => {
          await k.apply(hostPod("e2e-scheduled", {}));
          await k.apply(hostPod("e2e-pinned", { pinned: true }));
          for (const name of ["e2e-scheduled", "e2e-pinned"]) {
            const pod = await waitFor(`${name} Ready`, async () => {
              const p = await k.json(["-n", namespace, "get", "pod", name]);
              return conditionStatus(p, "Ready") === "True" && p;
            }, { timeoutMs: 60_000 });
            assertEquals(pod.spec.nodeName, nodeName);
            for (const type of ["Initialized", "ContainersReady", "PodScheduled"]) {
              assertEquals(conditionStatus(pod, type), "True", type);
            }
            assert(pod.status.podIP, "podIP");
            const cs = pod.status.containerStatuses[0];
            assertEquals([cs.ready, cs.started], [true, true]);
          }
        });

        await t.step(
          "liveness failure: restartCount grows, Unhealthy/Killing events from the node",
          async () => {
            await k.apply(hostPod("e2e-unhealthy", { pinned: true, liveness: "fail" }));
            await waitFor("restarts", async () => {
              const p = await k.json(["-n", namespace, "get", "pod", "e2e-unhealthy"]);
              return (p.status.containerStatuses?.[0]?.restartCount ?? 0) >= 2;
            }, { timeoutMs: 90_000 });
            const events = await k.json([
              "-n",
              namespace,
              "get",
              "events",
              "--field-selector",
              "involvedObject.name=e2e-unhealthy",
            ]);
            const reasons = new Set(events.items.map((e: Json) => e.reason));
            assert(reasons.has("Unhealthy") && reasons.has("Killing"), [...reasons].join(","));
            const unhealthy = events.items.find((e: Json) => e.reason === "Unhealthy");
            assertEquals(unhealthy.source.host, nodeName);
            assert(unhealthy.count >= 2, `count ${unhealthy.count}`);
          },
        );

        await t.step("graceful delete: gone within the grace period", async () => {
          const started = Date.now();
          await k.call([
            "-n",
            namespace,
            "delete",
            "pod",
            "e2e-pinned",
            "--grace-period=5",
            "--wait=false",
          ]);
          await waitFor(
            "pod removed",
            async () =>
              (await k.tryJson(["-n", namespace, "get", "pod", "e2e-pinned"])) === undefined,
            { timeoutMs: 20_000 },
          );
          assert(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
        });

        await t.step(
          "static pod: mirror with hash annotation and Node owner, recreated after deletion",
          async () => {
            const mirrorName = `static-web-${nodeName}`;
            const mirror = await waitFor(
              "mirror pod",
              () => k.tryJson(["-n", namespace, "get", "pod", mirrorName]),
              {
                timeoutMs: 40_000,
              },
            );
            assert(mirror.metadata.annotations["kubernetes.io/config.mirror"], "mirror annotation");
            const owner = mirror.metadata.ownerReferences[0];
            assertEquals([owner.kind, owner.name, owner.controller], ["Node", nodeName, true]);
            await k.call(["-n", namespace, "delete", "pod", mirrorName, "--wait=false"]);
            await waitFor("recreated mirror", async () => {
              const again = await k.tryJson(["-n", namespace, "get", "pod", mirrorName]);
              return again !== undefined && again.metadata.uid !== mirror.metadata.uid &&
                again.metadata.deletionTimestamp === undefined;
            }, { timeoutMs: 40_000 });
          },
        );

        await t.step(
          "DaemonSet pods without the explicit toleration are rejected, never run",
          async () => {
            const pods = await k.json([
              "get",
              "pods",
              "-A",
              "--field-selector",
              `spec.nodeName=${nodeName}`,
            ]);
            for (const p of pods.items) {
              const tolerates = (p.spec.tolerations ?? []).some((x: Json) =>
                x.key === "probelet.io/agent"
              );
              if (tolerates || p.metadata.annotations?.["kubernetes.io/config.mirror"]) continue;
              await waitFor(`${p.metadata.namespace}/${p.metadata.name} rejected`, async () => {
                const now = await k.tryJson([
                  "-n",
                  p.metadata.namespace,
                  "get",
                  "pod",
                  p.metadata.name,
                ]);
                return now === undefined ||
                  (now.status.phase === "Failed" &&
                    /^Pod was rejected: /.test(now.status.message ?? ""));
              }, { timeoutMs: 30_000 });
            }
          },
        );
        await t.step(
          "agent stopped: the node lifecycle controller marks the Node Ready=Unknown",
          async () => {
            await agent!.stop();
            agent = undefined;
            await waitFor("Ready=Unknown", async () => {
              const n = await k.json(["get", "node", nodeName]);
              return conditionStatus(n, "Ready") === "Unknown";
            }, { timeoutMs: 120_000 });
          },
        );
      } finally {
        await agent?.stop();
        if (cluster) {
          const k = kubectl(cluster);
          await k.call([
            "-n",
            namespace,
            "delete",
            "pods",
            "-l",
            "app=probelet-e2e",
            "--grace-period=0",
            "--force",
          ])
            .catch(() => {});
          await k.call(["delete", "node", nodeName, "--ignore-not-found"]).catch(() => {});
          if (csrName) {
            await k.call(["delete", "csr", csrName, "--ignore-not-found"]).catch(() => {});
          }
          if (cluster.created) {
            await run("kind", ["delete", "cluster", "--name", clusterName]).catch(() => {});
          }
        }
        if (quiet) log.setLogSink(quiet);
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
