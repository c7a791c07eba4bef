/**
 * The probe manager: starts and stops one worker per container and probe type, and folds the cached
 * probe results into the pod status the kubelet reports (`started` and `ready` of each container).
 * Mirrors kubelet's pkg/kubelet/prober/prober_manager.go.
 * @module
 */
import type { ProbePool } from "../../probe/pool/pool.ts";
import type { Container, ContainerStatus, Pod, PodStatus } from "../../api/core/v1/mod.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import {
  type CommandRunner,
  getPodCondition,
  isRestartableInitContainer,
  parseContainerID,
} from "../container/mod.ts";
import type { EventRecorder } from "../events/mod.ts";
import type { StatusManager } from "../status/mod.ts";
import { newProberMetrics, type ProberMetrics } from "./metrics.ts";
import { newProber, type Prober } from "./prober.ts";
import { probeOf, type ProbeType, probeTypeString } from "./probe_type.ts";
import { Result, type ResultsManager } from "./results/mod.ts";
import { kubeletRestartGracePeriodMs, newWorker, type Worker } from "./worker.ts";

/**
 * The kubelet feature gates the prober consults. Defaults are kubelet v1.36.3's (pkg/features).
 */
export interface FeatureGates {
  /** Deprecated escape hatch (default false): reset container status after a kubelet restart. */
  ChangeContainerStatusOnKubeletRestart: boolean;
  /** Container-level restart rules decide whether a terminated container's worker goes on. */
  ContainerRestartRules: boolean;
  /** A `RestartAllContainers` rule keeps the workers of an exited pod going. */
  RestartAllContainersOnContainerExits: boolean;
  /** A timed-out exec probe is a Failure (GA; off makes it an error). */
  ExecProbeTimeout: boolean;
}

/** kubelet's defaults for the gates above. */
export const defaultFeatureGates: Readonly<FeatureGates> = Object.freeze({
  ChangeContainerStatusOnKubeletRestart: false,
  ContainerRestartRules: true,
  RestartAllContainersOnContainerExits: true,
  ExecProbeTimeout: true,
});

/**
 * The containers kubelet probes, in its order: regular containers, then restartable init
 * containers (sidecars).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * probedContainers(pod).map((c) => c.name);
 * ```
 */
export function probedContainers(pod: Pod): Container[] {
  return [
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.initContainers ?? []).filter(isRestartableInitContainer),
  ];
}

/** Identifies a worker: kubelet's `probeKey`. */
export interface ProbeKey {
  /** The pod's UID. */
  podUID: string;
  /** The container's name in the pod spec. */
  containerName: string;
  /** Which probe. */
  probeType: ProbeType;
}

/** What `newManager` needs; everything but the four managers and the recorder has a default. */
export interface ManagerOptions {
  /** Where workers read pod statuses. */
  statusManager: StatusManager;
  /** Liveness results cache. */
  livenessManager: ResultsManager;
  /** Readiness results cache. */
  readinessManager: ResultsManager;
  /** Startup results cache. */
  startupManager: ResultsManager;
  /** Where exec probes run. */
  runner?: CommandRunner;
  /** Where probe events go. */
  recorder: EventRecorder;
  /** Every timer and timestamp of the workers (default: the wall clock). */
  clock?: Clock;
  /** Prometheus metrics (default: a fresh registry of their own). */
  metrics?: ProberMetrics;
  /** Overrides of `defaultFeatureGates`. */
  featureGates?: Partial<FeatureGates>;
  /** Uniform [0, 1) source for start-up jitter (default `Math.random`). */
  random?: () => number;
  /** Threads that run the HTTP, TCP and gRPC handlers (default: none, the calling thread). */
  probePool?: ProbePool;
}

/**
 * Manages the probe workers of every pod on the node.
 *
 * @example
 * ```ts
 * import type { Pod, PodStatus } from "../../api/core/v1/mod.ts";
 * import type { CommandRunner } from "../container/command_runner.ts";
 * import type { EventRecorder } from "../events/event.ts";
 * import type { ResultsManager } from "./results/results_manager.ts";
 * import type { StatusManager } from "../status/status_manager.ts";
 *
 * declare const statusManager: StatusManager;
 * declare const livenessManager: ResultsManager;
 * declare const readinessManager: ResultsManager;
 * declare const startupManager: ResultsManager;
 * declare const runner: CommandRunner;
 * declare const recorder: EventRecorder;
 * declare const pod: Pod;
 * declare const status: PodStatus;
 *
 * const m = newManager({ statusManager, livenessManager, readinessManager, startupManager, runner, recorder });
 * m.addPod(pod);             // on every pod sync
 * m.updatePodStatus(pod, status); // when generating the pod's API status
 * m.removePod(pod);          // when the pod is terminated
 * ```
 */
