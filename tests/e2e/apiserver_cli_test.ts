/**
 * The CLI in API-server mode, end to end: `probelet --kubeconfig <file>` on the embedded runtime
 * against an API server. By default the API server is the strict double (HTTPS, client
 * certificates, node authorizer + NodeRestriction on), where every request is also checked: none
 * may be forbidden. Set PROBELET_E2E_KUBECONFIG (the node's kubeconfig, CN=system:node:<node>),
 * PROBELET_E2E_ADMIN_KUBECONFIG and PROBELET_E2E_NODE_NAME to run the same scenarios against a
 * real kube-apiserver (the double-only checks are then skipped).
 *
 * Scenarios: the node registers and turns Ready, its lease renews; a pod created in the API runs
 * and its Ready condition and restart count arrive through status patches; a failing liveness
 * probe produces Unhealthy and Killing events whose count grows; a pod without the explicit
 * probelet.io/agent toleration is rejected and its command never runs; a graceful delete kills
 * within the grace period, reports a terminal phase and removes the pod; a static pod gets a
 * mirror pod owned by the Node, recreated when deleted.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import type { Event, Node, Pod } from "../../src/api/core/v1/mod.ts";
import type { Lease } from "../../src/api/coordination/v1/mod.ts";
import { isNotFound } from "../../src/client/errors.ts";
import { loadKubeconfig } from "../../src/client/kubeconfig.ts";
import { type HTTPClientset, newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { killRecordedGroups } from "../../src/runtime/embedded/mod.ts";
import {
  adminUser,
  kubeconfigYaml,
  makeTestPki,
  opensslAvailable,
  type RunningApiServer,
  startApiServer,
} from "../testing/apiserver/mod.ts";
import { waitFor } from "./helpers.ts";
import { startTaskDenoFlags } from "../testing/start_task.ts";

const mainPath = new URL("../../src/cmd/probelet/main.ts", import.meta.url).pathname;
const agentToleration = { key: "probelet.io/agent", operator: "Exists" as const };

/** Where the scenarios run: the double (started here) or a cluster named by the environment. */
interface Target {
  nodeName: string;
  /** The node's kubeconfig file. */
  kubeconfig: string;
  admin: HTTPClientset;
  /** The double, when the scenarios run against it. */
  double?: RunningApiServer;
  close(): Promise<void>;
}

async function targetFromEnv(): Promise<Target | undefined> {
  const kubeconfig = Deno.env.get("PROBELET_E2E_KUBECONFIG");
  const adminKubeconfig = Deno.env.get("PROBELET_E2E_ADMIN_KUBECONFIG");
  if (!kubeconfig || !adminKubeconfig) return undefined;
  const { config } = await loadKubeconfig(adminKubeconfig);
  const admin = newForConfig(config);
  return {
    nodeName: Deno.env.get("PROBELET_E2E_NODE_NAME") ?? "probelet-e2e",
    kubeconfig,
    admin,
    close: () => Promise.resolve(admin.close()),
  };
}

async function startDouble(dir: string): Promise<Target> {
  const nodeName = "e2e-node";
  const pki = await makeTestPki({
    node: { cn: `system:node:${nodeName}`, groups: ["system:nodes"] },
    admin: { cn: adminUser.name, groups: adminUser.groups },
  });
  const double = await startApiServer({
    tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
    bookmarkIntervalMs: 5_000,
  });
  const write = async (name: string, client: "node" | "admin") => {
    const path = join(dir, name);
    await Deno.writeTextFile(
      path,
      kubeconfigYaml({ server: double.url, caCert: pki.ca.cert, client: pki.clients[client] }),
    );
    return path;
  };
  const kubeconfig = await write("node.kubeconfig", "node");
  const { config } = await loadKubeconfig(await write("admin.kubeconfig", "admin"));
  const admin = newForConfig(config);
  return {
    nodeName,
    kubeconfig,
    admin,
    double,
    close: async () => {
      admin.close();
      await double.close();
    },
  };
}

