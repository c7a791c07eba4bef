/**
 * The upgrade-aware proxy of `kubectl exec`, `attach` and `port-forward`: the client's upgrade
 * request (SPDY/3.1 with the `v4`/`v5.channel.k8s.io` or `portforward.k8s.io` subprotocols, or
 * WebSocket) is sent on to the runtime's streaming server at the URL the runtime gave, its answer
 * is relayed as read, and after a `101 Switching Protocols` the bytes are copied both ways until
 * either side ends; then both connections are closed. The proxy never reads the protocol, so every
 * subprotocol the streaming server speaks passes through.
 *
 * Deadlines: the plain-request deadlines of {@linkcode HttpServer} do not apply (an interactive
 * session may be idle for hours). As in kubelet, whose `ReadTimeout`/`WriteTimeout` (4 h) stay on
 * the hijacked connection, a stream ends `streamTimeoutMs` after its request; both sockets get TCP
 * keep-alive (Go's 15 s) so a peer that vanished is noticed by the kernel; and ending a stream
 * resets a connection whose peer stopped reading (`abortConn`), so it is released at once.
 * Mirrors `UpgradeAwareHandler.tryUpgrade` and `dial` in k8s.io/apimachinery's
 * pkg/util/proxy/upgradeaware.go and dial.go, with kubelet's `responder` (server.go).
 * @module
 */
import type { Clock } from "../../util/clock.ts";
import { RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { abortConn, writeAll, writePending } from "../../util/socket.ts";
import { hijackResponse, requestHeaderLines, requestRemoteAddr } from "./http_server.ts";

/** kubelet's `ReadTimeout` and `WriteTimeout` (4 h), which bound a hijacked stream too. */
export const defaultStreamTimeoutMs = 4 * 60 * 60_000;
/** Go's dialer and listener keep-alive period. */
export const keepAlivePeriodMs = 15_000;
/** How long a refusal from the streaming server may take to be read and relayed (Go's 10 s). */
export const errorRelayTimeoutMs = 10_000;
/** How long ending a client's TLS connection may take (Go's close_notify deadline). */
export const closeNotifyTimeoutMs = 5_000;
/** Largest response head accepted from the streaming server. */
const maxResponseHeadBytes = 64 * 1024;
/** Go's io.Copy buffer. */
const copyBufferBytes = 32 * 1024;

/** Options of {@linkcode proxyUpgrade}. */
export interface UpgradeAwareOptions {
  /** Drives the stream's deadline (default: the wall clock). */
  clock?: Clock;
  /** A stream ends this long after its request (default 4 h, kubelet's). */
  streamTimeoutMs?: number;
  /** Connects to the streaming server (default: `Deno.connect`, or `Deno.connectTls` for https). */
  dial?: (location: URL) => Promise<Deno.Conn>;
}

/**
 * kubelet's `responder.Error`: any failure before the upgrade is a 500 with the error's text.
 *
 * @example
 * ```ts
 * responderError("Upgrade request required").status; // 500
 * ```
 */
export function responderError(text: string): Response {
  log.error(new Error(text), "Error while proxying request");
  return new Response(text + "\n", {
    status: 500,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "x-content-type-options": "nosniff",
    },
  });
}

/**
 * httpstream's `IsUpgradeRequest`: a `Connection` header naming `upgrade`.
 *
 * @example
 * ```ts
 * isUpgradeRequest(new Request("http://x/", { headers: { connection: "Upgrade" } })); // true
 * ```
 */
export function isUpgradeRequest(req: Request): boolean {
  const connection = req.headers.get("connection") ?? "";
  return connection.split(",").some((token) => token.trim().toLowerCase() === "upgrade");
}

/**
 * Proxies an upgrade request to `location` (kubelet's `proxyStream` through
 * `NewUpgradeAwareHandler(url, nil, false, true, &responder{})`). Resolves with the response to
 * give the server: kubelet's 500 for a request that is not an upgrade, a streaming server that
 * cannot be reached or answers oddly; the streaming server's own refusal (status 400 and up) as it
 * sent it; or, on `101`, a response that takes the connection over and splices it to the stream.
 *
 * @example
 * ```ts
 * declare const request: Request;
 *
 * const response = await proxyUpgrade(request, new URL("http://127.0.0.1:35007/exec/Xk3b9aQe"));
 * ```
 */
