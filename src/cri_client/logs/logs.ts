/**
 * Reading a container's log in the CRI format (`<RFC3339Nano time> <stdout|stderr> <P|F> <text>`)
 * for `kubectl logs`: `tail` lines from the end, `since` a time, at most `bytes` bytes,
 * `timestamp` prefixes, one or both streams; with `follow`, the reader waits at the end of the file
 * for more, reopens the file when the runtime recreates it after a rotation, and ends once the
 * container no longer runs and the file is read to its end. As kubelet, only the live file is
 * read: rotated files are not (`kubectl logs` shows what the current file holds).
 * Mirrors k8s.io/cri-client/pkg/logs/logs.go (`ReadLogs`, `NewLogOptions`, `parseCRILog`,
 * `FindTailLineStartIndex`, `logWriter`, `waitLogs`).
 * @module
 */
import { basename, dirname } from "node:path";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { errorText } from "../../util/errors.ts";

/** kubelet's `v1.PodLogOptions`, the fields the reader uses. */
export interface PodLogOptions {
  follow?: boolean;
  previous?: boolean;
  sinceSeconds?: number;
  /** RFC 3339 time. */
  sinceTime?: string;
  timestamps?: boolean;
  tailLines?: number;
  limitBytes?: number;
  /** `All` (default), `Stdout` or `Stderr`. */
  stream?: string;
}

/** cri-client's `LogOptions`. */
export interface LogOptions {
  /** Lines from the end; -1 = all. */
  tail: number;
  /** Most bytes written; -1 = no limit. */
  bytes: number;
  /** Lines older than this (ms since the epoch, nanoseconds kept apart) are skipped. */
  since: LogTime | undefined;
  follow: boolean;
  timestamp: boolean;
}

/** A log line's time: milliseconds since the epoch and the nanoseconds within the millisecond. */
export interface LogTime {
  ms: number;
  nanos: number;
}

/**
 * cri-client's `NewLogOptions`: `sinceSeconds` before `now`, or `sinceTime` when it is later.
 *
 * @example
 * ```ts
 * newLogOptions({ tailLines: 10, follow: true }, Date.now());
 * ```
 */
export function newLogOptions(apiOpts: PodLogOptions, nowMs: number): LogOptions {
  const opts: LogOptions = {
    tail: apiOpts.tailLines ?? -1,
    bytes: apiOpts.limitBytes ?? -1,
    since: undefined,
    follow: apiOpts.follow ?? false,
    timestamp: apiOpts.timestamps ?? false,
  };
  if (apiOpts.sinceSeconds !== undefined) {
    opts.since = { ms: nowMs - apiOpts.sinceSeconds * 1000, nanos: 0 };
  }
  if (apiOpts.sinceTime !== undefined) {
    const t = { ms: Date.parse(apiOpts.sinceTime), nanos: 0 };
    if (!opts.since || before(opts.since, t)) opts.since = t;
  }
  return opts;
}

function before(a: LogTime, b: LogTime): boolean {
  return a.ms < b.ms || (a.ms === b.ms && a.nanos < b.nanos);
}

/** A parsed log line (cri-client's `logMessage`). */
export interface LogMessage {
  timestamp: LogTime;
  /** The time as written, reformatted as Go's RFC3339Nano prints it. */
  timestampText: string;
  stream: "stdout" | "stderr";
  log: Uint8Array;
}

const space = 0x20;
const eol = 0x0a;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

const rfc3339Nano = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/**
 * cri-client's `parseCRILog`: one line of the CRI format; throws Go's texts on a malformed line.
 *
 * @example
 * ```ts
 * parseCRILog(new TextEncoder().encode("2016-10-06T00:17:09.669794202Z stdout F hi\n"));
 * ```
 */
