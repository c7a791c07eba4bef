/**
 * The agent's own log file (`<root-dir>/probelet.log`, written while the live view owns the
 * terminal), rotated the way kubelet rotates container logs: a file that would grow past
 * `maxSizeBytes` is renamed to `<path>.<YYYYMMDD-hhmmss>[-n]` (UTC) and a new one is started, and
 * only `maxFiles` files are kept, the live one included. Writes are synchronous, as a log sink's
 * must be. Mirrors the naming and retention of pkg/kubelet/logs/container_log_manager.go (without
 * compression).
 * @module
 */
import { basename, dirname, join } from "node:path";

/** kubelet's `--container-log-max-size` default, used for the agent's log too. */
export const defaultLogFileMaxSizeBytes = 10 * 1024 * 1024;
/** kubelet's `--container-log-max-files` default, used for the agent's log too. */
export const defaultLogFileMaxFiles = 5;

/** Options of {@linkcode RotatingLogFile.open}. */
export interface RotatingLogFileOptions {
  /** Size past which the file is rotated (default 10 MiB). */
  maxSizeBytes?: number;
  /** Files kept, the live one included (default 5, at least 2). */
  maxFiles?: number;
  /** Milliseconds since the epoch, for the rotated file's name (default `Date.now`). */
  now?: () => number;
}

/**
 * An append-only log file that rotates itself.
 *
 * @example
 * ```ts
 * import { setLogSink } from "./log.ts";
 *
 * const file = RotatingLogFile.open("/var/lib/probelet/probelet.log", { maxSizeBytes: 10 << 20 });
 * setLogSink((line) => file.writeLine(line));
 * // ...
 * file.close();
 * ```
 */
export class RotatingLogFile {
  /** The live file's path. */
  readonly path: string;
  readonly #maxSizeBytes: number;
  readonly #maxFiles: number;
  readonly #now: () => number;
  readonly #encoder = new TextEncoder();
  #file: Deno.FsFile;
  #size: number;
  #closed = false;
  #lastStamp = "";
  #suffix = 0;

  private constructor(path: string, file: Deno.FsFile, options: Required<RotatingLogFileOptions>) {
    this.path = path;
    this.#file = file;
    this.#size = file.statSync().size;
    this.#maxSizeBytes = options.maxSizeBytes;
    this.#maxFiles = Math.max(2, options.maxFiles);
    this.#now = options.now;
  }

  /** Opens `path` for appending (creating it). */
  static open(path: string, options: RotatingLogFileOptions = {}): RotatingLogFile {
    const file = Deno.openSync(path, { create: true, append: true });
    return new RotatingLogFile(path, file, {
      maxSizeBytes: options.maxSizeBytes ?? defaultLogFileMaxSizeBytes,
      maxFiles: options.maxFiles ?? defaultLogFileMaxFiles,
      now: options.now ?? Date.now,
    });
  }

  /** Bytes in the live file. */
  get size(): number {
    return this.#size;
  }

  /**
   * Appends `line` and a newline, rotating first when the file would pass the size limit (a
   * line is never split; one larger than the limit gets a file of its own).
   */
  writeLine(line: string): void {
    if (this.#closed) return;
    const data = this.#encoder.encode(line + "\n");
    if (this.#size > 0 && this.#size + data.length > this.#maxSizeBytes) this.#rotate();
    let written = 0;
    while (written < data.length) written += this.#file.writeSync(data.subarray(written));
    this.#size += data.length;
  }

  /** Closes the live file; later lines are dropped. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#file.close();
  }

  #rotate(): void {
    this.#file.close();
    // Several rotations in one second get -1, -2, ... so that names keep their order even after
    // the older ones of that second are removed.
    const stamp = rotationStamp(new Date(this.#now()));
    this.#suffix = stamp === this.#lastStamp ? this.#suffix + 1 : 0;
    this.#lastStamp = stamp;
    const name = () => `${this.path}.${stamp}${this.#suffix > 0 ? `-${this.#suffix}` : ""}`;
    while (exists(name())) this.#suffix++;
    Deno.renameSync(this.path, name());
    const rotated = rotatedLogFiles(this.path);
    for (const old of rotated.slice(0, Math.max(0, rotated.length - (this.#maxFiles - 1)))) {
      try {
        Deno.removeSync(old);
      } catch { /* already gone */ }
    }
    this.#file = Deno.openSync(this.path, { create: true, append: true });
    this.#size = 0;
  }
}

/**
 * The rotated files of the log at `path` (`<path>.<YYYYMMDD-hhmmss>[-n]`), oldest first.
 *
 * @example
 * ```ts
 * rotatedLogFiles("/var/lib/probelet/probelet.log"); // [".../probelet.log.20261127-041500", ...]
 * ```
 */
export function rotatedLogFiles(path: string): string[] {
  try {
    return orderRotatedLogFiles(path, Deno.readDirSync(dirname(path)));
  } catch {
    return [];
  }
}

/**
 * Of the folder entries beside the log at `path`, its rotated files
 * (`<path>.<YYYYMMDD-hhmmss>[-n]`) as paths, oldest first: what {@link rotatedLogFiles} returns
 * for entries read another way (the embedded runtime reads the folder asynchronously).
 *
 * @example
 * ```ts
 * orderRotatedLogFiles("/var/log/app.log", Deno.readDirSync("/var/log"));
 * ```
 */
export function orderRotatedLogFiles(path: string, entries: Iterable<Deno.DirEntry>): string[] {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  const found: { name: string; stamp: string; n: number }[] = [];
  for (const e of entries) {
    if (!e.isFile || !e.name.startsWith(prefix)) continue;
    const m = /^(\d{8}-\d{6})(?:-(\d+))?$/.exec(e.name.slice(prefix.length));
    if (m) found.push({ name: e.name, stamp: m[1], n: Number(m[2] ?? 0) });
  }
  found.sort((a, b) => a.stamp < b.stamp ? -1 : a.stamp > b.stamp ? 1 : a.n - b.n);
  return found.map((f) => join(dir, f.name));
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

// kubelet's rotation suffix, "20060102-150405" in UTC.
function rotationStamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-` +
    `${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}
