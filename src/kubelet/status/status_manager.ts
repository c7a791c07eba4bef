/**
 * The pod status cache and its sync to the API server: the latest status per pod, container
 * readiness and startup updates and the `Ready` / `ContainersReady` conditions they drive; with a
 * client, one loop that patches `pods/<name>/status` after every change and reconciles every
 * 10 s, keeps the conditions the kubelet does not own, writes static pods' statuses to their
 * mirror pods, and deletes finished pods that are being deleted.
 * Mirrors kubelet's pkg/kubelet/status/status_manager.go.
 * @module
 */
import type {
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodStatus,
} from "../../api/core/v1/mod.ts";
import { metav1Time } from "../../api/meta/v1/mod.ts";
import { isNotFound } from "../../client/errors.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { patchPodStatus } from "../../util/pod/pod.ts";
import { apiDrainTimeoutMs, DrainingStop } from "../../util/wait/wait.ts";
import {
  calculatePodStatusObservedGeneration,
  type ContainerID,
  containerIDString,
  getPodCondition,
} from "../container/mod.ts";
import { BasicPodManager } from "../pod/pod_manager.ts";
import {
  isMirrorPod,
  isStaticPod,
  podConditionByKubelet,
  podConditionSharedByKubelet,
} from "../types/pod_update.ts";
import {
  ContainersReady,
  generateContainersReadyCondition,
  generatePodReadyCondition,
  PodCompleted,
  PodFailed,
  PodReady,
} from "./generate.ts";
import { errorText } from "../../util/errors.ts";

/**
 * The slice of kubelet's pod manager the status manager needs: pods by UID, static pods' mirrors
 * and the UID translation between them.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const pods = new BasicPodManager();
 * pods.addPod(pod);
 * pods.getPodByUID(pod.metadata.uid!); // pod
 * ```
 */
export interface PodManager {
  /** The pod with this UID, or undefined when the pod is gone. */
  getPodByUID(uid: string): Pod | undefined;
  /** The mirror pod of a static pod, if the API server has one. */
  getMirrorPodByPod(pod: Pod): Pod | undefined;
  /** A mirror pod's UID → its static pod's UID; any other UID unchanged. */
  translatePodUID(uid: string): string;
  /** Static pod UID ↔ mirror pod UID (a static pod without a mirror maps to ""). */
  getUIDTranslations(): { podToMirror: Map<string, string>; mirrorToPod: Map<string, string> };
}

export { BasicPodManager };

/** Called after each change of a pod's cached status (with a copy of the new status). */
export type StatusListener = (podUID: string, status: PodStatus) => void;

/** kubelet's status sync period: every cached status is compared with the API's this often. */
export const syncPeriodMs = 10_000;

/** kubelet's `MaxPodTerminationMessageLogLength`: termination messages share this many bytes. */
export const maxPodTerminationMessageLogLength = 1024 * 12;

/**
 * Tells the status manager whether a pod may still have running containers, in which case its
 * terminal phase is not reported yet (kubelet's `PodDeletionSafetyProvider`).
 */
export interface PodDeletionSafetyProvider {
  /** True while a terminal phase must not be sent for the pod. */
  shouldDelayTransitioningPodToTerminal(pod: Pod): boolean;
}

/**
 * The pod status cache and, with a client, its sync to the API server (kubelet's
 * `status.Manager`).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { ContainerID } from "../container/container_id.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 * declare const kubeClient: Clientset;
 * declare const pod: Pod;
 * declare const containerID: ContainerID;
 * declare const pods: PodManager;
 *
 * const statuses = newManager({ podManager: pods, clock, kubeClient });
 * statuses.start(); // the sync loop (a no-op without kubeClient)
 * statuses.setPodStatus(pod, { phase: "Running", containerStatuses: [] });
 * statuses.setContainerReadiness(pod.metadata.uid!, containerID, true);
 * statuses.getPodStatus(pod.metadata.uid!)?.conditions;
 * await statuses.stop();
 * ```
 */
