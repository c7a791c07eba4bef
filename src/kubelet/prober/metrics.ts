/**
 * The prober's Prometheus metrics, served by kubelet on `/metrics/probes`.
 * Mirrors the metric definitions in kubelet's pkg/kubelet/prober/prober_manager.go.
 * @module
 */
import { Counter, Histogram, Registry } from "../../util/prometheus/mod.ts";

/** Label names of `prober_probe_total`. */
export const proberResultsLabelNames = [
  "probe_type",
  "result",
  "container",
  "pod",
  "namespace",
  "pod_uid",
] as const;

/** Label names of `prober_probe_duration_seconds`. */
export const proberDurationLabelNames = ["probe_type", "container", "pod", "namespace"] as const;

/** Labels of one `prober_probe_total` series. */
export type ProberResultsLabels = Record<(typeof proberResultsLabelNames)[number], string>;
/** Labels of one `prober_probe_duration_seconds` series. */
export type ProberDurationLabels = Record<(typeof proberDurationLabelNames)[number], string>;

/** `result` label values, as kubelet's probeResultSuccessful / Failed / Unknown. */
export const probeResultSuccessful = "successful";
/** See `probeResultSuccessful`. */
export const probeResultFailed = "failed";
/** See `probeResultSuccessful`. */
export const probeResultUnknown = "unknown";

/** The prober's two metrics and the registry that holds them. */
export interface ProberMetrics {
  /** The registry both metrics are registered in (serve it on /metrics/probes). */
  registry: Registry;
  /** `prober_probe_total`: completed probes by result. */
  proberResults: Counter<(typeof proberResultsLabelNames)[number]>;
  /** `prober_probe_duration_seconds`: how long successful probes took. */
  proberDuration: Histogram<(typeof proberDurationLabelNames)[number]>;
}

/**
 * Creates the prober metrics in `registry` (a fresh one by default).
 *
 * @example
 * ```ts
 * const metrics = newProberMetrics();
 * console.log(await metrics.registry.metrics());
 * ```
 */
export function newProberMetrics(options: { registry?: Registry } = {}): ProberMetrics {
  const registry = options.registry ?? new Registry();
  const proberResults = new Counter({
    name: "prober_probe_total",
    // component-base prefixes HELP with the stability level; scrapers see kubelet's exact text.
    help:
      "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
    labelNames: proberResultsLabelNames,
    registers: [registry],
  });
  const proberDuration = new Histogram({
    name: "prober_probe_duration_seconds",
    help: "[ALPHA] Duration in seconds for a probe response.",
    labelNames: proberDurationLabelNames,
    // Prometheus' DefBuckets, which kubelet uses.
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return { registry, proberResults, proberDuration };
}
