// kubectl logs against a probelet node on the local control plane, with containerd: the API server
// reaches the agent's secure port at the node's InternalIP (scripts/kube-apiserver.sh puts
// 10.88.99.1 on its own interface probelet-kube0) with its kubelet client certificate, which the
// agent trusts through --client-ca-file and authorizes through SubjectAccessReview. Checked with
// kubectl: logs, --tail, -f, --previous, --since, --timestamps; and on the secure port itself, an
// ordinary user is refused with kubelet's text while the API server's certificate is let in.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import * as log from "../../src/util/log.ts";
import { realKubeApiServer } from "../testing/apiserver_targets.ts";
import { integrationSkipReason, testImage } from "../integration/helpers.ts";
import { waitFor } from "./helpers.ts";
import {
  kubeApiPki,
  kubectl,
  nodeIP,
  secureAgentOptions,
  secureNodeSkipReason,
  waitForSecurePort,
} from "./secure_node.ts";

const real = await realKubeApiServer();
const pki = kubeApiPki;
const skip = await secureNodeSkipReason(real) || (await integrationSkipReason() ?? "");
if (skip) console.log(`kubectl_logs_test: skipped: ${skip}`);

// The container writes "first run", then numbered lines to stdout and stderr, five a second.
function podManifest(node: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "logger", namespace: "default" },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      tolerations: [{ operator: "Exists" }],
      containers: [{
        name: "app",
        image: testImage,
        imagePullPolicy: "Never",
        command: [
          "sh",
          "-c",
          "echo first run; " +
          "i=0; while true; do i=$((i+1)); echo line $i; echo err $i >&2; sleep 0.2; done",
        ],
      }],
    },
  });
}