export async function proxyUpgrade(
  req: Request,
  location: URL,
  options: UpgradeAwareOptions = {},
): Promise<Response> {
  if (!isUpgradeRequest(req)) return responderError("Upgrade request required");
  const clock = options.clock ?? new RealClock();
  const streamTimeoutMs = options.streamTimeoutMs ?? defaultStreamTimeoutMs;
  const dial = options.dial ?? dialURL;
  let backend: Deno.Conn;
  try {
    backend = await dial(location);
  } catch (e) {
    return responderError(`error dialing backend: ${dialErrorText(location, e)}`);
  }
  setKeepAlive(backend);
  // kubelet's ReadTimeout/WriteTimeout, counted from the request: the stream's whole life.
  let client: Deno.Conn | undefined;
  const lifetime = clock.afterFunc(streamTimeoutMs, () => {
    log.V(4).info("Stream reached its deadline", { location: location.href });
    abortConn(backend);
    if (client) abortConn(client);
  });
  let head: ResponseHead;
  try {
    try {
      await writeAll(backend, upgradeRequestBytes(req, location));
    } catch (e) {
      throw new ProxyError(`error sending request: ${e instanceof Error ? e.message : e}`);
    }
    head = await readResponseHead(backend);
  } catch (e) {
    lifetime.stop();
    abortConn(backend);
    return responderError(e instanceof Error ? e.message : String(e));
  }
  if (head.status !== 101 && head.status < 400) {
    lifetime.stop();
    abortConn(backend);
    return responderError(`invalid upgrade response: status code ${head.status}`);
  }
  if (head.status !== 101) {
    // The streaming server refused (an expired token: 404): its answer goes to the client as it
    // came, then the connection is closed.
    lifetime.stop();
    const body = await readErrorBody(backend, head, clock);
    abortConn(backend);
    return hijackResponse(async ({ conn }) => {
      const timer = clock.afterFunc(errorRelayTimeoutMs, () => abortConn(conn));
      try {
        await writeAll(conn, concat(head.raw, body));
      } finally {
        timer.stop();
      }
    });
  }
  return hijackResponse(async ({ conn, buffered }) => {
    client = conn;
    setKeepAlive(conn);
    try {
      await splice(conn, backend, head.raw, buffered, clock);
    } finally {
      lifetime.stop();
      abortConn(backend);
      abortConn(conn);
    }
  });
}

// Copies both ways until either direction ends (EOF, an error, or a close by the deadline or
// a shutdown), then closes both, as tryUpgrade's two io.Copy goroutines.
async function splice(
  client: Deno.Conn,
  backend: Deno.Conn,
  toClient: Uint8Array,
  toBackend: Uint8Array,
  clock: Clock,
): Promise<void> {
  const copy = async (from: Deno.Conn, to: Deno.Conn, first: Uint8Array, what: string) => {
    try {
      if (first.length > 0) await writeAll(to, first);
      const buf = new Uint8Array(copyBufferBytes);
      for (;;) {
        const n = await from.read(buf);
        if (n === null) return;
        await writeAll(to, buf.subarray(0, n));
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.BadResource || e instanceof Deno.errors.Interrupted)) {
        log.V(4).info(`Error proxying data from ${what}`, { err: String(e) });
      }
    }
  };
  const up = copy(client, backend, toBackend, "client to backend");
  const down = copy(backend, client, toClient, "backend to client");
  await Promise.race([up, down]);
  // Either side is done: close both, resetting one whose peer stopped reading, so the other
  // copy's pending read or write ends too. The client's TLS connection is ended as Go's
  // tls.Conn.Close does (close_notify, within 5 s) when nothing is left waiting to be written.
  abortConn(backend);
  await closeGracefully(client, clock);
  await Promise.all([up, down]);
}

// Go's tls.Conn.Close: the close_notify alert (and FIN) under a 5 s deadline, then the socket.
async function closeGracefully(conn: Deno.Conn, clock: Clock): Promise<void> {
  if (!writePending(conn)) {
    const timer = clock.afterFunc(closeNotifyTimeoutMs, () => abortConn(conn));
    try {
      await conn.closeWrite();
    } catch {
      // closed already
    } finally {
      timer.stop();
    }
  }
  abortConn(conn);
}

interface ResponseHead {
  status: number;
  headers: Headers;
  /** Every byte read: the head and whatever of the stream came with it. */
  raw: Uint8Array;
  /** Where the body starts in `raw`. */
  bodyStart: number;
}

class ProxyError extends Error {}

// Go's http.ReadResponse on the backend connection (its bytes kept to be relayed as they came).
async function readResponseHead(conn: Deno.Conn): Promise<ResponseHead> {
  let raw: Uint8Array = new Uint8Array(0);
  const chunk = new Uint8Array(4096);
  let end = -1;
  while (end < 0) {
    if (raw.length > maxResponseHeadBytes) throw new ProxyError("response head too large");
    const n = await conn.read(chunk);
    if (n === null) throw new ProxyError("unexpected EOF");
    const from = Math.max(0, raw.length - 3);
    raw = concat(raw, chunk.subarray(0, n));
    end = indexOfCrlfCrlf(raw, from);
  }
  const lines = new TextDecoder().decode(raw.subarray(0, end)).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0]);
  if (!m) throw new ProxyError(`malformed HTTP response ${JSON.stringify(lines[0])}`);
  const headers = new Headers();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw new ProxyError(`malformed MIME header line: ${line}`);
    try {
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    } catch {
      throw new ProxyError(`malformed MIME header line: ${line}`);
    }
  }
  return { status: Number(m[1]), headers, raw, bodyStart: end + 4 };
}

