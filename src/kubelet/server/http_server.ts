/**
 * A small HTTP/1.1 server for the agent's read-only endpoints, with the protections Go's
 * `http.Server` gives kubelet and `Deno.serve` lacks:
 *
 * - accept errors (EMFILE when descriptors run out) are retried with Go's back-off (5 ms doubling
 *   to 1 s) instead of ending the process (`Deno.serve` rejects an uncaught promise and the agent
 *   dies; `node:http` stops accepting for good);
 * - a request head must arrive within `readHeaderTimeoutMs` (Go's `ReadHeaderTimeout`), counted
 *   from the accept, or from its first byte on a kept-alive connection, which may wait
 *   `idleTimeoutMs` for it (kubelet's `IdleTimeout`, 90 s); a request head is at most
 *   `maxHeaderBytes`;
 * - at most `maxConnections` connections at once, so a flood cannot take the descriptors probes
 *   and containers need; at the limit a new connection takes the place of the one that has waited
 *   longest for a request head (slowloris connections, idle ones), and is closed at once only when
 *   every connection is busy with a request. Go has no such limit (the descriptor limit is it);
 *   kubelet's read-only server keeps answering a slowloris flood, and so does this one;
 * - a response that cannot be written within `writeTimeoutMs` closes the connection, even when
 *   the client stopped reading (util/socket.ts: `close()` alone does not end a blocked write in
 *   Deno 2.9.3).
 *
 * Requests are GET/HEAD without bodies here, so the server supports exactly that: a request with
 * a body gets its answer and the connection is closed; chunked request bodies are refused.
 *
 * A handler may take the connection over after the request head ({@linkcode hijackResponse}, Go's
 * `http.Hijacker`), as the upgrade-aware proxy of `kubectl exec` does: from then on none of the
 * deadlines above apply (an interactive stream may be idle for hours; its owner sets its own), the
 * connection is never evicted at the limit, and a shutdown still closes it.
 * Mirrors the parts of Go's net/http `Server.Serve` and `conn.serve` the agent needs.
 * @module
 */
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { abortConn, writeAll } from "../../util/socket.ts";
import { statusText } from "../../util/http_status.ts";

/** kubelet's `IdleTimeout` of its servers. */
export const defaultIdleTimeoutMs = 90_000;
/** How long writing one response may take. */
export const defaultWriteTimeoutMs = 60_000;
/**
 * How long a request head may take to arrive (Go's `ReadHeaderTimeout`). kubelet sets only its
 * 4-hour `ReadTimeout`, which Go also applies to the head; a head that is not complete after 10 s
 * is a slowloris client, not a slow network.
 */
export const defaultReadHeaderTimeoutMs = 10_000;
/**
 * Largest request head: the endpoints take no headers worth more; Go's default (1 MiB) per
 * connection would let the connection limit pin a gigabyte.
 */
export const defaultMaxHeaderBytes = 64 * 1024;
/** Go's accept back-off bounds. */
export const acceptBackoffMinMs = 5;
export const acceptBackoffMaxMs = 1_000;

/** What the server needs of a listener (a `Deno.Listener`, or a test's stand-in). */
export interface ConnListener {
  accept(): Promise<Deno.Conn>;
  close(): void;
  readonly addr: Deno.Addr;
}

/** Options of {@linkcode HttpServer}. */
export interface HttpServerOptions {
  /**
   * Answers one request; `conn` is the connection it came on (the secure port reads the client's
   * certificates from it). A throw becomes a 500.
   */
  handler: (req: Request, conn: Deno.Conn) => Response | Promise<Response>;
  /** Most connections open at once (default 1024). */
  maxConnections?: number;
  /** Idle time before a connection without a request in progress is closed (default 90 s). */
  idleTimeoutMs?: number;
  /** Time allowed to write one response (default 60 s). */
  writeTimeoutMs?: number;
  /** Time allowed to read one request head (default 10 s). */
  readHeaderTimeoutMs?: number;
  /** Largest request head in bytes (default 64 KiB). */
  maxHeaderBytes?: number;
  /** Drives the idle, write and back-off timers (default: the wall clock). */
  clock?: Clock;
}

