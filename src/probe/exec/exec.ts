/**
 * The exec probe: runs a command (in the container, through a `Cmd`) and judges it by its exit
 * status, keeping at most 10 KiB of combined output. Mirrors kubelet's pkg/probe/exec/exec.go, with
 * the limited writer of pkg/util/ioutils.
 * @module
 */
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import { isCommandTimedOut, isExitError } from "../../util/exec/errors.ts";
import { formatLine } from "../../util/log.ts";

/** How much command output an exec probe keeps (kubelet's `maxReadLength`, 10 KiB). */
export const maxReadLength = 10 * 1024;

/**
 * A byte sink (Go's `io.Writer`). `write` consumes what it can and throws when it could not
 * take everything.
 *
 * @example
 * ```ts
 * const w: Writer = new BufferWriter();
 * w.write(new TextEncoder().encode("ok"));
 * ```
 */
export interface Writer {
  /** Writes `p`; throws if not all of it could be written. */
  write(p: Uint8Array): void;
}

/**
 * The error a `LimitWriter` throws once its limit is reached (Go's `ErrMaximumWrite`).
 *
 * @example
 * ```ts
 * new MaximumWriteError().message; // "maximum write"
 * ```
 */
export class MaximumWriteError extends Error {
  /** Always `maximum write`. */
  constructor() {
    super("maximum write");
    this.name = "MaximumWriteError";
  }
}

/**
 * An in-memory writer that keeps everything written to it (Go's `bytes.Buffer`).
 *
 * @example
 * ```ts
 * const buf = new BufferWriter();
 * buf.write(new TextEncoder().encode("OK"));
 * buf.string(); // "OK"
 * ```
 */
export class BufferWriter implements Writer {
  #chunks: Uint8Array[] = [];
  #length = 0;

  /** Appends a copy of `p`. */
  write(p: Uint8Array): void {
    this.#chunks.push(p.slice());
    this.#length += p.length;
  }

  /** Number of bytes written so far. */
  get length(): number {
    return this.#length;
  }

  /** Everything written, as one array. */
  bytes(): Uint8Array {
    const out = new Uint8Array(this.#length);
    let offset = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }

  /** Everything written, decoded as UTF-8 (invalid bytes become U+FFFD). */
  string(): string {
    return new TextDecoder().decode(this.bytes());
  }
}

/**
 * Passes at most `limit` bytes on to `w` and drops the rest. A write that does not fit is cut to
 * what still fits, and then throws `MaximumWriteError` so the caller knows bytes were dropped.
 *
 * @example
 * ```ts
 * const buf = new BufferWriter();
 * const w = new LimitWriter(buf, 4);
 * try {
 *   w.write(new TextEncoder().encode("abcdef"));
 * } catch (err) {
 *   // err is a MaximumWriteError: "ef" was dropped
 * }
 * buf.string(); // "abcd"
 * ```
 */
export class LimitWriter implements Writer {
  #w: Writer;
  #remaining: number;

  /** Wraps `w`, letting `limit` bytes through in total. */
  constructor(w: Writer, limit: number) {
    this.#w = w;
    this.#remaining = limit;
  }

  /** Writes what fits; throws `MaximumWriteError` if anything was dropped. */
  write(p: Uint8Array): void {
    if (this.#remaining <= 0) throw new MaximumWriteError();
    const fits = p.length <= this.#remaining;
    const chunk = fits ? p : p.subarray(0, this.#remaining);
    this.#w.write(chunk);
    this.#remaining -= chunk.length;
    if (!fits) throw new MaximumWriteError();
  }
}

/**
 * The part of kubelet's `exec.Cmd` the exec probe uses. `start` may already run the command to the
 * end (kubelet's in-container adapter does), in which case `wait` just returns.
 *
 * @example
 * ```ts
 * let out: Writer | undefined;
 * const cmd: Cmd = {
 *   setStdout: (w) => out = w,
 *   setStderr: (w) => out = w,
 *   start: async () => out?.write(new TextEncoder().encode("OK")),
 *   wait: async () => {},
 * };
 * ```
 */
export interface Cmd {
  /** Where the command's stdout goes. */
  setStdout(w: Writer): void;
  /** Where the command's stderr goes (the exec probe passes the stdout writer). */
  setStderr(w: Writer): void;
  /** Starts the command; rejects with `ExitError`, `CommandTimedOutError` or any other error. */
  start(): Promise<void>;
  /** Waits for the command to finish; rejects like `start`. */
  wait(): Promise<void>;
}

/**
 * Runs a command and maps its outcome to a probe result.
 *
 * @example
 * ```ts
 * declare const cmd: Cmd;
 * const { result, output } = await newExecProber().probe(cmd);
 * ```
 */
export interface ExecProber {
  /** Starts `cmd`, waits for it, and judges it by its error and first 10 KiB of output. */
  probe(cmd: Cmd): Promise<ProbeOutcome>;
}

/**
 * A sink for the prober's warning lines. The default writes to stderr: src/util/log.ts has no
 * warning level, so warnings bypass its sink.
 */
export type WarningLogger = (line: string) => void;

/**
 * Creates an exec prober. `execProbeTimeout` is kubelet's ExecProbeTimeout feature gate (default
 * on): when on, a timed-out command is a Failure; when off, it is an error (Unknown), as before
 * Kubernetes 1.20.
 *
 * @example
 * ```ts
 * const prober = newExecProber({ execProbeTimeout: true });
 * ```
 */
export function newExecProber(
  options: { execProbeTimeout?: boolean; logWarning?: WarningLogger } = {},
): ExecProber {
  const execProbeTimeout = options.execProbeTimeout ?? true;
  const logWarning = options.logWarning ?? ((line: string) => console.error(line));
  return { probe: (cmd) => probe(cmd, { execProbeTimeout, logWarning }) };
}

async function probe(
  cmd: Cmd,
  options: { execProbeTimeout: boolean; logWarning: WarningLogger },
): Promise<ProbeOutcome> {
  const buf = new BufferWriter();
  const writer = new LimitWriter(buf, maxReadLength);
  cmd.setStderr(writer);
  cmd.setStdout(writer);

  let err: unknown;
  try {
    await cmd.start();
    await cmd.wait();
  } catch (e) {
    err = e;
  }
  const data = buf.string();
  if (err === undefined) return { result: ProbeResult.Success, output: data };

  if (isExitError(err)) {
    const result = err.exitStatus() === 0 ? ProbeResult.Success : ProbeResult.Failure;
    return { result, output: data };
  }
  if (isCommandTimedOut(err)) {
    // A timed-out command produced no output; its error text is what the user gets to see.
    if (options.execProbeTimeout) return { result: ProbeResult.Failure, output: err.message };
    options.logWarning(
      formatLine("warning", "Exec probe timed out but ExecProbeTimeout feature gate was disabled", {
        err,
      }),
    );
  }
  return {
    result: ProbeResult.Unknown,
    output: "",
    error: err instanceof Error ? err : new Error(String(err)),
  };
}
