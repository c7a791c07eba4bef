/**
 * Process measurements for the probe scale benchmark: CPU time and resident memory of the current
 * process from /proc, percentiles, and forcing a garbage collection when V8 exposes `gc`.
 * @module
 */

const CLOCK_TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux
const PAGE_SIZE = 4096;

/**
 * User + system CPU seconds this process has used so far (utime + stime of /proc/self/stat,
 * threads included, children excluded).
 *
 * @example
 * ```ts
 * const before = cpuSeconds();
 * // ... work ...
 * const used = cpuSeconds() - before;
 * ```
 */
export function cpuSeconds(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  // The command name (field 2) may contain spaces; the fields after its closing parenthesis are fixed.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / CLOCK_TICKS_PER_SECOND;
}

/**
 * Resident set size of this process in bytes (/proc/self/statm).
 *
 * @example
 * ```ts
 * const rss = rssBytes();
 * ```
 */
export function rssBytes(): number {
  const statm = Deno.readTextFileSync("/proc/self/statm").split(" ");
  return Number(statm[1]) * PAGE_SIZE;
}

/**
 * Runs a full garbage collection when the process was started with `--v8-flags=--expose-gc`;
 * a no-op otherwise. Returns whether it collected.
 *
 * @example
 * ```ts
 * collectGarbage();
 * ```
 */
export function collectGarbage(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return false;
  gc();
  gc();
  return true;
}

/**
 * The q-quantile (0..1) of `sorted` (ascending), nearest-rank; NaN when empty.
 *
 * @example
 * ```ts
 * quantile([1, 2, 3, 4], 0.5); // 2
 * ```
 */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/** The 1-minute load average of the machine, from /proc/loadavg. */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = Deno.readTextFileSync("/proc/loadavg").split(" ").map(Number);
  return [a, b, c];
}

/**
 * CPU seconds per thread name of this process (/proc/self/task/<tid>/stat), summed over threads with
 * the same name: shows how much runs on the JS thread (named after the executable) and how much on
 * V8's GC workers and the I/O runtime.
 *
 * @example
 * ```ts
 * threadCpuSeconds(); // { deno: 1.2, "V8 DefaultWorke": 0.1, ... }
 * ```
 */
export function threadCpuSeconds(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of Deno.readDirSync("/proc/self/task")) {
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/self/task/${entry.name}/stat`);
    } catch {
      continue; // the thread exited
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cpu = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    out[name] = (out[name] ?? 0) + cpu;
  }
  return out;
}

/**
 * Reads `stream` a line at a time (a child's stdout): each call resolves with the next line,
 * without its newline, and rejects once the stream has ended.
 *
 * @example
 * ```ts
 * const child = new Deno.Command("echo", { args: ["hi"], stdout: "piped" }).spawn();
 * const nextLine = lineReader(child.stdout);
 * await nextLine(); // "hi"
 * ```
 */
export function lineReader(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  return async () => {
    while (!buffered.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the agent exited");
      buffered += value;
    }
    const i = buffered.indexOf("\n");
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    return line;
  };
}

/**
 * A bench flag's value from the command line: `--name value` or `--name=value`; undefined when
 * absent.
 *
 * @example
 * ```ts
 * flagValue(["--slots", "0,30"], "slots"); // "0,30"
 * flagValue(["--window=40"], "window"); // "40"
 * ```
 */
export function flagValue(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0
    ? args[i + 1]
    : args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}
