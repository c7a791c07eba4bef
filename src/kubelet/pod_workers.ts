/**
 * The pod workers: one state machine per pod that serialises its syncs (SyncPod while it runs,
 * SyncTerminatingPod and SyncTerminatedPod once its termination is requested), the work queue of
 * each pod's next periodic sync with its jittered resync and back-off periods, and the grace period
 * a pod is killed with (a grace period only ever decreases once termination started).
 * Mirrors kubelet's pkg/kubelet/pod_workers.go (podWorkers, podSyncStatus, UpdatePod,
 * podWorkerLoop, completeWork, IsPodTerminationRequested, CouldHaveRunningContainers,
 * calculateEffectiveGracePeriod); the Kubelet is the podSyncer it calls.
 * @module
 */
import type { Pod } from "../api/core/v1/mod.ts";
import type { Clock } from "../util/clock.ts";
import { canonicalJSON } from "../util/hash.ts";
import * as log from "../util/log.ts";
import { podKey } from "./container/helpers.ts";
import { rfc3339, type StartFailure } from "./kubelet_pods.ts";

/** kubelet's default `--sync-frequency`: each pod is resynced this often without any event. */
export const defaultSyncFrequencyMs = 60_000;
/** kubelet's pod worker back-off after a failed sync (`backOffPeriod`). */
export const backOffPeriodMs = 10_000;
/** kubelet's jitter factors of the pod worker's resync and back-off periods. */
const workerResyncIntervalJitterFactor = 0.5;
const workerBackOffPeriodJitterFactor = 0.5;

/**
 * One pod's worker state (kubelet's podSyncStatus, reduced). The podSyncer records
 * {@linkcode PodSyncStatus.terminatedAt} and {@linkcode PodSyncStatus.finished} as its syncs reach
 * them; the pod workers own the rest.
 */
export interface PodSyncStatus {
  /** The pod as last handed to UpdatePod. */
  pod: Pod;
  /** The pod as added, to notice a changed pod arriving with the same UID. */
  podJSON: string;
  /** The sync in progress, if any (kubelet's `working`). */
  running?: Promise<void>;
  /** Another sync was requested while one ran (kubelet's `pendingUpdate`). */
  pending: boolean;
  /** Termination has begun: no more syncs (kubelet's `terminatingAt` is set). */
  terminating: boolean;
  /**
   * The pod reached Succeeded or Failed and its sandbox was stopped (kubelet's pod worker after
   * SyncTerminatingPod of a terminal pod): no more syncs; it stays, with its exited containers,
   * until it is removed.
   */
  finished: boolean;
  /** Resolves once the pod is torn down (after every retry it took). */
  terminated?: Promise<void>;
  /** Resolves {@linkcode PodSyncStatus.terminated}. */
  markTerminated?: () => void;
  /** The teardown attempt in progress; true when it succeeded. */
  teardown?: Promise<boolean>;
  /**
   * When SyncTerminatingPod completed (kubelet's `podSyncStatus.terminatedAt`): from then on no
   * container of the pod can be running, so its terminal phase may go to the API server.
   */
  terminatedAt?: number;
  /** When the pod worker first saw the pod (kubelet's `startedAt`), RFC 3339. */
  startTime: string;
  /** kubelet's reason cache: why each container could not be started in the last sync. */
  startFailures: Map<string, StartFailure>;
  /** Times this pod was synced. */
  syncs: number;
  /** The grace period (s) its termination uses; 0 before termination (it only decreases). */
  gracePeriod: number;
  /** When the work queue hands this pod out for its next periodic sync (clock ms). */
  nextSyncAt: number;
  /** Containers the PLEG saw die; their older dead instances are removed at the next sync. */
  died: Set<string>;
}

/** What a sync of a running pod asks of the work queue (kubelet's SyncPod error, as a value). */
export interface PodSyncResult {
  /** The sync failed: requeue after the back-off period. */
  failed: boolean;
  /** A restart back-off ends then (clock ms): requeue then, at most after the resync interval. */
  retryAt?: number;
}

