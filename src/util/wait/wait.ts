/**
 * Periodic loops with jitter on the injected clock, as apimachinery's `wait.Jitter` and
 * `wait.JitterUntil`: kubelet's node status loop and the node lease controller run on them.
 * Mirrors k8s.io/apimachinery/pkg/util/wait (jitter.go, backoff.go), the parts used here.
 * @module
 */
import type { Clock } from "../clock.ts";

/**
 * `durationMs` plus a random share of it up to `maxFactor` (`maxFactor <= 0` means 1), Go's
 * `wait.Jitter`.
 *
 * @example
 * ```ts
 * jitter(10_000, 0.04, () => 0.5); // 10200
 * ```
 */
export function jitter(durationMs: number, maxFactor: number, random = Math.random): number {
  const factor = maxFactor <= 0 ? 1 : maxFactor;
  return durationMs + random() * factor * durationMs;
}

/** Options of {@linkcode jitterUntil}. */
export interface JitterUntilOptions {
  clock: Clock;
  /** Stops the loop (Go's stop channel); a wait in progress ends at once. */
  signal: AbortSignal;
  /** Source of the jitter, `[0, 1)` (default `Math.random`). */
  random?: () => number;
}

/**
 * Calls `fn` now and then every `periodMs` (jittered by up to `jitterFactor` of it) until the
 * signal aborts. With `sliding`, the period starts after `fn` finished; otherwise before it
 * started. Errors of `fn` are the caller's to handle: one that escapes ends the loop with it.
 * Go's `wait.JitterUntil`.
 *
 * @example
 * ```ts
 * import type { Clock } from "../clock.ts";
 *
 * declare const clock: Clock;
 *
 * const stop = new AbortController();
 * declare const syncNodeStatus: () => Promise<void>;
 * const done = jitterUntil(() => syncNodeStatus(), 10_000, 0.04, true, { clock, signal: stop.signal });
 * stop.abort();
 * await done;
 * ```
 */
export async function jitterUntil(
  fn: () => void | Promise<void>,
  periodMs: number,
  jitterFactor: number,
  sliding: boolean,
  options: JitterUntilOptions,
): Promise<void> {
  const { clock, signal } = options;
  const random = options.random ?? Math.random;
  while (!signal.aborted) {
    const wait = jitterFactor > 0 ? jitter(periodMs, jitterFactor, random) : periodMs;
    const start = clock.now();
    await fn();
    if (signal.aborted) return;
    // Without sliding the period counts from before fn ran.
    const left = sliding ? wait : Math.max(0, wait - clock.since(start));
    try {
      await clock.sleep(left, { signal });
    } catch {
      return;
    }
  }
}

/**
 * Sleeps `ms` on the clock; resolves false instead of waiting when (or as soon as) the signal
 * aborts, so loops can write `if (!await sleepUnlessStopped(...)) return;`.
 *
 * @example
 * ```ts
 * import type { Clock } from "../clock.ts";
 *
 * declare const clock: Clock;
 * declare const signal: AbortSignal;
 *
 * if (!(await sleepUnlessStopped(clock, 100, signal))) console.log("stopped");
 * ```
 */
export async function sleepUnlessStopped(
  clock: Clock,
  ms: number,
  signal?: AbortSignal,
): Promise<boolean> {
  if (signal?.aborted) return false;
  try {
    await clock.sleep(ms, { signal });
    return true;
  } catch {
    return false;
  }
}

/**
 * How long a stopping API client lets its requests in flight finish before it cuts them. A cut
 * request may still take effect on the server, and kube-apiserver records it as a 504 timeout.
 */
export const apiDrainTimeoutMs = 3_000;

/**
 * A stop in two steps for loops that call the API server: `stopping` aborts at once (loops and
 * back-offs end, no new request starts), while requests carry `requests`, aborted only when the
 * drain runs past its time. Go gets the same split from a stop channel and a request context.
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { Clock } from "../clock.ts";
 *
 * declare const client: Clientset;
 * declare const clock: Clock;
 *
 * const stop = new DrainingStop();
 * const loop = (async () => {
 *   while (!stop.stopping.aborted) await client.coreV1.nodes().get("x", { signal: stop.requests });
 * })();
 * await stop.stop(loop, { clock, drainMs: apiDrainTimeoutMs });
 * ```
 */
export class DrainingStop {
  readonly #stopping = new AbortController();
  readonly #requests = new AbortController();

  /** Aborted when the stop begins. */
  get stopping(): AbortSignal {
    return this.#stopping.signal;
  }

  /** Aborted when the drain is over its time. */
  get requests(): AbortSignal {
    return this.#requests.signal;
  }

  /**
   * Aborts `stopping`, waits for `inFlight` (the loops), aborting `requests` after `drainMs`;
   * resolves once `inFlight` settles.
   */
  async stop(inFlight: Promise<unknown>, options: { clock: Clock; drainMs: number }) {
    this.#stopping.abort();
    const timer = options.clock.afterFunc(options.drainMs, () => this.#requests.abort());
    try {
      await inFlight;
    } finally {
      timer.stop();
    }
  }
}
