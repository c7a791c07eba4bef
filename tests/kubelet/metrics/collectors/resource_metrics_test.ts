/**
 * `/metrics/resource`: kubelet's names, help texts, labels and timestamps from CRI stats, pods as
 * the sum of their containers, the node from /proc, and `resource_scrape_error`. Ports the shape
 * checks of kubelet's pkg/kubelet/metrics/collectors/resource_metrics_test.go
 * (TestCollectResourceMetrics).
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  collectResourceMetrics,
  readNodeStats,
} from "../../../../src/kubelet/metrics/collectors/resource_metrics.ts";

const labels = (pod: string, container: string) => ({
  "io.kubernetes.pod.name": pod,
  "io.kubernetes.pod.namespace": "default",
  "io.kubernetes.container.name": container,
});

Deno.test("TestCollectResourceMetrics", async (t) => {
  const node = () =>
    Promise.resolve({
      cpuUsageSeconds: 10,
      memoryWorkingSetBytes: 1000,
      timestampMs: 1624396278302,
    });
  await t.step("node, containers, pods and no error", async () => {
    const text = await collectResourceMetrics({
      nodeStats: node,
      listContainerStats: () =>
        Promise.resolve([
          {
            id: "c1",
            name: "a",
            labels: labels("web", "a"),
            cpu: { timestampNs: 1624396278302000000n, usageCoreNanoSeconds: 1_500_000_000n },
            memory: { timestampNs: 1624396278302000000n, workingSetBytes: 1000n },
          },
          {
            id: "c2",
            name: "b",
            labels: labels("web", "b"),
            cpu: { timestampNs: 1624396278303000000n, usageCoreNanoSeconds: 500_000_000n },
            memory: { timestampNs: 1624396278303000000n, workingSetBytes: 24n },
          },
        ]),
      containerStartTimes: () => new Map([["c1", 1624396000000]]),
    });
    assertEquals(text.split("\n"), [
      "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds",
      "# TYPE node_cpu_usage_seconds_total counter",
      "node_cpu_usage_seconds_total 10 1624396278302",
      "# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes",
      "# TYPE node_memory_working_set_bytes gauge",
      "node_memory_working_set_bytes 1000 1624396278302",
      "# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds",
      "# TYPE pod_cpu_usage_seconds_total counter",
      'pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2 1624396278303',
      "# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes",
      "# TYPE pod_memory_working_set_bytes gauge",
      'pod_memory_working_set_bytes{namespace="default",pod="web"} 1024 1624396278303',
      "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds",
      "# TYPE container_cpu_usage_seconds_total counter",
      'container_cpu_usage_seconds_total{container="a",namespace="default",pod="web"} 1.5 1624396278302',
      'container_cpu_usage_seconds_total{container="b",namespace="default",pod="web"} 0.5 1624396278303',
      "# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes",
      "# TYPE container_memory_working_set_bytes gauge",
      'container_memory_working_set_bytes{container="a",namespace="default",pod="web"} 1000 1624396278302',
      'container_memory_working_set_bytes{container="b",namespace="default",pod="web"} 24 1624396278303',
      "# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds",
      "# TYPE container_start_time_seconds gauge",
      'container_start_time_seconds{container="a",namespace="default",pod="web"} 1624396000',
      "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
      "# TYPE resource_scrape_error gauge",
      "resource_scrape_error 0",
      "",
    ]);
  });
  await t.step("a runtime error is resource_scrape_error 1, the node still reported", async () => {
    const text = await collectResourceMetrics({
      nodeStats: node,
      listContainerStats: () => Promise.reject(new Error("unavailable")),
    });
    assert(text.includes("resource_scrape_error 1\n"));
    assert(text.includes("node_cpu_usage_seconds_total 10 1624396278302\n"));
  });
  await t.step("containers of no pod (not this node's) are left out", async () => {
    const text = await collectResourceMetrics({
      nodeStats: node,
      listContainerStats: () =>
        Promise.resolve([{
          id: "x",
          name: "x",
          labels: {},
          cpu: { timestampNs: 1n, usageCoreNanoSeconds: 1n },
        }]),
    });
    assert(!text.includes("container_cpu_usage_seconds_total{"));
  });
});

Deno.test("readNodeStats: busy jiffies and cAdvisor's working set", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/stat`,
      "cpu  100 20 30 1000 50 5 5 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n",
    );
    await Deno.writeTextFile(
      `${dir}/meminfo`,
      "MemTotal:       1000 kB\nMemFree:         200 kB\nInactive(file):  100 kB\n",
    );
    assertEquals(await readNodeStats(42, dir), {
      cpuUsageSeconds: 1.7,
      memoryWorkingSetBytes: 700 * 1024,
      timestampMs: 42,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