/** Counters, for tests and diagnostics. */
export interface HttpServerStats {
  /** Connections open now. */
  open: number;
  /** Connections accepted since the start. */
  accepted: number;
  /** Connections closed at once because `maxConnections` were open and all of them busy. */
  rejected: number;
  /** Connections closed at the limit to make room: the one waiting longest for a request head. */
  evicted: number;
  /** Connections closed because they were idle too long. */
  idleClosed: number;
  /** Connections closed because a request head did not arrive within `readHeaderTimeoutMs`. */
  headerTimeouts: number;
  /** Connections closed because a response was not written within `writeTimeoutMs`. */
  writeTimeouts: number;
  /** Accept calls that failed and were retried. */
  acceptErrors: number;
  /** Connections a handler took over after its request (upgraded streams). */
  hijacked: number;
}

const crlfcrlf = new Uint8Array([13, 10, 13, 10]);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Serves `handler` on a listener until {@link shutdown}.
 *
 * @example
 * ```ts
 * const server = new HttpServer(Deno.listen({ hostname: "127.0.0.1", port: 0 }), {
 *   handler: () => new Response("ok"),
 * });
 * await server.shutdown();
 * ```
 */
export class HttpServer {
  readonly listener: ConnListener;
  readonly stats: HttpServerStats = {
    open: 0,
    accepted: 0,
    rejected: 0,
    evicted: 0,
    idleClosed: 0,
    headerTimeouts: 0,
    writeTimeouts: 0,
    acceptErrors: 0,
    hijacked: 0,
  };
  #options: HttpServerOptions;
  #clock: Clock;
  #maxConnections: number;
  #idleTimeoutMs: number;
  #writeTimeoutMs: number;
  #maxHeaderBytes: number;
  #readHeaderTimeoutMs: number;
  // Open connections, each with the time it started waiting for a request head (undefined while
  // a request is handled or its response written).
  #conns = new Map<Deno.Conn, { waitingSince: number | undefined }>();
  #closed = false;
  #backoffTimer: ClockTimer | undefined;
  #wakeBackoff: (() => void) | undefined;
  #acceptLoop: Promise<void>;
  #connLoops = new Set<Promise<void>>();
  #lastRejectLog = -Infinity;

  /** Starts accepting on `listener`. */
  constructor(listener: ConnListener, options: HttpServerOptions) {
    this.listener = listener;
    this.#options = options;
    this.#clock = options.clock ?? new RealClock();
    this.#maxConnections = options.maxConnections ?? 1024;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? defaultIdleTimeoutMs;
    this.#writeTimeoutMs = options.writeTimeoutMs ?? defaultWriteTimeoutMs;
    this.#maxHeaderBytes = options.maxHeaderBytes ?? defaultMaxHeaderBytes;
    this.#readHeaderTimeoutMs = options.readHeaderTimeoutMs ?? defaultReadHeaderTimeoutMs;
    this.#acceptLoop = this.#serve();
  }

  /** The connection limit in force. */
  get maxConnections(): number {
    return this.#maxConnections;
  }

  /** Stops accepting, closes every connection and waits for their handlers to end. */
  async shutdown(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#backoffTimer?.stop();
      this.#wakeBackoff?.();
      try {
        this.listener.close();
      } catch {
        // already closed
      }
      for (const conn of this.#conns.keys()) abortConn(conn);
    }
    await this.#acceptLoop;
    await Promise.all([...this.#connLoops]);
  }

  // Go's Server.Serve: on a failed accept, wait 5 ms, doubling up to 1 s, and try again.
  async #serve(): Promise<void> {
    let delayMs = 0;
    while (!this.#closed) {
      let conn: Deno.Conn;
      try {
        conn = await this.listener.accept();
      } catch (e) {
        if (this.#closed || e instanceof Deno.errors.BadResource) return;
        delayMs = delayMs === 0 ? acceptBackoffMinMs : Math.min(delayMs * 2, acceptBackoffMaxMs);
        this.stats.acceptErrors++;
        log.error(e, "http: Accept error; retrying", { delay: `${delayMs}ms` });
        await new Promise<void>((resolve) => {
          this.#wakeBackoff = resolve;
          this.#backoffTimer = this.#clock.afterFunc(delayMs, resolve);
        });
        this.#wakeBackoff = undefined;
        continue;
      }
      delayMs = 0;
      if (this.#closed) {
        closeQuietly(conn);
        return;
      }
      if (this.#conns.size >= this.#maxConnections && !this.#evictOne()) {
        this.stats.rejected++;
        closeQuietly(conn);
        this.#logAtLimit("http: connection limit reached, closing new connections");
        continue;
      }
      this.stats.accepted++;
      this.#conns.set(conn, { waitingSince: this.#clock.now() });
      this.stats.open = this.#conns.size;
      const loop = this.#serveConn(conn).finally(() => {
        this.#conns.delete(conn);
        this.stats.open = this.#conns.size;
        this.#connLoops.delete(loop);
      });
      this.#connLoops.add(loop);
    }
  }

