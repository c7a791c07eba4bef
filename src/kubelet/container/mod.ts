/**
 * Container-level types and helpers shared by the prober, PLEG and the runtime manager (kubelet's
 * pkg/kubelet/container): IDs, the command runner, references, runtime pod status, helpers.
 * @module
 */
export {
  type ContainerID,
  containerIDParseError,
  containerIDString,
  emptyContainerID,
  isEmptyContainerID,
  parseContainerID,
} from "./container_id.ts";
export { type CommandRunner } from "./command_runner.ts";
export { fieldPath, generateContainerRef, getPodReference } from "./ref.ts";
export {
  envVarsToMap,
  expand,
  expandContainerCommandAndArgs,
  expandContainerCommandOnlyStatic,
  mappingFuncFor,
} from "./expansion.ts";
export {
  type ContainerRestartRule,
  containerShouldRestart,
  findMatchingContainerRestartRule,
  getContainerStatus,
  getPodCondition,
  isRestartableInitContainer,
  shouldAllContainersRestart,
} from "./podutil.ts";
export {
  findContainerStatusByName,
  type PodStatus,
  type RuntimeContainer,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimePod,
} from "./runtime.ts";
export {
  hashContainer,
  legacyHashContainer,
  podKey,
  podRestartPolicy,
  shouldContainerBeRestarted,
} from "./helpers.ts";