export class ProberManager {
  readonly #workers = new Map<string, Worker>();
  /** Provides pod status updates; replaceable (kubelet's tests do). */
  statusManager: StatusManager;
  /** Liveness results cache. */
  readonly livenessManager: ResultsManager;
  /** Readiness results cache. */
  readonly readinessManager: ResultsManager;
  /** Startup results cache. */
  readonly startupManager: ResultsManager;
  /** Runs the probes; its handlers are replaceable in tests. */
  prober: Prober;
  /** The clock every worker times itself on. */
  readonly clock: Clock;
  /** When this manager (kubelet) started, in epoch milliseconds. */
  readonly start: number;
  /** The prober metrics. */
  readonly metrics: ProberMetrics;
  /** Effective feature gates. */
  readonly featureGates: Readonly<FeatureGates>;
  /** Jitter source, uniform in [0, 1). */
  readonly random: () => number;

  /** The active workers by `probeKeyString` (kubelet's `m.workers`), read-only. */
  get workers(): ReadonlyMap<string, Worker> {
    return this.#workers;
  }

  /** Use `newManager`. */
  constructor(options: ManagerOptions) {
    this.statusManager = options.statusManager;
    this.livenessManager = options.livenessManager;
    this.readinessManager = options.readinessManager;
    this.startupManager = options.startupManager;
    this.clock = options.clock ?? new RealClock();
    this.metrics = options.metrics ?? newProberMetrics();
    this.featureGates = Object.freeze({ ...defaultFeatureGates, ...options.featureGates });
    this.random = options.random ?? Math.random;
    this.prober = newProber(options.runner, options.recorder, {
      execProbeTimeout: this.featureGates.ExecProbeTimeout,
      clock: this.clock,
      pool: options.probePool,
    });
    this.start = this.clock.now();
  }

  /**
   * Creates and starts workers for every probe of the pod's containers and restartable init
   * containers (startup, readiness, liveness, in that order). Idempotent: existing workers are kept
   * (and probe changes are not picked up), and a container that already has a worker is skipped.
   */
  addPod(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    containers: for (const c of probedContainers(pod)) {
      for (const probeType of ["startup", "readiness", "liveness"] as const) {
        if (!probeOf(c, probeType)) continue;
        const key: ProbeKey = { podUID: uid, containerName: c.name, probeType };
        if (this.#workers.has(probeKeyString(key))) {
          log.V(8).info(`${probeTypeString(probeType)} probe already exists for container`, {
            pod: log.kObj(pod),
            containerName: c.name,
          });
          // PR #138930: skip this container only, not the rest of the pod.
          continue containers;
        }
        const w = newWorker(this, { probeType, pod, container: c });
        this.#workers.set(probeKeyString(key), w);
        // run() handles its own errors; this only keeps a bug from becoming an unhandled rejection.
        w.start().catch((err) => log.error(err, "Probe worker failed", { pod: log.kObj(pod) }));
      }
    }
  }

  /**
   * Stops the liveness and startup workers of the pod's regular containers, when its termination
   * begins; readiness keeps running so the pod can turn unready while it shuts down.
   */
  stopLivenessAndStartup(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    for (const c of pod.spec?.containers ?? []) {
      for (const probeType of ["liveness", "startup"] as const) {
        this.getWorker({ podUID: uid, containerName: c.name, probeType })?.stop();
      }
    }
  }

  /** Stops every worker of the pod; they remove themselves once they exit. */
  removePod(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    for (const c of probedContainers(pod)) {
      for (const probeType of ["readiness", "liveness", "startup"] as const) {
        this.getWorker({ podUID: uid, containerName: c.name, probeType })?.stop();
      }
    }
  }