  // One line per 10 s at most: a flood must not turn into a log flood.
  #logAtLimit(message: string): void {
    if (this.#clock.now() - this.#lastRejectLog < 10_000) return;
    this.#lastRejectLog = this.#clock.now();
    log.info(message, {
      limit: this.#maxConnections,
      rejected: this.stats.rejected,
      evicted: this.stats.evicted,
    });
  }

  // Closes the connection that has waited longest for a request head, to make room for a new one;
  // false when every connection is busy with a request.
  #evictOne(): boolean {
    let oldest: Deno.Conn | undefined;
    let oldestSince = Infinity;
    for (const [conn, { waitingSince }] of this.#conns) {
      if (waitingSince !== undefined && waitingSince < oldestSince) {
        oldest = conn;
        oldestSince = waitingSince;
      }
    }
    if (!oldest) return false;
    this.stats.evicted++;
    this.#conns.delete(oldest);
    abortConn(oldest);
    this.#logAtLimit("http: connection limit reached, closing the connection waiting longest");
    return true;
  }

  async #serveConn(conn: Deno.Conn): Promise<void> {
    const pending = new ByteBuffer();
    const chunk = new Uint8Array(16 * 1024);
    let requests = 0;
    try {
      for (;;) {
        // Read one request head. A kept-alive connection may wait idleTimeoutMs for its first
        // byte; from then (from the accept for a new connection) the head has readHeaderTimeoutMs.
        const state = this.#conns.get(conn);
        if (state) state.waitingSince = this.#clock.now();
        let timedOut: "idle" | "header" | undefined;
        let idle = pending.length === 0 && requests > 0;
        let timer = this.#armReadTimer(conn, idle, (why) => timedOut = why);
        let end = indexOf(pending.bytes, crlfcrlf, 0);
        try {
          while (end < 0 && pending.length <= this.#maxHeaderBytes) {
            const n = await conn.read(chunk);
            if (n === null) return; // the client closed
            if (idle) {
              idle = false;
              timer.stop();
              timer = this.#armReadTimer(conn, false, (why) => timedOut = why);
            }
            // Only the new bytes (and the 3 before them) can complete the terminator.
            const from = Math.max(0, pending.length - 3);
            pending.append(chunk.subarray(0, n));
            end = indexOf(pending.bytes, crlfcrlf, from);
          }
        } catch (e) {
          if (timedOut) this.#countTimeout(timedOut);
          else if (!this.#closed) log.V(4).info("http: read failed", { err: String(e) });
          return;
        } finally {
          timer.stop();
        }
        if (timedOut) {
          this.#countTimeout(timedOut);
          return;
        }
        if (state) state.waitingSince = undefined;
        requests++;
        if (end < 0 || end > this.#maxHeaderBytes) {
          await this.#write(conn, plain(431, "request header too large\n"), "GET", true);
          return;
        }
        const head = decoder.decode(pending.bytes.subarray(0, end));
        pending.consume(end + 4);
        const parsed = parseHead(head, this.listener.addr);
        if ("status" in parsed) {
          await this.#write(conn, plain(parsed.status, parsed.message), "GET", true);
          return;
        }
        const { request, keepAlive, hasBody } = parsed;
        remoteAddrs.set(request, conn.remoteAddr);
        let response: Response;
        try {
          response = await this.#options.handler(request, conn);
        } catch (e) {
          log.error(e, "HTTP handler failed");
          response = plain(500, "internal error\n");
        }
        const takeOver = hijacked.get(response);
        if (takeOver) {
          // The handler owns the connection now (closed below when it is done): bytes already
          // read past the head are the start of its stream.
          this.stats.hijacked++;
          const buffered = pending.bytes.slice();
          pending.consume(pending.length);
          try {
            await takeOver({ conn, buffered, clock: this.#clock });
          } catch (e) {
            log.V(4).info("http: hijacked connection failed", { err: String(e) });
          }
          return;
        }
        // A body is never read: answer, then close rather than parse what follows it.
        // A streamed response ends its connection: its background read owns the socket.
        const close = !keepAlive || hasBody || this.#closed || streamed.has(response);
        if (!await this.#write(conn, response, request.method, close) || close) return;
      }
    } finally {
      closeQuietly(conn);
    }
  }

  // The timer that closes a connection waiting for (idle) or reading (header) a request head.
  #armReadTimer(
    conn: Deno.Conn,
    idle: boolean,
    onExpire: (why: "idle" | "header") => void,
  ): ClockTimer {
    const why = idle ? "idle" : "header";
    return this.#clock.afterFunc(idle ? this.#idleTimeoutMs : this.#readHeaderTimeoutMs, () => {
      onExpire(why);
      closeQuietly(conn);
    });
  }

  #countTimeout(why: "idle" | "header"): void {
    if (why === "idle") this.stats.idleClosed++;
    else this.stats.headerTimeouts++;
  }

  /** Writes a response; false when the connection failed or the write timed out. */
  async #write(conn: Deno.Conn, res: Response, method: string, close: boolean): Promise<boolean> {
    const stream = streamed.has(res) && res.body !== null && method !== "HEAD";
    const body = stream ? new Uint8Array(0) : new Uint8Array(await res.arrayBuffer());
    const lines = [`HTTP/1.1 ${res.status} ${statusText(res.status) || res.statusText}`];
    res.headers.forEach((value, name) => {
      if (name !== "content-length" && name !== "connection" && name !== "transfer-encoding") {
        lines.push(`${name}: ${value}`);
      }
    });
    lines.push(`date: ${new Date(this.#clock.now()).toUTCString()}`);
    lines.push(stream ? "transfer-encoding: chunked" : `content-length: ${body.length}`);
    if (close) lines.push("connection: close");
    const head = encoder.encode(lines.join("\r\n") + "\r\n\r\n");
    const bytes = method === "HEAD" || stream ? head : concat(head, body);
    if (!await this.#writeWithDeadline(conn, bytes)) return false;
    if (!stream) return true;
    // A streamed body (Go's Flush after each write): one chunk per piece the stream yields, each
    // under the write deadline, so a follower that stops reading is cut off like any other.
    const reader = res.body!.getReader();
    // Go's background read: a client that goes away (or a shutdown closing the connection) ends
    // the stream even while it waits for more to send. The connection is not kept alive after a
    // streamed response, so bytes read here are dropped.
    let ended = false;
    (async () => {
      const scratch = new Uint8Array(1024);
      try {
        while (!ended && await conn.read(scratch) !== null) {
          // a pipelined request: dropped
        }
      } catch {
        // closed
      }
      if (!ended) reader.cancel().catch(() => {});
    })();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return await this.#writeWithDeadline(conn, encoder.encode("0\r\n\r\n"));
        if (value.length === 0) continue;
        const size = encoder.encode(value.length.toString(16) + "\r\n");
        if (!await this.#writeWithDeadline(conn, concat(concat(size, value), crlf))) return false;
      }
    } catch (e) {
      log.V(4).info("http: streamed response failed", { err: String(e) });
      return false;
    } finally {
      ended = true;
      reader.cancel().catch(() => {});
    }
  }

  async #writeWithDeadline(conn: Deno.Conn, bytes: Uint8Array): Promise<boolean> {
    // abortConn: a client that stopped reading holds a plain close() off (util/socket.ts).
    const timer = this.#clock.afterFunc(this.#writeTimeoutMs, () => {
      this.stats.writeTimeouts++;
      abortConn(conn);
    });
    try {
      await writeAll(conn, bytes);
      return true;
    } catch {
      return false;
    } finally {
      timer.stop();
    }
  }
}