const fromEnv = await targetFromEnv();
const haveOpenssl = fromEnv !== undefined || await opensslAvailable();
if (!haveOpenssl) {
  console.log("apiserver_cli_test: skipped: openssl is needed to mint the double's certificates");
}

function apiPod(name: string, nodeName: string, spec: Partial<Pod["spec"]>): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName,
      tolerations: [agentToleration],
      terminationGracePeriodSeconds: 5,
      // Without these the API server adds the service-account token volume and service links,
      // which probelet refuses (PodFeatureUnsupported) until volumes and service env exist.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      containers: [],
      ...spec,
    },
  };
}

async function getOrUndefined<T>(get: () => Promise<T>): Promise<T | undefined> {
  try {
    return await get();
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

Deno.test({
  name: "probelet CLI in API-server mode (embedded runtime)",
  ignore: !haveOpenssl,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const base = await Deno.makeTempDir({ prefix: "probelet-api-e2e-" });
    const manifests = join(base, "manifests");
    const markers = join(base, "markers");
    await Deno.mkdir(manifests);
    await Deno.mkdir(markers);
    const target = fromEnv ?? await startDouble(base);
    const { admin, nodeName } = target;
    const pods = admin.coreV1.pods("default");
    await Deno.writeTextFile(
      join(manifests, "static.yaml"),
      `apiVersion: v1
kind: Pod
metadata:
  name: static
spec:
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "sleep 600 # ${markers}"]
`,
    );
    let child: Deno.ChildProcess | undefined;
    let stderr: Promise<string> | undefined;
    const created: string[] = [];
    try {
      child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          // As `deno task start` runs the agent (its V8 mode and code cache setting).
          ...startTaskDenoFlags(),
          mainPath,
          "--kubeconfig",
          target.kubeconfig,
          "--node-name",
          nodeName,
          "--pod-manifest-path",
          manifests,
          "--root-dir",
          join(base, "root"),
          "--read-only-port",
          "0",
          "--port",
          "0",
          "--live-view",
          "never",
          "--register-with-taints",
          "probelet.io/agent=true:NoExecute",
          "--node-labels",
          "probelet.io/agent=true",
          "--node-lease-duration-seconds",
          "4",
          "--node-status-update-frequency",
          "2s",
        ],
        stdout: "null",
        stderr: "piped",
      }).spawn();
      stderr = new Response(child.stderr).text();
      let exited = false;
      child.status.then(() => exited = true);
      const webPatches = () =>
        target.double?.double.requestsTo("PATCH", "/api/v1/namespaces/default/pods/web/status")
          .length;
      let webStatusPatches: number | undefined;
      const alive = () => {
        if (exited) throw new Error("the agent exited");
      };

      await t.step("the node registers and turns Ready", async () => {
        const node = await waitFor("Node Ready=True", async () => {
          alive();
          const n = await getOrUndefined(() => admin.coreV1.nodes().get(nodeName));
          return n?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" && n;
        }, { timeoutMs: 40_000 }) as Node;
        // Registered with its taint (the double, like the node lifecycle controller, may add
        // node.kubernetes.io/not-ready while it is not Ready).
        assert(
          node.spec?.taints?.some((t) =>
            t.key === "probelet.io/agent" && t.value === "true" && t.effect === "NoExecute"
          ),
          JSON.stringify(node.spec?.taints),
        );
        assertEquals(node.metadata.labels?.["probelet.io/agent"], "true");
        assert(node.status?.nodeInfo?.containerRuntimeVersion?.startsWith("embedded://"));
      });

      await t.step("the lease renews", async () => {
        const renewTimes = new Set<string>();
        await waitFor("three lease renewals", async () => {
          const lease = await getOrUndefined(() =>
            admin.coordinationV1.leases("kube-node-lease").get(nodeName)
          ) as Lease | undefined;
          if (lease?.spec?.renewTime) renewTimes.add(lease.spec.renewTime);
          return renewTimes.size >= 3;
        }, { timeoutMs: 15_000 });
        const lease = await admin.coordinationV1.leases("kube-node-lease").get(nodeName);
        assertEquals(lease.spec?.holderIdentity, nodeName);
        assertEquals(lease.metadata.ownerReferences?.[0]?.kind, "Node");
      });

      await t.step(
        "a pod created in the API runs; Ready and restarts arrive by status patches",
        async () => {
          await pods.create(apiPod("web", nodeName, {
            containers: [{
              name: "app",
              image: "busybox",
              command: ["sh", "-c", `touch ${markers}/web; sleep 600`],
              readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 },
            }],
          }));
          created.push("web");
          const pod = await waitFor("web Ready=True in the API", async () => {
            const p = await pods.get("web");
            return p.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" && p;
          }, { timeoutMs: 30_000 }) as Pod;
          assertEquals(pod.status?.phase, "Running");
          const app = pod.status?.containerStatuses?.[0];
          assertEquals(app?.ready, true);
          assertEquals(app?.restartCount, 0);
          assert(app?.state?.running?.startedAt, JSON.stringify(app));
          for (const type of ["Initialized", "ContainersReady", "PodScheduled"]) {
            assertEquals(
              pod.status?.conditions?.find((c) => c.type === type)?.status,
              "True",
              type,
            );
          }
          assert((await Deno.stat(join(markers, "web"))).isFile);
        },
      );

      await t.step(
        "a failing liveness probe: Unhealthy and Killing events, restarts grow",
        async () => {
          await pods.create(apiPod("crashy", nodeName, {
            containers: [{
              name: "app",
              image: "busybox",
              command: ["sleep", "600"],
              livenessProbe: {
                exec: { command: ["false"] },
                periodSeconds: 1,
                failureThreshold: 2,
              },
            }],
          }));
          created.push("crashy");
          await waitFor("crashy restarted", async () => {
            const p = await pods.get("crashy");
            return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1;
          }, { timeoutMs: 30_000 });
          const events = async () =>
            (await admin.coreV1.events("default").list()).items.filter((e: Event) =>
              e.involvedObject?.name === "crashy"
            );
          const unhealthy = await waitFor("Unhealthy count ≥ 2", async () => {
            const e = (await events()).find((e) => e.reason === "Unhealthy");
            return (e?.count ?? 0) >= 2 && e;
          }, { timeoutMs: 20_000 }) as Event;
          assertEquals(unhealthy.type, "Warning");
          assertEquals(unhealthy.source?.host, nodeName);
          assertEquals(unhealthy.involvedObject?.fieldPath, "spec.containers{app}");
          const killing = (await events()).find((e) => e.reason === "Killing");
          assert(killing, "a Killing event");
          assertEquals(killing.message, "Container app failed liveness probe, will be restarted");
          // web has been Ready for seconds now (its readiness probe runs each second). Counted from
          // here, not at Ready: once the API shows a pod Running, kubelet v1.36's next status carries
          // the pod cgroup's resources (status.resources), one more patch after Running and Ready.
          webStatusPatches = webPatches();
        },
      );

      await t.step("a pod without the explicit toleration is rejected and never runs", async () => {
        await pods.create(apiPod("daemon", nodeName, {
          tolerations: [{ operator: "Exists" }],
          containers: [{
            name: "app",
            image: "busybox",
            command: ["sh", "-c", `touch ${markers}/daemon; sleep 600`],
          }],
        }));
        created.push("daemon");
        const pod = await waitFor("daemon Failed", async () => {
          const p = await pods.get("daemon");
          return p.status?.phase === "Failed" && p;
        }, { timeoutMs: 20_000 }) as Pod;
        assertEquals(pod.status?.reason, "AgentTaintNotTolerated");
        assert(pod.status?.message?.startsWith("Pod was rejected: "), String(pod.status?.message));
        const missing = await Deno.stat(join(markers, "daemon")).then(() => false, () => true);
        assert(missing, "the rejected pod's command never ran");
      });

      await t.step("a pod with a volume is refused, naming the field, and never runs", async () => {
        await pods.create(apiPod("volume", nodeName, {
          volumes: [{ name: "scratch", emptyDir: {} }],
          containers: [{
            name: "app",
            image: "busybox",
            command: ["sh", "-c", `touch ${markers}/volume; sleep 600`],
          }],
        }));
        created.push("volume");
        const pod = await waitFor("volume Failed", async () => {
          const p = await pods.get("volume");
          return p.status?.phase === "Failed" && p;
        }, { timeoutMs: 20_000 }) as Pod;
        assertEquals(pod.status?.reason, "PodFeatureUnsupported");
        assertEquals(
          pod.status?.message,
          "Pod was rejected: spec.volumes[0].emptyDir is not supported by this node",
        );
        const missing = await Deno.stat(join(markers, "volume")).then(() => false, () => true);
        assert(missing, "the rejected pod's command never ran");
      });

      await t.step(
        "a pod with the API server's service-account token volume is refused",
        async () => {
          await pods.create(apiPod("tokened", nodeName, {
            automountServiceAccountToken: true,
            containers: [{
              name: "app",
              image: "busybox",
              command: ["sh", "-c", `touch ${markers}/tokened; sleep 600`],
            }],
          }));
          created.push("tokened");
          const pod = await waitFor("tokened Failed", async () => {
            const p = await pods.get("tokened");
            return p.status?.phase === "Failed" && p;
          }, { timeoutMs: 20_000 }) as Pod;
          assertEquals(pod.status?.reason, "PodFeatureUnsupported");
          // Both the volume and its mount are named (in the order the API server lists them).
          const message = pod.status?.message ?? "";
          for (const field of ["spec.volumes[0].projected", "spec.containers[0].volumeMounts"]) {
            assert(message.includes(`${field} is not supported by this node`), message);
          }
          const missing = await Deno.stat(join(markers, "tokened")).then(() => false, () => true);
          assert(missing, "the rejected pod's command never ran");
        },
      );

      await t.step(
        "a graceful delete kills within the grace period and removes the pod",
        async () => {
          await pods.create(apiPod("stubborn", nodeName, {
            terminationGracePeriodSeconds: 30,
            containers: [{
              name: "app",
              image: "busybox",
              // Ignores SIGTERM: only the grace period's SIGKILL ends it.
              command: [
                "sh",
                "-c",
                `trap '' TERM; touch ${markers}/stubborn; while true; do sleep 0.2; done`,
              ],
            }],
          }));
          created.push("stubborn");
          const running = await waitFor("stubborn running", async () => {
            const p = await pods.get("stubborn");
            return p.status?.containerStatuses?.[0]?.state?.running !== undefined && p;
          }, { timeoutMs: 30_000 }) as Pod;
          const uid = running.metadata.uid;
          const start = Date.now();
          await pods.delete("stubborn", { gracePeriodSeconds: 3 });
          await waitFor(
            "stubborn gone",
            async () => (await getOrUndefined(() => pods.get("stubborn"))) === undefined,
            {
              timeoutMs: 20_000,
            },
          );
          const elapsed = Date.now() - start;
          console.log(`graceful delete (grace 3 s, SIGTERM ignored): gone after ${elapsed} ms`);
          // Killed with the deletion's 3 s (not the pod's 30 s), then deleted by the kubelet.
          assert(elapsed >= 3_000 && elapsed < 12_000, `removed after ${elapsed} ms`);
          if (target.double) {
            const path = `/api/v1/namespaces/default/pods/stubborn`;
            const finalDelete = target.double.double.requestsTo("DELETE", path).find((r) =>
              r.user === `system:node:${nodeName}`
            );
            assert(finalDelete, "the kubelet's final DELETE");
            const body = JSON.parse(finalDelete.body);
            assertEquals(body.gracePeriodSeconds, 0);
            assertEquals(body.preconditions?.uid, uid);
            const patches = target.double.double.requestsTo("PATCH", `${path}/status`);
            const terminal = patches.map((r) => JSON.parse(r.body)).find((b) =>
              b.status?.phase === "Failed" || b.status?.phase === "Succeeded"
            );
            assert(terminal, "a terminal phase was patched before the delete");
            assertEquals(terminal.metadata.uid, uid);
          }
        },
      );

      await t.step("a second delete with a shorter grace period speeds up the kill", async () => {
        await pods.create(apiPod("slow", nodeName, {
          terminationGracePeriodSeconds: 60,
          containers: [{
            name: "app",
            image: "busybox",
            command: ["sh", "-c", "trap '' TERM; while true; do sleep 0.2; done"],
          }],
        }));
        created.push("slow");
        await waitFor(
          "slow running",
          async () =>
            (await pods.get("slow")).status?.containerStatuses?.[0]?.state?.running !== undefined,
          {
            timeoutMs: 30_000,
          },
        );
        await pods.delete("slow", { gracePeriodSeconds: 60 });
        await waitFor(
          "slow being deleted",
          async () => (await pods.get("slow")).metadata.deletionTimestamp !== undefined,
        );
        await new Promise((r) => setTimeout(r, 1_000));
        const start = Date.now();
        await pods.delete("slow", { gracePeriodSeconds: 2 });
        await waitFor(
          "slow gone",
          async () => (await getOrUndefined(() => pods.get("slow"))) === undefined,
          { timeoutMs: 20_000 },
        );
        const elapsed = Date.now() - start;
        console.log(`second delete (60 s → 2 s): gone after ${elapsed} ms`);
        assert(elapsed >= 2_000 && elapsed < 10_000, `removed after ${elapsed} ms`);
      });

      await t.step("a static pod gets a mirror pod; a deleted mirror is recreated", async () => {
        const name = `static-${nodeName}`;
        const mirror = await waitFor("the mirror pod", () => getOrUndefined(() => pods.get(name)), {
          timeoutMs: 30_000,
        }) as Pod;
        assert(mirror.metadata.annotations?.["kubernetes.io/config.mirror"]);
        assertEquals(
          mirror.metadata.annotations?.["kubernetes.io/config.mirror"],
          mirror.metadata.annotations?.["kubernetes.io/config.hash"],
        );
        const node = await admin.coreV1.nodes().get(nodeName);
        assertEquals(mirror.metadata.ownerReferences, [{
          apiVersion: "v1",
          kind: "Node",
          name: nodeName,
          uid: node.metadata.uid!,
          controller: true,
        }]);
        // The static pod's status is reported on the mirror.
        await waitFor(
          "the mirror shows Running",
          async () => (await pods.get(name)).status?.phase === "Running",
          { timeoutMs: 20_000 },
        );
        await pods.delete(name, { gracePeriodSeconds: 0 });
        const again = await waitFor("the mirror recreated", async () => {
          const p = await getOrUndefined(() => pods.get(name));
          return p && p.metadata.uid !== mirror.metadata.uid && p;
        }, { timeoutMs: 30_000 }) as Pod;
        assert(again.metadata.annotations?.["kubernetes.io/config.mirror"]);
      });

      if (target.double) {
        await t.step("an unchanged pod is never patched again", () => {
          // web stayed Ready through every later step (its readiness probe ran each second).
          assertEquals(webPatches(), webStatusPatches);
        });
        await t.step("no request was forbidden or unauthenticated", () => {
          const refused = target.double!.double.requests.filter((r) =>
            r.status === 401 || r.status === 403
          );
          assertEquals(refused.map((r) => `${r.status} ${r.method} ${r.path} ${r.user}`), []);
        });
      }

      child.kill("SIGTERM");
      const status = await child.status;
      assertEquals(status.code, 0, await stderr);
    } finally {
      try {
        child?.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await child?.status;
      if (!target.double) {
        for (const name of [...created, `static-${nodeName}`]) {
          await pods.delete(name, { gracePeriodSeconds: 0 }).catch(() => {});
        }
      }
      killRecordedGroups(join(base, "root", "embedded"));
      await target.close();
      await Deno.remove(base, { recursive: true });
    }
  },
});
