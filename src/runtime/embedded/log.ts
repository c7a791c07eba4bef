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
import { dirname } from "node:path";
import { concat } from "../../util/bytes.ts";
import { orderRotatedLogFiles } from "../../util/log_file.ts";

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
  #lastStamp = "";
  #suffix = 0;

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
    const prefix = encoder.encode(`${rfc3339Nano(this.#clock.now())} ${stream} `);
    const pending = this.#pending[stream];
    const input = pending.length > 0 ? concat([pending, chunk]) : chunk;
    const out = new EntryBuffer(prefix, input.length);
    // One pass over the bytes in a tight loop: a container printing short lines (`yes`) makes
    // one entry per two bytes.
    let lineStart = 0;
    for (let i = 0; i < input.length; i++) {
      if (input[i] === newline) {
        out.add("F", input, lineStart, i);
        lineStart = i + 1;
      } else if (i + 1 - lineStart === maxLogLineBytes) {
        // A line longer than the limit is cut into P pieces and an F piece, as containerd does.
        out.add("P", input, lineStart, i + 1);
        lineStart = i + 1;
      }
    }
    this.#pending[stream] = input.slice(lineStart);
    return this.#enqueue(out);
  }

  /** Writes what is left of unfinished lines (as `F`), waits for queued writes and closes the file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    for (const stream of ["stdout", "stderr"] as const) {
      const rest = this.#pending[stream];
      if (rest.length === 0) continue;
      const out = new EntryBuffer(
        encoder.encode(`${rfc3339Nano(this.#clock.now())} ${stream} `),
        rest.length,
      );
      out.add("F", rest, 0, rest.length);
      this.#enqueue(out);
    }
    this.#closed = true;
    await this.#queue;
    this.#file.close();
  }

  #enqueue(entries: EntryBuffer): Promise<void> {
    if (entries.ends.length === 0) return this.#queue;
    this.#queue = this.#queue.then(() => this.#writeEntries(entries)).catch(() => {});
    return this.#queue;
  }

  // Writes the entries in runs that never cross the rotation size, rotating in between; an entry
  // is never split across files.
  async #writeEntries(entries: EntryBuffer): Promise<void> {
    const { maxSizeBytes } = this.#rotation;
    const { bytes, ends } = entries;
    const total = ends[ends.length - 1];
    let from = 0;
    let next = 0; // index of the first entry that ends after `from`
    while (from < total) {
      if (maxSizeBytes <= 0 || this.#size + (total - from) <= maxSizeBytes) {
        await this.#flush(bytes.subarray(from, total));
        return;
      }
      let cut = from;
      while (next < ends.length && ends[next] - from <= maxSizeBytes - this.#size) {
        cut = ends[next++];
      }
      if (cut === from && this.#size === 0) cut = ends[next++]; // one entry larger than the limit
      if (cut > from) {
        await this.#flush(bytes.subarray(from, cut));
        from = cut;
      }
      if (from < total) await this.#rotate();
    }
  }

  async #flush(data: Uint8Array): Promise<void> {
    let written = 0;
    while (written < data.length) written += await this.#file.write(data.subarray(written));
    this.#size += data.length;
  }

  async #rotate(): Promise<void> {
    this.#file.close();
    // Several rotations in one second get -1, -2, ... so that names keep their order.
    const stamp = rotationStamp(new Date(this.#clock.now()));
    this.#suffix = stamp === this.#lastStamp ? this.#suffix + 1 : 0;
    this.#lastStamp = stamp;
    const name = () => `${this.path}.${stamp}${this.#suffix > 0 ? `-${this.#suffix}` : ""}`;
    while (await exists(name())) this.#suffix++;
    await Deno.rename(this.path, name());
    await removeOldRotated(this.path, this.#rotation.maxFiles - 1);
    this.#file = await Deno.open(this.path, { create: true, append: true });
    this.#size = 0;
  }
}

/** The two output streams of a container. */
export type LogStream = "stdout" | "stderr";

/** The rotated files of the log at `path` (`<path>.<YYYYMMDD-hhmmss>[-n]`), oldest first. */
export async function rotatedLogFiles(path: string): Promise<string[]> {
  const entries: Deno.DirEntry[] = [];
  try {
    for await (const e of Deno.readDir(dirname(path))) entries.push(e);
  } catch {
    return [];
  }
  return orderRotatedLogFiles(path, entries);
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

/** Entries built into one buffer, with the offset where each ends (rotation cuts between them). */
class EntryBuffer {
  bytes: Uint8Array;
  readonly ends: number[] = [];
  #at = 0;
  #prefix: Uint8Array;

  constructor(prefix: Uint8Array, inputBytes: number) {
    this.#prefix = prefix;
    this.bytes = new Uint8Array(inputBytes + 64 * (prefix.length + 3));
  }

  /** Appends `<prefix><tag> <input[from, to)>` and a newline. */
  add(tag: "F" | "P", input: Uint8Array, from: number, to: number): void {
    const prefix = this.#prefix;
    const need = prefix.length + 3 + (to - from);
    if (this.#at + need > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.#at + need));
      grown.set(this.bytes.subarray(0, this.#at));
      this.bytes = grown;
    }
    const bytes = this.bytes;
    let at = this.#at;
    for (let i = 0; i < prefix.length; i++) bytes[at++] = prefix[i];
    bytes[at++] = tag === "F" ? 0x46 : 0x50;
    bytes[at++] = 0x20;
    if (to - from > 64) {
      bytes.set(input.subarray(from, to), at);
      at += to - from;
    } else {
      for (let i = from; i < to; i++) bytes[at++] = input[i];
    }
    bytes[at++] = newline;
    this.#at = at;
    this.ends.push(at);
  }
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