// Responses whose body is written as it comes (chunked), not buffered first.
const streamed = new WeakSet<Response>();
const crlf = new Uint8Array([13, 10]);

/**
 * A response whose body is sent chunk by chunk as `body` yields it (a followed log), instead of
 * being read whole first as every other response is.
 *
 * @example
 * ```ts
 * declare const logStream: Parameters<typeof streamingResponse>[0];
 * const response = streamingResponse(logStream, { headers: { "content-type": "text/plain" } });
 * ```
 */
export function streamingResponse(body: ReadableStream<Uint8Array>, init?: ResponseInit): Response {
  const res = new Response(body, init);
  streamed.add(res);
  return res;
}

/** A connection a handler took over after its request head (see {@linkcode hijackResponse}). */
export interface HijackedConn {
  conn: Deno.Conn;
  /** Bytes the server read past the request head: the start of the client's stream. */
  buffered: Uint8Array;
  /** The server's clock, for the stream's own deadlines. */
  clock: Clock;
}

// Responses that hand the connection to a function instead of being written.
const hijacked = new WeakMap<Response, (h: HijackedConn) => Promise<void>>();

/**
 * A response that is never written: the server hands the connection to `takeOver` instead (Go's
 * `Hijack`), without its idle, header and write deadlines, and closes it once `takeOver` settles.
 * The connection is closed by a shutdown like any other.
 *
 * @example
 * ```ts
 * import { writeAll } from "../../util/socket.ts";
 *
 * const response = hijackResponse(async ({ conn }) => {
 *   await writeAll(conn, new TextEncoder().encode("HTTP/1.1 101 Switching Protocols\r\n\r\n"));
 * });
 * ```
 */
