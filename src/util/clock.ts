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
 * The wall clock: `Date.now()` for timestamps, a shared timer wheel over `setTimeout` for timers.
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
   * Runs `fn` once after `ms` milliseconds, measured on the monotonic clock. Timers share one
   * `setTimeout` per due millisecond (see `TimerWheel`); delays beyond what `setTimeout` can hold
   * (2^31-1 ms, about 24.8 days) are waited out in several legs.
   */
  afterFunc(ms: number, fn: () => void): ClockTimer {
    return sharedWheel.add(ms, fn);
  }

  /** Resolves after `ms` milliseconds unless the signal aborts first. */
  sleep(ms: number, options: { signal?: AbortSignal } = {}): Promise<void> {
    return sleepOn(this, ms, options.signal);
  }
}

// The longest delay setTimeout honours.
const maxTimeoutMs = 2 ** 31 - 1;

interface WheelEntry {
  fn: () => void;
  bucket: Set<WheelEntry> | undefined;
}

/**
 * Timers grouped by the millisecond they are due in (on `performance.now()`), with one `setTimeout`
 * armed for the earliest: thousands of probe workers' tickers and deadlines then cost one macrotask
 * per due millisecond instead of one each (≈ 12 → 4–5 µs of CPU per probe's pair of timers at
 * 10,000 workers). Callbacks due in the same millisecond run in the order they were added; a timer
 * added while others fire waits for the next turn, as with `setTimeout`.
 */
class TimerWheel {
  #buckets = new Map<number, Set<WheelEntry>>();
  // Min-heap of due keys; a key whose bucket emptied stays until popped.
  #heap: number[] = [];
  #armedKey = Infinity;
  #handle: ReturnType<typeof setTimeout> | undefined;

  add(ms: number, fn: () => void): ClockTimer {
    const key = Math.ceil(performance.now() + Math.max(0, Number.isFinite(ms) ? ms : 0));
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = new Set();
      this.#buckets.set(key, bucket);
      this.#push(key);
    }
    const entry: WheelEntry = { fn, bucket };
    bucket.add(entry);
    if (key < this.#armedKey) this.#arm();
    return {
      stop: () => {
        const b = entry.bucket;
        if (!b) return false;
        entry.bucket = undefined;
        b.delete(entry);
        // Nothing left at the armed time: re-arm, so that no timer keeps the process alive.
        if (b.size === 0 && key === this.#armedKey) this.#arm();
        return true;
      },
    };
  }

  #arm(): void {
    // Drop keys whose buckets were emptied by stop().
    while (this.#heap.length > 0 && !this.#buckets.get(this.#heap[0])?.size) {
      this.#buckets.delete(this.#pop());
    }
    const next = this.#heap.length > 0 ? this.#heap[0] : Infinity;
    if (next === this.#armedKey && this.#handle !== undefined) return;
    if (this.#handle !== undefined) clearTimeout(this.#handle);
    this.#handle = undefined;
    this.#armedKey = next;
    if (next === Infinity) return;
    const delay = Math.min(Math.max(0, next - performance.now()), maxTimeoutMs);
    this.#handle = setTimeout(() => this.#fire(), delay);
  }

  #fire(): void {
    this.#handle = undefined;
    this.#armedKey = Infinity;
    const now = performance.now();
    const due: Set<WheelEntry>[] = [];
    while (this.#heap.length > 0 && this.#heap[0] <= now) {
      const key = this.#pop();
      const bucket = this.#buckets.get(key);
      this.#buckets.delete(key);
      if (bucket?.size) due.push(bucket);
    }
    let failure: { error: unknown } | undefined;
    for (const bucket of due) {
      for (const entry of bucket) {
        if (!entry.bucket) continue;
        entry.bucket = undefined;
        try {
          entry.fn();
        } catch (error) {
          failure ??= { error };
        }
      }
    }
    this.#arm();
    // A throwing callback still ends the process as an uncaught error would; the others ran.
    if (failure) throw failure.error;
  }

  #push(key: number): void {
    const heap = this.#heap;
    heap.push(key);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent] <= key) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = key;
  }

  #pop(): number {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) break;
        const r = l + 1;
        const c = r < heap.length && heap[r] < heap[l] ? r : l;
        if (heap[c] >= last) break;
        heap[i] = heap[c];
        i = c;
      }
      heap[i] = last;
    }
    return top;
  }
}

const sharedWheel = new TimerWheel();

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