/**
 * What the pod workers call to sync a pod (kubelet's podSyncer, which the Kubelet implements).
 */
export interface PodSyncer {
  /**
   * SyncPod for a pod that should run. Returns when to requeue it, or undefined to leave its
   * work-queue entry as it is (the pod went terminal or is terminating).
   */
  syncPod(status: PodSyncStatus): Promise<PodSyncResult | undefined>;
  /**
   * SyncTerminatingPod (and the removal of the pod's sandbox and folders): kill the pod with
   * `gracePeriod` seconds. Throws when the runtime fails; the pod workers retry at the next resync.
   */
  syncTerminatingPod(status: PodSyncStatus, gracePeriod: number): Promise<void>;
  /** SyncTerminatedPod: the pod is gone from the runtime and from the pod workers; forget it. */
  syncTerminatedPod(status: PodSyncStatus): void;
}

/** Options of {@linkcode PodWorkers}. */
export interface PodWorkersOptions {
  /** Time source of the work queue. */
  clock: Clock;
  /** Each pod's resync period (default 1 min). */
  resyncIntervalMs?: number;
  /** Jitter source (default `Math.random`). */
  random?: () => number;
}

/** The kind of UpdatePod call (kubelet's SyncPodType). */
export type SyncPodType = "sync" | "update" | "create" | "kill";

/**
 * The pod workers (kubelet's podWorkers): one {@linkcode PodSyncStatus} per pod UID, syncs of one
 * pod one at a time, termination and its retries, and the work queue.
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 * import { RealClock } from "../util/clock.ts";
 *
 * declare const syncer: PodSyncer;
 * declare const pod: Pod;
 *
 * const podWorkers = new PodWorkers(syncer, { clock: new RealClock() });
 * podWorkers.updatePod({ updateType: "create", pod });
 * podWorkers.isPodTerminationRequested(pod.metadata.uid ?? ""); // false
 * ```
 */
export class PodWorkers {
  readonly #syncer: PodSyncer;
  readonly #clock: Clock;
  readonly #options: PodWorkersOptions;
  readonly #podSyncStatuses = new Map<string, PodSyncStatus>();
  #shuttingDown = false;
  #stopped = false;
  /** The shutdown grace period while stopping (pods get at most this long). */
  #shutdownGracePeriodSeconds?: number;

  /** Builds the pod workers around `syncer`. */
  constructor(syncer: PodSyncer, options: PodWorkersOptions) {
    this.#syncer = syncer;
    this.#clock = options.clock;
    this.#options = options;
  }

  /** Whether {@linkcode PodWorkers.shutdown} was called: no sync starts any more. */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Whether {@linkcode PodWorkers.markStopped} was called: teardown failures are given up on. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The worker state of the pod with this UID, if it has one. */
  getPodSyncStatus(uid: string): PodSyncStatus | undefined {
    return this.#podSyncStatuses.get(uid);
  }

  /** Every pod's worker state, in the order the pods were added. */
  podSyncStatuses(): IterableIterator<PodSyncStatus> {
    return this.#podSyncStatuses.values();
  }

  /** UIDs of every pod with a worker (running or terminating). */
  knownPods(): IterableIterator<string> {
    return this.#podSyncStatuses.keys();
  }

  /** How many pods have a worker. */
  get size(): number {
    return this.#podSyncStatuses.size;
  }

  /** Whether the pod with this UID has a worker. */
  isKnown(uid: string): boolean {
    return this.#podSyncStatuses.has(uid);
  }

  /** kubelet's IsPodTerminationRequested: the pod is known and its termination has begun. */
  isPodTerminationRequested(uid: string): boolean {
    return this.#podSyncStatuses.get(uid)?.terminating === true;
  }

