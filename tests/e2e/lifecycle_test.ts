/**
 * End-to-end tests of issue 16 items 5-7 on the private containerd (and the hooks on the embedded
 * runtime): lifecycle hooks, termination messages, the managed /etc/hosts and the pod's
 * resolv.conf, each checked where the container sees it (exec in the container) or where the
 * hook's side effect lands (a real HTTP server on 127.0.0.1, which the agent's hook requests reach).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { containerStatus, type E2EAgent, type E2ERuntime, startAgent, waitFor } from "./helpers.ts";
import { criEndpoint, integrationSkipReason, testImage } from "../integration/helpers.ts";
import { managedHostsFileContent } from "../../src/kubelet/kubelet_pods.ts";
import { parseContainerID } from "../../src/kubelet/container/container_id.ts";

// Exits at once on SIGTERM (a PID 1 shell would otherwise ignore it).
const idle = "trap 'exit 0' TERM; sleep 600 & wait";

interface Hit {
  path: string;
  userAgent: string;
}

/** A real HTTP server on 127.0.0.1 recording the hook requests it gets. */
function hookServer(): { port: number; hits: Hit[]; server: Deno.HttpServer } {
  const hits: Hit[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    hits.push({ path: new URL(req.url).pathname, userAgent: req.headers.get("user-agent") ?? "" });
    return new Response("ok");
  });
  return { port: server.addr.port, hits, server };
}

