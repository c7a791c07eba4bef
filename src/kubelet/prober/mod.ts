/**
 * kubelet's prober: the probe manager, its workers, the prober and the results caches.
 * @module
 */
export {
  defaultFeatureGates,
  type FeatureGates,
  type ManagerOptions,
  newManager,
  probedContainers,
  type ProbeKey,
  probeKeyString,
  ProberManager,
} from "./prober_manager.ts";
export { kubeletRestartGracePeriodMs, newWorker, type WakeReason, Worker } from "./worker.ts";
export {
  formatPod,
  maxProbeRetries,
  newProber,
  Prober,
  type ProberResult,
  type ProbeTarget,
} from "./prober.ts";
export { probeOf, type ProbeType, probeTypeName, probeTypeString } from "./probe_type.ts";
export {
  newProberMetrics,
  proberDurationLabelNames,
  type ProberDurationLabels,
  probeResultFailed,
  probeResultSuccessful,
  probeResultUnknown,
  type ProberMetrics,
  proberResultsLabelNames,
  type ProberResultsLabels,
} from "./metrics.ts";
export {
  Result,
  type ResultsManager,
  resultString,
  toPrometheusType,
  type Update,
  updatesBufferSize,
  type UpdateStream,
} from "./results/mod.ts";
// The results package names its constructor newManager too; from here it is newResultsManager.
export { newManager as newResultsManager } from "./results/mod.ts";
