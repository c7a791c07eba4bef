/**
 * Exec and attach over an upgraded SPDY connection: the client opens one stream per standard
 * stream it asked for (`streamtype` header `stdin`, `stdout`, `stderr`), one for errors (`error`)
 * and, with a TTY, one for window sizes (`resize`); once all have been answered the command runs,
 * and its outcome is written to the error stream (a `metav1.Status` in JSON from v4 on; v1–v3
 * write only a failure's message), then the connection is closed.
 *
 * Mirrors `k8s.io/cri-streaming/pkg/streaming/remotecommand` (httpstream.go, exec.go, attach.go,
 * resize.go, status.go, constants.go). The SPDY protocols are cri-streaming's
 * (`v4.channel.k8s.io` down to `channel.k8s.io`): client-go offers `v5.channel.k8s.io` first,
 * which this server, like containerd's, answers with v4 (v5 differs only over WebSocket).
 * @module
 */
import type { Clock } from "../util/clock.ts";
import * as klog from "../util/log.ts";
import type { SpdyConnection, SpdyStream } from "./spdy/connection.ts";
import { headerValue } from "./spdy/frame.ts";
import { errorText } from "../util/errors.ts";

/** Subprotocol names (`StreamProtocolV1Name` ... `V5Name`). */
export const streamProtocolV1Name = "channel.k8s.io";
/** v2: stdin, stdout, stderr, error streams. */
export const streamProtocolV2Name = "v2.channel.k8s.io";
/** v3: v2 plus the resize stream. */
export const streamProtocolV3Name = "v3.channel.k8s.io";
/** v4: v3 with a JSON `metav1.Status` on the error stream (exit codes). */
export const streamProtocolV4Name = "v4.channel.k8s.io";
/** v5: v4 plus closing stdin over WebSocket. */
export const streamProtocolV5Name = "v5.channel.k8s.io";

/** What cri-streaming's server offers over SPDY, preferred first (`SupportedStreamingProtocols`). */
export const supportedStreamingProtocols = [
  streamProtocolV4Name,
  streamProtocolV3Name,
  streamProtocolV2Name,
  streamProtocolV1Name,
];

/** How long the client has to open its streams (`DefaultStreamCreationTimeout`, 30 s). */
export const defaultStreamCreationTimeoutMs = 30_000;

/** The `streamtype` header values (`StreamTypeStdin` ...). */
export type StreamType = "stdin" | "stdout" | "stderr" | "error" | "resize";

/** What the client asked to connect (`remotecommand.Options`). */
export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** A terminal's size (`TerminalSize`; the client sends `{"Width":..,"Height":..}`). */
export interface TerminalSize {
  width: number;
  height: number;
}

