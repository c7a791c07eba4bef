/**
 * Per-key exponential back-off on an injected clock, as client-go's `flowcontrol.Backoff`: kubelet
 * keys it by pod and container to pace restarts of crashing containers (CrashLoopBackOff).
 * Mirrors k8s.io/client-go/util/flowcontrol/backoff.go.
 * @module
 */
import type { Clock } from "../clock.ts";

interface BackoffEntry {
  /** Current back-off in milliseconds. */
  backoffMs: number;
  /** Clock time of the last `next()` for this key. */
  lastUpdate: number;
}

/** Options of {@linkcode Backoff}. */
export interface BackoffOptions {
  /** The first back-off (kubelet: 10 s). */
  initialMs: number;
  /** The cap (kubelet: 5 min). An entry untouched for twice this long is forgotten. */
  maxMs: number;
  /** Fraction of random jitter added on each step (kubelet: 0). */
  maxJitterFactor?: number;
  /** Source of randomness for the jitter, `[0, 1)`. */
  random?: () => number;
}

/**
 * Exponential back-off per key: `next()` starts at `initialMs` and doubles up to `maxMs`; an entry is
 * reset when the event comes more than `2 * maxMs` after its last update (the container ran long
 * enough to be considered stable).
 *
 * @example
 * ```ts
 * import { FakeClock } from "../clock.ts";
 *
 * const backoff = new Backoff(new FakeClock(0), { initialMs: 10_000, maxMs: 300_000 });
 * backoff.next("pod_web", 0);
 * backoff.isInBackOffSince("pod_web", 0); // true until 10 s have passed
 * ```
 */
export class Backoff {
  readonly #clock: Clock;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #jitter: number;
  readonly #random: () => number;
  readonly #entries = new Map<string, BackoffEntry>();

  /** Creates an empty back-off table timed by `clock`. */
  constructor(clock: Clock, options: BackoffOptions) {
    this.#clock = clock;
    this.#initialMs = options.initialMs;
    this.#maxMs = options.maxMs;
    this.#jitter = options.maxJitterFactor ?? 0;
    this.#random = options.random ?? Math.random;
  }

  /** The current back-off of `id` in milliseconds (0 when unknown), Go's `Get`. */
  get(id: string): number {
    return this.#entries.get(id)?.backoffMs ?? 0;
  }

  /**
   * Moves `id` one step on: initial back-off for a new (or expired) entry, otherwise double, capped.
   * `eventTime` is when the event being backed off happened (kubelet: the container's finish time).
   */
  next(id: string, eventTime: number): void {
    let entry = this.#entries.get(id);
    if (!entry || hasExpired(eventTime, entry.lastUpdate, this.#maxMs)) {
      entry = { backoffMs: this.#initialMs, lastUpdate: 0 };
      this.#entries.set(id, entry);
      entry.backoffMs += this.#jitterOf(entry.backoffMs);
    } else {
      const delay = entry.backoffMs * 2 + this.#jitterOf(entry.backoffMs);
      entry.backoffMs = Math.min(delay, this.#maxMs);
    }
    entry.lastUpdate = this.#clock.now();
  }

  /**
   * Recreates the entry of `id` as if `next()` had been called `steps` times without expiring, the
   * last time at `lastUpdate`: a restarted agent rebuilds a container's back-off from its restart
   * count. Not in client-go, whose back-off lives and dies with the process. No-op for `steps < 1`.
   */
  restore(id: string, state: { steps: number; lastUpdate: number }): void {
    if (state.steps < 1) return;
    const doublings = Math.min(state.steps - 1, 64);
    const backoffMs = Math.min(this.#initialMs * 2 ** doublings, this.#maxMs);
    this.#entries.set(id, { backoffMs, lastUpdate: state.lastUpdate });
  }

  /** Forgets `id`, Go's `Reset`. */
  reset(id: string): void {
    this.#entries.delete(id);
  }

  /**
   * True while less than the current back-off has passed since `eventTime`; false for unknown or
   * expired entries. Go's `IsInBackOffSince`.
   */
  isInBackOffSince(id: string, eventTime: number): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    if (hasExpired(eventTime, entry.lastUpdate, this.#maxMs)) return false;
    return this.#clock.since(eventTime) < entry.backoffMs;
  }

  /**
   * True while less than the current back-off has passed between the last `next()` and
   * `eventTime` (kubelet's image pulls: "now"). Go's `IsInBackOffSinceUpdate`.
   */
  isInBackOffSinceUpdate(id: string, eventTime: number): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    if (hasExpired(eventTime, entry.lastUpdate, this.#maxMs)) return false;
    return eventTime - entry.lastUpdate < entry.backoffMs;
  }

  /** Milliseconds left of the back-off that started at `eventTime` (0 when not backing off). */
  remaining(id: string, eventTime: number): number {
    if (!this.isInBackOffSince(id, eventTime)) return 0;
    return this.get(id) - this.#clock.since(eventTime);
  }

  /** Drops entries not updated for more than `2 * maxMs`, Go's `GC`. */
  gc(): void {
    const now = this.#clock.now();
    for (const [id, entry] of this.#entries) {
      if (now - entry.lastUpdate > this.#maxMs * 2) this.#entries.delete(id);
    }
  }

  /** Number of keys tracked (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  #jitterOf(delayMs: number): number {
    return this.#jitter > 0 ? this.#random() * this.#jitter * delayMs : 0;
  }
}

/** An entry is stale when the event comes more than twice the cap after its last update. */
function hasExpired(eventTime: number, lastUpdate: number, maxMs: number): boolean {
  return eventTime - lastUpdate > maxMs * 2;
}