  /** Stops the workers of every pod whose UID is not in `desiredPods` (undefined stops all). */
  cleanupPods(desiredPods: ReadonlySet<string> | undefined): void {
    for (const w of [...this.#workers.values()]) {
      if (!desiredPods?.has(w.key.podUID)) w.stop();
    }
  }

  /**
   * Sets `started` and `ready` of the container statuses in `podStatus` (in place) from the cached
   * probe results, triggering a readiness probe where no result is cached yet.
   */
  updatePodStatus(pod: Pod, podStatus: PodStatus): void {
    for (const c of podStatus.containerStatuses ?? []) {
      const started = this.#isContainerStarted(pod, c);
      c.started = started;
      if (!started) continue; // ready stays as it was
      const spec = (pod.spec?.containers ?? []).find((s) => s.name === c.name);
      c.ready = this.#containerReady(pod, c, spec);
    }

    const initStatuses = podStatus.initContainerStatuses ?? [];
    const initContainers = pod.spec?.initContainers ?? [];
    for (let i = 0; i < initStatuses.length; i++) {
      const c = initStatuses[i];
      const started = this.#isContainerStarted(pod, c);
      c.started = started;
      const initContainer = getContainerByIndex(initContainers, initStatuses, i);
      if (!initContainer) {
        log.V(4).info("Mismatch between pod spec and status, likely programmer error", {
          pod: log.kObj(pod),
          containerName: c.name,
        });
        continue;
      }
      if (!isRestartableInitContainer(initContainer)) {
        // A regular init container is ready once it has succeeded; never set back to false here.
        if (c.state?.terminated && c.state.terminated.exitCode === 0) c.ready = true;
        continue;
      }
      if (!started) continue;
      c.ready = this.#containerReady(pod, c, initContainer);
    }
  }

  /**
   * Registers a worker made by `newWorker` under its own key, as `addPod` does (kubelet's tests
   * write `m.workers[key] = w`); for tests and tools that start their workers themselves.
   */
  addWorker(worker: Worker): void {
    this.#workers.set(probeKeyString(worker.key), worker);
  }

  /** The worker for the key, if any. */
  getWorker(key: ProbeKey): Worker | undefined {
    return this.#workers.get(probeKeyString(key));
  }

  /**
   * Forgets the worker for the key. With `worker`, only that worker is forgotten (an exiting worker
   * must not remove a newer one registered under the same key).
   */
  removeWorker(key: ProbeKey, options: { worker?: Worker } = {}): void {
    const k = probeKeyString(key);
    if (options.worker && this.#workers.get(k) !== options.worker) return;
    this.#workers.delete(k);
  }

  /** How many workers exist. */
  workerCount(): number {
    return this.#workers.size;
  }

  /** The keys of every worker. */
  probeKeys(): ProbeKey[] {
    return [...this.#workers.values()].map((w) => w.key);
  }

  #containerReady(pod: Pod, c: ContainerStatus, spec: Container | undefined): boolean {
    if (!c.state?.running) return false;
    if (this.readinessManager.get(parseContainerID(c.containerID)) === Result.Success) return true;
    const w = this.getWorker({
      podUID: pod.metadata?.uid ?? "",
      containerName: c.name,
      probeType: "readiness",
    });
    // No readiness probe: ready as soon as started.
    let ready = !w;
    if (w && !w.manualTrigger()) {
      log.info("Failed to trigger a manual run", { probe: probeTypeString("readiness") });
    }
    // Applies with or without a worker: right after a kubelet restart the status is generated
    // before addPod has created the workers, and a probed container must not turn Ready then.
    if (!this.featureGates.ChangeContainerStatusOnKubeletRestart && spec) {
      ready = this.#readyStateOnKubeletRestart(ready, pod, c, spec);
    }
    return ready;
  }

  #isContainerStarted(pod: Pod, c: ContainerStatus): boolean {
    if (!c.state?.running) return false;
    const result = this.startupManager.get(parseContainerID(c.containerID));
    if (result !== undefined) return result === Result.Success;
    if (!this.featureGates.ChangeContainerStatusOnKubeletRestart && c.started === true) return true;
    // A startup probe that has not decided yet: not started.
    const startup = this.getWorker({
      podUID: pod.metadata?.uid ?? "",
      containerName: c.name,
      probeType: "startup",
    });
    return !startup;
  }

  // A container that predates this kubelet keeps the readiness it had, but only while the pod is
  // still Ready (KEP-4781), so a kubelet restart does not flap readiness.
  #readyStateOnKubeletRestart(
    ready: boolean,
    pod: Pod,
    c: ContainerStatus,
    spec: Container,
  ): boolean {
    const startedAt = c.state?.running?.startedAt ? Date.parse(c.state.running.startedAt) : NaN;
    if (Number.isNaN(startedAt) || startedAt >= this.start - kubeletRestartGracePeriodMs) {
      return ready;
    }
    if (!ready && this.readinessManager.get(parseContainerID(c.containerID)) === undefined) {
      ready = true;
    }
    if (spec.readinessProbe) {
      const podReady = getPodCondition(pod.status?.conditions, "Ready")?.status === "True";
      if (!podReady) ready = false;
    }
    return ready;
  }
}

/**
 * Creates a probe manager (kubelet's `NewManager`) with the prober's default handlers.
 *
 * @example
 * ```ts
 * import { LogRecorder } from "../events/event.ts";
 * import { newManager as newResultsManager } from "./results/results_manager.ts";
 * import { RealClock } from "../../util/clock.ts";
 * import type { CommandRunner } from "../container/command_runner.ts";
 * import type { StatusManager } from "../status/status_manager.ts";
 *
 * declare const statusManager: StatusManager;
 * declare const runner: CommandRunner;
 *
 * const m = newManager({
 *   statusManager, livenessManager: newResultsManager(), readinessManager: newResultsManager(),
 *   startupManager: newResultsManager(), runner, recorder: new LogRecorder(), clock: new RealClock(),
 * });
 * ```
 */
export function newManager(options: ManagerOptions): ProberManager {
  return new ProberManager(options);
}

/**
 * The map key of a probe key.
 *
 * @example
 * ```ts
 * probeKeyString({ podUID: "u", containerName: "c", probeType: "liveness" }); // "u/c/liveness"
 * ```
 */
export function probeKeyString(key: ProbeKey): string {
  // A pod UID never contains "/", and container names are DNS labels.
  return `${key.podUID}/${key.containerName}/${key.probeType}`;
}

// podutil.GetContainerByIndex: the spec container at i, when its name matches the status at i.
function getContainerByIndex(
  containers: Container[],
  statuses: ContainerStatus[],
  i: number,
): Container | undefined {
  if (i < 0 || i >= containers.length || i >= statuses.length) return undefined;
  return statuses[i].name === containers[i].name ? containers[i] : undefined;
}
