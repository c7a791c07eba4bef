// Node and pod stats of a probelet node on the local control plane, with containerd: the summary
// API through the API server's node proxy (`kubectl get --raw /api/v1/nodes/<node>/proxy/...`:
// /stats/summary, its only_cpu_and_memory form, /metrics, /configz), and `kubectl top node` and
// `kubectl top pod` through metrics-server v0.8.0 (scripts/metrics-server.sh up registers it),
// which scrapes the agent's /metrics/resource. The API server reaches the agent at the node's
// InternalIP on an interface scripts/kube-apiserver.sh makes; metrics-server listens there too.
// Without metrics-server the `kubectl top` part is skipped and says why.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { integrationSkipReason, testImage } from "../integration/helpers.ts";
import { waitFor } from "./helpers.ts";
import {
  kubectl,
  secureAgentOptions,
  secureNodeSkipReason,
  waitForSecurePort,
} from "./secure_node.ts";

const real = await realKubeApiServer();
const skip = await secureNodeSkipReason(real) || (await integrationSkipReason() ?? "");
if (skip) console.log(`kubectl_top_test: skipped: ${skip}`);

// A container holding a 16 MB shell variable, so its working set is well above kubectl top's Mi.
function podManifest(node: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "top", namespace: "default" },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      tolerations: [{ operator: "Exists" }],
      volumes: [{ name: "scratch", emptyDir: {} }],
      containers: [{
        name: "app",
        image: testImage,
        imagePullPolicy: "Never",
        volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
        command: [
          "sh",
          "-c",
          "head -c 100000 /dev/zero > /scratch/f; x=$(head -c 16000000 /dev/zero | tr '\\0' x); " +
          "echo ready; while true; do sleep 1; done",
        ],
      }],
    },
  });
}

