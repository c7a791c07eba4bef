/**
 * The handlers internal modules register with the kubelet to take part in pod syncs.
 * Mirrors kubelet's pkg/kubelet/lifecycle/interfaces.go (PodSyncLoopHandler, PodSyncHandler,
 * ShouldEvictResponse).
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";

/** Whether an internal module asks for the pod to be failed, and why (kubelet's ShouldEvictResponse). */
export interface ShouldEvictResponse {
  /** The pod should be failed. */
  evict: boolean;
  /** A brief CamelCase reason. */
  reason?: string;
  /** A brief message. */
  message?: string;
}

/**
 * Asks for a pod to be synced at the sync loop's next tick (kubelet's PodSyncLoopHandler).
 *
 * @example
 * ```ts
 * const handler: PodSyncLoopHandler = { shouldSync: (pod) => pod.spec.activeDeadlineSeconds !== undefined };
 * ```
 */
export interface PodSyncLoopHandler {
  /** True when the pod must be synced now. */
  shouldSync(pod: Pod): boolean;
}

/**
 * Asks, while the pod's status is generated, for the pod to be failed (kubelet's PodSyncHandler).
 *
 * @example
 * ```ts
 * const handler: PodSyncHandler = { shouldEvict: () => ({ evict: false }) };
 * ```
 */
export interface PodSyncHandler {
  /** Whether the pod should be failed, with the reason and message its status then shows. */
  shouldEvict(pod: Pod): ShouldEvictResponse;
}
