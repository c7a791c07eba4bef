/**
 * `/metrics/resource`, what metrics-server scrapes: node, pod and container CPU (cumulative
 * core-seconds) and memory working set, container start times, and `resource_scrape_error`, in
 * Prometheus text with each sample's timestamp, under kubelet's names and help texts. Container
 * figures come from CRI `ListContainerStats` (containerd's, or the embedded runtime's from its
 * cgroups); the node's from /proc (CPU: the busy jiffies of /proc/stat; memory: MemTotal − MemFree
 * − Inactive(file) of /proc/meminfo, cAdvisor's working set of the root cgroup).
 * Mirrors kubelet's pkg/kubelet/metrics/collectors/resource_metrics.go.
 * @module
 */
import type { ContainerStats } from "../../../cri_client/runtime_service.ts";
import {
  kubernetesContainerNameLabel,
  kubernetesPodNameLabel,
  kubernetesPodNamespaceLabel,
} from "../../kuberuntime/labels.ts";

/** The node's figures. */
export interface NodeStats {
  cpuUsageSeconds: number;
  memoryWorkingSetBytes: number;
  timestampMs: number;
}

/** What the collector reads. */
export interface ResourceMetricsSource {
  nodeStats(): Promise<NodeStats>;
  listContainerStats?(): Promise<ContainerStats[]>;
  /** Start times (ms since the epoch) of running containers by runtime ID, when known. */
  containerStartTimes?(): Map<string, number>;
}

const help = {
  node_cpu_usage_seconds_total: [
    "counter",
    "Cumulative cpu time consumed by the node in core-seconds",
  ],
  node_memory_working_set_bytes: ["gauge", "Current working set of the node in bytes"],
  pod_cpu_usage_seconds_total: [
    "counter",
    "Cumulative cpu time consumed by the pod in core-seconds",
  ],
  pod_memory_working_set_bytes: ["gauge", "Current working set of the pod in bytes"],
  container_cpu_usage_seconds_total: [
    "counter",
    "Cumulative cpu time consumed by the container in core-seconds",
  ],
  container_memory_working_set_bytes: ["gauge", "Current working set of the container in bytes"],
  container_start_time_seconds: [
    "gauge",
    "Start time of the container since unix epoch in seconds",
  ],
  resource_scrape_error: [
    "gauge",
    "1 if there was an error while getting container metrics, 0 otherwise",
  ],
} as const;

type Name = keyof typeof help;

function escape(v: string): string {
  return v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll('"', '\\"');
}

/**
 * The `/metrics/resource` body.
 *
 * @example
 * ```ts
 * declare const source: ResourceMetricsSource;
 * const text = await collectResourceMetrics(source);
 * ```
 */
export async function collectResourceMetrics(source: ResourceMetricsSource): Promise<string> {
  const samples = new Map<Name, string[]>();
  const add = (name: Name, labels: Record<string, string>, value: number, tsMs?: number) => {
    const l = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`).join(",");
    const line = `${name}${l ? `{${l}}` : ""} ${value}${tsMs !== undefined ? ` ${tsMs}` : ""}`;
    (samples.get(name) ?? samples.set(name, []).get(name)!).push(line);
  };
  let scrapeError = 0;
  try {
    const node = await source.nodeStats();
    add("node_cpu_usage_seconds_total", {}, node.cpuUsageSeconds, node.timestampMs);
    add("node_memory_working_set_bytes", {}, node.memoryWorkingSetBytes, node.timestampMs);
  } catch {
    scrapeError = 1;
  }
  if (source.listContainerStats) {
    try {
      const stats = await source.listContainerStats();
      const starts = source.containerStartTimes?.() ?? new Map();
      const pods = new Map<string, { cpu: number; mem: number; cpuTs: number; memTs: number }>();
      for (const s of stats) {
        const pod = s.labels[kubernetesPodNameLabel];
        const namespace = s.labels[kubernetesPodNamespaceLabel];
        const container = s.labels[kubernetesContainerNameLabel] ?? s.name;
        if (!pod || !namespace) continue;
        const labels = { container, namespace, pod };
        const key = `${namespace}/${pod}`;
        const p = pods.get(key) ?? { cpu: 0, mem: 0, cpuTs: 0, memTs: 0 };
        if (s.cpu) {
          const ts = Number(s.cpu.timestampNs / 1_000_000n);
          const seconds = Number(s.cpu.usageCoreNanoSeconds) / 1e9;
          add("container_cpu_usage_seconds_total", labels, seconds, ts);
          p.cpu += seconds;
          p.cpuTs = Math.max(p.cpuTs, ts);
        }
        if (s.memory) {
          const ts = Number(s.memory.timestampNs / 1_000_000n);
          const bytes = Number(s.memory.workingSetBytes);
          add("container_memory_working_set_bytes", labels, bytes, ts);
          p.mem += bytes;
          p.memTs = Math.max(p.memTs, ts);
        }
        const start = starts.get(s.id);
        if (start !== undefined) add("container_start_time_seconds", labels, start / 1000);
        pods.set(key, p);
      }
      for (const [key, p] of pods) {
        const [namespace, pod] = key.split("/");
        if (p.cpuTs) add("pod_cpu_usage_seconds_total", { namespace, pod }, p.cpu, p.cpuTs);
        if (p.memTs) add("pod_memory_working_set_bytes", { namespace, pod }, p.mem, p.memTs);
      }
    } catch {
      scrapeError = 1;
    }
  }
  add("resource_scrape_error", {}, scrapeError);
  const out: string[] = [];
  for (const name of Object.keys(help) as Name[]) {
    const lines = samples.get(name);
    if (!lines) continue;
    const [type, text] = help[name];
    out.push(`# HELP ${name} [STABLE] ${text}`, `# TYPE ${name} ${type}`, ...lines);
  }
  return out.join("\n") + "\n";
}

/**
 * The node's CPU and memory from /proc (see the module header).
 *
 * @example
 * ```ts
 * const { cpuUsageSeconds } = await readNodeStats(Date.now());
 * ```
 */
export async function readNodeStats(nowMs: number, procDir = "/proc"): Promise<NodeStats> {
  const stat = await Deno.readTextFile(`${procDir}/stat`);
  const cpu = stat.split("\n").find((l) => l.startsWith("cpu "));
  if (!cpu) throw new Error(`${procDir}/stat: no cpu line`);
  // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
  const f = cpu.trim().split(/\s+/).slice(1).map(Number);
  const busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0);
  const meminfo = await Deno.readTextFile(`${procDir}/meminfo`);
  const kb = (key: string) =>
    Number(meminfo.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? 0);
  const workingSet = kb("MemTotal") - kb("MemFree") - kb("Inactive\\(file\\)");
  return {
    // USER_HZ is 100 on Linux.
    cpuUsageSeconds: busy / 100,
    memoryWorkingSetBytes: Math.max(0, workingSet) * 1024,
    timestampMs: nowMs,
  };
}
