/**
 * The node agent: the `Kubelet` (pod workers, sync loop, static pods), the runtime manager and its
 * pure `computePodActions`, API status generation, and the in-memory event store.
 *
 * @example
 * ```ts
 * import { Kubelet } from "./mod.ts";
 * const kubelet = new Kubelet({ runtime, nodeName: "laptop", rootDir: ".run/probelet" });
 * await kubelet.start();
 * kubelet.setPods([pod]);
 * await kubelet.stop();
 * ```
 * @module
 */
export {
  defaultBackOffInitialMs,
  defaultBackOffMaxMs,
  Kubelet,
  type KubeletOptions,
  type PodWithStatus,
} from "./kubelet.ts";
export { EventStore, type StoredEvent } from "./kubelet_events.ts";
export * from "./kubelet_node_status.ts";
export {
  ContainerCreating,
  convertToAPIContainerStatuses,
  CrashLoopBackOff,
  type EnvironmentSources,
  generateAPIPodStatus,
  getPhase,
  getServiceEnvVarMap,
  makeEnvironmentVariables,
  podFieldSelectorRuntimeValue,
  PodInitializing,
  type PodIPs,
  type ServiceLister,
  sortPodIPs,
  type StartFailure,
} from "./kubelet_pods.ts";
export { fromServices } from "./envvars/envvars.ts";
export {
  containerResourceRuntimeValue,
  defaultPodLimitsForDownwardAPI,
} from "./kubelet_resources.ts";
export * from "./kuberuntime/kuberuntime_manager.ts";
export * from "./container/runtime.ts";
export * from "./container/helpers.ts";
export {
  generateContainerConfig,
  killContainer,
  minimumGracePeriodInSeconds,
  setTerminationGracePeriod,
  startContainer,
} from "./kuberuntime/kuberuntime_container.ts";
export { generatePodSandboxConfig } from "./kuberuntime/kuberuntime_sandbox.ts";
export * from "./kuberuntime/labels.ts";
export {
  ContainerGC,
  defaultGCPolicy,
  type GCPolicy,
  getContainersToDeleteInPod,
} from "./kuberuntime/kuberuntime_gc.ts";
export {
  generateEvents,
  GenericPLEG,
  type PodLifecycleEvent,
  type PodLifeCycleEventType,
} from "./pleg/generic.ts";
export { type KubeletServer, newHandler, serve } from "./server/server.ts";
