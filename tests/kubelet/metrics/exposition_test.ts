/**
 * What `/metrics` and `/metrics/probes` serve, byte for byte, on a fixed set of observations:
 * metric order, HELP and TYPE lines, label order (as the caller's label object lists them, `le`
 * first in histogram buckets), escaping of label values, number formatting (`Nan`, `+Inf`,
 * float sums), blank lines between metrics, series order after a removal, and the content type.
 * The process figures' values change from run to run: their lines are pinned with the value
 * masked. Pinned from prom-client 15.1.3's output before the metrics moved to
 * src/util/prometheus/ (docs/benchmarks/memory.md, "The idle floor"); the CPU counters now count
 * from the process's start, as Go's process collector does.
 * @module
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { EventStore } from "../../../src/kubelet/kubelet_events.ts";
import { newProberMetrics } from "../../../src/kubelet/prober/metrics.ts";
import { newHandler } from "../../../src/kubelet/server/server.ts";
import { FakeClock } from "../../../src/util/clock.ts";

function getTestSource() {
  return {
    nodeName: "test-node",
    events: new EventStore({ clock: new FakeClock(0), limit: 3 }),
    metrics: newProberMetrics(),
    clock: new FakeClock(0),
    pods: () => [],
    runtime: {
      listPodSandbox: () =>
        Promise.resolve([
          { id: "s1", metadata: { uid: "u1" }, state: "SANDBOX_READY" },
          { id: "s2", metadata: { uid: "u1" }, state: "SANDBOX_READY" },
          { id: "s3", metadata: { uid: "u2" }, state: "SANDBOX_NOTREADY" },
        ]),
      listContainers: () =>
        Promise.resolve([
          { id: "c1", state: "CONTAINER_RUNNING" },
          { id: "c2", state: "CONTAINER_EXITED" },
          { id: "c3", state: "CONTAINER_RUNNING" },
          { id: "c4", state: "CONTAINER_CREATED" },
        ]),
    },
    // deno-lint-ignore no-explicit-any
  } as any;
}

async function get(
  handler: (req: Request) => Promise<Response>,
  path: string,
): Promise<[string | null, string]> {
  const res = await handler(new Request(`http://n${path}`));
  return [res.headers.get("content-type"), await res.text()];
}

const contentType = "text/plain; version=0.0.4; charset=utf-8";

const probes =
  `# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{probe_type="Readiness",result="successful",container="app",pod="web",namespace="default",pod_uid="u1"} 3
prober_probe_total{probe_type="Liveness",result="unknown",container="app",pod="web",namespace="default",pod_uid="u1"} 1
prober_probe_total{probe_type="Startup",result="failed",container="q\\"uo\\\\te\\nd",pod="web",namespace="default",pod_uid="u1"} 2
prober_probe_total{probe_type="Readiness",result="failed",container="app",pod="web",namespace="default",pod_uid="u1"} 1

# HELP prober_probe_duration_seconds [ALPHA] Duration in seconds for a probe response.
# TYPE prober_probe_duration_seconds histogram
prober_probe_duration_seconds_bucket{le="0.005",probe_type="Readiness",container="app",pod="web",namespace="default"} 1
prober_probe_duration_seconds_bucket{le="0.01",probe_type="Readiness",container="app",pod="web",namespace="default"} 1
prober_probe_duration_seconds_bucket{le="0.025",probe_type="Readiness",container="app",pod="web",namespace="default"} 1
prober_probe_duration_seconds_bucket{le="0.05",probe_type="Readiness",container="app",pod="web",namespace="default"} 1
prober_probe_duration_seconds_bucket{le="0.1",probe_type="Readiness",container="app",pod="web",namespace="default"} 2
prober_probe_duration_seconds_bucket{le="0.25",probe_type="Readiness",container="app",pod="web",namespace="default"} 3
prober_probe_duration_seconds_bucket{le="0.5",probe_type="Readiness",container="app",pod="web",namespace="default"} 3
prober_probe_duration_seconds_bucket{le="1",probe_type="Readiness",container="app",pod="web",namespace="default"} 3
prober_probe_duration_seconds_bucket{le="2.5",probe_type="Readiness",container="app",pod="web",namespace="default"} 3
prober_probe_duration_seconds_bucket{le="5",probe_type="Readiness",container="app",pod="web",namespace="default"} 3
prober_probe_duration_seconds_bucket{le="10",probe_type="Readiness",container="app",pod="web",namespace="default"} 3
prober_probe_duration_seconds_bucket{le="+Inf",probe_type="Readiness",container="app",pod="web",namespace="default"} 4
prober_probe_duration_seconds_sum{probe_type="Readiness",container="app",pod="web",namespace="default"} 12.305
prober_probe_duration_seconds_count{probe_type="Readiness",container="app",pod="web",namespace="default"} 4
prober_probe_duration_seconds_bucket{le="0.005",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="0.01",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="0.025",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="0.05",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="0.1",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="0.25",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="0.5",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="1",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="2.5",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="5",probe_type="Liveness",container="app",pod="web",namespace="default"} 0
prober_probe_duration_seconds_bucket{le="10",probe_type="Liveness",container="app",pod="web",namespace="default"} 1
prober_probe_duration_seconds_bucket{le="+Inf",probe_type="Liveness",container="app",pod="web",namespace="default"} 1
prober_probe_duration_seconds_sum{probe_type="Liveness",container="app",pod="web",namespace="default"} 10
prober_probe_duration_seconds_count{probe_type="Liveness",container="app",pod="web",namespace="default"} 1
`;

Deno.test("/metrics/probes: the exposition, byte for byte", async () => {
  const source = getTestSource();
  const { proberResults, proberDuration } = source.metrics;
  const results = (probeType: string, result: string, container = "app") => ({
    probe_type: probeType,
    result,
    container,
    pod: "web",
    namespace: "default",
    pod_uid: "u1",
  });
  const durations = (probeType: string) => ({
    probe_type: probeType,
    container: "app",
    pod: "web",
    namespace: "default",
  });
  proberResults.inc(results("Readiness", "successful"));
  proberResults.inc(results("Readiness", "failed"));
  proberResults.inc(results("Liveness", "unknown"));
  // A label value with a quote, a backslash and a newline: escaped.
  proberResults.inc(results("Startup", "failed", 'q"uo\\te\nd'));
  proberResults.inc(results("Startup", "failed", 'q"uo\\te\nd'));
  // The same series through another object with its keys in the same order.
  proberResults.inc({ ...results("Readiness", "successful") });
  proberResults.inc(results("Readiness", "successful"));
  // A removed series goes; counted again, it comes back at the end, from zero.
  proberResults.remove(results("Readiness", "failed"));
  proberResults.inc(results("Readiness", "failed"));
  proberDuration.observe(durations("Readiness"), 0.005); // on a bound: counted in it
  proberDuration.observe(durations("Readiness"), 0.1);
  proberDuration.observe(durations("Readiness"), 0.2);
  proberDuration.observe(durations("Readiness"), 12); // above the last bound: +Inf only
  proberDuration.observe(durations("Startup"), 1);
  proberDuration.remove(durations("Startup"));
  proberDuration.observe(durations("Liveness"), 10);
  const [type, body] = await get(newHandler(source), "/metrics/probes");
  assertEquals(type, contentType);
  assertEquals(body, probes);
});

Deno.test("/metrics/probes: nothing observed", async () => {
  const [type, body] = await get(newHandler(getTestSource()), "/metrics/probes");
  assertEquals(type, contentType);
  assertEquals(
    body,
    "# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.\n" +
      "# TYPE prober_probe_total counter\n\n" +
      "# HELP prober_probe_duration_seconds [ALPHA] Duration in seconds for a probe response.\n" +
      "# TYPE prober_probe_duration_seconds histogram\n",
  );
});

const metrics = `# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="test-node"} 1

# HELP kubelet_running_containers [ALPHA] Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="running"} 2
kubelet_running_containers{container_state="exited"} 1
kubelet_running_containers{container_state="created"} 1

# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 1
# HELP process_cpu_user_seconds_total Total user CPU time spent in seconds.
# TYPE process_cpu_user_seconds_total counter
process_cpu_user_seconds_total V

# HELP process_cpu_system_seconds_total Total system CPU time spent in seconds.
# TYPE process_cpu_system_seconds_total counter
process_cpu_system_seconds_total V

# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total V

# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds V

# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes V

# HELP process_virtual_memory_bytes Virtual memory size in bytes.
# TYPE process_virtual_memory_bytes gauge
process_virtual_memory_bytes V

# HELP process_heap_bytes Process heap size in bytes.
# TYPE process_heap_bytes gauge
process_heap_bytes V

# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds V

# HELP process_max_fds Maximum number of open file descriptors.
# TYPE process_max_fds gauge
process_max_fds V

# HELP nodejs_eventloop_lag_seconds Lag of event loop in seconds.
# TYPE nodejs_eventloop_lag_seconds gauge
nodejs_eventloop_lag_seconds V

# HELP nodejs_eventloop_lag_min_seconds The minimum recorded event loop delay.
# TYPE nodejs_eventloop_lag_min_seconds gauge
nodejs_eventloop_lag_min_seconds V

# HELP nodejs_eventloop_lag_max_seconds The maximum recorded event loop delay.
# TYPE nodejs_eventloop_lag_max_seconds gauge
nodejs_eventloop_lag_max_seconds V

# HELP nodejs_eventloop_lag_mean_seconds The mean of the recorded event loop delays.
# TYPE nodejs_eventloop_lag_mean_seconds gauge
nodejs_eventloop_lag_mean_seconds V

# HELP nodejs_eventloop_lag_stddev_seconds The standard deviation of the recorded event loop delays.
# TYPE nodejs_eventloop_lag_stddev_seconds gauge
nodejs_eventloop_lag_stddev_seconds V

# HELP nodejs_eventloop_lag_p50_seconds The 50th percentile of the recorded event loop delays.
# TYPE nodejs_eventloop_lag_p50_seconds gauge
nodejs_eventloop_lag_p50_seconds V

# HELP nodejs_eventloop_lag_p90_seconds The 90th percentile of the recorded event loop delays.
# TYPE nodejs_eventloop_lag_p90_seconds gauge
nodejs_eventloop_lag_p90_seconds V

# HELP nodejs_eventloop_lag_p99_seconds The 99th percentile of the recorded event loop delays.
# TYPE nodejs_eventloop_lag_p99_seconds gauge
nodejs_eventloop_lag_p99_seconds V

# HELP nodejs_heap_size_total_bytes Process heap size from Node.js in bytes.
# TYPE nodejs_heap_size_total_bytes gauge
nodejs_heap_size_total_bytes V

# HELP nodejs_heap_size_used_bytes Process heap size used from Node.js in bytes.
# TYPE nodejs_heap_size_used_bytes gauge
nodejs_heap_size_used_bytes V

# HELP nodejs_external_memory_bytes Node.js external memory size in bytes.
# TYPE nodejs_external_memory_bytes gauge
nodejs_external_memory_bytes V

# HELP nodejs_heap_space_size_total_bytes Process heap space size total from Node.js in bytes.
# TYPE nodejs_heap_space_size_total_bytes gauge
${heapSpaces("total")}
# HELP nodejs_heap_space_size_used_bytes Process heap space size used from Node.js in bytes.
# TYPE nodejs_heap_space_size_used_bytes gauge
${heapSpaces("used")}
# HELP nodejs_heap_space_size_available_bytes Process heap space size available from Node.js in bytes.
# TYPE nodejs_heap_space_size_available_bytes gauge
${heapSpaces("available")}`;

function heapSpaces(kind: string): string {
  const spaces = [
    "read_only",
    "new",
    "old",
    "code",
    "shared",
    "trusted",
    "shared_trusted",
    "new_large_object",
    "large_object",
    "code_large_object",
    "shared_large_object",
    "shared_trusted_large_object",
    "trusted_large_object",
  ];
  return spaces.map((s) => `nodejs_heap_space_size_${kind}_bytes{space="${s}"} V\n`).join("");
}

// A sample's value: a number as JavaScript prints it, or the exposition's Nan / +Inf / -Inf.
const value = /^-?\d+(\.\d+)?(e[-+]\d+)?$|^Nan$|^[-+]Inf$/;

Deno.test("/metrics: the exposition, byte for byte (process figures masked)", async () => {
  const handler = newHandler(getTestSource());
  for (const scrape of [1, 2]) {
    const [type, body] = await get(handler, "/metrics");
    assertEquals(type, contentType);
    const masked = body.split("\n").map((line) => {
      if (!/^(process|nodejs)_/.test(line)) return line;
      const i = line.lastIndexOf(" ");
      ok(value.test(line.slice(i + 1)), `scrape ${scrape}: ${line}`);
      return `${line.slice(0, i)} V`;
    }).join("\n");
    assertEquals(masked, metrics, `scrape ${scrape}`);
  }
});

Deno.test("/metrics: the process figures are this process's", async () => {
  const [, body] = await get(newHandler(getTestSource()), "/metrics");
  const sample = (name: string) => {
    const line = body.split("\n").find((l) => l.startsWith(`${name} `));
    return Number(line?.slice(name.length + 1));
  };
  const status = Deno.readTextFileSync("/proc/self/status");
  const vmRSS = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) * 1024;
  // Resident memory within 16 MiB of /proc's figure a moment later.
  ok(Math.abs(sample("process_resident_memory_bytes") - vmRSS) < 16 << 20, body);
  ok(sample("process_virtual_memory_bytes") > sample("process_resident_memory_bytes"));
  ok(sample("process_open_fds") > 2);
  ok(sample("process_max_fds") >= sample("process_open_fds"));
  const start = sample("process_start_time_seconds");
  ok(Number.isInteger(start) && Math.abs(start - performance.timeOrigin / 1000) <= 1, body);
  ok(sample("nodejs_heap_size_used_bytes") > 0);
  ok(sample("nodejs_heap_size_total_bytes") >= sample("nodejs_heap_size_used_bytes"));
  const user = sample("process_cpu_user_seconds_total");
  const system = sample("process_cpu_system_seconds_total");
  ok(Math.abs(sample("process_cpu_seconds_total") - (user + system)) < 1e-6, body);
  // The CPU the process used since it started, as Go's process collector counts it (prom-client
  // counted from its first scrape): /proc/self/stat read a moment later is at most a little more.
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const ticks = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const procSeconds = (Number(ticks[11]) + Number(ticks[12])) / 100;
  const counted = sample("process_cpu_seconds_total");
  // (The counter sums per-scrape increments: allow for floating-point rounding.)
  ok(
    counted <= procSeconds + 1e-9 && counted >= procSeconds - 0.05,
    `${counted} vs ${procSeconds}`,
  );
});
