/**
 * Container logs in the CRI log format, the one containerd writes and kubelet reads:
 * `<RFC 3339 time> <stdout|stderr> <F|P> <line>`, one entry per line; `P` marks a piece of a line
 * longer than the buffer, `F` the piece that ends it. Mirrors containerd's pkg/cri/io/logger.go
 * (`redirectLogs`), and rotates the file as kubelet's container log manager does
 * (pkg/kubelet/logs/container_log_manager.go: `<log>.<YYYYMMDD-hhmmss>`, at most `maxFiles` files
 * with the current one), except that rotated files are not compressed.
 *
 * Writing is the only buffer: {@link ContainerLog.write} resolves when the entries are on disk, and
 * the shim reads the next chunk of the pipe only then, so a container that prints faster than the
 * disk takes blocks on its full pipe, as under containerd's shim.
 * @module
 */
import { basename, dirname, join } from "node:path";

/** The longest piece of a line written as one entry (containerd's default `max_container_log_line_size`). */
export const maxLogLineBytes = 16 * 1024;

/** kubelet's defaults: `--container-log-max-size` 10Mi, `--container-log-max-files` 5. */
export const defaultLogMaxSizeBytes = 10 * 1024 * 1024;
export const defaultLogMaxFiles = 5;

const newline = 0x0a;
const encoder = new TextEncoder();

/** Rotation limits of a {@link ContainerLog}. */
export interface LogRotation {
  /** Size at which the file is rotated (0 = never). */
  maxSizeBytes: number;
  /** Files kept, the current one included (at least 2 when rotating). */
  maxFiles: number;
}

/**
 * Appends both streams of one container to one file, rotating it when it reaches the size limit.
 * Writes are serialized, so entries from stdout and stderr never interleave inside a line.
 *
 * @example
 * ```ts
 * const log = await ContainerLog.open("/tmp/app.log", { now: () => Date.now() });
 * await log.write("stdout", new TextEncoder().encode("hello\nwor"));
 * await log.close(); // "<time> stdout F hello" and "<time> stdout F wor"
 * ```
 */
