/**
 * A seeded pseudo-random source for the differential fuzzers: the same seed gives the same cases
 * on every machine, so a difference found in CI can be replayed with `deno task fuzz:kubelet`.
 * mulberry32 (32-bit state), which is plenty for choosing mutations.
 * Mirrors nothing upstream: test tooling.
 * @module
 */

/**
 * A seeded random source.
 *
 * @example
 * ```ts
 * const rng = new Rng(42);
 * rng.pick(["a", "b"]); // the same choice for seed 42 every time
 * ```
 */
export class Rng {
  #state: number;

  /** Starts the sequence of `seed` (any 32-bit integer). */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }
}
