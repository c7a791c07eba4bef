/**
 * The pod status cache and the pod conditions it computes.
 * @module
 */
export {
  BasicPodManager,
  goPodStatus,
  isPodPhaseTerminal,
  isPodStatusByKubeletEqual,
  Manager,
  maxPodTerminationMessageLogLength,
  mergePodStatus,
  newManager,
  normalizeStatus,
  type PodDeletionSafetyProvider,
  type PodManager,
  type StatusListener,
  type StatusManager,
  type StatusManagerOptions,
  syncPeriodMs,
  type VersionedPodStatus,
} from "./status_manager.ts";
export {
  ContainersNotInitialized,
  ContainersNotReady,
  ContainersReady,
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  PodCompleted,
  PodFailed,
  PodInitialized,
  PodReady,
  ReadinessGatesNotReady,
  UnknownContainerStatuses,
} from "./generate.ts";