export interface StatusManager {
  /**
   * A copy of the cached status of the pod (a mirror pod's UID finds its static pod's status), or
   * undefined when none is cached. With `shared: true` the cached object itself is returned,
   * deeply frozen, without the cost of a copy (prober workers read the status on every probe and
   * never change it).
   */
  getPodStatus(uid: string, options?: { shared?: boolean }): PodStatus | undefined;
  /** Caches a copy of `status` for `pod`; condition transition times follow status flips. */
  setPodStatus(pod: Pod, status: PodStatus): void;
  /** Sets one container's `ready` (found by container ID) and recomputes Ready / ContainersReady. */
  setContainerReadiness(podUID: string, containerID: ContainerID, ready: boolean): void;
  /** Sets one container's `started` (found by container ID). */
  setContainerStartup(podUID: string, containerID: ContainerID, started: boolean): void;
  /**
   * The pod's containers are gone: every container without a terminated state is reported
   * terminated (`ContainerStatusUnknown`, exit 137) and a non-static pod gets a terminal phase
   * (Failed unless it already Succeeded). The status is marked finished, so a pod being deleted
   * can now be removed from the API server.
   */
  terminatePod(pod: Pod): void;
  /** Forgets the pod's cached status. */
  deletePodStatus(uid: string): void;
  /** Forgets the statuses of pods not in `podUIDs`. */
  removeOrphanedStatuses(podUIDs: ReadonlySet<string>): void;
  /** Registers a listener for status changes; returns a function that unregisters it. */
  subscribe(listener: StatusListener): () => void;
  /**
   * Starts syncing statuses to the API server: after every change, and every 10 s for all pods.
   * Without a client this does nothing (standalone mode).
   */
  start(): void;
  /** Stops the sync loop; resolves once a sync in progress has ended. */
  stop(): Promise<void>;
}

/** Options of {@linkcode newManager}. */
export interface StatusManagerOptions {
  podManager: PodManager;
  /** Time source of transition times and of the sync period (default: the wall clock). */
  clock?: Clock;
  /** The API client; without one statuses are only cached. */
  kubeClient?: Clientset;
  /** Default: never delay a terminal phase. */
  podDeletionSafety?: PodDeletionSafetyProvider;
}

/**
 * Creates a status manager reading pods from `podManager`, timing conditions on `clock`.
 *
 * @example
 * ```ts
 * const statuses = newManager({ podManager: new BasicPodManager() });
 * ```
 */
export function newManager(options: StatusManagerOptions): StatusManager {
  return new Manager(options);
}

// Conditions whose lastTransitionTime the status manager maintains (kubelet-owned and shared).
const transitionTimeConditionTypes = [
  ContainersReady,
  PodReady,
  "Initialized",
  "PodReadyToStartContainers",
  "PodScheduled",
  "DisruptionTarget",
];

/** A cached status with the version that orders it (kubelet's `versionedPodStatus`). */
export interface VersionedPodStatus {
  /** Increases with every change of the pod's status. */
  version: number;
  podName: string;
  podNamespace: string;
  /** When the oldest change not yet sent was made (epoch ms). */
  at: number;
  /** Set by `terminatePod`: the pod's containers are gone. */
  podIsFinished: boolean;
  status: PodStatus;
}

/**
 * The status manager (kubelet's `manager`). Exported for tests, which drive `syncBatch` directly
 * as kubelet's status_manager_test.go does.
 */
export class Manager implements StatusManager {
  #podManager: PodManager;
  #clock: Clock;
  #kubeClient?: Clientset;
  #podDeletionSafety: PodDeletionSafetyProvider;
  #podStatuses = new Map<string, VersionedPodStatus>();
  #listeners = new Set<StatusListener>();
  /** (Mirror) pod UID → the last status version the API server accepted. Sync loop only. */
  readonly apiStatusVersions: Map<string, number> = new Map();
  /** kubelet's 1-slot podStatusChannel: a change is waiting to be synced. */
  #changed = false;
  #tick = false;
  #wake?: () => void;
  #ticker?: ClockTimer;
  #loop?: Promise<void>;
  #stopped = false;
  /** Ends the loop on stop; a request in flight gets `apiDrainTimeoutMs` to finish. */
  #stop = new DrainingStop();

  constructor(options: StatusManagerOptions) {
    this.#podManager = options.podManager;
    this.#clock = options.clock ?? new RealClock();
    this.#kubeClient = options.kubeClient;
    this.#podDeletionSafety = options.podDeletionSafety ??
      { shouldDelayTransitioningPodToTerminal: () => false };
  }

  start(): void {
    // Without a client (standalone), statuses only live here.
    if (!this.#kubeClient) {
      log.info("Kubernetes client is nil, not starting status manager");
      return;
    }
    if (this.#loop) return;
    log.info("Starting to sync pod status with apiserver");
    const tick = () => {
      this.#tick = true;
      this.#signal();
      this.#ticker = this.#clock.afterFunc(syncPeriodMs, tick);
    };
    this.#ticker = this.#clock.afterFunc(syncPeriodMs, tick);
    // syncPod and syncBatch share one loop, so syncs never race.
    this.#loop = (async () => {
      while (!this.#stopped) {
        if (!this.#changed && !this.#tick) {
          await new Promise<void>((resolve) => this.#wake = resolve);
          continue;
        }
        try {
          if (this.consumeUpdate()) {
            log.V(4).info("Syncing updated statuses");
            await this.syncBatch(false);
          } else {
            this.#tick = false;
            log.V(4).info("Syncing all statuses");
            await this.syncBatch(true);
          }
        } catch (e) {
          log.error(e, "Pod status sync failed, will retry");
        }
      }
    })();
  }

