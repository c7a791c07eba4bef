/**
 * The active-deadline handler: a pod that has been active on the node (since its status's
 * `startTime`) for `spec.activeDeadlineSeconds` or longer is synced at once and failed with
 * reason `DeadlineExceeded`, recording a Normal event with the same reason.
 * Mirrors kubelet's pkg/kubelet/active_deadline.go (activeDeadlineHandler: ShouldSync,
 * ShouldEvict, pastActiveDeadline) and pkg/kubelet/lifecycle's ShouldEvictResponse.
 * @module
 */
import type { Pod, PodStatus } from "../api/core/v1/mod.ts";
import type { Clock } from "../util/clock.ts";
import { getPodReference } from "./container/ref.ts";
import type { EventRecorder } from "./events/mod.ts";
import type {
  PodSyncHandler,
  PodSyncLoopHandler,
  ShouldEvictResponse,
} from "./lifecycle/interfaces.ts";

/** Reason of a pod failed at its active deadline (kubelet's). */
export const DeadlineExceeded = "DeadlineExceeded";
/** Message of a pod failed at its active deadline (kubelet's). */
export const deadlineExceededMessage =
  "Pod was active on the node longer than the specified deadline";

/** The latest status of a pod the kubelet computed (kubelet's status.PodStatusProvider). */
export interface PodStatusProvider {
  /** The cached status of the pod with this UID, if any. */
  getPodStatus(uid: string): PodStatus | undefined;
}

/**
 * Enforces `spec.activeDeadlineSeconds`: {@linkcode ActiveDeadlineHandler.shouldSync} puts a pod
 * past its deadline in the sync loop's next batch (kubelet's PodSyncLoopHandler), and
 * {@linkcode ActiveDeadlineHandler.shouldEvict} turns its generated status Failed (kubelet's
 * PodSyncHandler).
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 * import type { Clock } from "../util/clock.ts";
 * import type { EventRecorder } from "./events/mod.ts";
 *
 * declare const statusManager: PodStatusProvider;
 * declare const recorder: EventRecorder;
 * declare const clock: Clock;
 * declare const pod: Pod;
 * const handler = new ActiveDeadlineHandler(statusManager, recorder, clock);
 * handler.shouldEvict(pod);
 * // { evict: true, reason: "DeadlineExceeded", message: "Pod was active on the node longer than the specified deadline" }
 * ```
 */
export class ActiveDeadlineHandler implements PodSyncLoopHandler, PodSyncHandler {
  readonly #podStatusProvider: PodStatusProvider;
  readonly #recorder: EventRecorder;
  readonly #clock: Clock;

  /** A handler reading start times from `podStatusProvider` and recording to `recorder`. */
  constructor(podStatusProvider: PodStatusProvider, recorder: EventRecorder, clock: Clock) {
    this.#podStatusProvider = podStatusProvider;
    this.#recorder = recorder;
    this.#clock = clock;
  }

  /** True when the pod is past its active deadline (it must be synced now). */
  shouldSync(pod: Pod): boolean {
    return this.#pastActiveDeadline(pod);
  }

  /**
   * Whether the pod is past its active deadline; when it is, a Normal `DeadlineExceeded` event
   * is recorded (at each call, as kubelet records one at each status it generates).
   */
  shouldEvict(pod: Pod): ShouldEvictResponse {
    if (!this.#pastActiveDeadline(pod)) return { evict: false };
    this.#recorder.event(getPodReference(pod), {
      type: "Normal",
      reason: DeadlineExceeded,
      message: deadlineExceededMessage,
    });
    return { evict: true, reason: DeadlineExceeded, message: deadlineExceededMessage };
  }

  // The pod has been active at least activeDeadlineSeconds since the start time of its latest
  // status (the status manager's, else the API's); no deadline or no start time: false.
  #pastActiveDeadline(pod: Pod): boolean {
    const seconds = pod.spec.activeDeadlineSeconds;
    if (seconds === undefined || seconds === null) return false;
    const status = this.#podStatusProvider.getPodStatus(pod.metadata.uid ?? "") ?? pod.status;
    const start = Date.parse(status?.startTime ?? "");
    if (Number.isNaN(start)) return false;
    return this.#clock.since(start) >= seconds * 1000;
  }
}
