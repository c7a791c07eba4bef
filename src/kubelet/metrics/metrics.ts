/**
 * kubelet's own Prometheus metrics (`/metrics`), the ones the agent really measures:
 * `kubelet_node_name`, `kubelet_running_pods` and `kubelet_running_containers` (counted from the
 * runtime's sandboxes and containers at each scrape, as kubelet's PLEG relist counts them), and
 * the process's own figures (`process_*`, and `nodejs_*` for the V8 heap and event loop:
 * src/util/prometheus/process_collector.ts), set up at the first scrape.
 * Mirrors kubelet's pkg/kubelet/metrics/metrics.go (`NodeName`, `RunningPodCount`,
 * `RunningContainerCount`) and pkg/kubelet/pleg/generic.go (`updateRunningPodAndContainerMetrics`).
 * @module
 */
import { Gauge, registerProcessCollectors, Registry } from "../../util/prometheus/mod.ts";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";

/** What the metrics read. */
export interface KubeletMetricsSource {
  nodeName: string;
  runtime?: Pick<RuntimeService, "listPodSandbox" | "listContainers">;
}

let processRegistry: Promise<Registry> | undefined;

// One registry of process figures per process, set up at the first scrape (with the event-loop
// delay sampler behind it): an agent nobody scrapes never starts them.
function processMetrics(): Promise<Registry> {
  processRegistry ??= (async () => {
    const registry = new Registry();
    await registerProcessCollectors(registry);
    return registry;
  })();
  // A set-up that failed is tried again at the next scrape rather than failing every one after.
  processRegistry.catch(() => processRegistry = undefined);
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
  // One relist of the runtime per scrape, shared by the two gauges below (a registry starts every
  // metric's collect before it awaits any).
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
      return own + (await (await processMetrics()).metrics());
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
