/**
 * A small Prometheus registry and the process's own figures, for kubelet's `/metrics` and
 * `/metrics/probes`.
 * @module
 */
export {
  Counter,
  formatValue,
  Gauge,
  Histogram,
  type HistogramOptions,
  type Labels,
  Metric,
  type MetricOptions,
  type MetricSnapshot,
  type MetricValue,
  prometheusContentType,
  Registry,
  type Series,
} from "./registry.ts";
export { eventLoopSampleMs, registerProcessCollectors } from "./process_collector.ts";