  /**
   * Ends the sync loop: the pod being synced finishes (its request is cut only after
   * `apiDrainTimeoutMs`), no other is started.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#ticker?.stop();
    this.#signal();
    await this.#stop.stop(this.#loop ?? Promise.resolve(), {
      clock: this.#clock,
      drainMs: apiDrainTimeoutMs,
    });
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Takes the pending-change signal (a receive on kubelet's podStatusChannel); true if set. */
  consumeUpdate(): boolean {
    const changed = this.#changed;
    this.#changed = false;
    return changed;
  }

  getPodStatus(uid: string, options: { shared?: boolean } = {}): PodStatus | undefined {
    const status = this.#podStatuses.get(this.#podManager.translatePodUID(uid))?.status;
    if (!status || options.shared) return status;
    return structuredClone(status);
  }

  setPodStatus(pod: Pod, status: PodStatus): void {
    const copy = structuredClone(status);
    const observedGeneration = calculatePodStatusObservedGeneration(pod);
    if (observedGeneration !== 0) copy.observedGeneration = observedGeneration;
    else delete copy.observedGeneration;
    // A deletion timestamp forces an update: a pod that stopped running still needs its status
    // (and then its deletion) sent.
    this.#updateStatusInternal(pod, copy, {
      forceUpdate: pod.metadata.deletionTimestamp !== undefined,
      podIsFinished: false,
    });
  }

  setContainerReadiness(podUID: string, containerID: ContainerID, ready: boolean): void {
    const id = containerIDString(containerID);
    const pod = this.#podManager.getPodByUID(podUID);
    if (!pod) {
      log.V(4).info("Pod has been deleted, no need to update readiness", { podUID });
      return;
    }
    const old = this.#podStatuses.get(podUID);
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
    this.#updateStatusInternal(pod, status, { forceUpdate: false, podIsFinished: false });
  }

  setContainerStartup(podUID: string, containerID: ContainerID, started: boolean): void {
    const id = containerIDString(containerID);
    const pod = this.#podManager.getPodByUID(podUID);
    if (!pod) {
      log.V(4).info("Pod has been deleted, no need to update startup", { podUID });
      return;
    }
    const old = this.#podStatuses.get(podUID);
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
    this.#updateStatusInternal(pod, status, { forceUpdate: false, podIsFinished: false });
  }

  terminatePod(pod: Pod): void {
    const uid = pod.metadata.uid ?? "";
    const cached = this.#podStatuses.get(uid);
    const status: PodStatus = structuredClone(cached?.status ?? pod.status ?? {});
    const unknown = (): ContainerState => ({
      terminated: {
        reason: "ContainerStatusUnknown",
        message: "The container could not be located when the pod was terminated",
        exitCode: 137,
      },
    });
    // Once the pod has initialized, a container not known to be terminated counts as failed.
    if (hasPodInitialized(pod)) {
      for (const cs of status.containerStatuses ?? []) {
        if (!cs.state?.terminated) cs.state = unknown();
      }
    }
    // Init containers that were attempted (all but the trailing never-started ones) likewise.
    const init = status.initContainerStatuses ?? [];
    for (let i = 0; i < initializedContainers(init); i++) {
      if (!init[i].state?.terminated) init[i].state = unknown();
    }
    // Static pods keep their phase (kubelet's TODO #116484).
    if (!isStaticPod(pod)) {
      switch (status.phase) {
        case "Succeeded":
        case "Failed":
          break;
        case "Pending":
        case "Running":
          if (status.phase === "Running" && cached) {
            log.info(
              "Terminal running pod should have already been marked as failed, programmer error",
              {
                pod: log.kObj(pod),
                podUID: uid,
              },
            );
          }
          log.V(3).info("Marking terminal pod as failed", {
            oldPhase: status.phase,
            pod: log.kObj(pod),
            podUID: uid,
          });
          status.phase = "Failed";
          break;
        default:
          log.error(
            new Error(`unknown phase: ${status.phase}`),
            "Unknown phase, programmer error",
            {
              pod: log.kObj(pod),
              podUID: uid,
            },
          );
          status.phase = "Failed";
      }
    }
    this.#updateStatusInternal(pod, status, { forceUpdate: true, podIsFinished: true });
  }

  deletePodStatus(uid: string): void {
    this.#podStatuses.delete(uid);
  }

  removeOrphanedStatuses(podUIDs: ReadonlySet<string>): void {
    for (const uid of [...this.#podStatuses.keys()]) {
      if (!podUIDs.has(uid)) {
        log.V(5).info("Removing pod from status map.", { podUID: uid });
        this.#podStatuses.delete(uid);
      }
    }
  }

  subscribe(listener: StatusListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  // `status` is already a private copy.
  #updateStatusInternal(
    pod: Pod,
    status: PodStatus,
    options: { forceUpdate: boolean; podIsFinished: boolean },
  ): void {
    const uid = pod.metadata?.uid ?? "";
    const cached = this.#podStatuses.get(uid);
    let podIsFinished = options.podIsFinished;
    let oldStatus: PodStatus;
    if (cached) {
      oldStatus = cached.status;
      if (!isStaticPod(pod) && cached.podIsFinished && !podIsFinished) {
        log.info(
          "Got unexpected podIsFinished=false, while podIsFinished=true in status cache, programmer error.",
          { pod: log.kObj(pod) },
        );
        podIsFinished = true;
      }
    } else {
      oldStatus = this.#podManager.getMirrorPodByPod(pod)?.status ?? pod.status ?? {};
    }

    for (const list of ["containerStatuses", "initContainerStatuses"] as const) {
      const err = checkContainerStateTransition(
        oldStatus[list],
        status[list],
        pod.spec.restartPolicy,
      );
      if (err) {
        log.error(err, "Status update on pod aborted", { pod: log.kObj(pod) });
        return;
      }
    }

    const now = metav1Time(this.#clock.now());
    for (const type of transitionTimeConditionTypes) {
      updateLastTransitionTime(status, oldStatus, type, now);
    }
    // The start time never changes once set.
    if (oldStatus.startTime) status.startTime = oldStatus.startTime;
    else status.startTime ||= now;
    // The observed generation never goes back (no patch only to lower it).
    if ((oldStatus.observedGeneration ?? 0) > (status.observedGeneration ?? 0)) {
      status.observedGeneration = oldStatus.observedGeneration;
    }

    normalizeStatus(pod, status);

    if (cached && isPodStatusByKubeletEqual(cached.status, status) && !options.forceUpdate) {
      log.V(3).info("Ignoring same status for pod", { pod: log.kObj(pod) });
      return;
    }
    deepFreeze(status);
    this.#podStatuses.set(uid, {
      status,
      version: (cached?.version ?? 0) + 1,
      podName: pod.metadata.name ?? "",
      podNamespace: pod.metadata.namespace ?? "",
      podIsFinished,
      at: cached?.at ?? this.#clock.now(),
    });
    this.#changed = true;
    this.#signal();
    for (const listener of this.#listeners) {
      try {
        listener(uid, structuredClone(status));
      } catch (err) {
        log.error(err, "Pod status listener failed", { pod: log.kObj(pod) });
      }
    }
  }

  /**
   * Sends statuses to the API server: with `all` false only those with a newer version than the
   * API has; with `all` true also those the API shows differently (reconcile) and pods ready to be
   * deleted. Resolves with the number of pods synced.
   */
  async syncBatch(all: boolean): Promise<number> {
    const updated: { podUID: string; statusUID: string; status: VersionedPodStatus }[] = [];
    const { podToMirror, mirrorToPod } = this.#podManager.getUIDTranslations();
    if (all) {
      for (const uid of [...this.apiStatusVersions.keys()]) {
        if (!this.#podStatuses.has(uid) && !mirrorToPod.has(uid)) {
          this.apiStatusVersions.delete(uid);
        }
      }
    }
    for (const [uid, status] of this.#podStatuses) {
      // Static pods are known by their own UID here but by their mirror's UID in the API.
      let statusUID = uid;
      const mirrorUID = podToMirror.get(uid);
      if (mirrorUID !== undefined) {
        if (mirrorUID === "") {
          log.V(5).info("Static pod does not have a corresponding mirror pod; skipping", {
            podUID: uid,
            pod: `${status.podNamespace}/${status.podName}`,
          });
          continue;
        }
        statusUID = mirrorUID;
      }
      if (!all) {
        if ((this.apiStatusVersions.get(statusUID) ?? 0) >= status.version) continue;
        updated.push({ podUID: uid, statusUID, status });
        continue;
      }
      if (this.#needsUpdate(statusUID, status)) {
        updated.push({ podUID: uid, statusUID, status });
      } else if (this.#needsReconcile(uid, status.status)) {
        // Forget the version so that the sync below sends it.
        this.apiStatusVersions.delete(statusUID);
        updated.push({ podUID: uid, statusUID, status });
      }
    }
    for (const u of updated) {
      if (this.#stop.stopping.aborted) break;
      log.V(5).info("Sync pod status", {
        podUID: u.podUID,
        statusUID: u.statusUID,
        version: u.status.version,
      });
      await this.#syncPod(u.podUID, u.status);
    }
    return updated.length;
  }

  async #syncPod(uid: string, status: VersionedPodStatus): Promise<void> {
    const client = this.#kubeClient;
    if (!client) return;
    const ref = `${status.podNamespace}/${status.podName}`;
    const pods = client.coreV1.pods(status.podNamespace);
    let pod: Pod;
    try {
      pod = await pods.get(status.podName, { signal: this.#stop.requests });
    } catch (e) {
      if (isNotFound(e)) {
        // A deleted pod's status is dropped by removeOrphanedStatuses.
        log.V(3).info("Pod does not exist on the server", { podUID: uid, pod: ref });
      } else {
        log.info("Failed to get status for pod", { podUID: uid, pod: ref, err: errorText(e) });
      }
      return;
    }
    const translatedUID = this.#podManager.translatePodUID(pod.metadata.uid ?? "");
    if (translatedUID !== "" && translatedUID !== uid) {
      log.V(2).info("Pod was deleted and then recreated, skipping status update", {
        pod: log.kObj(pod),
        oldPodUID: uid,
        podUID: translatedUID,
      });
      this.deletePodStatus(uid);
      return;
    }
    const merged = mergePodStatus(pod.status ?? {}, status.status, {
      delayTransitioningToTerminal: this.#podDeletionSafety.shouldDelayTransitioningPodToTerminal(
        pod,
      ),
      now: metav1Time(this.#clock.now()),
    });
    let result;
    try {
      // Both sides as Go would marshal its decoded structs, so the patch is kubelet's byte for byte.
      result = await patchPodStatus(client, {
        namespace: pod.metadata.namespace ?? "",
        name: pod.metadata.name ?? "",
        uid: pod.metadata.uid ?? "",
        oldPodStatus: goPodStatus(pod.status ?? {}),
        newPodStatus: goPodStatus(merged),
        signal: this.#stop.requests,
      });
    } catch (e) {
      log.info("Failed to update status for pod", { pod: log.kObj(pod), err: errorText(e) });
      return;
    }
    log.V(3).info("Patch status for pod", {
      pod: log.kObj(pod),
      podUID: uid,
      patch: result.patchBytes,
    });
    if (result.unchanged || !result.pod) {
      log.V(3).info("Status for pod is up-to-date", {
        pod: log.kObj(pod),
        statusVersion: status.version,
      });
    } else {
      log.V(3).info("Status for pod updated successfully", {
        pod: log.kObj(pod),
        statusVersion: status.version,
      });
      pod = result.pod;
    }
    this.apiStatusVersions.set(pod.metadata.uid ?? "", status.version);

    // Mirror pods are never deleted here.
    if (this.#canBeDeleted(pod, status.status, status.podIsFinished)) {
      try {
        // The UID precondition keeps a newer pod of the same name safe.
        await pods.delete(pod.metadata.name ?? "", {
          signal: this.#stop.requests,
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        });
      } catch (e) {
        log.info("Failed to delete status for pod", { pod: log.kObj(pod), err: errorText(e) });
        return;
      }
      log.V(3).info("Pod fully terminated and removed from etcd", { pod: log.kObj(pod) });
      this.deletePodStatus(uid);
    }
  }

  #needsUpdate(uid: string, status: VersionedPodStatus): boolean {
    const latest = this.apiStatusVersions.get(uid);
    if (latest === undefined || latest < status.version) return true;
    const pod = this.#podManager.getPodByUID(uid);
    if (!pod) return false;
    return this.#canBeDeleted(pod, status.status, status.podIsFinished);
  }

  #canBeDeleted(pod: Pod, status: PodStatus, podIsFinished: boolean): boolean {
    if (pod.metadata.deletionTimestamp === undefined || isMirrorPod(pod)) return false;
    // Deletion waits for a terminal phase in the API.
    if (!isPodPhaseTerminal(pod.status?.phase)) {
      log.V(3).info("Delaying pod deletion as the phase is non-terminal", {
        phase: status.phase,
        pod: log.kObj(pod),
        podUID: pod.metadata.uid,
      });
      return false;
    }
    if (podIsFinished) {
      log.V(3).info(
        "The pod termination is finished as SyncTerminatedPod completes its execution",
        {
          phase: status.phase,
          pod: log.kObj(pod),
          podUID: pod.metadata.uid,
        },
      );
      return true;
    }
    return false;
  }

  // Whether the API's copy of the status (the pod manager's pod, from the watch) differs from the
  // cache; only a static pod's mirror carries a meaningful API status.
  #needsReconcile(uid: string, status: PodStatus): boolean {
    let pod = this.#podManager.getPodByUID(uid);
    if (!pod) {
      log.V(4).info("Pod has been deleted, no need to reconcile", { podUID: uid });
      return false;
    }
    if (isStaticPod(pod)) {
      const mirror = this.#podManager.getMirrorPodByPod(pod);
      if (!mirror) {
        log.V(4).info("Static pod has no corresponding mirror pod, no need to reconcile", {
          pod: log.kObj(pod),
        });
        return false;
      }
      pod = mirror;
    }
    const podStatus = normalizeStatus(pod, structuredClone(pod.status ?? {}));
    if (isPodStatusByKubeletEqual(podStatus, status)) return false;
    log.V(3).info(
      "Pod status is inconsistent with cached status for pod, a reconciliation should be triggered",
      { pod: log.kObj(pod) },
    );
    return true;
  }
}

