/**
 * The in-memory pod status cache the prober reads and writes: the latest status per pod, container
 * readiness and startup updates, and the `Ready` / `ContainersReady` conditions they drive.
 * Mirrors the prober-facing part of kubelet's pkg/kubelet/status/status_manager.go (no API sync).
 * @module
 */
import type { ContainerStatus, Pod, PodCondition, PodStatus } from "../../api/core/v1/mod.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { type ContainerID, containerIDString, getPodCondition } from "../container/mod.ts";
import {
  ContainersReady,
  generateContainersReadyCondition,
  generatePodReadyCondition,
  PodReady,
} from "./generate.ts";

/**
 * Which pods exist, by UID (the slice of kubelet's pod manager the status manager needs).
 *
 * @example
 * ```ts
 * const pods = new BasicPodManager();
 * pods.addPod(pod);
 * pods.getPodByUID(pod.metadata.uid!); // pod
 * ```
 */
export interface PodManager {
  /** The pod with this UID, or undefined when the pod is gone. */
  getPodByUID(uid: string): Pod | undefined;
}

/**
 * A map of pods by UID.
 *
 * @example
 * ```ts
 * const pods = new BasicPodManager();
 * pods.addPod({ metadata: { uid: "1" }, spec: { containers: [] } });
 * pods.getPods().length; // 1
 * ```
 */
export class BasicPodManager implements PodManager {
  #pods = new Map<string, Pod>();

  /** Adds or replaces the pod with the same UID. */
  addPod(pod: Pod): void {
    this.#pods.set(pod.metadata?.uid ?? "", pod);
  }

  /** Same as `addPod`. */
  updatePod(pod: Pod): void {
    this.addPod(pod);
  }

  /** Forgets the pod. */
  removePod(pod: Pod): void {
    this.#pods.delete(pod.metadata?.uid ?? "");
  }

  /** The pod with this UID, if known. */
  getPodByUID(uid: string): Pod | undefined {
    return this.#pods.get(uid);
  }

  /** Every known pod. */
  getPods(): Pod[] {
    return [...this.#pods.values()];
  }
}

/** Called after each change of a pod's cached status (with a copy of the new status). */
export type StatusListener = (podUID: string, status: PodStatus) => void;

/**
 * The pod status cache (kubelet's `status.Manager`, without syncing to an API server).
 *
 * @example
 * ```ts
 * const statuses = newManager({ podManager: pods, clock });
 * statuses.setPodStatus(pod, { phase: "Running", containerStatuses: [...] });
 * statuses.setContainerReadiness(pod.metadata.uid!, containerID, true);
 * statuses.getPodStatus(pod.metadata.uid!)?.conditions;
 * ```
 */
export interface StatusManager {
  /**
   * A copy of the cached status of the pod, or undefined when none is cached. With `shared: true`
   * the cached object itself is returned, deeply frozen, without the cost of a copy (prober workers
   * read the status on every probe and never change it).
   */
  getPodStatus(uid: string, options?: { shared?: boolean }): PodStatus | undefined;
  /** Caches a copy of `status` for `pod`; condition transition times follow status flips. */
  setPodStatus(pod: Pod, status: PodStatus): void;
  /** Sets one container's `ready` (found by container ID) and recomputes Ready / ContainersReady. */
  setContainerReadiness(podUID: string, containerID: ContainerID, ready: boolean): void;
  /** Sets one container's `started` (found by container ID). */
  setContainerStartup(podUID: string, containerID: ContainerID, started: boolean): void;
  /** Forgets the pod's cached status. */
  deletePodStatus(uid: string): void;
  /** Registers a listener for status changes; returns a function that unregisters it. */
  subscribe(listener: StatusListener): () => void;
}

/**
 * Creates a status manager reading pods from `podManager`, timing conditions on `clock`.
 *
 * @example
 * ```ts
 * const statuses = newManager({ podManager: new BasicPodManager() });
 * ```
 */
export function newManager(options: { podManager: PodManager; clock?: Clock }): StatusManager {
  return new Manager(options.podManager, options.clock ?? new RealClock());
}

// Conditions the kubelet owns; only these get their lastTransitionTime maintained here.
const kubeletConditionTypes = [
  ContainersReady,
  PodReady,
  "Initialized",
  "PodReadyToStartContainers",
  "PodScheduled",
];

interface VersionedStatus {
  status: PodStatus;
  version: number;
}

class Manager implements StatusManager {
  #podManager: PodManager;
  #clock: Clock;
  #statuses = new Map<string, VersionedStatus>();
  #listeners = new Set<StatusListener>();

  constructor(podManager: PodManager, clock: Clock) {
    this.#podManager = podManager;
    this.#clock = clock;
  }

  getPodStatus(uid: string, options: { shared?: boolean } = {}): PodStatus | undefined {
    const status = this.#statuses.get(uid)?.status;
    if (!status || options.shared) return status;
    return structuredClone(status);
  }