export function parseCRILog(line: Uint8Array): LogMessage {
  let idx = line.indexOf(space);
  if (idx < 0) throw new Error("timestamp is not found");
  const timeText = decoder.decode(line.subarray(0, idx));
  const m = rfc3339Nano.exec(timeText);
  const ms = m ? Date.parse(`${m[1]}${m[3]}`) : NaN;
  if (!m || Number.isNaN(ms)) {
    throw new Error(
      `unexpected timestamp format "2006-01-02T15:04:05.999999999Z07:00": parsing time "${timeText}"`,
    );
  }
  const frac = (m[2] ?? "").padEnd(9, "0");
  const timestamp = {
    ms: ms + Number(frac.slice(0, 3)),
    nanos: Number(frac.slice(3)),
  };
  const trimmed = frac.replace(/0+$/, "");
  const timestampText = `${m[1]}${trimmed ? "." + trimmed : ""}${m[3]}`;
  let rest = line.subarray(idx + 1);
  idx = rest.indexOf(space);
  if (idx < 0) throw new Error("stream type is not found");
  const stream = decoder.decode(rest.subarray(0, idx));
  if (stream !== "stdout" && stream !== "stderr") {
    throw new Error(`unexpected stream type "${stream}"`);
  }
  rest = rest.subarray(idx + 1);
  idx = rest.indexOf(space);
  if (idx < 0) throw new Error("log tag is not found");
  // Tags are `:`-separated, for forward compatibility; the first says partial or full.
  const partial = decoder.decode(rest.subarray(0, idx)).split(":")[0] === "P";
  if (partial && rest.length > 0 && rest[rest.length - 1] === eol) {
    rest = rest.subarray(0, rest.length - 1);
  }
  return { timestamp, timestampText, stream, log: rest.subarray(idx + 1) };
}

const blockSize = 1024;

/**
 * cri-client's `FindTailLineStartIndex`: the offset where the last `n` lines of the file start
 * (0 for a negative `n`).
 *
 * @example
 * ```ts
 * using file = await Deno.open("/var/log/pods/default_web_0/app/0.log");
 * const start = await findTailLineStartIndex(file, 10);
 * ```
 */
export async function findTailLineStartIndex(f: Deno.FsFile, n: number): Promise<number> {
  if (n < 0) return 0;
  const size = await f.seek(0, Deno.SeekMode.End);
  let left = 0;
  let count = 0;
  let buf = new Uint8Array(blockSize);
  for (let right = size; right > 0 && count <= n; right -= blockSize) {
    left = right - blockSize;
    if (left < 0) {
      left = 0;
      buf = new Uint8Array(right);
    }
    await f.seek(left, Deno.SeekMode.Start);
    await readFull(f, buf);
    for (const b of buf) if (b === eol) count++;
  }
  for (; count > n; count--) {
    const idx = buf.indexOf(eol) + 1;
    buf = buf.subarray(idx);
    left += idx;
  }
  return left;
}

async function readFull(f: Deno.FsFile, buf: Uint8Array): Promise<void> {
  for (let off = 0; off < buf.length;) {
    const n = await f.read(buf.subarray(off));
    if (n === null) return;
    off += n;
  }
}

/** Where the log's bytes go; a missing stream is not wanted (and not counted). */
export interface LogSinks {
  stdout?: (bytes: Uint8Array) => Promise<void>;
  stderr?: (bytes: Uint8Array) => Promise<void>;
  /** Called before a follow waits for more: what the sinks hold back must go out now. */
  flush?: () => Promise<void>;
}

// Written when the byte limit is reached: the read ends without an error.
class MaximumWriteError extends Error {}

/** cri-client's `logWriter`: since, timestamps, the byte limit and stream selection. */
class LogWriter {
  #remain: number;
  constructor(private sinks: LogSinks, private opts: LogOptions) {
    this.#remain = opts.bytes >= 0 ? opts.bytes : Infinity;
  }

