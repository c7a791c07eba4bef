/**
 * Container logs in the CRI log format, the one containerd writes and kubelet reads:
 * `<RFC 3339 time> <stdout|stderr> <F|P> <line>`, one entry per line; `P` marks a piece of a line
 * longer than the buffer, `F` the piece that ends it.
 * Mirrors containerd's pkg/cri/io/logger.go (`redirectLogs`).
 * @module
 */
import { dirname } from "node:path";
import type { Clock } from "../../../util/clock.ts";

/** The longest piece of a line written as one entry (containerd's default `max_container_log_line_size`). */
export const maxLogLineBytes = 16 * 1024;

const newline = 0x0a;
const encoder = new TextEncoder();

/**
 * Appends both streams of one container to one file. Writes are serialized, so entries from stdout
 * and stderr never interleave inside a line.
 *
 * @example
 * ```ts
 * const log = await ContainerLog.open("/tmp/app.log", new RealClock());
 * log.append("stdout", new TextEncoder().encode("hello\nwor"));
 * await log.close(); // "<time> stdout F hello" and "<time> stdout F wor"
 * ```
 */
export class ContainerLog {
  readonly path: string;
  #file: Deno.FsFile;
  #clock: Clock;
  #queue: Promise<void> = Promise.resolve();
  #pending: Record<LogStream, Uint8Array> = {
    stdout: new Uint8Array(0),
    stderr: new Uint8Array(0),
  };
  #closed = false;

  private constructor(path: string, file: Deno.FsFile, clock: Clock) {
    this.path = path;
    this.#file = file;
    this.#clock = clock;
  }

  /** Opens (creating folders as needed) `path` for appending. */
  static async open(path: string, clock: Clock): Promise<ContainerLog> {
    await Deno.mkdir(dirname(path), { recursive: true });
    const file = await Deno.open(path, { create: true, append: true });
    return new ContainerLog(path, file, clock);
  }

  /** Adds output of one stream: complete lines become `F` entries, overlong pieces `P` entries. */
  append(stream: LogStream, chunk: Uint8Array): void {
    if (this.#closed) return;
    let buffer = concat(this.#pending[stream], chunk);
    let start = 0;
    for (;;) {
      const end = buffer.indexOf(newline, start);
      if (end < 0) break;
      this.#entry(stream, "F", buffer.subarray(start, end));
      start = end + 1;
    }
    buffer = buffer.subarray(start);
    while (buffer.length >= maxLogLineBytes) {
      this.#entry(stream, "P", buffer.subarray(0, maxLogLineBytes));
      buffer = buffer.subarray(maxLogLineBytes);
    }
    this.#pending[stream] = buffer.slice();
  }

  /** Writes what is left of unfinished lines (as `F`), waits for queued writes and closes the file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    for (const stream of ["stdout", "stderr"] as const) {
      if (this.#pending[stream].length > 0) this.#entry(stream, "F", this.#pending[stream]);
    }
    this.#closed = true;
    await this.#queue;
    this.#file.close();
  }

  #entry(stream: LogStream, tag: "F" | "P", line: Uint8Array): void {
    const time = new Date(this.#clock.now()).toISOString();
    const entry = concat(encoder.encode(`${time} ${stream} ${tag} `), line, encoder.encode("\n"));
    this.#queue = this.#queue.then(() => writeAll(this.#file, entry)).catch(() => {
      // A full disk must not stop the container; the entry is lost, as with a failed write in
      // containerd's logger.
    });
  }
}

/** The two output streams of a container. */
export type LogStream = "stdout" | "stderr";

async function writeAll(file: Deno.FsFile, data: Uint8Array): Promise<void> {
  let written = 0;
  while (written < data.length) written += await file.write(data.subarray(written));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
