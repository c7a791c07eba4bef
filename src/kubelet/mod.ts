/**
 * The node agent: the `Kubelet` (pod workers, sync loop, static pods), the runtime manager and its
 * pure `computePodActions`, API status generation, and the in-memory event store.
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 * import type { RuntimeService } from "../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 * declare const pod: Pod;
 *
 * import { newMainKubelet } from "./mod.ts";
 * const kubelet = await newMainKubelet({ runtime, nodeName: "laptop", rootDir: ".run/probelet" });
 * await kubelet.run();
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
  newMainKubelet,
  type PodWithStatus,
} from "./kubelet.ts";
export { EventStore, type StoredEvent } from "./kubelet_events.ts";
export {
  controllerManagedAttachAnnotation,
  defaultNodeStatusMaxImages,
  type DefaultSetterInputs,
  KubeletNodeStatus,
  type KubeletNodeStatusOptions,
  LabelArch,
  LabelArchStable,
  LabelHostname,
  LabelOS,
  LabelOSStable,
  maxWaitForContainerRuntimeMs,
  nodeConditionsHaveChanged,
  nodeReadyGracePeriodMs,
  nodeRef,
  nodeStatusHasChanged,
  nodeStatusUpdateRetry,
  reconcileCMADAnnotationWithExistingNode,
  registrationMaxBackoffMs,
  type RuntimeCondition,
  runtimeUpPeriodMs,
  taintNodeUnschedulable,
  updateDefaultLabels,
  updateDefaultResources,
} from "./kubelet_node_status.ts";
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
export {
  computeInitContainerActions,
  computePodActions,
  type ComputePodActionsOptions,
  containerChanged,
  type ContainerToKillInfo,
  determinePodSandboxIPs,
  formatPod,
  getStableKey,
  isInitContainerFailed,
  KubeGenericRuntimeManager,
  type PodActions,
  podSandboxChanged,
  type ProbeResultsLookups,
  type ResultsLookup,
  type RuntimeManagerOptions,
  shouldRestartOnFailure,
  type SyncResult,
} from "./kuberuntime/kuberuntime_manager.ts";
export {
  findContainerStatusByName,
  type PodStatus,
  type RuntimeContainer,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimePod,
} from "./container/runtime.ts";
export {
  hashContainer,
  legacyHashContainer,
  podKey,
  podRestartPolicy,
  shouldContainerBeRestarted,
} from "./container/helpers.ts";
export {
  generateContainerConfig,
  killContainer,
  minimumGracePeriodInSeconds,
  setTerminationGracePeriod,
  startContainer,
} from "./kuberuntime/kuberuntime_container.ts";
export { generatePodSandboxConfig } from "./kuberuntime/kuberuntime_sandbox.ts";
export {
  type AnnotatedContainerInfo,
  containerHashLabel,
  containerPortsLabel,
  containerRestartCountLabel,
  containerTerminationMessagePathLabel,
  containerTerminationMessagePolicyLabel,
  containerTypeLabel,
  defaultTerminationMessagePath,
  defaultTerminationMessagePolicy,
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  getPodSandboxInfoFromLabels,
  InitContainer,
  kubernetesContainerNameLabel,
  kubernetesPodNameLabel,
  kubernetesPodNamespaceLabel,
  kubernetesPodUIDLabel,
  type LabeledContainerInfo,
  type LabeledPodSandboxInfo,
  newContainerAnnotations,
  newContainerLabels,
  newPodAnnotations,
  newPodLabels,
  podDeletionGracePeriodLabel,
  podTerminationGracePeriodLabel,
  probeletNodeLabel,
  probeletPodStartTimeAnnotation,
  RegularContainer,
} from "./kuberuntime/labels.ts";
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