function pod(name: string, spec: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
${spec}`;
}

function manifests(runtime: E2ERuntime, port: number, stateDir: string): Record<string, string> {
  const image = runtime === "containerd" ? testImage : "busybox";
  const dir = runtime === "containerd" ? "/tmp" : stateDir;
  const sh = (script: string) => JSON.stringify(["sh", "-c", script]);
  const common = {
    "hooks.yaml": pod(
      "hooks",
      `  terminationGracePeriodSeconds: 10
  containers:
  - name: a
    image: ${image}
    command: ${sh(idle)}
    lifecycle:
      postStart:
        exec:
          command: ${sh(`echo started > ${dir}/poststart`)}
      preStop:
        sleep:
          seconds: 3
  - name: b
    image: ${image}
    command: ${sh(idle)}
    lifecycle:
      postStart:
        httpGet:
          host: 127.0.0.1
          port: ${port}
          path: /poststart
      preStop:
        httpGet:
          host: 127.0.0.1
          port: ${port}
          path: /prestop
`,
    ),
    "poststart-fail.yaml": pod(
      "poststart-fail",
      `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ${image}
    command: ${sh(idle)}
    lifecycle:
      postStart:
        exec:
          command: ${sh("echo boom; exit 3")}
`,
    ),
    "fallback.yaml": pod(
      "fallback",
      `  restartPolicy: Never
  containers:
  - name: app
    image: ${image}
    command: ${sh("echo line1 >&2; echo oops >&2; exit 2")}
    terminationMessagePolicy: FallbackToLogsOnError
`,
    ),
  };
  if (runtime === "embedded") return common;
  return {
    ...common,
    "message.yaml": pod(
      "message",
      `  restartPolicy: Never
  containers:
  - name: app
    image: ${image}
    command: ${sh("printf 'bye now' > /dev/termination-log; exit 1")}
  - name: big
    image: ${image}
    command: ${sh("printf '%05000d' 0 | tr 0 x > /dev/termination-log")}
  - name: custom
    image: ${image}
    command: ${sh("printf custom > /tmp/custom-msg")}
    terminationMessagePath: /tmp/custom-msg
`,
    ),
    "hosts.yaml": pod(
      "hosts",
      `  hostname: myhost
  subdomain: sub
  setHostnameAsFQDN: true
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [foo.local, bar.local]
  dnsPolicy: None
  dnsConfig:
    nameservers: [10.0.0.53]
    searches: [example.test]
    options:
    - name: ndots
      value: "2"
  containers:
  - name: app
    image: ${image}
    command: ${sh(idle)}
`,
    ),
    "hostnet.yaml": pod(
      "hostnet",
      `  hostNetwork: true
  hostAliases:
  - ip: 10.9.9.9
    hostnames: [alias.local]
  containers:
  - name: app
    image: ${image}
    command: ${sh(idle)}
`,
    ),
    "clusterfirst.yaml": pod(
      "clusterfirst",
      `  containers:
  - name: app
    image: ${image}
    command: ${sh(idle)}
`,
    ),
  };
}

async function execIn(agent: E2EAgent, podName: string, container: string, cmd: string[]) {
  const cs = containerStatus(agent.pod(podName), container);
  const id = parseContainerID(cs?.containerID ?? "").id;
  const { stdout } = await agent.runtime.execSync(id, cmd, { timeoutMs: 5_000 });
  return new TextDecoder().decode(stdout);
}

function running(agent: E2EAgent, podName: string, container: string): boolean {
  return containerStatus(agent.pod(podName), container)?.state?.running !== undefined;
}

async function hookScenarios(
  t: Deno.TestContext,
  agent: E2EAgent,
  hits: Hit[],
  runtime: E2ERuntime,
  stateDir: string,
) {
  await t.step("postStart runs: exec in the container, httpGet from the agent", async () => {
    await waitFor(
      "hooks running",
      () => running(agent, "hooks", "a") && running(agent, "hooks", "b"),
      {
        describe: () => agent.pod("hooks")?.status,
      },
    );
    const marker = runtime === "containerd"
      ? await execIn(agent, "hooks", "a", ["cat", "/tmp/poststart"])
      : await Deno.readTextFile(join(stateDir, "poststart"));
    assertEquals(marker, "started\n");
    const hit = hits.find((h) => h.path === "/poststart");
    assert(hit, JSON.stringify(hits));
    assert(hit.userAgent.startsWith("kube-lifecycle/"), hit.userAgent);
  });

  await t.step("a failed postStart kills the container, with kubelet's events", async () => {
    const events = () => agent.eventsOf("poststart-fail");
    await waitFor(
      "FailedPostStartHook",
      () => events().includes("Warning FailedPostStartHook PostStartHook failed"),
      {
        describe: events,
      },
    );
    assert(events().includes("Normal Killing FailedPostStartHook"), JSON.stringify(events()));
    const describe = () => containerStatus(agent.pod("poststart-fail"), "app");
    const cs = await waitFor("killed instance recorded", () => {
      const s = describe();
      return (s?.lastState?.terminated ?? s?.state?.terminated) && s;
    }, { describe, timeoutMs: 30_000 });
    assert(cs.state?.running === undefined, JSON.stringify(cs));
  });

  await t.step("FallbackToLogsOnError: the log tail is the message", async () => {
    const describe = () => containerStatus(agent.pod("fallback"), "app");
    const cs = await waitFor("terminated", () => describe()?.state?.terminated && describe(), {
      describe,
    });
    assertEquals(cs.state?.terminated?.exitCode, 2);
    assertEquals(cs.state?.terminated?.message, "line1\noops\n");
  });

  await t.step("preStop runs within the grace period: the delete takes its time", async () => {
    const uid = agent.pod("hooks")?.metadata.uid ?? "";
    const podDir = join(agent.rootDir, "pod-dirs", uid);
    if (runtime === "containerd") assert((await Deno.stat(podDir)).isDirectory, podDir);
    const start = Date.now();
    await agent.removeManifest("hooks.yaml");
    await waitFor("hooks gone", () => agent.pod("hooks") === undefined, { timeoutMs: 20_000 });
    const took = Date.now() - start;
    // The sleep hook holds container a for 3 s; without it the delete takes well under a second.
    assert(took >= 3_000, `delete took ${took} ms`);
    assert(took < 10_000, `delete took ${took} ms: past the grace period`);
    assert(hits.some((h) => h.path === "/prestop"), JSON.stringify(hits));
    const events = agent.eventsOf("hooks");
    assert(!events.some((e) => e.includes("FailedPreStopHook")), JSON.stringify(events));
    await waitFor(
      "the pod's folder removed",
      () => Deno.stat(podDir).then(() => false, () => true),
    );
  });
}

const containerdSkip = await integrationSkipReason();
if (containerdSkip) console.log(`lifecycle e2e on containerd skipped: ${containerdSkip}`);

Deno.test({
  name: "lifecycle e2e: containerd",
  ignore: containerdSkip !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const { port, hits, server } = hookServer();
    const stateDir = await Deno.makeTempDir({ prefix: "probelet-e2e-lifecycle-" });
    let agent: E2EAgent | undefined;
    try {
      agent = await startAgent("containerd", manifests("containerd", port, stateDir), {
        endpoint: criEndpoint(),
        flags: { clusterDNS: ["10.96.0.10"], clusterDomain: "cluster.local" },
      });
      await hookScenarios(t, agent, hits, "containerd", stateDir);
      const a = agent;

      await t.step("the termination message: file, 4 KiB cut, custom path", async () => {
        const describe = () => a.pod("message")?.status.containerStatuses;
        await waitFor(
          "all terminated",
          () => describe()?.length === 3 && describe()!.every((c) => c.state?.terminated),
          { describe },
        );
        const term = (name: string) => containerStatus(a.pod("message"), name)?.state?.terminated;
        assertEquals(term("app")?.message, "bye now");
        assertEquals(term("app")?.exitCode, 1);
        assertEquals(term("big")?.message, "x".repeat(4096));
        assertEquals(term("custom")?.message, "custom");
      });

      await t.step("/etc/hosts, host name (FQDN) and resolv.conf as the pod asks", async () => {
        await waitFor("hosts running", () => running(a, "hosts", "app"));
        const podIP = a.pod("hosts")?.status.podIP ?? "";
        assert(podIP !== "" && podIP !== "127.0.0.1", podIP);
        assertEquals(
          await execIn(a, "hosts", "app", ["cat", "/etc/hosts"]),
          managedHostsFileContent([podIP], "myhost", "sub.default.svc.cluster.local", [
            { ip: "10.1.2.3", hostnames: ["foo.local", "bar.local"] },
          ]),
        );
        assertEquals(
          await execIn(a, "hosts", "app", ["hostname"]),
          "myhost.sub.default.svc.cluster.local\n",
        );
        const resolv = await execIn(a, "hosts", "app", ["cat", "/etc/resolv.conf"]);
        assertEquals(
          resolv.split("\n").filter((l) => l !== ""),
          ["search example.test", "nameserver 10.0.0.53", "options ndots:2"],
        );
      });

      await t.step("ClusterFirst: --cluster-dns and --cluster-domain in resolv.conf", async () => {
        await waitFor("clusterfirst running", () => running(a, "clusterfirst", "app"));
        const lines = (await execIn(a, "clusterfirst", "app", ["cat", "/etc/resolv.conf"]))
          .split("\n").filter((l) => l !== "");
        assert(lines.includes("nameserver 10.96.0.10"), JSON.stringify(lines));
        assertEquals(lines.filter((l) => l.startsWith("nameserver")).length, 1);
        const search = lines.find((l) => l.startsWith("search ")) ?? "";
        assert(
          search.startsWith("search default.svc.cluster.local svc.cluster.local cluster.local"),
          search,
        );
        assert(lines.includes("options ndots:5"), JSON.stringify(lines));
        const hosts = await execIn(a, "clusterfirst", "app", ["cat", "/etc/hosts"]);
        const podIP = a.pod("clusterfirst")?.status.podIP ?? "";
        assert(hosts.startsWith("# Kubernetes-managed hosts file.\n"), hosts);
        assert(hosts.includes(`${podIP}\tclusterfirst-e2e\n`), hosts);
      });

      await t.step("a host-network pod gets the node's /etc/hosts and its aliases", async () => {
        await waitFor("hostnet running", () => running(a, "hostnet", "app"));
        assertEquals(
          await execIn(a, "hostnet", "app", ["cat", "/etc/hosts"]),
          "# Kubernetes-managed hosts file (host network).\n" +
            await Deno.readTextFile("/etc/hosts") +
            "\n# Entries added by HostAliases.\n10.9.9.9\talias.local\n",
        );
      });
    } finally {
      await agent?.close();
      await server.shutdown();
      await Deno.remove(stateDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "lifecycle e2e: embedded runtime",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const { port, hits, server } = hookServer();
    const stateDir = await Deno.makeTempDir({ prefix: "probelet-e2e-lifecycle-" });
    let agent: E2EAgent | undefined;
    try {
      agent = await startAgent("embedded", manifests("embedded", port, stateDir), {
        port: -1,
      });
      await hookScenarios(t, agent, hits, "embedded", stateDir);
    } finally {
      await agent?.close();
      await server.shutdown();
      await Deno.remove(stateDir, { recursive: true });
    }
  },
});