Deno.test({
  name: "stats and kubectl top on a probelet node (containerd, kube-apiserver v1.36.3)",
  ignore: skip !== "",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    const api = real as Exclude<typeof real, string>;
    const admin = api.adminKubeconfig;
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-top-" });
    await Deno.mkdir(join(dir, "pods"));
    await kubectl(admin, ["delete", "pod", "top", "--grace-period=0", "--force"]);
    await api.admin("DELETE", `/api/v1/nodes/${api.nodeName}`);
    let agent: RunningKubelet | undefined;
    try {
      agent = await runKubelet(secureAgentOptions(api, dir));
      const securePort = agent.secureServer!.port;
      await waitForSecurePort(api, agent);
      const applied = await new Deno.Command("kubectl", {
        args: ["--kubeconfig", admin, "apply", "-f", "-"],
        stdin: "piped",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const w = applied.stdin.getWriter();
      await w.write(new TextEncoder().encode(podManifest(api.nodeName)));
      await w.close();
      assert((await applied.output()).success);
      await waitFor("pod running with its memory held", async () => {
        const r = await kubectl(admin, ["logs", "top"]);
        return r.code === 0 && r.stdout.includes("ready\n");
      }, { timeoutMs: 60_000 });
      const proxy = (path: string) =>
        kubectl(admin, ["get", "--raw", `/api/v1/nodes/${api.nodeName}/proxy${path}`]);

      await t.step("/stats/summary through the node proxy", async () => {
        const res = await proxy("/stats/summary");
        assertEquals(res.code, 0, res.stderr);
        const summary = JSON.parse(res.stdout);
        assertEquals(summary.node.nodeName, api.nodeName);
        assert(summary.node.cpu.usageCoreNanoSeconds > 0);
        assert(summary.node.memory.workingSetBytes > 0);
        assert(summary.node.fs.capacityBytes > 0);
        assert(summary.node.rlimit.maxpid > 0);
        const pod = summary.pods.find((p: { podRef: { name: string; namespace: string } }) =>
          p.podRef.name === "top" && p.podRef.namespace === "default"
        );
        assert(pod, `pod default/top listed: ${res.stdout.slice(0, 400)}`);
        const app = pod.containers.find((c: { name: string }) => c.name === "app");
        assert(app.memory.workingSetBytes > 16_000_000, JSON.stringify(app.memory));
        assert(app.cpu.usageCoreNanoSeconds > 0);
        // containerd reports the writable layer; the log file is under the agent's root.
        assert(app.rootfs.capacityBytes > 0, JSON.stringify(app.rootfs));
        assert(app.logs.usedBytes > 0, JSON.stringify(app.logs));
        // The sandbox's own network namespace: eth0 of the CNI bridge.
        assertEquals(pod.network?.name, "eth0", JSON.stringify(pod.network));
        const scratch = pod.volume.find((v: { name: string }) => v.name === "scratch");
        assert(scratch.usedBytes >= 100_000, JSON.stringify(pod.volume));
        assert(pod["ephemeral-storage"].usedBytes >= scratch.usedBytes);
      });

      await t.step("only_cpu_and_memory=true", async () => {
        const res = await proxy("/stats/summary?only_cpu_and_memory=true");
        assertEquals(res.code, 0, res.stderr);
        const summary = JSON.parse(res.stdout);
        assertEquals(summary.node.fs, undefined);
        assert(summary.pods.some((p: { podRef: { name: string } }) => p.podRef.name === "top"));
      });

      await t.step("/metrics and /configz through the node proxy", async () => {
        const metrics = await proxy("/metrics");
        assertEquals(metrics.code, 0, metrics.stderr);
        assert(metrics.stdout.includes(`kubelet_node_name{node="${api.nodeName}"} 1\n`));
        assert(/^kubelet_running_pods [1-9]\d*$/m.test(metrics.stdout), metrics.stdout);
        const configz = await proxy("/configz");
        assertEquals(configz.code, 0, configz.stderr);
        const config = JSON.parse(configz.stdout).kubeletconfig;
        assertEquals([config.kind, config.port], ["KubeletConfiguration", securePort]);
        assertEquals(config.authorization.mode, "Webhook");
      });

      await t.step("refused debugging endpoints keep kubelet's texts", async () => {
        for (
          const [path, text] of [
            ["/debug/pprof/heap", "profiling endpoint is disabled.\n"],
            ["/logs/", "logs endpoint is disabled.\n"],
            ["/debug/flags/v", "flags endpoint is disabled.\n"],
          ]
        ) {
          const res = await api.admin("GET", `/api/v1/nodes/${api.nodeName}/proxy${path}`);
          assertEquals([res.status, res.body], [405, text]);
        }
      });

      const available = await kubectl(admin, [
        "get",
        "apiservice",
        "v1beta1.metrics.k8s.io",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Available")].status}',
      ]);
      if (available.stdout !== "True") {
        console.log(
          "kubectl_top_test: kubectl top skipped: v1beta1.metrics.k8s.io is not available " +
            "(start metrics-server with: bash scripts/metrics-server.sh up)",
        );
        return;
      }
      await t.step("kubectl top pod: the pod with its memory", async () => {
        // metrics-server needs two scrapes (its --metric-resolution apart) for a CPU rate.
        const line = await waitFor("kubectl top pod lists the pod", async () => {
          const r = await kubectl(admin, ["top", "pod", "top", "--no-headers"]);
          return r.code === 0 && r.stdout.trim();
        }, { timeoutMs: 90_000 });
        const m = line.match(/^top\s+(\d+)m\s+(\d+)Mi$/);
        assert(m, line);
        // The 16 MB the shell holds (15.3 Mi), less what kubectl's rounding down may take.
        assert(Number(m[2]) >= 14, `memory of ${line}`);
        const containers = await kubectl(admin, [
          "top",
          "pod",
          "top",
          "--containers",
          "--no-headers",
        ]);
        assert(/^top\s+app\s+\d+m\s+\d+Mi\s*$/m.test(containers.stdout), containers.stdout);
      });
      await t.step("kubectl top node: the node", async () => {
        const line = await waitFor("kubectl top node lists the node", async () => {
          const r = await kubectl(admin, ["top", "node", api.nodeName, "--no-headers"]);
          return r.code === 0 && r.stdout.trim();
        }, { timeoutMs: 90_000 });
        const m = line.match(/^(\S+)\s+(\d+)m\s+(\d+)%\s+(\d+)Mi\s+(\d+)%$/);
        assert(m && m[1] === api.nodeName, line);
        assert(Number(m[4]) > 0, line);
      });
    } finally {
      await kubectl(admin, ["delete", "pod", "top", "--grace-period=0", "--force"]);
      await agent?.stop();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