  async write(msg: LogMessage, addPrefix: boolean): Promise<void> {
    if (this.opts.since && before(msg.timestamp, this.opts.since)) return;
    let line = msg.log;
    if (this.opts.timestamp && addPrefix) {
      const prefix = encoder.encode(msg.timestampText + " ");
      const joined = new Uint8Array(prefix.length + line.length);
      joined.set(prefix);
      joined.set(line, prefix.length);
      line = joined;
    }
    if (line.length > this.#remain) line = line.subarray(0, this.#remain);
    const sink = msg.stream === "stdout" ? this.sinks.stdout : this.sinks.stderr;
    if (!sink) return;
    await sink(line);
    this.#remain -= line.length;
    if (this.#remain <= 0) throw new MaximumWriteError();
  }
}

/** What `readLogs` asks of the runtime while following: does the container still run? */
export interface ContainerStatusGetter {
  containerStatus(containerId: string): Promise<{ status: { state: string } }>;
}

/** Options of {@linkcode readLogs}. */
export interface ReadLogsOptions {
  runtime: ContainerStatusGetter;
  clock: Clock;
  /** Ends a follow early (the client went away). */
  signal?: AbortSignal;
}

// How often a follow checks that the container still runs (cri-client's stateCheckPeriod).
export const stateCheckPeriodMs = 5_000;

/**
 * cri-client's `ReadLogs`: writes the log at `path` of container `containerId` to the sinks.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../runtime_service.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const path: string;
 * declare const id: string;
 * declare const sinks: LogSinks;
 * declare const runtime: RuntimeService;
 * declare const clock: Clock;
 *
 * await readLogs(path, id, newLogOptions({ follow: true }, Date.now()), sinks, { runtime, clock });
 * ```
 */
export async function readLogs(
  path: string,
  containerId: string,
  opts: LogOptions,
  sinks: LogSinks,
  options: ReadLogsOptions,
): Promise<void> {
  path = await Deno.realPath(path).catch((e) => {
    throw new Error(`failed to try resolving symlinks in path "${path}": ${errorText(e)}`);
  });
  let f = await Deno.open(path).catch((e) => {
    throw new Error(`failed to open log file "${path}": ${errorText(e)}`);
  });
  let watch: LogWatch | undefined;
  // The file a rotation created, opened once the old one is read to its end.
  let next: Deno.FsFile | undefined;
  try {
    const start = await findTailLineStartIndex(f, opts.tail);
    await f.seek(start, Deno.SeekMode.Start);
    const limitedMode = opts.tail >= 0 && !opts.follow;
    let limitedNum = opts.tail;
    let reader = new LineReader(f);
    let stop = false;
    let isNewLine = true;
    let found = true;
    const writer = new LogWriter(sinks, opts);
    for (;;) {
      if (stop || (limitedMode && limitedNum === 0)) return;
      if (options.signal?.aborted) return;
      const { line, complete } = await reader.readLine();
      if (!complete) {
        if (opts.follow) {
          // The old file is read to its end: go on with the one the rotation created.
          if (next) {
            f.close();
            f = next;
            next = undefined;
            reader = new LineReader(f);
            continue;
          }
          // The container no longer runs and its log is read to the end.
          if (!found) return;
          // An incomplete line is read again once it is complete.
          reader.unread(line);
          if (!watch) {
            const watcher = Deno.watchFs(dirname(path), { recursive: false });
            watch = { watcher, events: watcher[Symbol.asyncIterator]() };
            // Read again: a write may have come before the watcher.
            continue;
          }
          await sinks.flush?.();
          let recreated: boolean;
          ({ found, recreated } = await waitLogs(containerId, path, f, watch, options));
          if (options.signal?.aborted) return;
          if (recreated) {
            try {
              next = await Deno.open(path);
            } catch (e) {
              if (e instanceof Deno.errors.NotFound) continue;
              throw new Error(`failed to open log file "${path}": ${errorText(e)}`);
            }
            // What the runtime wrote to the old file before it reopened the log is read first
            // (cri-client switches at once and loses it).
          }
          continue;
        }
        stop = true;
        if (line.length === 0) continue;
        log.info("Incomplete line in log file", { path, line: decoder.decode(line) });
      }
      let msg: LogMessage;
      try {
        msg = parseCRILog(line);
      } catch (e) {
        log.error(e, "Failed when parsing line in log file", { path, line: decoder.decode(line) });
        continue;
      }
      try {
        await writer.write(msg, isNewLine);
      } catch (e) {
        if (e instanceof MaximumWriteError) {
          log.V(2).info("Finished parsing log file, hit bytes limit", { path, limit: opts.bytes });
          return;
        }
        throw e;
      }
      if (limitedMode) limitedNum--;
      isNewLine = msg.log.length === 0 || msg.log[msg.log.length - 1] === eol;
    }
  } finally {
    watch?.watcher.close();
    next?.close();
    try {
      f.close();
    } catch {
      // closed already
    }
  }
}

/**
 * cri-client's `waitLogs`: waits for the log to grow (found), to be recreated by a rotation
 * (recreated), or, every {@link stateCheckPeriodMs}, for the container to stop running
 * (found = false).
 */
async function waitLogs(
  containerId: string,
  path: string,
  f: Deno.FsFile,
  watch: LogWatch,
  options: ReadLogsOptions,
): Promise<{ found: boolean; recreated: boolean }> {
  const name = basename(path);
  const opened = (await f.stat()).ino;
  const recreatedNow = async () => {
    const now = await Deno.stat(path).catch(() => undefined);
    return now !== undefined && now.ino !== opened;
  };
  // A rotation that came before the watcher was set up sent no event for it to see.
  if (await recreatedNow()) return { found: true, recreated: true };
  for (;;) {
    // An event asked for and not yet delivered stays asked for: the next wait takes it.
    const next = watch.next ??= watch.events.next();
    let timer: { stop(): boolean } | undefined;
    let onAbort: (() => void) | undefined;
    const woke = await Promise.race([
      next.then((r) => r.done ? "closed" as const : r.value),
      new Promise<"tick">((resolve) =>
        timer = options.clock.afterFunc(stateCheckPeriodMs, () => resolve("tick"))
      ),
      new Promise<"abort">((resolve) => {
        onAbort = () => resolve("abort");
        if (options.signal?.aborted) onAbort();
        else options.signal?.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
    timer?.stop();
    if (onAbort) options.signal?.removeEventListener("abort", onAbort);
    if (woke === "abort" || woke === "closed") return { found: false, recreated: false };
    if (woke !== "tick") watch.next = undefined;
    if (woke === "tick") {
      const { status } = await options.runtime.containerStatus(containerId).catch(() => ({
        status: { state: "" },
      }));
      if (status.state !== "CONTAINER_RUNNING") {
        log.V(4).info("Container is not running", { containerId, state: status.state });
        return { found: false, recreated: false };
      }
      continue;
    }
    if (!woke.paths.some((p) => basename(p) === name)) continue;
    // A rotation renames the file and the runtime creates a new one under the old name.
    if (await recreatedNow()) return { found: true, recreated: true };
    if (woke.kind === "modify" || woke.kind === "any") return { found: true, recreated: false };
  }
}

// The directory watcher of a follow and its pending event.
interface LogWatch {
  watcher: Deno.FsWatcher;
  events: AsyncIterator<Deno.FsEvent>;
  next?: Promise<IteratorResult<Deno.FsEvent>>;
}

// A bufio.Reader's ReadBytes('\n') over a file, able to give back an incomplete line.
class LineReader {
  #buf: Uint8Array = new Uint8Array(0);
  #chunk = new Uint8Array(32 * 1024);
  constructor(private f: Deno.FsFile) {}

  /** The next line with its newline (complete), or what is left before the end of the file. */
  async readLine(): Promise<{ line: Uint8Array; complete: boolean }> {
    for (;;) {
      const idx = this.#buf.indexOf(eol);
      if (idx >= 0) {
        const line = this.#buf.slice(0, idx + 1);
        this.#buf = this.#buf.subarray(idx + 1);
        return { line, complete: true };
      }
      const n = await this.f.read(this.#chunk);
      if (n === null) {
        const line = this.#buf;
        this.#buf = new Uint8Array(0);
        return { line, complete: false };
      }
      const joined = new Uint8Array(this.#buf.length + n);
      joined.set(this.#buf);
      joined.set(this.#chunk.subarray(0, n), this.#buf.length);
      this.#buf = joined;
    }
  }

  /** Puts an incomplete line back, to be read again with what follows it. */
  unread(line: Uint8Array): void {
    this.#buf = line;
  }
}