Deno.test({
  name: "kubectl logs on a probelet node (containerd, kube-apiserver v1.36.3)",
  ignore: skip !== "",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const api = real as Exclude<typeof real, string>;
    const admin = api.adminKubeconfig;
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-logs-" });
    await Deno.mkdir(join(dir, "pods"));
    await kubectl(admin, ["delete", "pod", "logger", "--grace-period=0", "--force"]);
    await api.admin("DELETE", `/api/v1/nodes/${api.nodeName}`);
    let agent: RunningKubelet | undefined;
    try {
      agent = await runKubelet(secureAgentOptions(api, dir));
      const securePort = agent.secureServer!.port;
      // The node advertises the secure port and an address the API server dials.
      const node = await waitForSecurePort(api, agent);
      assert(
        node.status?.addresses?.some((a) => a.type === "InternalIP" && a.address === nodeIP),
      );
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
      await waitFor("pod Running with 3 s of lines logged", async () => {
        const r = await kubectl(admin, ["logs", "logger"]);
        // Three seconds of lines, so that --since 1s below leaves the first ones out.
        return r.code === 0 && r.stdout.includes("line 15\n") && r.stdout;
      }, { timeoutMs: 60_000 });

      // --tail: the last lines, both streams.
      const tail = await kubectl(admin, ["logs", "logger", "--tail", "2"]);
      assertEquals(tail.code, 0, tail.stderr);
      const lines = tail.stdout.trimEnd().split("\n");
      assertEquals(lines.length, 2);
      assert(lines.every((l) => /^(line|err) \d+$/.test(l)), tail.stdout);

      // --timestamps: RFC 3339 before each line.
      const ts = await kubectl(admin, ["logs", "logger", "--tail", "1", "--timestamps"]);
      assert(
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z (line|err) \d+\n$/.test(ts.stdout),
        ts.stdout,
      );

      // --since: only the last second or so; never the first lines.
      const since = await kubectl(admin, ["logs", "logger", "--since", "1s"]);
      assert(!since.stdout.includes("line 1\n") && since.stdout.length > 0, since.stdout);

      // -f: lines keep arriving after the command started.
      const follow = new Deno.Command("kubectl", {
        args: ["--kubeconfig", admin, "logs", "-f", "logger", "--tail", "1"],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      const reader = follow.stdout.getReader();
      let followed = "";
      const dec = new TextDecoder();
      while ((followed.match(/\n/g) ?? []).length < 6) {
        const { value, done } = await reader.read();
        if (done) break;
        followed += dec.decode(value);
      }
      follow.kill("SIGTERM");
      await reader.cancel().catch(() => {});
      await follow.status;
      const numbers = [...followed.matchAll(/line (\d+)/g)].map((m) => Number(m[1]));
      assert(numbers.length >= 2 && numbers.at(-1)! > numbers[0], followed);

      // --previous: none yet, with kubelet's text; then the container is killed and restarted.
      const none = await kubectl(admin, ["logs", "logger", "--previous"]);
      assert(
        none.stderr.includes('previous terminated container "app" in pod "logger" not found'),
        none.stderr,
      );
      const status = (await api.admin("GET", "/api/v1/namespaces/default/pods/logger")).body;
      const id = String(status.status.containerStatuses[0].containerID).replace(/^.*:\/\//, "");
      // Stop the container through the runtime, as a crash would; kubelet restarts it.
      await agent.runtime.stopContainer(id, { timeoutMs: 0 });
      await waitFor("restarted once", async () => {
        const p = (await api.admin("GET", "/api/v1/namespaces/default/pods/logger")).body;
        return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 &&
          p.status.containerStatuses[0].state?.running;
      }, { timeoutMs: 60_000 });
      const previous = await kubectl(admin, ["logs", "logger", "--previous", "--tail", "-1"]);
      assertEquals(previous.code, 0, previous.stderr);
      // The killed instance's whole log: from its start to past what -f saw. (stdout and stderr
      // are copied apart by the runtime: their relative order in the file is not the program's.)
      const stdoutOf = (text: string) => text.split("\n").filter((l) => !l.startsWith("err "));
      assertEquals(stdoutOf(previous.stdout).slice(0, 2), ["first run", "line 1"]);
      assert(previous.stdout.includes(`line ${numbers.at(-1)}\n`), previous.stdout.slice(-80));
      const current = await kubectl(admin, ["logs", "logger", "--tail", "-1"]);
      assertEquals(stdoutOf(current.stdout).slice(0, 2), ["first run", "line 1"]);

      // The node proxy reaches the same handlers (SubjectAccessReview: nodes/healthz, nodes/pods).
      const healthz = await kubectl(admin, [
        "get",
        "--raw",
        `/api/v1/nodes/${api.nodeName}/proxy/healthz`,
      ]);
      assertEquals([healthz.code, healthz.stdout], [0, "ok"]);
      const proxied = await kubectl(admin, [
        "get",
        "--raw",
        `/api/v1/nodes/${api.nodeName}/proxy/pods`,
      ]);
      const podList = JSON.parse(proxied.stdout);
      assertEquals(podList.kind, "PodList");
      assert(
        podList.items.some((p: { metadata: { name: string } }) => p.metadata.name === "logger"),
      );

      // /metrics/resource, as metrics-server reads it: the container's CPU and memory from
      // containerd's stats, the node's, and no scrape error.
      const metrics = await kubectl(admin, [
        "get",
        "--raw",
        `/api/v1/nodes/${api.nodeName}/proxy/metrics/resource`,
      ]);
      assertEquals(metrics.code, 0, metrics.stderr);
      const sample = (re: RegExp) => Number(metrics.stdout.match(re)?.[1] ?? NaN);
      const cpu = sample(
        /^container_cpu_usage_seconds_total\{container="app",namespace="default",pod="logger"\} (\S+) \d+$/m,
      );
      const memory = sample(
        /^container_memory_working_set_bytes\{container="app",namespace="default",pod="logger"\} (\S+) \d+$/m,
      );
      assert(cpu > 0 && memory > 0, metrics.stdout);
      assert(sample(/^node_memory_working_set_bytes (\S+) \d+$/m) > 0, metrics.stdout);
      assert(
        sample(/^pod_cpu_usage_seconds_total\{namespace="default",pod="logger"\} (\S+)/m) >= cpu,
      );
      assert(metrics.stdout.includes("\nresource_scrape_error 0\n"), metrics.stdout);
      const started = sample(
        /^container_start_time_seconds\{container="app",namespace="default",pod="logger"\} (\S+)$/m,
      );
      assert(Math.abs(started * 1000 - Date.now()) < 120_000, metrics.stdout);

      // The secure port itself: kubelet's 401 and 403 texts, and the API server's certificate.
      const curl = async (stem?: string) => {
        const out = await new Deno.Command("curl", {
          args: [
            "-sk",
            ...(stem
              ? ["--cert", join(pki, `${stem}.crt`), "--key", join(pki, `${stem}.key`)]
              : []),
            "-w",
            "\n%{http_code}",
            `https://${nodeIP}:${securePort}/containerLogs/default/logger/app?tailLines=1`,
          ],
          stdout: "piped",
        }).output();
        return new TextDecoder().decode(out.stdout);
      };
      assertEquals(await curl(), "Unauthorized\n401");
      assertEquals(
        await curl("other-node"),
        "Forbidden (user=system:node:probelet-other, verb=get, resource=nodes, subresource(s)=[proxy])\n\n403",
      );
      assert(/^(line|err) \d+\n\n200$/.test(await curl("kubelet-client")));
    } finally {
      await kubectl(admin, ["delete", "pod", "logger", "--grace-period=0", "--force"]);
      await agent?.stop();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "kubectl logs -f follows across log rotations (containerd, kube-apiserver v1.36.3)",
  ignore: skip !== "",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const api = real as Exclude<typeof real, string>;
    const admin = api.adminKubeconfig;
    const quiet = Deno.env.get("PROBELET_E2E_LOG") === "1" ? undefined : log.setLogSink(() => {});
    const dir = await Deno.makeTempDir({ prefix: "probelet-logs-rot-" });
    await Deno.mkdir(join(dir, "pods"));
    await kubectl(admin, ["delete", "pod", "fast", "--grace-period=0", "--force"]);
    await api.admin("DELETE", `/api/v1/nodes/${api.nodeName}`);
    let agent: RunningKubelet | undefined;
    let follow: Deno.ChildProcess | undefined;
    try {
      agent = await runKubelet(secureAgentOptions(api, dir, {
        authenticationTokenWebhook: false,
        // kubelet's log manager rotates (rename, then CRI ReopenContainerLog) every ~4 KiB.
        containerLogMaxSizeBytes: 4096,
        containerLogMaxFiles: 5,
        containerLogMonitorIntervalMs: 1000,
      }));
      await waitForSecurePort(api, agent);
      const pod = JSON.parse(podManifest(api.nodeName));
      pod.metadata.name = "fast";
      pod.spec.containers[0].command[2] =
        "i=0; while true; do i=$((i+1)); echo out $i; sleep 0.05; done";
      const created = await api.admin("POST", "/api/v1/namespaces/default/pods", { body: pod });
      assert(created.status === 201, JSON.stringify(created.body));
      await waitFor("pod logging", async () => {
        const r = await kubectl(admin, ["logs", "fast", "--tail", "1"]);
        return r.code === 0 && r.stdout.startsWith("out ");
      }, { timeoutMs: 60_000 });
      const status = (await api.admin("GET", "/api/v1/namespaces/default/pods/fast")).body;
      const uid = status.metadata.uid;
      const logDir = join(dir, "root", "pods", `default_fast_${uid}`, "app");
      const rotated = async () => {
        const names: string[] = [];
        for await (const e of Deno.readDir(logDir)) names.push(e.name);
        return names.filter((n) => /\.log\.\d{8}-\d{6}/.test(n)).length;
      };
      const before = await rotated().catch(() => 0);
      follow = new Deno.Command("kubectl", {
        args: ["--kubeconfig", admin, "logs", "-f", "fast", "--tail", "1"],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      const reader = follow.stdout.getReader();
      const dec = new TextDecoder();
      let text = "";
      let outs: number[] = [];
      // A follow stuck at a rotation would wait for ever: give up after 40 s.
      const giveUp = setTimeout(() => follow?.kill("SIGTERM"), 40_000);
      while (outs.length < 150) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value);
        outs = [...text.matchAll(/^out (\d+)$/gm)].map((m) => Number(m[1]));
      }
      clearTimeout(giveUp);
      assert(outs.length >= 150, `the follow stopped at out ${outs.at(-1)}`);
      assert((await rotated()) > before, "no rotation while following");
      for (let i = 1; i < outs.length; i++) {
        assertEquals(outs[i], outs[i - 1] + 1, `line lost after out ${outs[i - 1]}`);
      }
    } finally {
      try {
        follow?.kill("SIGTERM");
      } catch {
        // ended already
      }
      await follow?.status;
      await kubectl(admin, ["delete", "pod", "fast", "--grace-period=0", "--force"]);
      await agent?.stop();
      if (quiet) log.setLogSink(quiet);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