/**
 * Whether two statuses are equal once conditions the kubelet does not own are left out (and
 * zero values count as absent, as Go's decoded structs have them).
 *
 * @example
 * ```ts
 * isPodStatusByKubeletEqual({ phase: "Running" }, { phase: "Running", conditions: [{ type: "x.io/gate", status: "True" }] }); // true
 * ```
 */
export function isPodStatusByKubeletEqual(oldStatus: PodStatus, status: PodStatus): boolean {
  for (const c of status.conditions ?? []) {
    if (!podConditionByKubelet(c.type) && !podConditionSharedByKubelet(c.type)) continue;
    const oc = getPodCondition(oldStatus.conditions, c.type);
    if (
      !oc || oc.status !== c.status || (oc.message ?? "") !== (c.message ?? "") ||
      (oc.reason ?? "") !== (c.reason ?? "")
    ) {
      return false;
    }
  }
  return semanticEqual({ ...oldStatus, conditions: status.conditions }, status);
}

// The first `max` bytes of the UTF-8 text, as Go's `s[:max]`; a rune cut in two becomes U+FFFD,
// as Go's JSON encoding of the cut string does.
function truncateBytes(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text);
  return bytes.length <= max ? text : new TextDecoder().decode(bytes.subarray(0, max));
}

/**
 * Brings a status to what the API server would return, in place, so that comparing the two shows
 * only real differences: times to whole seconds, termination messages cut to their share of
 * 12 KiB, container statuses sorted by name and init container statuses in spec order.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * normalizeStatus(pod, { startTime: "2026-11-23T05:00:00.123Z" }).startTime; // "2026-11-23T05:00:00Z"
 * ```
 */
