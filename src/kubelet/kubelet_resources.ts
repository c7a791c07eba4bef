/**
 * The downward API's view of resources: a container without a cpu, memory or ephemeral-storage
 * limit reads the node's allocatable as its limit.
 * Mirrors kubelet's pkg/kubelet/kubelet_resources.go (defaultPodLimitsForDownwardAPI) and
 * containerResourceRuntimeValue in pkg/kubelet/kubelet_pods.go.
 * @module
 */
import type { Container, Pod, ResourceFieldSelector, ResourceList } from "../api/core/v1/mod.ts";
import { extractContainerResourceValue, mergeContainerResourceLimits } from "../util/fieldpath.ts";

/**
 * Copies of `pod` and `container` whose unset limits are the node's allocatable (kubelet's
 * `defaultPodLimitsForDownwardAPI`; the pod's regular containers and `container`, not the pod's
 * init containers).
 *
 * @example
 * ```ts
 * import type { Container, Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 * declare const container: Container;
 *
 * defaultPodLimitsForDownwardAPI(pod, container, { cpu: "4", memory: "8Gi" }).container?.resources?.limits;
 * // { cpu: "4", memory: "8Gi" }
 * ```
 */
export function defaultPodLimitsForDownwardAPI(
  pod: Pod,
  container: Container | undefined,
  allocatable: ResourceList,
): { pod: Pod; container?: Container } {
  const outputPod = structuredClone(pod);
  for (const c of outputPod.spec.containers) mergeContainerResourceLimits(c, allocatable);
  let outputContainer: Container | undefined;
  if (container) {
    outputContainer = structuredClone(container);
    mergeContainerResourceLimits(outputContainer, allocatable);
  }
  return { pod: outputPod, container: outputContainer };
}

/**
 * The value of a `resourceFieldRef` (kubelet's `containerResourceRuntimeValue`): of `container`
 * itself, or of the container `fs.containerName` names (regular containers first, then init
 * containers; `container <name> not found` otherwise).
 */
export function containerResourceRuntimeValue(
  fs: ResourceFieldSelector,
  pod: Pod,
  container: Container | undefined,
): string {
  if (!fs.containerName) {
    if (!container) throw new Error("container is nil");
    return extractContainerResourceValue(fs, container);
  }
  const found = pod.spec.containers.find((c) => c.name === fs.containerName) ??
    pod.spec.initContainers?.find((c) => c.name === fs.containerName);
  if (!found) throw new Error(`container ${fs.containerName} not found`);
  return extractContainerResourceValue(fs, found);
}
