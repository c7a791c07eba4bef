/**
 * Probe workers: one per container and probe type, probing on the probe's period and caching the
 * verdict in the probe type's results manager.
 * Mirrors kubelet's pkg/kubelet/prober/worker.go.
 * @module
 */
import type { Container, ContainerStatus, Pod, Probe } from "../../api/core/v1/mod.ts";
import type { Clock, ClockTimer } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import {
  type ContainerID,
  containerIDString,
  containerShouldRestart,
  emptyContainerID,
  getContainerStatus,
  isEmptyContainerID,
  parseContainerID,
  shouldAllContainersRestart,
} from "../container/mod.ts";
import { Result, type ResultsManager } from "./results/mod.ts";
import {
  type ProberDurationLabels,
  probeResultFailed,
  probeResultSuccessful,
  probeResultUnknown,
  type ProberResultsLabels,
} from "./metrics.ts";
import { probeOf, type ProbeType, probeTypeString } from "./probe_type.ts";
import type { ProbeKey, ProberManager } from "./prober_manager.ts";

/** Why a worker woke up between two probes. */
export type WakeReason = "tick" | "manual" | "stop";

/** How long before the manager's start a container must have started to predate a kubelet restart. */
export const kubeletRestartGracePeriodMs = 10_000;

/**
 * Periodically probes one container and caches the result. The worker re-reads the pod status from
 * the manager's status manager on every probe, so it follows container restarts (new container IDs).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * import type { ProberManager } from "./prober_manager.ts";
 *
 * declare const manager: ProberManager;
 * declare const pod: Pod;
 *
 * const w = newWorker(manager, { probeType: "readiness", pod, container: pod.spec.containers[0] });
 * const done = w.start(); // resolves after stop() once the worker has cleaned up
 * w.stop();
 * await done;
 * ```
 */
export class Worker {
  /** The pod containing this probe (read-only). */
  readonly pod: Pod;
  /** The container to probe (read-only). */
  readonly container: Container;
  /** The probe configuration (read-only). */
  readonly spec: Probe;
  /** Which probe this worker runs. */
  readonly probeType: ProbeType;
  /** The cached value from a new container's appearance until the first verdict crosses a threshold. */
  readonly initialValue: Result;
  /** Where this worker's results go. */
  readonly resultsManager: ResultsManager;
  /** The manager that owns the worker. */
  readonly probeManager: ProberManager;

  #containerID: ContainerID = emptyContainerID;
  #lastResult: Result = Result.Success;
  #resultRun = 0;
  #onHold = false;

  readonly #resultsLabels: Record<"successful" | "failed" | "unknown", ProberResultsLabels>;
  readonly #durationLabels: ProberDurationLabels;

  // Go's 1-slot stopCh and manualTriggerCh, and the ticker's 1-slot channel, as pending flags.
  #stopPending = false;
  #manualPending = false;
  #tickPending = false;
  #wake: (() => void) | undefined;
  #ticker: Ticker | undefined;
  #done: Promise<void> | undefined;

