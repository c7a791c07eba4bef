/**
 * The process's open-file limit (`RLIMIT_NOFILE`). Go's runtime raises the soft limit to the hard
 * limit at start-up; so does Deno's CLI before any script runs (measured: `ulimit -S -n 256` under
 * a hard limit of 20000 gives a Deno process 20000). {@link raiseOpenFileLimit} repeats it through
 * libc's `setrlimit` for hosts that start Deno otherwise (an embedder, `deno compile` builds), and
 * {@link openFileLimit} lets the agent size its connection limit from the real value.
 * @module
 */
import { libc } from "./libc.ts";

const RLIMIT_NOFILE = 7;
const RLIM_INFINITY = 0xffffffffffffffffn;

/** Soft and hard open-file limits; `Infinity` for unlimited. */
export interface OpenFileLimit {
  soft: number;
  hard: number;
}

/**
 * The current open-file limits, from `getrlimit` (or `/proc/self/limits` without FFI);
 * `undefined` where neither is available.
 *
 * @example
 * ```ts
 * openFileLimit(); // { soft: 20000, hard: 20000 }
 * ```
 */
export function openFileLimit(): OpenFileLimit | undefined {
  const c = libc();
  if (c) {
    const buf = new BigUint64Array(2);
    if (c.getrlimit(RLIMIT_NOFILE, new Uint8Array(buf.buffer)) === 0) {
      return { soft: fromRlim(buf[0]), hard: fromRlim(buf[1]) };
    }
  }
  try {
    const line = Deno.readTextFileSync("/proc/self/limits").split("\n")
      .find((l) => l.startsWith("Max open files"));
    const [soft, hard] = line!.slice("Max open files".length).trim().split(/\s+/);
    const parse = (s: string) => s === "unlimited" ? Infinity : Number(s);
    return { soft: parse(soft), hard: parse(hard) };
  } catch {
    return undefined;
  }
}

/**
 * Raises the soft open-file limit to the hard limit, as Go's runtime does at start-up. Returns
 * the limits before and after; a failure leaves them as they were.
 *
 * @example
 * ```ts
 * const { before, after } = raiseOpenFileLimit();
 * ```
 */
export function raiseOpenFileLimit(): { before?: OpenFileLimit; after?: OpenFileLimit } {
  const before = openFileLimit();
  const c = libc();
  if (!c || !before || before.soft >= before.hard) return { before, after: before };
  // An unlimited hard limit still caps descriptors at the kernel's nr_open.
  const target = before.hard === Infinity ? kernelMaxOpenFiles() : before.hard;
  if (target <= before.soft) return { before, after: before };
  const buf = new BigUint64Array(2);
  buf[0] = toRlim(target);
  buf[1] = toRlim(before.hard);
  c.setrlimit(RLIMIT_NOFILE, new Uint8Array(buf.buffer));
  return { before, after: openFileLimit() };
}

/**
 * Sets the soft open-file limit (tests use it to start below the hard limit).
 *
 * @example
 * ```ts
 * setOpenFileSoftLimit(256);
 * ```
 */
export function setOpenFileSoftLimit(soft: number): boolean {
  const current = openFileLimit();
  const c = libc();
  if (!c || !current) return false;
  const buf = new BigUint64Array(2);
  buf[0] = toRlim(soft);
  buf[1] = toRlim(current.hard);
  return c.setrlimit(RLIMIT_NOFILE, new Uint8Array(buf.buffer)) === 0;
}

function kernelMaxOpenFiles(): number {
  try {
    return Number(Deno.readTextFileSync("/proc/sys/fs/nr_open").trim()) || 1 << 20;
  } catch {
    return 1 << 20;
  }
}

function fromRlim(v: bigint): number {
  return v === RLIM_INFINITY ? Infinity : Number(v);
}

function toRlim(v: number): bigint {
  return v === Infinity ? RLIM_INFINITY : BigInt(v);
}