  /**
   * kubelet's CouldHaveRunningContainers, for pods with a worker: SyncTerminatingPod has not
   * completed. An unknown pod answers false (probelet adopts runtime pods through their worker).
   */
  couldHaveRunningContainers(uid: string): boolean {
    const status = this.#podSyncStatuses.get(uid);
    return status !== undefined && status.terminatedAt === undefined;
  }

  /** The pods not being terminated (what kubelet's GetActivePods filters down to). */
  activePods(): Pod[] {
    return [...this.#podSyncStatuses.values()].filter((s) => !s.terminating).map((s) => s.pod);
  }

  /**
   * kubelet's UpdatePod. `create` adds a worker for a new pod (started after any same-name pod
   * still terminating; `start: false` only records it, for a kill right after); `update` hands a
   * running pod its new spec and syncs it; `sync` syncs it as it is; `kill` begins its termination.
   * An unknown pod is ignored by all but `create`.
   */
  updatePod(options: { updateType: SyncPodType; pod: Pod; start?: boolean }): void {
    const { updateType, pod } = options;
    if (updateType === "create") {
      this.#addPod(pod, options.start ?? true);
      return;
    }
    const status = this.#podSyncStatuses.get(pod.metadata.uid ?? "");
    if (!status) return;
    switch (updateType) {
      case "update":
        status.pod = pod;
        status.podJSON = canonicalJSON(pod);
        this.#dispatch(status);
        break;
      case "sync":
        this.#dispatch(status);
        break;
      case "kill":
        void this.terminatePod(status);
        break;
    }
  }

  /** Requests a sync of the pod with this UID (no-op for unknown or terminating pods). */
  syncPodByUID(uid: string): void {
    const status = this.#podSyncStatuses.get(uid);
    if (status) this.#dispatch(status);
  }

  #addPod(pod: Pod, start: boolean): void {
    // A replaced manifest yields a new UID with the same name: start after the old pod is gone.
    const predecessors = [...this.#podSyncStatuses.values()].filter((s) =>
      s.terminating && podKey(s.pod) === podKey(pod)
    ).map((s) => s.terminated);
    const status: PodSyncStatus = {
      pod,
      podJSON: canonicalJSON(pod),
      pending: false,
      terminating: false,
      finished: false,
      startTime: rfc3339(this.#clock.now()),
      startFailures: new Map(),
      syncs: 0,
      gracePeriod: 0,
      nextSyncAt: this.#clock.now(),
      died: new Set(),
    };
    this.#podSyncStatuses.set(pod.metadata.uid ?? "", status);
    if (!start) return;
    if (predecessors.length > 0) {
      status.running = Promise.all(predecessors).then(() => {
        status.running = undefined;
        this.#dispatch(status);
      });
    } else {
      this.#dispatch(status);
    }
  }

  // kubelet's podWorkerLoop for a running pod: one sync at a time; a request arriving meanwhile
  // runs once more after it.
  #dispatch(status: PodSyncStatus): void {
    if (this.#stopped || this.#shuttingDown || status.terminating || status.finished) return;
    if (status.running) {
      status.pending = true;
      return;
    }
    status.running = (async () => {
      try {
        do {
          status.pending = false;
          const result = await this.#syncer.syncPod(status);
          if (result) status.nextSyncAt = this.#completeWork(result);
        } while (status.pending && !status.terminating && !status.finished && !this.#stopped);
      } finally {
        status.running = undefined;
      }
    })();
  }

  /**
   * Kubelet's completeWork: when the pod worker syncs the pod next. After a clean sync, the
   * resync interval; after an error, the back-off period; after a restart back-off (a
   * `BackoffError`, which kubelet's SyncPod returns as its error), the time left until the
   * earliest back-off ends, at most the resync interval. Each is jittered up to 50 % later, so a
   * container in back-off restarts up to half its back-off late, as on kubelet.
   */
  #completeWork(sync: PodSyncResult): number {
    const now = this.#clock.now();
    const resync = this.#options.resyncIntervalMs ?? defaultSyncFrequencyMs;
    if (!sync.failed && sync.retryAt === undefined) {
      return now + this.#jitter(resync, workerResyncIntervalJitterFactor);
    }
    let backoff = backOffPeriodMs;
    if (sync.retryAt !== undefined) backoff = sync.retryAt - now;
    backoff = Math.min(Math.max(backoff, 0), resync);
    return now + this.#jitter(backoff, workerBackOffPeriodJitterFactor);
  }

  // wait.Jitter: d plus up to factor*d at random.
  #jitter(ms: number, factor: number): number {
    return ms + Math.floor((this.#options.random ?? Math.random)() * factor * ms);
  }

  /**
   * The sync ticker's work (kubelet's getPodsToSync + HandlePodSyncs): pods whose work-queue entry
   * is due, or that `shouldSync` asks for, are synced; a terminating pod whose last teardown
   * attempt failed is retried.
   */
  syncDuePods(shouldSync: (pod: Pod) => boolean): void {
    const now = this.#clock.now();
    for (const status of this.#podSyncStatuses.values()) {
      if (status.terminating) void this.#attemptTeardown(status);
      else if (status.nextSyncAt <= now || shouldSync(status.pod)) this.#dispatch(status);
    }
  }

  /**
   * Tears a pod down: SyncTerminatingPod with the pod's effective grace period, then
   * SyncTerminatedPod, then the worker is forgotten. A failed attempt leaves the pod terminating
   * (its status and readiness kept, a same-name replacement waiting) and is retried at the next
   * resync, as kubelet retries SyncTerminatingPod. Resolves once the pod is torn down.
   */
  terminatePod(status: PodSyncStatus): Promise<void> {
    if (status.terminated) return status.terminated;
    status.terminating = true;
    status.terminated = new Promise((resolve) => status.markTerminated = resolve);
    this.#attemptTeardown(status);
    return status.terminated;
  }

  /** Starts a teardown attempt unless one is running; resolves with whether it succeeded. */
  #attemptTeardown(status: PodSyncStatus): Promise<boolean> {
    if (status.teardown) return status.teardown;
    const attempt = this.#teardownOnce(status).finally(() => status.teardown = undefined);
    status.teardown = attempt;
    return attempt;
  }

  async #teardownOnce(status: PodSyncStatus): Promise<boolean> {
    while (status.running) await status.running.catch(() => {});
    const pod = status.pod;
    // kubelet's calculateEffectiveGracePeriod: a deletion's grace period wins when shorter.
    const { gracePeriod } = calculateEffectiveGracePeriod(status.gracePeriod, pod, {
      override: shutdownGracePeriodOverride(pod, this.#shutdownGracePeriodSeconds),
    });
    status.gracePeriod = gracePeriod;
    try {
      await this.#syncer.syncTerminatingPod(status, gracePeriod);
    } catch (e) {
      if (!this.#stopped) {
        log.error(e, "Failed to tear down pod, will retry at the next resync", {
          pod: podKey(pod),
          podUID: pod.metadata.uid,
        });
        return false;
      }
      log.error(e, "Failed to tear down pod during shutdown, giving up", { pod: podKey(pod) });
    }
    const uid = pod.metadata.uid ?? "";
    if (this.#podSyncStatuses.get(uid) === status) this.#podSyncStatuses.delete(uid);
    status.markTerminated?.();
    this.#syncer.syncTerminatedPod(status);
    return true;
  }

  /**
   * Begins the agent's shutdown: no sync starts from here on (a container restarted now would
   * only be stopped again); terminations give no pod more than `gracePeriodOverrideSeconds`.
   */
  shutdown(gracePeriodOverrideSeconds?: number): void {
    this.#shuttingDown = true;
    this.#shutdownGracePeriodSeconds = gracePeriodOverrideSeconds;
  }

  /** From here a failed teardown is given up on and no sync loop runs on. */
  markStopped(): void {
    this.#stopped = true;
  }

  /**
   * Stops with the pods: `leavePodsRunning` lets syncs in progress finish and stops nothing; else
   * every pod is terminated, each failed teardown retried once stopped (and given up on then).
   */
  async stop(options: { leavePodsRunning?: boolean } = {}): Promise<void> {
    const statuses = [...this.#podSyncStatuses.values()];
    if (options.leavePodsRunning) {
      this.markStopped();
      // A sync in progress finishes (a half-created container would be left unstarted otherwise).
      await Promise.all(statuses.map((s) => s.running?.catch(() => {})));
      await Promise.all(statuses.map((s) => s.teardown));
      return;
    }
    // Tear down while syncs can still finish, then refuse new ones.
    for (const s of statuses) void this.terminatePod(s);
    this.markStopped();
    // Pods whose teardown failed before (or fails now) get one more attempt; a failure once
    // stopped is logged and given up on, so this ends.
    let pending = statuses;
    while (pending.length > 0) {
      const done = await Promise.all(pending.map((s) => this.#attemptTeardown(s)));
      pending = pending.filter((_, i) => !done[i]);
    }
  }
}

/**
 * The grace period a stop of the agent gives `pod`, as kubelet's node shutdown manager computes
 * it: the shutdown grace period, or the pod's own terminationGracePeriodSeconds when that is
 * shorter. Passing the shutdown period alone would lengthen a short pod grace up to it (a pod
 * whose PID 1 ignores SIGTERM then held the stop until the shutdown cap killed the agent).
 *
 * @example
 * ```ts
 * shutdownGracePeriodOverride({ metadata: {}, spec: { containers: [], terminationGracePeriodSeconds: 2 } }, 30); // 2
 * ```
 */
export function shutdownGracePeriodOverride(
  pod: Pod,
  shutdownGracePeriodSeconds: number | undefined,
): number | undefined {
  if (shutdownGracePeriodSeconds === undefined) return undefined;
  const own = pod.spec.terminationGracePeriodSeconds;
  return own !== undefined && own <= shutdownGracePeriodSeconds ? own : shutdownGracePeriodSeconds;
}
/**
 * Computes the grace period (seconds) to kill `pod` with. `current` is the grace period already
 * in force for this pod's termination (0 = none yet); `override` is a faster termination asked
 * for inside the kubelet (eviction). Returns the period and whether one was set.
 *
 * @example
 * ```ts
 * calculateEffectiveGracePeriod(0, { metadata: { deletionGracePeriodSeconds: 5 }, spec: { containers: [], terminationGracePeriodSeconds: 30 } });
 * // { gracePeriod: 5, hasGracePeriod: true }
 * ```
 */
export function calculateEffectiveGracePeriod(
  current: number,
  pod: Pod,
  options: { override?: number } = {},
): { gracePeriod: number; hasGracePeriod: boolean } {
  let gracePeriod = current;
  let overridden = false;
  // The API server's value is the truth for a deleted pod; it can only shorten the period.
  const deletion = pod.metadata.deletionGracePeriodSeconds;
  if (deletion !== undefined && (gracePeriod === 0 || deletion < gracePeriod)) {
    gracePeriod = deletion;
    overridden = true;
  }
  if (options.override !== undefined && (gracePeriod === 0 || options.override < gracePeriod)) {
    gracePeriod = options.override;
    overridden = true;
  }
  // Without any request, the pod's own intent.
  if (!overridden && gracePeriod === 0 && pod.spec.terminationGracePeriodSeconds !== undefined) {
    gracePeriod = pod.spec.terminationGracePeriodSeconds;
  }
  // Never less than 1 s.
  if (gracePeriod < 1) gracePeriod = 1;
  return { gracePeriod, hasGracePeriod: gracePeriod !== 0 };
}
