/**
 * Token-bucket rate limiters on an injected clock, as client-go's `flowcontrol` throttle: the REST
 * client waits for a token before each request (kubelet: QPS 50, burst 100), and the event
 * correlator's spam filter asks without waiting (`tryAccept`, burst 25, one token per 300 s).
 * Mirrors k8s.io/client-go/util/flowcontrol/throttle.go (over golang.org/x/time/rate).
 * @module
 */
import type { Clock } from "../clock.ts";

/** A limiter the REST client waits on before each request. */
export interface RateLimiter {
  /** Takes a token if one is available now; never waits. */
  tryAccept(): boolean;
  /** Waits until a token is available and takes it; rejects with the signal's reason on abort. */
  wait(options?: { signal?: AbortSignal }): Promise<void>;
  /** The refill rate in tokens per second. */
  qps(): number;
}

/**
 * A bucket of `burst` tokens refilled at `qps` per second. A caller that finds it empty reserves the
 * next token and sleeps until it is due, so waiting callers are served in order and the long-run
 * rate never exceeds `qps` (x/time/rate's reservation arithmetic).
 *
 * @example
 * ```ts
 * import { RealClock } from "../clock.ts";
 *
 * const limiter = new TokenBucketRateLimiter(new RealClock(), { qps: 50, burst: 100 });
 * await limiter.wait(); // immediate while the bucket holds tokens
 * ```
 */
export class TokenBucketRateLimiter implements RateLimiter {
  readonly #clock: Clock;
  readonly #qps: number;
  readonly #burst: number;
  #tokens: number;
  #last: number;

  /** A full bucket of `burst` tokens refilled at `qps` per second. */
  constructor(clock: Clock, options: { qps: number; burst: number }) {
    if (!(options.qps > 0)) throw new RangeError(`qps must be positive, got ${options.qps}`);
    if (!(options.burst >= 1)) {
      throw new RangeError(`burst must be at least 1, got ${options.burst}`);
    }
    this.#clock = clock;
    this.#qps = options.qps;
    this.#burst = options.burst;
    this.#tokens = options.burst;
    this.#last = clock.now();
  }

  /** Tokens per second. */
  qps(): number {
    return this.#qps;
  }

  /** Takes a token if the bucket holds one now. */
  tryAccept(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Reserves a token (possibly in the future) and waits until it is due. */
  async wait(options: { signal?: AbortSignal } = {}): Promise<void> {
    options.signal?.throwIfAborted();
    this.#refill();
    this.#tokens -= 1;
    if (this.#tokens >= 0) return;
    const delayMs = (-this.#tokens / this.#qps) * 1000;
    try {
      await this.#clock.sleep(delayMs, options);
    } catch (err) {
      // Give the reservation back, as rate.Reservation.Cancel does.
      this.#refill();
      this.#tokens = Math.min(this.#burst, this.#tokens + 1);
      throw err;
    }
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#last);
    this.#last = now;
    this.#tokens = Math.min(this.#burst, this.#tokens + (elapsed / 1000) * this.#qps);
  }
}

/**
 * Never waits (client-go's `NewFakeAlwaysRateLimiter`; kubelet's heartbeat client has no limit).
 *
 * @example
 * ```ts
 * await new AlwaysAcceptRateLimiter().wait(); // immediate
 * ```
 */
export class AlwaysAcceptRateLimiter implements RateLimiter {
  /** Always true. */
  tryAccept(): boolean {
    return true;
  }

  /** Resolves at once (rejects only when already aborted). */
  wait(options: { signal?: AbortSignal } = {}): Promise<void> {
    options.signal?.throwIfAborted();
    return Promise.resolve();
  }

  /** Infinity: no limit. */
  qps(): number {
    return Infinity;
  }
}
