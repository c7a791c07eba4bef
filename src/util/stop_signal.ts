/**
 * A one-shot stop signal to wait on beside other work: Go's `select` on a value and a closed
 * `stopCh`, for loops that run until their owner stops.
 * @module
 */

/**
 * Stops once; {@linkcode StopSignal.race} waits for a promise unless the stop comes first.
 *
 * Racing every loop iteration against one long-lived promise (`Promise.race([next, stopped])`)
 * leaves a reaction on that promise per call until it settles, so a loop that runs for days grows
 * without bound. Here a waiter is registered per call and removed as soon as its promise settles.
 *
 * @example
 * ```ts
 * import { Channel } from "./channel.ts";
 *
 * const channel = new Channel<string>(1);
 * const stop = new StopSignal();
 * const next = await stop.race(channel.receive()); // undefined once stop.stop() was called
 * ```
 */
export class StopSignal {
  #stopped = false;
  #waiters = new Set<() => void>();

  /** True once {@linkcode stop} was called. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Calls of {@linkcode race} still waiting (tests: it stays bounded however many ran). */
  get waiting(): number {
    return this.#waiters.size;
  }

  /** Stops: every waiting and later {@linkcode race} resolves with `undefined`. Idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const wake of this.#waiters) wake();
    this.#waiters.clear();
  }

  /**
   * What `promise` resolves to (or its rejection), or `undefined` once stopped, whichever comes
   * first. A promise still pending at the stop is left to run; its outcome is ignored.
   */
  race<T>(promise: Promise<T>): Promise<T | undefined> {
    if (this.#stopped) return Promise.resolve(undefined);
    return new Promise<T | undefined>((resolve, reject) => {
      const wake = () => resolve(undefined);
      this.#waiters.add(wake);
      promise.then(
        (value) => {
          this.#waiters.delete(wake);
          resolve(value);
        },
        (error) => {
          this.#waiters.delete(wake);
          reject(error);
        },
      );
    });
  }
}
