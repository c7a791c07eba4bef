/**
 * Node status: the setters kubelet runs on every status sync and the status patch it sends.
 *
 * @example
 * ```ts
 * import { patchNodeStatus, readyCondition } from "./mod.ts";
 * ```
 * @module
 */
export {
  chooseHostInterface,
  daemonEndpoints,
  diskPressureCondition,
  formatQuantity,
  goRuntime,
  images,
  machineInfo,
  type MachineInfoOptions,
  maxNamesPerImageInNodeStatus,
  memoryPressureCondition,
  nodeAddress,
  type NodeAddressOptions,
  NodeDiskPressure,
  NodeMemoryPressure,
  NodeNotReadyEvent,
  NodePIDPressure,
  NodeReady,
  NodeReadyEvent,
  NodeRebooted,
  pidPressureCondition,
  readyCondition,
  type ReadyConditionOptions,
  type RecordEvent,
  type RecordNodeStatusEvent,
  type Setter,
  validateNodeIP,
  versionInfo,
  type VersionInfoOptions,
} from "./setters.ts";
export {
  patchNodeStatus,
  type PatchNodeStatusOptions,
  preparePatchBytesForNodeStatus,
} from "./patch.ts";