export function normalizeStatus(pod: Pod, status: PodStatus): PodStatus {
  const containers = pod.spec.containers.length + (pod.spec.initContainers?.length ?? 0);
  const bytesPerStatus = containers > 0
    ? Math.floor(maxPodTerminationMessageLogLength / containers)
    : maxPodTerminationMessageLogLength;
  const normalizeState = (s: ContainerState | undefined) => {
    if (s?.running?.startedAt) s.running.startedAt = toSeconds(s.running.startedAt);
    const t = s?.terminated;
    if (t) {
      if (t.startedAt) t.startedAt = toSeconds(t.startedAt);
      if (t.finishedAt) t.finishedAt = toSeconds(t.finishedAt);
      if (t.message) t.message = truncateBytes(t.message, bytesPerStatus);
    }
  };
  if (status.startTime) status.startTime = toSeconds(status.startTime);
  for (const c of status.conditions ?? []) {
    if (c.lastProbeTime) c.lastProbeTime = toSeconds(c.lastProbeTime);
    if (c.lastTransitionTime) c.lastTransitionTime = toSeconds(c.lastTransitionTime);
  }
  for (const cs of status.containerStatuses ?? []) {
    normalizeState(cs.state);
    normalizeState(cs.lastState);
  }
  status.containerStatuses?.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  for (const cs of status.initContainerStatuses ?? []) {
    normalizeState(cs.state);
    normalizeState(cs.lastState);
  }
  if (status.initContainerStatuses) {
    const order = new Map((pod.spec.initContainers ?? []).map((c, i) => [c.name, i]));
    status.initContainerStatuses.sort((a, b) =>
      (order.get(a.name) ?? Infinity) - (order.get(b.name) ?? Infinity)
    );
  }
  return status;
}

