/**
 * kubelet's own Prometheus metrics (`/metrics`), the ones the agent really measures:
 * `kubelet_node_name`, `kubelet_running_pods` and `kubelet_running_containers` (counted from the
 * runtime's sandboxes and containers at each scrape, as kubelet's PLEG relist counts them), and
 * the process's own figures under the Prometheus client's standard names (`process_*`, from
 * /proc/self; the V8 heap and event-loop delay as prom-client's `nodejs_*`, the runtime's
 * counterpart of Go's `go_*`). prom-client's figures that Deno cannot measure (active handles,
 * requests and resources, GC durations, the Node.js version) are left out rather than reported
 * as zeros.
 * Mirrors kubelet's pkg/kubelet/metrics/metrics.go (`NodeName`, `RunningPodCount`,
 * `RunningContainerCount`) and pkg/kubelet/pleg/generic.go (`updateRunningPodAndContainerMetrics`).
 * @module
 */
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";

/** What the metrics read. */
export interface KubeletMetricsSource {
  nodeName: string;
  runtime?: Pick<RuntimeService, "listPodSandbox" | "listContainers">;
}

/** prom-client default metrics that have no real figure under Deno. */
const unmeasured = [
  "nodejs_active_handles",
  "nodejs_active_handles_total",
  "nodejs_active_requests",
  "nodejs_active_requests_total",
  "nodejs_active_resources",
  "nodejs_active_resources_total",
  "nodejs_gc_duration_seconds",
  "nodejs_version_info",
];

let processRegistry: Registry | undefined;

// One registry of process figures per process: prom-client's collectors (and the event-loop
// delay monitor behind them) are set up once.
function processMetrics(): Registry {
  if (processRegistry) return processRegistry;
  processRegistry = new Registry();
  collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: 10 });
  for (const name of unmeasured) processRegistry.removeSingleMetric(name);
  return processRegistry;
}

/** CRI container states as kubecontainer.State names them (`container_state`). */
const containerStateName: Record<string, string> = {
  CONTAINER_CREATED: "created",
  CONTAINER_RUNNING: "running",
  CONTAINER_EXITED: "exited",
  CONTAINER_UNKNOWN: "unknown",
};

/** The kubelet metrics of one agent. */
export interface KubeletMetrics {
  /** kubelet's gauges (without the process figures). */
  registry: Registry;
  /** The `/metrics` body: kubelet's gauges and the process figures. */
  metrics(): Promise<string>;
  /** The body's content type (Prometheus text 0.0.4). */
  contentType: string;
}

/**
 * kubelet's legacy registry for `/metrics`.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const m = newKubeletMetrics({ nodeName: "node-1", runtime });
 * await m.metrics(); // "# HELP kubelet_node_name [ALPHA] The node's name. ..."
 * ```
 */
export function newKubeletMetrics(source: KubeletMetricsSource): KubeletMetrics {
  const registry = new Registry();
  const nodeName = new Gauge({
    name: "kubelet_node_name",
    help: "[ALPHA] The node's name. The count is always 1.",
    labelNames: ["node"],
    registers: [registry],
  });
  nodeName.set({ node: source.nodeName }, 1);
  // One relist of the runtime per scrape, shared by the two gauges below (prom-client collects
  // all metrics of a registry at once).
  let relist: Promise<RuntimeCounts | undefined> | undefined;
  const counted = () => {
    if (!relist) {
      relist = countRuntime(source.runtime);
      relist.finally(() => relist = undefined).catch(() => {});
    }
    return relist;
  };
  new Gauge({
    name: "kubelet_running_containers",
    help: "[ALPHA] Number of containers currently running",
    labelNames: ["container_state"],
    registers: [registry],
    async collect() {
      const counts = await counted();
      // As kubelet: every state seen is set; a state no longer seen keeps its last value.
      for (const [state, n] of counts?.containers ?? []) this.set({ container_state: state }, n);
    },
  });
  new Gauge({
    name: "kubelet_running_pods",
    help: "[ALPHA] Number of pods that have a running pod sandbox",
    registers: [registry],
    async collect() {
      const counts = await counted();
      if (counts) this.set(counts.runningPods);
    },
  });
  return {
    registry,
    contentType: registry.contentType,
    metrics: async () => {
      const own = await registry.metrics();
      return own + (await processMetrics().metrics());
    },
  };
}

interface RuntimeCounts {
  containers: Map<string, number>;
  runningPods: number;
}

// kubelet's updateRunningPodAndContainerMetrics over the runtime's sandboxes and containers.
async function countRuntime(
  runtime: KubeletMetricsSource["runtime"],
): Promise<RuntimeCounts | undefined> {
  if (!runtime) return undefined;
  const [sandboxes, containers] = await Promise.all([
    runtime.listPodSandbox(),
    runtime.listContainers(),
  ]);
  const counts = new Map<string, number>();
  for (const c of containers) {
    const state = containerStateName[c.state] ?? "unknown";
    counts.set(state, (counts.get(state) ?? 0) + 1);
  }
  const running = new Set<string>();
  for (const s of sandboxes) {
    if (s.state === "SANDBOX_READY") running.add(s.metadata.uid);
  }
  return { containers: counts, runningPods: running.size };
}
