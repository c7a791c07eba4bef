/**
 * The kubelet's view of the container runtime's health, fed by `updateRuntimeUp` (a CRI `Status`
 * call every 5 s) and read by the node's Ready condition: the runtime is "down" when no successful
 * check happened within the threshold, and its RuntimeReady / NetworkReady conditions become the
 * Ready condition's message when false.
 * Mirrors kubelet's pkg/kubelet/runtime.go.
 * @module
 */
import type { Clock } from "../util/clock.ts";

/**
 * Joins errors as apimachinery's utilerrors.NewAggregate prints them: undefined for none, the
 * message alone for one, `[a, b]` for several.
 *
 * @example
 * ```ts
 * aggregate([new Error("a"), undefined, new Error("b")])?.message; // "[a, b]"
 * ```
 */
export function aggregate(errs: (Error | undefined)[]): Error | undefined {
  const present = errs.filter((e): e is Error => e !== undefined);
  if (present.length === 0) return undefined;
  if (present.length === 1) return present[0];
  return new Error(`[${present.map((e) => e.message).join(", ")}]`);
}

/** A health check of {@linkcode RuntimeState.addHealthCheck}: whether it passes, and why not. */
export type HealthCheckFn = () => { ok: boolean; message: string };

/**
 * Runtime and network health as last reported (kubelet's `runtimeState`).
 *
 * @example
 * ```ts
 * import type { Clock } from "../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * const state = new RuntimeState(clock, 30_000);
 * state.setRuntimeSync(clock.now());
 * state.runtimeErrors(); // undefined
 * ```
 */
export class RuntimeState {
  #clock: Clock;
  #healthChecks: { name: string; fn: HealthCheckFn }[] = [];
  #baseRuntimeSyncThresholdMs: number;
  /** Clock time of the last successful runtime check; undefined before the first. */
  #lastBaseRuntimeSync?: number;
  #runtimeError?: Error;
  #networkError?: Error;
  #storageError?: Error;

  /** `thresholdMs`: how old the last successful runtime check may be (kubelet: 30 s). */
  constructor(clock: Clock, thresholdMs: number) {
    this.#clock = clock;
    this.#baseRuntimeSyncThresholdMs = thresholdMs;
  }

  /**
   * Adds a check whose failure makes the runtime unusable, reported as `<name> is not healthy:
   * <error>` (kubelet registers the PLEG's `Healthy` this way). A check must be cheap and must not
   * call the runtime: it runs on every read of the Ready condition.
   */
  addHealthCheck(name: string, fn: HealthCheckFn): void {
    this.#healthChecks.push({ name, fn });
  }

  /** Records a successful runtime check at `t` (clock milliseconds). */
  setRuntimeSync(t: number): void {
    this.#lastBaseRuntimeSync = t;
  }

  /** The runtime's own error (RuntimeReady false), or undefined. */
  setRuntimeState(err: Error | undefined): void {
    this.#runtimeError = err;
  }

  /** The network's error (NetworkReady false), or undefined. */
  setNetworkState(err: Error | undefined): void {
    this.#networkError = err;
  }

  /** A storage error, or undefined (probelet has no volume plugins; kept for the shape). */
  setStorageState(err: Error | undefined): void {
    this.#storageError = err;
  }

  /** Why the runtime is not usable, or undefined when it is. */
  runtimeErrors(): Error | undefined {
    const errs: Error[] = [];
    if (this.#lastBaseRuntimeSync === undefined) {
      errs.push(new Error("container runtime status check may not have completed yet"));
    } else if (
      this.#lastBaseRuntimeSync + this.#baseRuntimeSyncThresholdMs <= this.#clock.now()
    ) {
      errs.push(new Error("container runtime is down"));
    }
    for (const check of this.#healthChecks) {
      const { ok, message } = check.fn();
      if (!ok) errs.push(new Error(`${check.name} is not healthy: ${message}`));
    }
    if (this.#runtimeError) errs.push(this.#runtimeError);
    return aggregate(errs);
  }

  /** Why the network is not ready, or undefined. */
  networkErrors(): Error | undefined {
    return aggregate([this.#networkError]);
  }

  /** Storage errors, or undefined. */
  storageErrors(): Error | undefined {
    return aggregate([this.#storageError]);
  }
}