export function hijackResponse(takeOver: (h: HijackedConn) => Promise<void>): Response {
  const res = new Response(null, { status: 200 });
  hijacked.set(res, takeOver);
  return res;
}

// Each request's header lines as they came, in order: Headers joins repeated names into one
// value, which a streaming server reads as one protocol ("v5.channel.k8s.io, v4.channel.k8s.io").
const rawHeaders = new WeakMap<Request, Array<[string, string]>>();

/**
 * The header lines of a request the server parsed, in their order and not joined (undefined for
 * a request built elsewhere).
 *
 * @example
 * ```ts
 * declare const req: Request;
 *
 * requestHeaderLines(req); // [["Host", "10.0.0.1:10250"], ["X-Stream-Protocol-Version", "v4.channel.k8s.io"], ...]
 * ```
 */
export function requestHeaderLines(req: Request): Array<[string, string]> | undefined {
  return rawHeaders.get(req);
}

// Where each request came from (Go's Request.RemoteAddr).
const remoteAddrs = new WeakMap<Request, Deno.Addr>();

/**
 * The address a request the server parsed came from (undefined for a request built elsewhere).
 *
 * @example
 * ```ts
 * declare const req: Request;
 *
 * const addr = requestRemoteAddr(req); // { transport: "tcp", hostname: "10.88.99.1", port: 50312 }
 * ```
 */
export function requestRemoteAddr(req: Request): Deno.Addr | undefined {
  return remoteAddrs.get(req);
}

type ParsedHead =
  | { request: Request; keepAlive: boolean; hasBody: boolean }
  | { status: number; message: string };

// The request line and headers, as Go's readRequest checks them (reduced to what GET needs).
function parseHead(head: string, addr: Deno.Addr): ParsedHead {
  const lines = head.split("\r\n");
  const [method, target, version, ...rest] = lines[0].split(" ");
  if (!method || !target || !version || rest.length > 0) {
    return { status: 400, message: "malformed request line\n" };
  }
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    return { status: 505, message: "unsupported protocol version\n" };
  }
  if (!target.startsWith("/")) return { status: 400, message: "malformed request target\n" };
  const headers = new Headers();
  const headerLines: Array<[string, string]> = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) return { status: 400, message: "malformed header line\n" };
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    try {
      headers.append(name, value);
    } catch {
      return { status: 400, message: "malformed header line\n" };
    }
    headerLines.push([name, value]);
  }
  if (headers.has("transfer-encoding")) {
    return { status: 501, message: "request bodies are not supported\n" };
  }
  const length = headers.get("content-length");
  const hasBody = length !== null && length !== "0";
  const connection = (headers.get("connection") ?? "").toLowerCase();
  const keepAlive = version === "HTTP/1.1"
    ? !connection.includes("close")
    : connection.includes("keep-alive");
  const host = addr.transport === "tcp"
    ? (addr.hostname.includes(":")
      ? `[${addr.hostname}]:${addr.port}`
      : `${addr.hostname}:${addr.port}`)
    : "localhost";
  let request: Request;
  try {
    request = new Request(`http://${host}${target}`, { method, headers });
  } catch {
    return { status: 400, message: "malformed request\n" };
  }
  rawHeaders.set(request, headerLines);
  return { request, keepAlive, hasBody };
}

function plain(status: number, text: string): Response {
  return new Response(text, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b.slice();
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}

/** A growable byte buffer (doubling), so a head arriving byte by byte is not copied per byte. */
class ByteBuffer {
  #buf = new Uint8Array(0);
  #len = 0;

  get length(): number {
    return this.#len;
  }

  get bytes(): Uint8Array {
    return this.#buf.subarray(0, this.#len);
  }

  append(data: Uint8Array): void {
    if (this.#len + data.length > this.#buf.length) {
      const grown = new Uint8Array(Math.max(1024, (this.#len + data.length) * 2));
      grown.set(this.bytes);
      this.#buf = grown;
    }
    this.#buf.set(data, this.#len);
    this.#len += data.length;
  }

  /** Drops the first `n` bytes (pipelined requests keep what follows). */
  consume(n: number): void {
    const rest = this.#buf.slice(n, this.#len);
    this.#buf = rest;
    this.#len = rest.length;
  }
}
