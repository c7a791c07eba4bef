/**
 * The descriptor budget of network probes: at most so many probes hold sockets at once, so that a
 * process with thousands of probe workers never runs out of file descriptors. Deno 2.9.3 panics on
 * EMFILE in several places (signal set-up, thread creation), which no JavaScript can catch; past
 * the budget a probe waits for a slot, and one that cannot start before its timeout fails with a
 * message that says so instead of opening a socket.
 *
 * probelet's own addition: kubelet relies on Go's runtime, which raises the soft RLIMIT_NOFILE and
 * turns EMFILE into ordinary dial errors.
 * @module
 */
import type { Clock, ClockTimer } from "../util/clock.ts";
import { goDuration } from "../util/go_format.ts";
import { type ProbeOutcome, ProbeResult } from "./probe.ts";
import { openFileLimit } from "../util/rlimit.ts";

/** Hands out probe slots; a probe holds one for as long as it may have a socket open. */
export class ProbeBudget {
  /** How many probes may hold a slot at once. */
  readonly capacity: number;
  /** The open-file limit the capacity was derived from (0 when set directly). */
  readonly openFileLimit: number;
  #inUse = 0;
  #waiting: { grant: () => void }[] = [];

  /** A budget of `capacity` slots; `openFileLimit` is only quoted in failure texts. */
  constructor(capacity: number, options: { openFileLimit?: number } = {}) {
    this.capacity = Math.max(1, Math.floor(capacity));
    this.openFileLimit = options.openFileLimit ?? 0;
  }

  /** Slots held right now. */
  get inUse(): number {
    return this.#inUse;
  }

  /**
   * Runs `probe` once a slot is free. The handler gets the whole `timeoutMs`: its deadline starts
   * when it starts, as a Go handler's context does however late its goroutine was scheduled (and
   * its texts quote the probe's timeout). When no slot frees up within `timeoutMs` (0 = wait as
   * long as it takes), `probe` never runs and the outcome is a Failure naming the budget.
   */
  async run(
    options: { timeoutMs: number; clock: Clock },
    probe: (timeoutMs: number) => Promise<ProbeOutcome>,
  ): Promise<ProbeOutcome> {
    const { timeoutMs, clock } = options;
    if (this.#inUse >= this.capacity || this.#waiting.length > 0) {
      const granted = await this.#wait(timeoutMs, clock);
      if (!granted) {
        return {
          result: ProbeResult.Failure,
          output: `probe not started within ${goDuration(timeoutMs)}: ` +
            `all ${this.capacity} probe slots were in use${this.#limitText()}`,
        };
      }
    } else {
      this.#inUse++;
    }
    try {
      return await probe(timeoutMs);
    } finally {
      this.#release();
    }
  }

  #limitText(): string {
    return this.openFileLimit > 0
      ? ` (descriptor budget for an open-file limit of ${this.openFileLimit})`
      : "";
  }

  // Resolves true with a slot taken, or false when the timeout passed first.
  #wait(timeoutMs: number, clock: Clock): Promise<boolean> {
    return new Promise((resolve) => {
      let timer: ClockTimer | undefined;
      const entry = {
        grant: () => {
          timer?.stop();
          this.#inUse++;
          resolve(true);
        },
      };
      this.#waiting.push(entry);
      if (timeoutMs > 0) {
        timer = clock.afterFunc(timeoutMs, () => {
          const i = this.#waiting.indexOf(entry);
          if (i >= 0) this.#waiting.splice(i, 1);
          resolve(false);
        });
      }
    });
  }

  #release(): void {
    this.#inUse--;
    const next = this.#waiting.shift();
    next?.grant();
  }
}

/**
 * The budget for `threads` probe threads sharing `limit` descriptors: half of the limit, less a
 * reserve for everything else the process keeps open, split evenly between the threads.
 *
 * @example
 * ```ts
 * budgetCapacity(20000, 1); // 9936
 * budgetCapacity(1024, 2); // 224
 * ```
 */
export function budgetCapacity(limit: number, threads: number): number {
  const reserve = 64;
  return Math.max(8, Math.floor((Math.floor(limit / 2) - reserve) / Math.max(1, threads)));
}

let processBudget: ProbeBudget | undefined;

/**
 * The budget shared by this thread's network probes, sized from the open-file limit the first time
 * it is asked for (`threads` = how many threads probe in this process; default 1).
 *
 * @example
 * ```ts
 * const budget = defaultProbeBudget();
 * ```
 */
export function defaultProbeBudget(options: { threads?: number } = {}): ProbeBudget {
  if (!processBudget) {
    const soft = openFileLimit()?.soft;
    // An unlimited soft limit sizes nothing: keep the fixed default then.
    const limit = soft !== undefined && Number.isFinite(soft) && soft > 0 ? soft : undefined;
    processBudget = limit === undefined
      ? new ProbeBudget(10_000)
      : new ProbeBudget(budgetCapacity(limit, options.threads ?? 1), { openFileLimit: limit });
  }
  return processBudget;
}
