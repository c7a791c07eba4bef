/**
 * Types shared by the kubelet's pod sources, pod manager and status manager.
 * @module
 */
export {
  AllSource,
  ApiserverSource,
  buildPodFullName,
  ConfigFirstSeenAnnotationKey,
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  FileSource,
  getPodFullName,
  getPodSource,
  getValidatedSources,
  HTTPSource,
  isMirrorPod,
  isStaticPod,
  parsePodFullName,
  podConditionByKubelet,
  PodConditionsByKubelet,
  podConditionSharedByKubelet,
  type PodOperation,
  type PodUpdate,
} from "./pod_update.ts";