  /** Use `newWorker`. */
  constructor(m: ProberManager, options: { probeType: ProbeType; pod: Pod; container: Container }) {
    const { probeType, pod, container } = options;
    this.probeManager = m;
    this.probeType = probeType;
    this.pod = pod;
    this.container = container;
    switch (probeType) {
      case "readiness":
        this.resultsManager = m.readinessManager;
        this.initialValue = Result.Failure;
        break;
      case "liveness":
        this.resultsManager = m.livenessManager;
        this.initialValue = Result.Success;
        break;
      case "startup":
        this.resultsManager = m.startupManager;
        this.initialValue = Result.Unknown;
        break;
      default:
        throw new Error(`unknown probe type: ${probeType}`);
    }
    this.spec = probeOf(container, probeType)!;
    const duration: ProberDurationLabels = {
      probe_type: probeTypeString(probeType),
      container: container.name,
      pod: pod.metadata?.name ?? "",
      namespace: pod.metadata?.namespace ?? "",
    };
    const withResult = (result: string): ProberResultsLabels => ({
      ...duration,
      result,
      pod_uid: pod.metadata?.uid ?? "",
    });
    this.#durationLabels = duration;
    this.#resultsLabels = {
      successful: withResult(probeResultSuccessful),
      failed: withResult(probeResultFailed),
      unknown: withResult(probeResultUnknown),
    };
  }

  /** The last container ID seen for this container (empty until the first status). */
  get containerID(): ContainerID {
    return this.#containerID;
  }

  /** The last probe result; starts as Go's zero value, Success. */
  get lastResult(): Result {
    return this.#lastResult;
  }

  /** How many times in a row the probe returned `lastResult`. */
  get resultRun(): number {
    return this.#resultRun;
  }

  /** When set, probing is skipped until a new container ID appears. */
  get onHold(): boolean {
    return this.#onHold;
  }

  /** This worker's key in its manager's map. */
  get key(): ProbeKey {
    return {
      podUID: this.pod.metadata?.uid ?? "",
      containerName: this.container.name,
      probeType: this.probeType,
    };
  }

  /** The promise of the running loop (undefined until `start()`), resolving after clean-up. */
  get done(): Promise<void> | undefined {
    return this.#done;
  }

  /** Starts the probe loop once; returns the promise that resolves when the worker has exited. */
  start(): Promise<void> {
    this.#done ??= this.run();
    return this.#done;
  }

  /**
   * Stops the worker; it cleans up and removes itself from its manager. Safe to call many times.
   * A stop is noticed between probes: a probe in flight runs to its own timeout.
   */
  stop(): void {
    // Go's non-blocking send on a 1-slot channel: a second stop finds the slot taken.
    if (this.#stopPending) return;
    this.#stopPending = true;
    this.#wake?.();
  }

  /**
   * Asks for a probe now (non-blocking, 1 slot, as Go's manualTriggerCh); returns false when a
   * trigger is already pending. The next periodic probe then comes one period after the manual one.
   */
  manualTrigger(): boolean {
    if (this.#manualPending) return false;
    this.#manualPending = true;
    this.#wake?.();
    return true;
  }

  /** The probe loop (Go's `run`): jitter right after kubelet start, probe, wait, repeat. */
  async run(): Promise<void> {
    const m = this.probeManager;
    const clock: Clock = m.clock;
    const periodMs = (this.spec.periodSeconds ?? 0) * 1000;
    try {
      // After a kubelet restart all workers start at once: spread them over one period.
      if (periodMs > clock.since(m.start)) {
        await clock.sleep(m.random() * periodMs);
      }
      // Go panics on a non-positive ticker period; here such a worker only wakes on demand.
      if (periodMs > 0) {
        this.#ticker = new Ticker(clock, periodMs, () => {
          this.#tickPending = true; // a second tick before the first is taken is dropped
          this.#wake?.();
        });
      }
      while (await this.doProbe()) {
        const reason = await this.nextWake();
        if (reason === "stop") break;
        if (reason === "manual") log.V(4).info("Triggered Probe by manual run", this.#logFields());
      }
    } finally {
      this.#cleanUp();
    }
  }

  /**
   * Waits for the first of stop, tick or manual trigger (Go's `select`) and says which. A manual
   * trigger resets the ticker. Nothing stays registered once the promise resolves.
   */
  nextWake(): Promise<WakeReason> {
    const ready = this.#takeWake();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => {
      this.#wake = () => {
        const reason = this.#takeWake();
        if (!reason) return;
        this.#wake = undefined;
        resolve(reason);
      };
    });
  }

  /**
   * Probes the container once and records the result; returns whether the worker should go on.
   * An exception anywhere inside counts as "go on", as kubelet swallows panics here.
   */
  async doProbe(): Promise<boolean> {
    try {
      return await this.#doProbe();
    } catch (err) {
      log.error(err, "Observed a panic in probe worker", this.#logFields());
      return true;
    }
  }

  async #doProbe(): Promise<boolean> {
    const m = this.probeManager;
    const startTime = m.clock.now();
    const uid = this.pod.metadata?.uid ?? "";
    // Read-only use: no copy needed.
    const status = m.statusManager.getPodStatus(uid, { shared: true });
    if (!status) {
      // Either the pod has not been created yet, or it was already deleted.
      log.V(3).info("No status for pod", { pod: log.kObj(this.pod) });
      return true;
    }
    if (status.phase === "Failed" || status.phase === "Succeeded") {
      log.V(3).info("Pod is terminated, exiting probe worker", {
        pod: log.kObj(this.pod),
        phase: status.phase,
      });
      return false;
    }

    let c = getContainerStatus(status.containerStatuses, this.container.name);
    if (!c?.containerID) {
      c = getContainerStatus(status.initContainerStatuses, this.container.name);
      if (!c?.containerID) {
        log.V(3).info("Probe target container not found", {
          pod: log.kObj(this.pod),
          containerName: this.container.name,
        });
        return true; // Wait for more information.
      }
    }

    if (containerIDString(this.#containerID) !== c.containerID) {
      if (!isEmptyContainerID(this.#containerID)) this.resultsManager.remove(this.#containerID);
      this.#containerID = parseContainerID(c.containerID);
      // A container that predates this kubelet keeps its cached state instead of the initial value
      // (KEP-4781), unless ChangeContainerStatusOnKubeletRestart restores the old behaviour.
      if (m.featureGates.ChangeContainerStatusOnKubeletRestart || !this.#predatesKubelet(c)) {
        await this.resultsManager.set(this.#containerID, this.initialValue, this.pod);
      }
      // A new container: resume probing.
      this.#onHold = false;
    }

    if (this.#onHold) return true; // On hold until there is a new container.

    if (!c.state?.running) {
      log.V(3).info("Non-running container probed", {
        pod: log.kObj(this.pod),
        containerName: this.container.name,
      });
      if (!isEmptyContainerID(this.#containerID)) {
        await this.resultsManager.set(this.#containerID, Result.Failure, this.pod);
      }
      const isRestartableInit = (this.pod.spec?.initContainers ?? []).some((ic) =>
        ic.name === this.container.name
      ) && this.container.restartPolicy === "Always";
      // Abort if the container will not be restarted.
      if (m.featureGates.ContainerRestartRules) {
        const terminated = c.state?.terminated;
        if (!terminated) return true;
        return containerShouldRestart(this.container, this.pod.spec, terminated.exitCode) ||
          (m.featureGates.RestartAllContainersOnContainerExits &&
            shouldAllContainersRestart(this.pod, status));
      }
      return !c.state?.terminated || this.pod.spec?.restartPolicy !== "Never" ||
        isRestartableInit;
    }

    // Graceful shutdown of the pod.
    if (
      this.pod.metadata?.deletionTimestamp &&
      (this.probeType === "liveness" || this.probeType === "startup")
    ) {
      log.V(3).info("Pod deletion requested, setting probe result to success", this.#logFields());
      if (this.probeType === "startup") {
        log.info("Pod deletion requested before container has fully started", {
          pod: log.kObj(this.pod),
          containerName: this.container.name,
        });
      }
      // Set a last result to ensure quiet shutdown.
      await this.resultsManager.set(this.#containerID, Result.Success, this.pod);
      return false; // Stop probing at this point.
    }

    // Probe disabled for InitialDelaySeconds; whole seconds, truncated as Go's int32 conversion.
    const startedAt = parseTime(c.state.running.startedAt);
    const secondsRunning = Math.trunc(m.clock.since(startedAt) / 1000);
    if (secondsRunning < (this.spec.initialDelaySeconds ?? 0)) return true;

    if (c.started === true) {
      // Startup probing stops once the container has started; the worker stays for restarts.
      if (this.probeType === "startup") return true;
    } else if (this.probeType !== "startup") {
      // Liveness and readiness wait until the container has started.
      return true;
    }

    // Exec probes do NOT see the pod's environment variables nor the downward API.
    const { result, error } = await m.prober.probe(this.probeType, {
      pod: this.pod,
      status,
      container: this.container,
      containerID: this.#containerID,
    });
    if (error) return true; // Prober error: throw the result away.

    const metrics = m.metrics;
    const seconds = () => m.clock.since(startTime) / 1000;
    switch (result) {
      case Result.Success:
        metrics.proberResults.inc(this.#resultsLabels.successful);
        metrics.proberDuration.observe(this.#durationLabels, seconds());
        break;
      case Result.Failure:
        metrics.proberResults.inc(this.#resultsLabels.failed);
        break;
      default:
        metrics.proberResults.inc(this.#resultsLabels.unknown);
        metrics.proberDuration.observe(this.#durationLabels, seconds());
    }

    if (this.#lastResult === result) {
      this.#resultRun++;
    } else {
      this.#lastResult = result;
      this.#resultRun = 1;
    }
    if (
      (result === Result.Failure && this.#resultRun < (this.spec.failureThreshold ?? 0)) ||
      (result === Result.Success && this.#resultRun < (this.spec.successThreshold ?? 0))
    ) {
      return true; // Below threshold: leave the cached state unchanged.
    }

    await this.resultsManager.set(this.#containerID, result, this.pod);

    if (
      (this.probeType === "liveness" && result === Result.Failure) || this.probeType === "startup"
    ) {
      // A failed liveness (or a decided startup) probe waits for a new container: this avoids
      // exec'ing into a container that is being killed, and gives the restarted container a full
      // FailureThreshold budget.
      this.#onHold = true;
      this.#resultRun = 0;
    }
    return true;
  }

  // Started before (kubelet start - 10 s): the container was running across a kubelet restart.
  #predatesKubelet(c: ContainerStatus): boolean {
    const startedAt = c.state?.running?.startedAt;
    if (!startedAt) return false;
    return parseTime(startedAt) < this.probeManager.start - kubeletRestartGracePeriodMs;
  }

  #takeWake(): WakeReason | undefined {
    if (this.#stopPending) return "stop";
    if (this.#tickPending) {
      this.#tickPending = false;
      return "tick";
    }
    if (this.#manualPending) {
      this.#manualPending = false;
      // The next periodic probe comes one period after this manual one.
      this.#tickPending = false;
      this.#ticker?.reset();
      return "manual";
    }
    return undefined;
  }

  #cleanUp(): void {
    this.#ticker?.stop();
    this.#ticker = undefined;
    this.#wake = undefined;
    if (!isEmptyContainerID(this.#containerID)) this.resultsManager.remove(this.#containerID);
    const m = this.probeManager;
    m.removeWorker(this.key, { worker: this });
    m.metrics.proberResults.remove(this.#resultsLabels.successful);
    m.metrics.proberResults.remove(this.#resultsLabels.failed);
    m.metrics.proberResults.remove(this.#resultsLabels.unknown);
    m.metrics.proberDuration.remove(this.#durationLabels);
  }

  #logFields(): log.LogFields {
    return {
      probeType: probeTypeString(this.probeType),
      pod: log.kObj(this.pod),
      podUID: this.pod.metadata?.uid ?? "",
      containerName: this.container.name,
    };
  }
}

/**
 * Creates a worker (not started: call `start()`), as kubelet's `newWorker`.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * import type { ProberManager } from "./prober_manager.ts";
 *
 * declare const manager: ProberManager;
 * declare const pod: Pod;
 *
 * const w = newWorker(manager, { probeType: "liveness", pod, container: pod.spec.containers[0] });
 * ```
 */
export function newWorker(
  m: ProberManager,
  options: { probeType: ProbeType; pod: Pod; container: Container },
): Worker {
  return new Worker(m, options);
}

// A Go ticker on the injected clock: fires every period on a fixed cadence; ticks that would be
// late are skipped rather than bunched; reset() restarts the cadence from now.
class Ticker {
  #clock: Clock;
  #periodMs: number;
  #onTick: () => void;
  #next = 0;
  #timer: ClockTimer | undefined;

  constructor(clock: Clock, periodMs: number, onTick: () => void) {
    this.#clock = clock;
    this.#periodMs = periodMs;
    this.#onTick = onTick;
    this.reset();
  }

  reset(): void {
    this.stop();
    this.#next = this.#clock.now() + this.#periodMs;
    this.#arm();
  }

  stop(): void {
    this.#timer?.stop();
    this.#timer = undefined;
  }

  #arm(): void {
    this.#timer = this.#clock.afterFunc(this.#next - this.#clock.now(), () => {
      const now = this.#clock.now();
      do this.#next += this.#periodMs; while (this.#next <= now);
      this.#arm();
      this.#onTick();
    });
  }
}

// RFC 3339 to epoch milliseconds; a missing time is Go's zero time, long before anything.
function parseTime(value: string | undefined): number {
  if (!value) return Number.NEGATIVE_INFINITY;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? Number.NEGATIVE_INFINITY : ms;
}
