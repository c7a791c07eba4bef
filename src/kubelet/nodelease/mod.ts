/**
 * The node lease: the controller that renews `kube-node-lease/<node>` and the post-process step
 * that makes the Node its owner.
 *
 * @example
 * ```ts
 * import { NamespaceNodeLease, newController, setNodeOwnerFunc } from "./mod.ts";
 * ```
 * @module
 */
export {
  Controller,
  type ControllerOptions,
  maxBackoffMs,
  maxUpdateRetries,
  microTime,
  NamespaceNodeLease,
  newController,
  nodeLeaseRenewIntervalFraction,
  type ProcessLeaseFunc,
} from "./controller.ts";
export { setNodeOwnerFunc } from "../util/nodelease.ts";