/**
 * What the kubelet sends as a pod's status: its own status, with the API's conditions the kubelet
 * does not own kept (readiness gates, scheduler conditions), `DisruptionTarget` replaced only on
 * the move to a terminal phase, the terminal phase held back while containers may still run, and
 * Ready / ContainersReady forced False in a terminal phase. Neither input is changed.
 *
 * @example
 * ```ts
 * import type { PodStatus } from "../../api/core/v1/mod.ts";
 *
 * declare const apiStatus: PodStatus;
 * declare const cachedStatus: PodStatus;
 *
 * mergePodStatus(apiStatus, cachedStatus, { delayTransitioningToTerminal: false, now: "2026-11-23T05:00:00Z" });
 * ```
 */
export function mergePodStatus(
  oldPodStatus: PodStatus,
  newPodStatus: PodStatus,
  options: { delayTransitioningToTerminal: boolean; now: string },
): PodStatus {
  const merged: PodStatus = structuredClone(newPodStatus);
  let podConditions: PodCondition[] = [];
  for (const c of oldPodStatus.conditions ?? []) {
    if (!podConditionByKubelet(c.type)) podConditions.push(structuredClone(c));
  }
  const transitioningToTerminalPhase = !isPodPhaseTerminal(oldPodStatus.phase) &&
    isPodPhaseTerminal(newPodStatus.phase);
  for (const c of merged.conditions ?? []) {
    if (podConditionByKubelet(c.type)) {
      podConditions.push(c);
    } else if (podConditionSharedByKubelet(c.type) && c.type === "DisruptionTarget") {
      // Sent only once every container has ended and the phase is terminal.
      if (transitioningToTerminalPhase && !options.delayTransitioningToTerminal) {
        updateLastTransitionTime(merged, oldPodStatus, c.type, options.now);
        const i = podConditions.findIndex((p) => p.type === c.type);
        if (i >= 0) podConditions[i] = c;
        else podConditions = [...podConditions, c];
      }
    }
  }
  merged.conditions = podConditions;
  if (transitioningToTerminalPhase && options.delayTransitioningToTerminal) {
    setOrDelete(merged, "phase", oldPodStatus.phase);
    setOrDelete(merged, "reason", oldPodStatus.reason);
    setOrDelete(merged, "message", oldPodStatus.message);
  }
  // Never a terminal phase with Ready=True (kubernetes#108594).
  if (isPodPhaseTerminal(merged.phase)) {
    const ready = getPodCondition(merged.conditions, PodReady);
    const containersReady = getPodCondition(merged.conditions, ContainersReady);
    if (ready?.status === "True" || containersReady?.status === "True") {
      const reason = merged.phase === "Succeeded" ? PodCompleted : PodFailed;
      updatePodCondition(merged, { type: ContainersReady, status: "False", reason }, options.now);
      updatePodCondition(merged, { type: PodReady, status: "False", reason }, options.now);
    }
  }
  return merged;
}