export class ContainerLog {
  readonly path: string;
  #file: Deno.FsFile;
  #size: number;
  #clock: { now(): number };
  #rotation: LogRotation;
  #queue: Promise<void> = Promise.resolve();
  #pending: Record<LogStream, Uint8Array> = {
    stdout: new Uint8Array(0),
    stderr: new Uint8Array(0),
  };
  #closed = false;

  private constructor(
    path: string,
    file: Deno.FsFile,
    options: { size: number; clock: { now(): number }; rotation: LogRotation },
  ) {
    this.path = path;
    this.#file = file;
    this.#size = options.size;
    this.#clock = options.clock;
    this.#rotation = options.rotation;
  }

  /** Opens (creating folders as needed) `path` for appending. */
  static async open(
    path: string,
    clock: { now(): number },
    rotation: LogRotation = { maxSizeBytes: 0, maxFiles: 0 },
  ): Promise<ContainerLog> {
    await Deno.mkdir(dirname(path), { recursive: true });
    const file = await Deno.open(path, { create: true, append: true });
    const size = (await file.stat()).size;
    return new ContainerLog(path, file, { size, clock, rotation });
  }

  /**
   * Adds output of one stream: complete lines become `F` entries, overlong pieces `P` entries.
   * Resolves once they are written (after earlier writes); a failed write is dropped, as a failed
   * write in containerd's logger, so that a full disk never stops the container.
   */
  write(stream: LogStream, chunk: Uint8Array): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const time = encoder.encode(`${rfc3339Nano(this.#clock.now())} ${stream} `);
    const entries: Uint8Array[] = [];
    let buffer = this.#pending[stream].length > 0 ? concat([this.#pending[stream], chunk]) : chunk;
    let start = 0;
    for (;;) {
      const end = buffer.indexOf(newline, start);
      if (end < 0) break;
      // A line longer than the limit is cut into P pieces and an F piece, as containerd does.
      while (end - start > maxLogLineBytes) {
        entries.push(entry(time, "P", buffer.subarray(start, start + maxLogLineBytes)));
        start += maxLogLineBytes;
      }
      entries.push(entry(time, "F", buffer.subarray(start, end)));
      start = end + 1;
    }
    buffer = buffer.subarray(start);
    while (buffer.length >= maxLogLineBytes) {
      entries.push(entry(time, "P", buffer.subarray(0, maxLogLineBytes)));
      buffer = buffer.subarray(maxLogLineBytes);
    }
    this.#pending[stream] = buffer.slice();
    return this.#enqueue(entries);
  }

  /** Writes what is left of unfinished lines (as `F`), waits for queued writes and closes the file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    const time = (stream: LogStream) =>
      encoder.encode(`${rfc3339Nano(this.#clock.now())} ${stream} `);
    const entries: Uint8Array[] = [];
    for (const stream of ["stdout", "stderr"] as const) {
      if (this.#pending[stream].length > 0) {
        entries.push(entry(time(stream), "F", this.#pending[stream]));
      }
    }
    this.#closed = true;
    await this.#enqueue(entries);
    this.#file.close();
  }

  #enqueue(entries: Uint8Array[]): Promise<void> {
    if (entries.length === 0) return this.#queue;
    this.#queue = this.#queue.then(() => this.#writeEntries(entries)).catch(() => {});
    return this.#queue;
  }

  // Writes entries in batches that never cross the rotation size, rotating in between.
  async #writeEntries(entries: Uint8Array[]): Promise<void> {
    const { maxSizeBytes } = this.#rotation;
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    for (const e of entries) {
      if (maxSizeBytes > 0 && this.#size + batchBytes + e.length > maxSizeBytes) {
        await this.#flush(batch, batchBytes);
        batch = [];
        batchBytes = 0;
        if (this.#size > 0) await this.#rotate();
      }
      batch.push(e);
      batchBytes += e.length;
    }
    await this.#flush(batch, batchBytes);
  }

  async #flush(batch: Uint8Array[], bytes: number): Promise<void> {
    if (bytes === 0) return;
    const data = batch.length === 1 ? batch[0] : concat(batch, bytes);
    let written = 0;
    while (written < data.length) written += await this.#file.write(data.subarray(written));
    this.#size += data.length;
  }

  async #rotate(): Promise<void> {
    this.#file.close();
    const rotated = `${this.path}.${rotationStamp(new Date(this.#clock.now()))}`;
    let target = rotated;
    for (let n = 1; await exists(target); n++) target = `${rotated}-${n}`;
    await Deno.rename(this.path, target);
    await removeOldRotated(this.path, this.#rotation.maxFiles - 1);
    this.#file = await Deno.open(this.path, { create: true, append: true });
    this.#size = 0;
  }
}

/** The two output streams of a container. */
export type LogStream = "stdout" | "stderr";

/** The rotated files of the log at `path`, oldest first. */
export async function rotatedLogFiles(path: string): Promise<string[]> {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile && e.name.startsWith(prefix) && !e.name.endsWith(".tmp")) names.push(e.name);
    }
  } catch {
    return [];
  }
  // The stamp sorts by time; a `-n` suffix (two rotations in one second) sorts after its stamp.
  return names.sort().map((n) => join(dir, n));
}

async function removeOldRotated(path: string, keep: number): Promise<void> {
  const rotated = await rotatedLogFiles(path);
  for (const old of rotated.slice(0, Math.max(0, rotated.length - keep))) {
    await Deno.remove(old).catch(() => {});
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

function entry(prefix: Uint8Array, tag: "F" | "P", line: Uint8Array): Uint8Array {
  const out = new Uint8Array(prefix.length + 2 + line.length + 1);
  out.set(prefix);
  out[prefix.length] = tag.charCodeAt(0);
  out[prefix.length + 1] = 0x20;
  out.set(line, prefix.length + 2);
  out[out.length - 1] = newline;
  return out;
}

// Go's time.RFC3339Nano in UTC (trailing zeros of the fraction dropped), as containerd stamps lines.
function rfc3339Nano(ms: number): string {
  return new Date(ms).toISOString().replace(/\.?0+Z$/, "Z");
}

// kubelet's rotation suffix, "20060102-150405" in UTC.
function rotationStamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-` +
    `${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}

function concat(parts: Uint8Array[], total?: number): Uint8Array {
  const out = new Uint8Array(total ?? parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