  setPodStatus(pod: Pod, status: PodStatus): void {
    this.#updateStatusInternal(pod, structuredClone(status));
  }

  setContainerReadiness(podUID: string, containerID: ContainerID, ready: boolean): void {
    const id = containerIDString(containerID);
    const pod = this.#podManager.getPodByUID(podUID);
    if (!pod) {
      log.V(4).info("Pod has been deleted, no need to update readiness", { podUID });
      return;
    }
    const old = this.#statuses.get(podUID);
    if (!old) {
      log.info("Container readiness changed before pod has synced", {
        pod: log.kObj(pod),
        containerID: id,
      });
      return;
    }
    const found = findContainerStatus(old.status, id);
    if (!found) {
      log.info("Container readiness changed for unknown container", {
        pod: log.kObj(pod),
        containerID: id,
      });
      return;
    }
    // Go's bool zero value: an unset ready is false.
    if ((found.ready ?? false) === ready) {
      log.V(4).info("Container readiness unchanged", {
        ready,
        pod: log.kObj(pod),
        containerID: id,
      });
      return;
    }

    // Never touch the cached copy: readers may hold it.
    const status = structuredClone(old.status);
    findContainerStatus(status, id)!.ready = ready;
    const all = status.initContainerStatuses || status.containerStatuses
      ? [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]
      : undefined;
    const update = (type: string, condition: PodCondition) => {
      const conditions = status.conditions ??= [];
      const i = conditions.findIndex((c) => c.type === type);
      if (i >= 0) {
        conditions[i] = condition;
      } else {
        log.info("PodStatus missing condition type", { conditionType: type, pod: log.kObj(pod) });
        conditions.push(condition);
      }
    };
    update(
      PodReady,
      generatePodReadyCondition(pod, old.status, status.conditions, all, status.phase),
    );
    update(ContainersReady, generateContainersReadyCondition(pod, old.status, all, status.phase));
    this.#updateStatusInternal(pod, status);
  }

  setContainerStartup(podUID: string, containerID: ContainerID, started: boolean): void {
    const id = containerIDString(containerID);
    const pod = this.#podManager.getPodByUID(podUID);
    if (!pod) {
      log.V(4).info("Pod has been deleted, no need to update startup", { podUID });
      return;
    }
    const old = this.#statuses.get(podUID);
    if (!old) {
      log.V(4).info("Container startup changed before pod has synced", {
        pod: log.kObj(pod),
        containerID: id,
      });
      return;
    }
    const found = findContainerStatus(old.status, id);
    if (!found) {
      log.info("Container startup changed for unknown container", {
        pod: log.kObj(pod),
        containerID: id,
      });
      return;
    }
    if (found.started !== undefined && found.started === started) {
      log.V(4).info("Container startup unchanged", { pod: log.kObj(pod), containerID: id });
      return;
    }
    const status = structuredClone(old.status);
    findContainerStatus(status, id)!.started = started;
    this.#updateStatusInternal(pod, status);
  }

  deletePodStatus(uid: string): void {
    this.#statuses.delete(uid);
  }

  subscribe(listener: StatusListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  // `status` is already a private copy.
  #updateStatusInternal(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata?.uid ?? "";
    const cached = this.#statuses.get(uid);
    const oldStatus = cached?.status ?? pod.status ?? {};

    const now = rfc3339(this.#clock.now());
    for (const type of kubeletConditionTypes) {
      const condition = getPodCondition(status.conditions, type);
      if (!condition) continue;
      const old = getPodCondition(oldStatus.conditions, type);
      condition.lastTransitionTime = old && old.status === condition.status
        ? old.lastTransitionTime
        : now;
      if (condition.lastTransitionTime === undefined) delete condition.lastTransitionTime;
    }
    if (oldStatus.startTime) status.startTime = oldStatus.startTime;
    else status.startTime ??= now;

    if (cached && JSON.stringify(cached.status) === JSON.stringify(status)) {
      log.V(3).info("Ignoring same status for pod", { pod: log.kObj(pod) });
      return;
    }
    deepFreeze(status);
    this.#statuses.set(uid, { status, version: (cached?.version ?? 0) + 1 });
    for (const listener of this.#listeners) {
      try {
        listener(uid, structuredClone(status));
      } catch (err) {
        log.error(err, "Pod status listener failed", { pod: log.kObj(pod) });
      }
    }
  }
}

// Searches regular containers first, then init containers, by "<type>://<id>".
function findContainerStatus(status: PodStatus, id: string): ContainerStatus | undefined {
  return status.containerStatuses?.find((c) => c.containerID === id) ??
    status.initContainerStatuses?.find((c) => c.containerID === id);
}

// Writes always work on a fresh structuredClone, so a shared cached object never changes.
function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

// metav1.Time serialises with second precision.
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}
