/**
 * Copying between a streaming connection's streams and a process or socket: what a runtime's
 * `Exec`, `Attach` and `PortForward` do with the streams the server hands them (containerd's
 * `io.Copy` goroutines in its streaming runtime).
 * @module
 */
import type { Clock, ClockTimer } from "../util/clock.ts";
import type { InputStream, OutputStream } from "./remotecommand.ts";

/**
 * Copies `input` into `writable` until the input ends (the client closed stdin), then closes
 * `writable` (the process sees EOF). Resolves without throwing when the process stopped reading.
 *
 * @example
 * ```ts
 * declare const input: Parameters<typeof pipeInput>[0];
 * const child = new Deno.Command("cat", { stdin: "piped" }).spawn();
 * await pipeInput(input, child.stdin);
 * ```
 */
export async function pipeInput(
  input: InputStream,
  writable: WritableStream<Uint8Array>,
): Promise<void> {
  const writer = writable.getWriter();
  try {
    for (let chunk = await input.read(); chunk !== null; chunk = await input.read()) {
      await writer.write(chunk);
    }
    await writer.close();
  } catch {
    await writer.abort().catch(() => {});
  }
}

/**
 * Copies `readable` to `output` until it ends, then closes `output` (FIN on the stream). When the
 * client went away the rest of `readable` is drained, so the process is never blocked on a full
 * pipe.
 *
 * @example
 * ```ts
 * declare const output: Parameters<typeof pipeOutput>[1];
 * const child = new Deno.Command("date", { stdout: "piped" }).spawn();
 * await pipeOutput(child.stdout, output);
 * ```
 */
export async function pipeOutput(
  readable: ReadableStream<Uint8Array>,
  output: OutputStream,
): Promise<void> {
  let open = true;
  for await (const chunk of readable) {
    if (!open) continue;
    try {
      await output.write(chunk);
    } catch {
      open = false;
    }
  }
  if (open) await output.close().catch(() => {});
}

/** Both directions of a forwarded connection: a stream of the client's and a socket. */
export interface Duplex extends InputStream, OutputStream {}

/** How long the other direction may go on once one ended (containerd's 1 s, after socat). */
export const forwardCloseGraceMs = 1_000;

/**
 * Copies between `stream` and `conn` both ways, as containerd's `portForward` does: once one
 * direction has ended, the other gets {@linkcode forwardCloseGraceMs} to finish, then `conn` is
 * closed. Unlike containerd, each end's EOF is passed on (FIN on the stream, `closeWrite` on the
 * socket), so a server that answers after reading its request to the end gets to answer.
 *
 * @example
 * ```ts
 * import { RealClock } from "../util/clock.ts";
 *
 * declare const stream: Parameters<typeof forwardConn>[0];
 * const conn = await Deno.connect({ hostname: "127.0.0.1", port: 8080 });
 * await forwardConn(stream, conn, { clock: new RealClock() });
 * ```
 */
export async function forwardConn(
  stream: Duplex,
  conn: Deno.TcpConn,
  options: { clock: Clock; signal?: AbortSignal },
): Promise<void> {
  const toConn = (async () => {
    try {
      for (let chunk = await stream.read(); chunk !== null; chunk = await stream.read()) {
        for (let off = 0; off < chunk.length;) off += await conn.write(chunk.subarray(off));
      }
      await conn.closeWrite();
    } catch {
      // The socket is gone.
    }
  })();
  const fromConn = (async () => {
    const buf = new Uint8Array(32 * 1024);
    try {
      for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
        await stream.write(buf.slice(0, n));
      }
    } catch {
      // Reset or closed.
    }
    await stream.close().catch(() => {});
  })();
  let timer: ClockTimer | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<void>((resolve) => {
    onAbort = resolve;
    if (options.signal?.aborted) resolve();
    options.signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([toConn, fromConn, stopped]);
    const grace = new Promise<void>((resolve) => {
      timer = options.clock.afterFunc(forwardCloseGraceMs, resolve);
    });
    await Promise.race([Promise.all([toConn, fromConn]), grace, stopped]);
  } finally {
    timer?.stop();
    if (onAbort) options.signal?.removeEventListener("abort", onAbort);
    try {
      conn.close();
    } catch {
      // closed already
    }
  }
}