// podutil.UpdatePodCondition: replace (or add) the condition, moving its transition time only when
// its status flips.
function updatePodCondition(status: PodStatus, condition: PodCondition, now: string): void {
  condition.lastTransitionTime = now;
  const conditions = status.conditions ??= [];
  const i = conditions.findIndex((c) => c.type === condition.type);
  if (i < 0) {
    conditions.push(condition);
    return;
  }
  const old = conditions[i];
  if (old.status === condition.status && old.lastTransitionTime !== undefined) {
    condition.lastTransitionTime = old.lastTransitionTime;
  }
  conditions[i] = condition;
}

/** Whether the phase is `Succeeded` or `Failed`. */
export function isPodPhaseTerminal(phase: PodPhase | undefined): boolean {
  return phase === "Succeeded" || phase === "Failed";
}

// Sets the condition's lastTransitionTime: the old one when its status did not flip, else now.
function updateLastTransitionTime(
  status: PodStatus,
  oldStatus: PodStatus,
  type: string,
  now: string,
): void {
  const condition = getPodCondition(status.conditions, type);
  if (!condition) return;
  const old = getPodCondition(oldStatus.conditions, type);
  const time = old && old.status === condition.status ? old.lastTransitionTime : now;
  if (time === undefined) delete condition.lastTransitionTime;
  else condition.lastTransitionTime = time;
}

// A pod without init containers has initialized; else a regular container left waiting, or the
// last init container succeeded.
function hasPodInitialized(pod: Pod): boolean {
  if ((pod.spec.initContainers ?? []).length === 0) return true;
  for (const cs of pod.status?.containerStatuses ?? []) {
    if (cs.lastState?.terminated || !cs.state?.waiting) return true;
  }
  const init = pod.status?.initContainerStatuses ?? [];
  const last = init.at(-1);
  if (last) {
    if (last.lastState?.terminated?.exitCode === 0) return true;
    if (last.state?.terminated?.exitCode === 0) return true;
  }
  return false;
}

// How many init container statuses (from the start) have attempted to start: all but a trailing
// run of never-started waiting ones; at least one when there are any.
function initializedContainers(statuses: ContainerStatus[]): number {
  for (let i = statuses.length - 1; i >= 0; i--) {
    if (!statuses[i].state?.waiting || statuses[i].lastState?.terminated) return i + 1;
  }
  return statuses.length > 0 ? 1 : 0;
}

