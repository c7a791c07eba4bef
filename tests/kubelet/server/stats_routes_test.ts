/**
 * The stats and metrics paths through the ports' handlers: `/stats/summary` on both ports,
 * kubelet's `/metrics` gauges, `/configz` on the secure port only, `/metrics/cadvisor` not found,
 * and the paths kubelet refuses with 405 and its texts: every debugging path on the read-only port,
 * the switched-off system log, profiling and flags endpoints on the secure port. Ports kubelet's
 * server_test.go (TestDebuggingDisabledHandlers, TestDisablingLogAndProfilingHandlers,
 * TestMetricBuckets' paths) and the metrics.go gauges' labels.
 * @module
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { EventStore } from "../../../src/kubelet/kubelet_events.ts";
import { newProberMetrics } from "../../../src/kubelet/prober/metrics.ts";
import { newHandler, newSecureHandler } from "../../../src/kubelet/server/server.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const t0 = 1767225600n * 1_000_000_000n;

function getTestSource() {
  return {
    nodeName: "test-node",
    events: new EventStore({ clock: new FakeClock(0), limit: 3 }),
    metrics: newProberMetrics(),
    clock: new FakeClock(Number(t0 / 1_000_000n)),
    pods: () => [],
    runtime: {
      containerStatus: () => Promise.reject(new Error("not found")),
      listPodSandbox: () =>
        Promise.resolve([{
          id: "s1",
          metadata: { name: "web", namespace: "ns", uid: "u1", attempt: 0 },
          state: "SANDBOX_READY",
          createdAt: t0,
          labels: {},
          annotations: {},
          runtimeHandler: "",
        }]),
      listContainers: () =>
        Promise.resolve([
          {
            id: "c1",
            podSandboxId: "s1",
            metadata: { name: "app", attempt: 0 },
            state: "CONTAINER_RUNNING",
            createdAt: t0,
          },
          {
            id: "c0",
            podSandboxId: "s1",
            metadata: { name: "app", attempt: 0 },
            state: "CONTAINER_EXITED",
            createdAt: t0,
          },
        ]),
      listContainerStats: () =>
        Promise.resolve([{
          id: "c1",
          name: "app",
          labels: {
            "io.kubernetes.pod.name": "web",
            "io.kubernetes.pod.namespace": "ns",
            "io.kubernetes.container.name": "app",
          },
          cpu: { timestampNs: t0, usageCoreNanoSeconds: 5n },
          memory: { timestampNs: t0, workingSetBytes: 4096n },
        }]),
      podSandboxStatus: () => Promise.resolve({ status: {}, info: {} }),
    },
    // deno-lint-ignore no-explicit-any
  } as any;
}

async function get(
  handler: (req: Request) => Promise<Response>,
  path: string,
  method = "GET",
): Promise<[number, string]> {
  const res = await handler(new Request(`http://n${path}`, { method }));
  return [res.status, await res.text()];
}

Deno.test("/stats/summary on both ports", async () => {
  const rootDir = await Deno.makeTempDir();
  try {
    for (
      const handler of [
        newHandler(getTestSource(), { rootDir }),
        newSecureHandler(getTestSource(), { rootDir }),
      ]
    ) {
      const [status, body] = await get(handler, "/stats/summary");
      assertEquals(status, 200);
      const summary = JSON.parse(body);
      assertEquals(summary.node.nodeName, "test-node");
      assertEquals(summary.pods.map((p: { podRef: unknown }) => p.podRef), [
        { name: "web", namespace: "ns", uid: "u1" },
      ]);
      assertEquals(summary.pods[0].containers[0].memory.workingSetBytes, 4096);
      ok(summary.node.cpu.usageCoreNanoSeconds > 0);
    }
  } finally {
    await Deno.remove(rootDir, { recursive: true });
  }
});

Deno.test("/metrics: kubelet's gauges from the runtime and the process figures", async () => {
  const [status, body] = await get(newHandler(getTestSource()), "/metrics");
  assertEquals(status, 200);
  const samples = body.split("\n").filter((l) => l && !l.startsWith("#"));
  for (
    const line of [
      'kubelet_node_name{node="test-node"} 1',
      'kubelet_running_containers{container_state="running"} 1',
      'kubelet_running_containers{container_state="exited"} 1',
      "kubelet_running_pods 1",
    ]
  ) ok(samples.includes(line), `${line} in /metrics`);
  ok(body.includes("# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod"));
  ok(samples.some((l) => /^process_resident_memory_bytes \d+$/.test(l)));
  ok(samples.some((l) => /^process_cpu_seconds_total [\d.]+$/.test(l)));
  // No figure Deno cannot measure.
  ok(!samples.some((l) => l.startsWith("nodejs_active_handles")));
});

Deno.test("/metrics/resource on the read-only port", async () => {
  const [status, body] = await get(newHandler(getTestSource()), "/metrics/resource");
  assertEquals(status, 200);
  ok(
    body.includes(
      'container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 4096',
    ),
  );
  ok(/^node_cpu_usage_seconds_total [\d.e+]+ \d+$/m.test(body));
});

Deno.test("/metrics/cadvisor is not served", async () => {
  assertEquals(await get(newSecureHandler(getTestSource()), "/metrics/cadvisor"), [
    404,
    "404 page not found\n",
  ]);
});

Deno.test("/configz: the effective configuration on the secure port only", async () => {
  const configz = () => ({ kind: "KubeletConfiguration", port: 10250 });
  const res = await newSecureHandler(getTestSource(), { configz })(
    new Request("https://n/configz"),
  );
  assertEquals(res.status, 200);
  assertEquals(res.headers.get("content-type"), "application/json");
  assertEquals(await res.json(), { kubeletconfig: { kind: "KubeletConfiguration", port: 10250 } });
  assertEquals((await get(newHandler(getTestSource(), { configz }), "/configz"))[0], 404);
});

Deno.test("TestDebuggingDisabledHandlers", async (t) => {
  const handler = newHandler(getTestSource());
  for (
    const path of [
      "/run/ns/pod/c",
      "/exec/ns/pod/c",
      "/attach/ns/pod/c",
      "/portForward/ns/pod",
      "/containerLogs/ns/pod/c",
      "/runningpods/",
      "/debug/pprof/heap",
      "/logs/kubelet.log",
    ]
  ) {
    await t.step(`read-only port: ${path}`, async () => {
      for (const method of ["GET", "POST"]) {
        const res = await handler(new Request(`http://n${path}`, { method }));
        assertEquals(res.status, 405);
        assertEquals(res.headers.get("content-type"), "text/plain; charset=utf-8");
        assertEquals(res.headers.get("x-content-type-options"), "nosniff");
        assertEquals(await res.text(), "Debug endpoints are disabled.\n");
      }
    });
  }
  await t.step("a subtree's path without its slash is redirected, as Go's ServeMux", async () => {
    const res = await handler(new Request("http://n/logs?x=1"));
    assertEquals(res.status, 301);
    assertEquals(res.headers.get("location"), "/logs/?x=1");
    await res.body?.cancel();
  });
});

Deno.test("TestDisablingLogAndProfilingHandlers", async (t) => {
  const handler = newSecureHandler(getTestSource());
  for (
    const [path, text] of [
      ["/logs/", "logs endpoint is disabled.\n"],
      ["/logs/syslog", "logs endpoint is disabled.\n"],
      ["/debug/pprof/", "profiling endpoint is disabled.\n"],
      ["/debug/pprof/profile?seconds=2", "profiling endpoint is disabled.\n"],
      ["/debug/flags/v", "flags endpoint is disabled.\n"],
    ]
  ) {
    await t.step(`secure port: ${path}`, async () => {
      assertEquals(await get(handler, path), [405, text]);
      assertEquals(await get(handler, path, "PUT"), [405, text]);
    });
  }
  await t.step("/debug/flags/v is exact", async () => {
    assertEquals((await get(handler, "/debug/flags/vv"))[0], 404);
  });
});