// The rest of a refusal's body (by its Content-Length, else to the end), within Go's 10 s.
async function readErrorBody(
  conn: Deno.Conn,
  head: ResponseHead,
  clock: Clock,
): Promise<Uint8Array> {
  const length = Number(head.headers.get("content-length") ?? NaN);
  let have = head.raw.length - head.bodyStart;
  const parts: Uint8Array[] = [];
  const timer = clock.afterFunc(errorRelayTimeoutMs, () => abortConn(conn));
  try {
    const chunk = new Uint8Array(4096);
    while (!(have >= length) && have < maxResponseHeadBytes) {
      const n = await conn.read(chunk);
      if (n === null) break;
      parts.push(chunk.slice(0, n));
      have += n;
    }
  } catch {
    // cut off: relay what came
  } finally {
    timer.stop();
  }
  return parts.reduce((a, b) => concat(a, b), new Uint8Array(0));
}

/**
 * The upgrade request as Go's `Request.Write` sends the clone to the streaming server: the
 * location's path and query (the runtime's single-use token; the client's query stays behind),
 * the client's `Host`, its `User-Agent` (else Go's), `Content-Length: 0` on a POST, then the other
 * header lines sorted by name, repeated names kept as separate lines, and `X-Forwarded-For` with
 * the client's address appended.
 *
 * @example
 * ```ts
 * declare const req: Request;
 *
 * new TextDecoder().decode(upgradeRequestBytes(req, new URL("http://127.0.0.1:4000/exec/tok")));
 * // "POST /exec/tok HTTP/1.1\r\nHost: …"
 * ```
 */
export function upgradeRequestBytes(req: Request, location: URL): Uint8Array {
  const lines: Array<[string, string]> = requestHeaderLines(req) ??
    [...req.headers].map(([name, value]) => [name, value]);
  let host = "";
  let userAgent = "Go-http-client/1.1";
  const forwarded: string[] = [];
  const rest: Array<[string, string]> = [];
  for (const [name, value] of lines) {
    const key = canonicalHeaderKey(name);
    if (key === "Host") host = value;
    else if (key === "User-Agent") userAgent = value;
    else if (key === "X-Forwarded-For") forwarded.push(value);
    else if (key !== "Content-Length" && key !== "Transfer-Encoding" && key !== "Trailer") {
      rest.push([key, value]);
    }
  }
  const remote = requestRemoteAddr(req);
  if (remote?.transport === "tcp") forwarded.push(remote.hostname);
  if (forwarded.length > 0) rest.push(["X-Forwarded-For", forwarded.join(", ")]);
  // Go writes header names in sorted order; a name's values keep theirs (a stable sort).
  rest.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out = [`${req.method} ${location.pathname}${location.search} HTTP/1.1`];
  out.push(`Host: ${host || location.host}`);
  out.push(`User-Agent: ${userAgent}`);
  if (req.method === "POST" || req.method === "PUT" || req.method === "PATCH") {
    out.push("Content-Length: 0");
  }
  for (const [key, value] of rest) out.push(`${key}: ${value}`);
  return new TextEncoder().encode(out.join("\r\n") + "\r\n\r\n");
}

/**
 * Go's `CanonicalHeaderKey`: each dash-separated word capitalised (`x-stream-protocol-version` →
 * `X-Stream-Protocol-Version`).
 *
 * @example
 * ```ts
 * canonicalHeaderKey("sec-websocket-protocol"); // "Sec-Websocket-Protocol"
 * ```
 */
export function canonicalHeaderKey(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash, c) => dash + c.toUpperCase());
}

// apimachinery's DialURL without a transport: plain TCP for http, TLS for https.
async function dialURL(location: URL): Promise<Deno.Conn> {
  const hostname = location.hostname.replace(/^\[|\]$/g, "");
  if (location.protocol === "http:") {
    return await Deno.connect({ hostname, port: Number(location.port || 80) });
  }
  if (location.protocol === "https:") {
    return await Deno.connectTls({ hostname, port: Number(location.port || 443) });
  }
  throw new ProxyError(`unknown scheme: ${location.protocol.replace(/:$/, "")}`);
}

// Go's net.OpError text for a failed dial: `dial tcp 127.0.0.1:1: connect: connection refused`.
function dialErrorText(location: URL, e: unknown): string {
  if (e instanceof ProxyError) return e.message;
  const addr = location.host;
  if (e instanceof Deno.errors.ConnectionRefused) {
    return `dial tcp ${addr}: connect: connection refused`;
  }
  return `dial tcp ${addr}: ${e instanceof Error ? e.message : String(e)}`;
}

// Go's listener and dialer turn keep-alive on (15 s): a peer that vanished is noticed.
function setKeepAlive(conn: Deno.Conn): void {
  const c = conn as Deno.Conn & { setKeepAlive?: (on: boolean, delayMs?: number) => void };
  try {
    c.setKeepAlive?.(true, keepAlivePeriodMs);
  } catch {
    // not a TCP connection
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function indexOfCrlfCrlf(bytes: Uint8Array, from: number): number {
  for (let i = from; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}
