/**
 * The container environment end to end on the local control plane (scripts/kube-apiserver.sh up:
 * the node authorizer and NodeRestriction on) with the private containerd: a pod whose env uses a
 * config map, a secret (keys and `envFrom` with a prefix), `optional` references to missing
 * objects, the downward API, resource fields, `$(VAR)` expansion and service links runs on
 * probelet, and PID 1 of its container holds exactly those values (read from `/proc/1/environ`
 * through CRI ExecSync); its args are expanded. A pod referencing a missing key waits with
 * kubelet's `CreateContainerConfigError` message and a `Failed` event, and starts once the key
 * is added. Skipped, saying why, without root, containerd, the API server, or kubectl.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import type { RuntimeService } from "../../src/cri_client/runtime_service.ts";
import * as log from "../../src/util/log.ts";
import {
  connectRuntime,
  criEndpoint,
  integrationSkipReason,
  testImage,
} from "../integration/helpers.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { waitFor } from "./helpers.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

async function skipReason(): Promise<string> {
  const cri = await integrationSkipReason();
  if (cri) return cri;
  const real = await realKubeApiServer();
  if (typeof real === "string") return real;
  await real.close();
  const kubectl = await new Deno.Command("sh", { args: ["-c", "command -v kubectl"] }).output();
  return kubectl.success ? "" : "kubectl is not on PATH";
}

const skip = await skipReason();
if (skip) console.log(`tests/e2e/environment_test.ts: skipped: ${skip}`);

async function run(cmd: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${dec.decode(out.stderr).trim()}`);
  return dec.decode(out.stdout);
}

Deno.test({
  name: "environment: config maps, secrets, the downward API and service links in a container",
  ignore: skip !== "",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const real = await realKubeApiServer();
    if (typeof real === "string") throw new Error(real);
    await real.close();
    const kubeconfig = real.adminKubeconfig;
    const k = (args: string[], stdin?: string) =>
      run("kubectl", ["--kubeconfig", kubeconfig, ...args], stdin);
    const kj = async (args: string[]): Promise<Json> =>
      JSON.parse(await k([...args, "-o", "json"]));
    const ns = `env-e2e-${Date.now()}`;
    const dir = await Deno.makeTempDir({ prefix: "probelet-env-e2e-" });
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    let agent: RunningKubelet | undefined;
    let runtime: RuntimeService | undefined;
    try {
      runtime = await connectRuntime();
      await k(["create", "namespace", ns]);
      // Without the controller manager nobody creates the namespace's service account, which the
      // API server's ServiceAccount admission wants; with it, it may already be there.
      await k(["-n", ns, "create", "serviceaccount", "default"]).catch((e) => {
        if (!/already exists/.test(String(e))) throw e;
      });
      await k(["-n", ns, "create", "configmap", "app-config", "--from-literal=greeting=hello"]);
      await k([
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        "app-secret",
        "--from-literal=password=s3cr3t",
        "--from-literal=user=admin",
      ]);
      await k(["-n", ns, "create", "service", "clusterip", "db", "--tcp=5432:5432"]);
      const dbIP = (await kj(["-n", ns, "get", "service", "db"])).spec.clusterIP as string;
      const kubernetesIP = (await kj(["-n", "default", "get", "service", "kubernetes"])).spec
        .clusterIP as string;
      const pod = (name: string, env: Json[], extra: Json = {}, podExtra: Json = {}) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: ns, labels: { app: name }, annotations: { note: "hi" } },
        spec: {
          nodeName: real.nodeName,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 2,
          ...podExtra,
          containers: [{
            name: "app",
            image: testImage,
            imagePullPolicy: "Never",
            command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done", "$(GREETING)"],
            env,
            ...extra,
          }],
        },
      });
      const envs: Json[] = [
        {
          name: "GREETING",
          valueFrom: { configMapKeyRef: { name: "app-config", key: "greeting" } },
        },
        { name: "PASSWORD", valueFrom: { secretKeyRef: { name: "app-secret", key: "password" } } },
        {
          name: "OPTIONAL",
          valueFrom: { configMapKeyRef: { name: "nope", key: "x", optional: true } },
        },
        { name: "MESSAGE", value: "$(GREETING) from $(POD_NAME)" },
        { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "LATE", value: "$(POD_NAME)" },
        { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
        { name: "POD_UID", valueFrom: { fieldRef: { fieldPath: "metadata.uid" } } },
        { name: "APP", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: "NOTE", valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
        { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
        { name: "SA", valueFrom: { fieldRef: { fieldPath: "spec.serviceAccountName" } } },
        { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "POD_IPS", valueFrom: { fieldRef: { fieldPath: "status.podIPs" } } },
        { name: "HOST_IP", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } },
        {
          name: "CPU_LIMIT_M",
          valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "1m" } },
        },
        { name: "ESCAPED", value: "$$(GREETING)" },
        { name: "DB_URL", value: "postgres://$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)" },
      ];
      agent = await runKubelet({
        kubeconfig: real.nodeKubeconfig,
        nodeName: real.nodeName,
        containerRuntimeEndpoint: criEndpoint(),
        rootDir: join(dir, "root"),
        port: 0,
        address: "127.0.0.1",
        stopPodsOnExit: true,
        syncFrequencyMs: 2_000,
      });
      // The pods are bound to the Node: it must exist first, or the pod GC deletes them.
      await waitFor("the Node registered", async () => {
        const nodes = await kj(["get", "nodes"]);
        return nodes.items.some((n: Json) => n.metadata.name === real.nodeName);
      }, { timeoutMs: 30_000 });
      await k(
        ["apply", "-f", "-"],
        JSON.stringify(pod("envpod", envs, {
          envFrom: [
            { prefix: "CFG_", configMapRef: { name: "app-config" } },
            { secretRef: { name: "app-secret" } },
            { configMapRef: { name: "missing", optional: true } },
          ],
        })),
      );

      const running: Json = await waitFor("envpod Running", async () => {
        const p = await kj(["-n", ns, "get", "pod", "envpod"]);
        return p.status?.phase === "Running" && p;
      }, { timeoutMs: 60_000 });
      const node = await kj(["get", "node", real.nodeName]);
      const containerID = async (podUID: string) => {
        const cs = await runtime!.listContainers({
          labelSelector: { "io.kubernetes.pod.uid": podUID, "io.kubernetes.container.name": "app" },
        });
        const c = cs.find((c) => c.state === "CONTAINER_RUNNING");
        assert(c, "the app container runs");
        return c.id;
      };
      const id = await containerID(running.metadata.uid);
      const exec = async (cmd: string[]) =>
        new TextDecoder().decode((await runtime!.execSync(id, cmd, { timeoutMs: 10_000 })).stdout);
      // What PID 1 of the container really got.
      const environ = await exec(["cat", "/proc/1/environ"]);
      const vars = new Map<string, string>();
      for (const entry of environ.split("\0").filter((e) => e !== "")) {
        const i = entry.indexOf("=");
        vars.set(entry.slice(0, i), entry.slice(i + 1));
      }

      await t.step("config map and secret keys, envFrom with a prefix, optional refs", () => {
        assertEquals(vars.get("GREETING"), "hello");
        assertEquals(vars.get("PASSWORD"), "s3cr3t");
        assertEquals(vars.get("CFG_greeting"), "hello");
        assertEquals(vars.get("password"), "s3cr3t");
        assertEquals(vars.get("user"), "admin");
        assert(!vars.has("OPTIONAL"), "an optional key of a missing config map is left out");
      });
      await t.step("the downward API and resource fields", () => {
        assertEquals(vars.get("POD_NAME"), "envpod");
        assertEquals(vars.get("POD_NAMESPACE"), ns);
        assertEquals(vars.get("POD_UID"), running.metadata.uid);
        assertEquals(vars.get("APP"), "envpod");
        assertEquals(vars.get("NOTE"), "hi");
        assertEquals(vars.get("NODE"), real.nodeName);
        assertEquals(vars.get("SA"), "default");
        assertEquals(vars.get("POD_IP"), running.status.podIP);
        assertEquals(vars.get("POD_IPS"), running.status.podIPs.map((p: Json) => p.ip).join(","));
        assertEquals(vars.get("HOST_IP"), running.status.hostIP);
        // No cpu limit: the node's allocatable, in millicores.
        const cpu = String(node.status.allocatable.cpu);
        const want = cpu.endsWith("m") ? cpu.slice(0, -1) : String(Number(cpu) * 1000);
        assertEquals(vars.get("CPU_LIMIT_M"), want);
      });
      await t.step("$(VAR) expansion in values and args", async () => {
        assertEquals(vars.get("MESSAGE"), "hello from $(POD_NAME)");
        assertEquals(vars.get("LATE"), "envpod");
        assertEquals(vars.get("ESCAPED"), "$(GREETING)");
        // sh -c '<script>' <$0>: PID 1's argv[3] is the expanded arg.
        const cmdline = (await exec(["cat", "/proc/1/cmdline"])).split("\0");
        assertEquals(cmdline[3], "hello");
      });
      await t.step("service links: the namespace's services and the kubernetes service", () => {
        assertEquals(vars.get("KUBERNETES_SERVICE_HOST"), kubernetesIP);
        assertEquals(vars.get("KUBERNETES_SERVICE_PORT"), "443");
        assertEquals(vars.get("KUBERNETES_PORT"), `tcp://${kubernetesIP}:443`);
        assertEquals(vars.get("DB_SERVICE_HOST"), dbIP);
        assertEquals(vars.get("DB_SERVICE_PORT"), "5432");
        assertEquals(vars.get("DB_PORT_5432_TCP_ADDR"), dbIP);
        assertEquals(vars.get("DB_URL"), `postgres://${dbIP}:5432`);
      });

      await t.step("a host-network pod's status.podIP is the node's IP", async () => {
        await k(
          ["apply", "-f", "-"],
          JSON.stringify(pod(
            "hostnet",
            [
              { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
              { name: "HOST_IP", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } },
            ],
            { command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"] },
            {
              hostNetwork: true,
            },
          )),
        );
        const p: Json = await waitFor("hostnet Running", async () => {
          const p = await kj(["-n", ns, "get", "pod", "hostnet"]);
          return p.status?.phase === "Running" && p;
        }, { timeoutMs: 60_000 });
        const hid = await containerID(p.metadata.uid);
        const env = new TextDecoder().decode(
          (await runtime!.execSync(hid, ["cat", "/proc/1/environ"], { timeoutMs: 10_000 })).stdout,
        ).split("\0");
        assert(p.spec.hostNetwork === true, "a host-network pod");
        assertEquals(env.find((e) => e.startsWith("POD_IP=")), `POD_IP=${p.status.hostIP}`);
        assertEquals(env.find((e) => e.startsWith("HOST_IP=")), `HOST_IP=${p.status.hostIP}`);
      });

      await t.step(
        "a missing key: CreateContainerConfigError, then it starts once added",
        async () => {
          await k(
            ["apply", "-f", "-"],
            JSON.stringify(pod("missingkey", [
              { name: "A", valueFrom: { configMapKeyRef: { name: "app-config", key: "later" } } },
            ], { command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"] })),
          );
          const want = `couldn't find key later in ConfigMap ${ns}/app-config`;
          const waiting = await waitFor("missingkey waiting", async () => {
            const p = await kj(["-n", ns, "get", "pod", "missingkey"]);
            const w = p.status?.containerStatuses?.[0]?.state?.waiting;
            return w?.reason === "CreateContainerConfigError" && w;
          }, { timeoutMs: 30_000 });
          assertEquals(waiting.message, want);
          const events = await kj([
            "-n",
            ns,
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=missingkey",
          ]);
          assert(
            events.items.some((e: Json) =>
              e.type === "Warning" && e.reason === "Failed" && e.message === `Error: ${want}`
            ),
            JSON.stringify(events.items.map((e: Json) => [e.reason, e.message])),
          );
          await k([
            "-n",
            ns,
            "patch",
            "configmap",
            "app-config",
            "--type=merge",
            "-p",
            JSON.stringify({ data: { later: "now" } }),
          ]);
          await waitFor("missingkey Running", async () => {
            const p = await kj(["-n", ns, "get", "pod", "missingkey"]);
            return p.status?.phase === "Running";
          }, { timeoutMs: 60_000 });
        },
      );
    } finally {
      // Its pods gone from the API first: without a namespace controller they would outlive the
      // namespace, and the next test's agent (same node name) would pick them up and be refused
      // events in the terminating namespace.
      await k(["-n", ns, "delete", "pods", "--all", "--grace-period=0", "--force"])
        .catch(() => {});
      await agent?.stop();
      await k(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
      // The Node this run registered (untainted): later tests register it their own way.
      await k(["delete", "node", real.nodeName, "--wait=false"]).catch(() => {});
      runtime?.close();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
