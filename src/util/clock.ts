/**
 * One injectable clock for everything that waits, like k8s.io/utils/clock: production code takes a
 * `Clock`, tests pass a `FakeClock` and move time forward explicitly instead of sleeping.
 * @module
 */

/** A scheduled callback that can be cancelled. */
export interface ClockTimer {
  /** Cancels the callback; returns false when it already ran or was stopped. */
  stop(): boolean;
}

/**
 * The time source and timer factory injected wherever time matters.
 *
 * @example
 * ```ts
 * const clock: Clock = new RealClock();
 * await clock.sleep(10);
 * ```
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Milliseconds elapsed since `start` (a value of `now()`). */
  since(start: number): number;
  /** Runs `fn` once after `ms` milliseconds (Go's `time.AfterFunc`). */
  afterFunc(ms: number, fn: () => void): ClockTimer;
  /** Resolves after `ms` milliseconds; rejects with the signal's reason when aborted first. */
  sleep(ms: number, options?: { signal?: AbortSignal }): Promise<void>;
}

/**
 * The wall clock, backed by `Date.now()` and `setTimeout`.
 *
 * @example
 * ```ts
 * const clock = new RealClock();
 * const start = clock.now();
 * clock.since(start); // ≥ 0
 * ```
 */
export class RealClock implements Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number {
    return Date.now();
  }

  /** Milliseconds elapsed since `start`. */
  since(start: number): number {
    return Date.now() - start;
  }

  /**
   * Runs `fn` once after `ms` milliseconds. Delays beyond what `setTimeout` can hold (2^31-1 ms,
   * about 24.8 days; longer ones fire at once) are waited out in several legs.
   */
  afterFunc(ms: number, fn: () => void): ClockTimer {
    let pending = true;
    let id: ReturnType<typeof setTimeout>;
    const deadline = Date.now() + Math.max(0, ms);
    const arm = (delay: number) => {
      id = setTimeout(() => {
        const left = deadline - Date.now();
        if (left > 0 && delay === maxTimeoutMs) return arm(Math.min(left, maxTimeoutMs));
        pending = false;
        fn();
      }, delay);
    };
    arm(Math.min(Math.max(0, ms), maxTimeoutMs));
    return {
      stop: () => {
        if (!pending) return false;
        pending = false;
        clearTimeout(id);
        return true;
      },
    };
  }

  /** Resolves after `ms` milliseconds unless the signal aborts first. */
  sleep(ms: number, options: { signal?: AbortSignal } = {}): Promise<void> {
    return sleepOn(this, ms, options.signal);
  }
}

// The longest delay setTimeout honours.
const maxTimeoutMs = 2 ** 31 - 1;

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
  active: boolean;
}

/**
 * A clock that only moves when told to. `step()` fires every timer that falls due, in time order,
 * and lets the resulting promise chains run before it returns.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(0);
 * let fired = false;
 * clock.afterFunc(1000, () => fired = true);
 * await clock.step(1000);
 * fired; // true
 * ```
 */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: FakeTimer[] = [];

  /** Starts at `start` milliseconds since the epoch (default: the real current time). */
  constructor(start: number = Date.now()) {
    this.#now = start;
  }

  /** The fake current time. */
  now(): number {
    return this.#now;
  }

  /** Fake milliseconds elapsed since `start`. */
  since(start: number): number {
    return this.#now - start;
  }

  /** Registers `fn` to run when the fake time reaches now + `ms`. */
  afterFunc(ms: number, fn: () => void): ClockTimer {
    const timer: FakeTimer = {
      at: this.#now + Math.max(0, ms),
      seq: this.#seq++,
      fn,
      active: true,
    };
    this.#timers.push(timer);
    return {
      stop: () => {
        if (!timer.active) return false;
        timer.active = false;
        this.#timers = this.#timers.filter((t) => t !== timer);
        return true;
      },
    };
  }

  /** Resolves when the fake time has advanced by `ms`. */
  sleep(ms: number, options: { signal?: AbortSignal } = {}): Promise<void> {
    return sleepOn(this, ms, options.signal);
  }

  /** How many timers are waiting to fire (lets tests assert nothing is left registered). */
  pendingTimers(): number {
    return this.#timers.length;
  }

  /** The time at which the next timer fires, or undefined when none is waiting. */
  nextTimerAt(): number | undefined {
    return this.#earliest()?.at;
  }

  /**
   * Advances the time by `ms`, firing due timers in order; after each one, pending promise chains
   * (and the I/O callbacks they are already waiting for) get to run.
   */
  async step(ms: number): Promise<void> {
    const target = this.#now + ms;
    await settle();
    for (;;) {
      const next = this.#earliest();
      if (!next || next.at > target) break;
      this.#now = next.at;
      next.active = false;
      this.#timers = this.#timers.filter((t) => t !== next);
      next.fn();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  /** Jumps the time to `t` without firing timers that fall due on the way until the next `step`. */
  setTime(t: number): void {
    this.#now = t;
  }

  #earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.#timers) {
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

/**
 * Lets every queued promise reaction run: a macrotask turn drains the microtask queue completely.
 * Not a wait on time: it yields once to the event loop.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      timer.stop();
      reject(signal!.reason);
    };
    const timer = clock.afterFunc(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