/** Where a command's output goes: a stream of the connection. */
export interface OutputStream {
  write(data: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

/** Where a command's input comes from; `read` resolves `null` at its end. */
export interface InputStream {
  read(): Promise<Uint8Array | null>;
}

/** The streams of one exec or attach, as a runtime uses them. */
export interface CommandStreams {
  stdin?: InputStream;
  stdout?: OutputStream;
  stderr?: OutputStream;
  tty: boolean;
  /** Window sizes as the client sends them (TTY only); ends with the connection. */
  resize?: AsyncIterable<TerminalSize>;
  /** Aborted when the connection ends. */
  signal: AbortSignal;
}

/**
 * A command that ran and exited non-zero (k8s.io/utils/exec's `CodeExitError`): the exit code
 * goes to the client in the status.
 */
export class CodeExitError extends Error {
  /** The command's exit code. */
  readonly code: number;
  /** Builds the error; `message` is what the status's message carries after its prefix. */
  constructor(code: number, message: string) {
    super(message);
    this.name = "CodeExitError";
    this.code = code;
  }
}

/** The `metav1.Status` written to the error stream (`streamStatus`; empty fields omitted). */
export interface StreamStatus {
  status?: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
  code?: number;
}

/** The status for how a command ended (exec.go's `ServeExec`, attach.go's `ServeAttach`). */
export function statusFor(err: unknown, what: "exec" | "attach"): StreamStatus {
  if (err === undefined) return { status: "Success" };
  if (err instanceof CodeExitError) {
    return {
      status: "Failure",
      reason: "NonZeroExitCode",
      details: { causes: [{ reason: "ExitCode", message: String(err.code) }] },
      message: `command terminated with non-zero exit code: ${err.message}`,
    };
  }
  const text = errorText(err);
  const wrapped = what === "exec"
    ? `error executing command in container: ${text}`
    : `error attaching to container: ${text}`;
  return {
    status: "Failure",
    message: `Internal error occurred: ${wrapped}`,
    reason: "InternalError",
    code: 500,
  };
}

/** The streams the client opened, once each was answered. */
export interface ConnectionContext {
  stdin?: SpdyStream;
  stdout?: SpdyStream;
  stderr?: SpdyStream;
  error?: SpdyStream;
  resize?: SpdyStream;
  protocol: string;
}

/**
 * Collects the client's streams as they arrive (`waitForStreams` of the v1–v4 handlers): resolves
 * once `expected` of them were answered, rejects at `timeoutMs`.
 */
export class StreamCollector {
  #ctx: ConnectionContext;
  #expected: number;
  #replied = 0;
  #resolve!: (ctx: ConnectionContext) => void;
  #reject!: (err: Error) => void;
  /** Resolves with the streams, or rejects at the timeout. */
  readonly ready: Promise<ConnectionContext>;

  /** Waits for `expected` streams for `protocol`, for at most `timeoutMs` on `clock`. */
  constructor(protocol: string, expected: number, options: { clock: Clock; timeoutMs: number }) {
    this.#ctx = { protocol };
    this.#expected = expected;
    this.ready = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const timer = options.clock.afterFunc(
      options.timeoutMs,
      () => this.#reject(new Error("timed out waiting for client to create streams")),
    );
    this.ready.then(() => timer.stop(), () => timer.stop());
  }

  /** The connection's `onStream`: takes every stream; unknown types are logged and ignored. */
  add(stream: SpdyStream, replySent: Promise<void>): undefined {
    const type = headerValue(stream.headers, "streamType");
    const supportsResize = this.#ctx.protocol === streamProtocolV4Name ||
      this.#ctx.protocol === streamProtocolV3Name;
    switch (type) {
      case "stdin":
      case "stdout":
      case "stderr":
      case "error":
        this.#ctx[type] = stream;
        break;
      case "resize":
        if (supportsResize) {
          this.#ctx.resize = stream;
          break;
        }
        // falls through: v1 and v2 know no resize stream
      default:
        klog.error(new Error(`unexpected stream type: "${type}"`), "Unexpected stream");
        return undefined;
    }
    replySent.then(() => {
      if (++this.#replied === this.#expected) this.#resolve(this.#ctx);
    });
    return undefined;
  }
}

/** The number of streams the client opens for `opts` (`expectedStreams`). */
export function expectedStreams(opts: StreamOptions, protocol: string): number {
  let n = 1; // error
  if (opts.stdin) n++;
  if (opts.stdout) n++;
  if (opts.stderr) n++;
  const resizing = protocol === streamProtocolV4Name || protocol === streamProtocolV3Name;
  if (opts.tty && resizing) n++;
  return n;
}

/** Writes the outcome to the error stream as the negotiated protocol does. */
export async function writeStatus(ctx: ConnectionContext, status: StreamStatus): Promise<void> {
  if (!ctx.error) return;
  if (ctx.protocol === streamProtocolV4Name) {
    await ctx.error.write(new TextEncoder().encode(JSON.stringify(status)));
  } else if (status.status !== "Success") {
    await ctx.error.write(new TextEncoder().encode(status.message ?? ""));
  }
}

/**
 * Window sizes from the resize stream: a sequence of JSON objects, decoded as Go's `json.Decoder`
 * would (field names case-insensitive), ending at the stream's end or the first malformed one.
 */
export async function* resizeEvents(stream: SpdyStream): AsyncGenerator<TerminalSize> {
  const dec = new TextDecoder();
  let text = "";
  for (let chunk = await stream.read(); chunk !== null; chunk = await stream.read()) {
    text += dec.decode(chunk, { stream: true });
    for (;;) {
      text = text.trimStart();
      if (text === "") break;
      const end = jsonValueEnd(text);
      if (end < 0) break;
      let value: unknown;
      try {
        value = JSON.parse(text.slice(0, end));
      } catch {
        return;
      }
      text = text.slice(end);
      if (typeof value !== "object" || value === null || Array.isArray(value)) return;
      const size = { width: 0, height: 0 };
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== "number") continue;
        if (k.toLowerCase() === "width") size.width = v;
        if (k.toLowerCase() === "height") size.height = v;
      }
      yield size;
    }
  }
}

// The end of the first complete JSON object in `text`, or -1 while it is incomplete.
function jsonValueEnd(text: string): number {
  if (text[0] !== "{") return text.length; // not an object: let JSON.parse refuse it
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * Runs `run` with the client's streams and reports its outcome: the body of `ServeExec` and
 * `ServeAttach` after `createStreams`. The connection is closed when it is done.
 */
export async function serveCommand(
  conn: SpdyConnection,
  ctx: ConnectionContext,
  opts: StreamOptions,
  what: "exec" | "attach",
  run: (streams: CommandStreams) => Promise<void>,
): Promise<void> {
  const abort = new AbortController();
  conn.closed.then(() => abort.abort(new Error("connection closed")));
  // v1 closes stdin at once (its clients never sent any).
  const stdin = ctx.protocol === streamProtocolV1Name ? undefined : ctx.stdin;
  let outcome: unknown;
  try {
    await run({
      stdin,
      stdout: ctx.stdout,
      stderr: ctx.stderr,
      tty: opts.tty,
      resize: ctx.resize ? resizeEvents(ctx.resize) : undefined,
      signal: abort.signal,
    });
  } catch (err) {
    outcome = err ?? new Error("failed");
    if (!(err instanceof CodeExitError)) {
      klog.error(
        err,
        `Error ${what === "exec" ? "executing command in" : "attaching to"} container`,
      );
    }
  }
  // The runtime may have left its output open; the client reads to each stream's end.
  await Promise.all([ctx.stdout?.close(), ctx.stderr?.close()]);
  try {
    await writeStatus(ctx, statusFor(outcome, what));
  } catch {
    // The client went away.
  }
  await conn.close();
}