// A terminated container may only run again when the restart policy allows it.
function checkContainerStateTransition(
  oldStatuses: ContainerStatus[] | undefined,
  newStatuses: ContainerStatus[] | undefined,
  restartPolicy: string | undefined,
): Error | undefined {
  if ((restartPolicy ?? "Always") === "Always") return undefined;
  for (const old of oldStatuses ?? []) {
    const t = old.state?.terminated;
    if (!t) continue;
    if (t.exitCode !== 0 && restartPolicy === "OnFailure") continue;
    for (const next of newStatuses ?? []) {
      if (old.name === next.name && !next.state?.terminated) {
        return new Error(
          `terminated container ${next.name} attempted illegal transition to non-terminated state`,
        );
      }
    }
  }
  return undefined;
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

// metav1.Time.Rfc3339Copy: truncated to whole seconds, UTC.
function toSeconds(time: string): string {
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? time : metav1Time(ms);
}

/**
 * A pod status as Go's `json.Marshal` writes a decoded `v1.PodStatus`: fields without `omitempty`
 * are present with their zero value (a condition's `lastProbeTime`/`lastTransitionTime` as null,
 * a container's `state`, `lastState`, `ready`, `restartCount`, `image`, `imageID`), empty
 * `omitempty` ones are absent. Fields probelet does not know are kept as they are.
 *
 * @example
 * ```ts
 * goPodStatus({ conditions: [{ type: "Ready", status: "True" }] }).conditions;
 * // [{ type: "Ready", status: "True", lastProbeTime: null, lastTransitionTime: null }]
 * ```
 */
export function goPodStatus(status: PodStatus): PodStatus {
  const out = omitEmpty({ ...status }, [
    "phase",
    "message",
    "reason",
    "nominatedNodeName",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "initContainerStatuses",
    "containerStatuses",
    "qosClass",
    "conditions",
    "observedGeneration",
  ]);
  if (out.conditions) {
    out.conditions = out.conditions.map((c) =>
      omitEmpty({
        ...c,
        lastProbeTime: c.lastProbeTime ?? null,
        lastTransitionTime: c.lastTransitionTime ?? null,
      } as PodCondition, ["reason", "message", "observedGeneration"])
    );
  }
  const container = (c: ContainerStatus): ContainerStatus =>
    omitEmpty({
      ...c,
      state: goContainerState(c.state),
      lastState: goContainerState(c.lastState),
      ready: c.ready ?? false,
      restartCount: c.restartCount ?? 0,
      image: c.image ?? "",
      imageID: c.imageID ?? "",
    }, ["containerID"]);
  if (out.containerStatuses) out.containerStatuses = out.containerStatuses.map(container);
  if (out.initContainerStatuses) {
    out.initContainerStatuses = out.initContainerStatuses.map(container);
  }
  return out;
}

function goContainerState(state: ContainerState | undefined): ContainerState {
  const out: ContainerState = { ...state };
  if (out.waiting) out.waiting = omitEmpty({ ...out.waiting }, ["reason", "message"]);
  if (out.running) {
    out.running = { ...out.running, startedAt: out.running.startedAt ?? null } as ContainerState[
      "running"
    ];
  }
  if (out.terminated) {
    const t = out.terminated;
    out.terminated = omitEmpty({
      ...t,
      exitCode: t.exitCode ?? 0,
      startedAt: t.startedAt ?? null,
      finishedAt: t.finishedAt ?? null,
    } as NonNullable<ContainerState["terminated"]>, ["signal", "reason", "message", "containerID"]);
  }
  return out;
}

// Drops `keys` whose value Go's omitempty would leave out (zero, "", null, empty list).
function omitEmpty<T extends object>(obj: T, keys: string[]): T {
  const o = obj as Record<string, unknown>;
  for (const k of keys) {
    const v = o[k];
    if (
      v === undefined || v === null || v === "" || v === 0 || v === false ||
      (Array.isArray(v) && v.length === 0)
    ) {
      delete o[k];
    }
  }
  return obj;
}

/**
 * Equality as apimachinery's semantic DeepEqual sees decoded Go structs: a missing field equals
 * its zero value (`false`, `0`, `""`, null, empty list or map, an object of zero values). A
 * container's `started` is a pointer in Go: false is not the same as unset. Walked in place, with
 * nothing copied: the status manager compares every pod's status on each batch.
 */
function semanticEqual(a: unknown, b: unknown): boolean {
  return semanticEqualValue(a, b, false);
}

// `pointer`: the value is a `*bool` field, whose false is a value.
function isSemanticZero(v: unknown, pointer: boolean): boolean {
  if (pointer && typeof v === "boolean") return false;
  if (v === undefined || v === null || v === false || v === 0 || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === "object") {
    const o = v as Record<string, unknown>;
    for (const k in o) {
      if (Object.hasOwn(o, k) && !isSemanticZero(o[k], k === "started")) return false;
    }
    return true;
  }
  return false;
}

function semanticEqualValue(a: unknown, b: unknown, pointer: boolean): boolean {
  const aZero = isSemanticZero(a, pointer);
  const bZero = isSemanticZero(b, pointer);
  if (aZero || bZero) return aZero && bZero;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!semanticEqualValue(a[i], b[i], false)) return false;
    }
    return true;
  }
  if (typeof a === "object" && typeof b === "object") {
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    for (const k in ao) {
      if (Object.hasOwn(ao, k) && !semanticEqualValue(ao[k], bo[k], k === "started")) {
        return false;
      }
    }
    for (const k in bo) {
      if (
        Object.hasOwn(bo, k) && !Object.hasOwn(ao, k) && !isSemanticZero(bo[k], k === "started")
      ) {
        return false;
      }
    }
    return true;
  }
  return Object.is(a, b);
}

function setOrDelete<T extends object, K extends keyof T>(obj: T, key: K, value: T[K]): void {
  if (value === undefined) delete obj[key];
  else obj[key] = value;
}
