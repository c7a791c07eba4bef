/**
 * A CRI runtime's streaming server: `getExec`/`getAttach`/`getPortForward` store a CRI request under
 * a single-use token and return its URL (`http://127.0.0.1:<port>/exec/<token>`); the client (the
 * agent's `/exec` handler, proxying kube-apiserver's upgraded connection) then upgrades a request
 * to that URL to SPDY/3.1 and the runtime runs the command or forwards the port over its streams.
 *
 * Mirrors `k8s.io/cri-streaming/pkg/streaming/server.go` (and, for the upgrade,
 * apimachinery's `httpstream.Handshake` and `httpstream/spdy`'s `UpgradeResponse`). The HTTP side
 * is a small HTTP/1.1 reader of its own: every useful request is an upgrade, which `Deno.serve`
 * cannot hand over as a raw connection. WebSocket clients are not served (kube-apiserver talks
 * SPDY to kubelets and runtimes; it translates kubectl's WebSocket itself).
 * @module
 */
import { type Clock, RealClock } from "../util/clock.ts";
import { GrpcStatus } from "../util/grpc_codes.ts";
import * as klog from "../util/log.ts";
import { abortConn, writeAll } from "../util/socket.ts";
import {
  type PortForwarder,
  PortForwardHandler,
  supportedPortForwardProtocols,
} from "./portforward.ts";
import {
  type CommandStreams,
  defaultStreamCreationTimeoutMs,
  expectedStreams,
  serveCommand,
  StreamCollector,
  type StreamOptions,
  supportedStreamingProtocols,
} from "./remotecommand.ts";
import type {
  AttachRequest,
  ExecRequest,
  PortForwardRequest,
  StreamingResponse,
} from "../cri_client/api.ts";
import { RequestCache, StreamingError } from "./request_cache.ts";
import { SpdyConnection, type SpdyStream } from "./spdy/connection.ts";
import { statusText } from "../util/http_status.ts";

// The CRI requests and answer it serves are the CRI API's (cri-streaming imports cri-api too).
export type {
  AttachRequest,
  ExecRequest,
  PortForwardRequest,
  StreamingResponse,
} from "../cri_client/api.ts";

/**
 * What a runtime does behind the streaming server (cri-streaming's `Runtime`). `exec` and `attach`
 * resolve when the command is over and reject with `CodeExitError` for a non-zero exit; they should
 * close `stdout`/`stderr` when the output ends. `portForward` copies between `stream` and the port.
 */
export interface StreamingRuntime {
  exec(containerId: string, cmd: string[], streams: CommandStreams): Promise<void>;
  attach(containerId: string, streams: CommandStreams): Promise<void>;
  portForward(podSandboxId: string, port: number, stream: SpdyStream): Promise<void>;
}

/** Options of {@linkcode StreamingServer} (cri-streaming's `Config`). */
export interface StreamingServerOptions {
  /** Listen address; 127.0.0.1 as containerd's default `stream_server_address`. */
  hostname?: string;
  /** Listen port; 0 picks a free one. */
  port?: number;
  /** Connections idle this long are closed (`StreamIdleTimeout`, 4 h). */
  streamIdleTimeoutMs?: number;
  /** How long a client has to open its streams (`StreamCreationTimeout`, 30 s). */
  streamCreationTimeoutMs?: number;
  /** How long a request head may take to arrive. */
  readHeaderTimeoutMs?: number;
  /** For tokens and timeouts. */
  clock?: Clock;
}

/** cri-streaming's `DefaultConfig.StreamIdleTimeout`. */
export const defaultStreamIdleTimeoutMs = 4 * 60 * 60 * 1000;
/** Largest request head read. */
export const maxRequestHeadBytes = 64 * 1024;

type CachedRequest =
  | { kind: "exec"; req: ExecRequest }
  | { kind: "attach"; req: AttachRequest }
  | { kind: "portforward"; req: PortForwardRequest };

/** A parsed HTTP/1.1 request head. */
export interface RequestHead {
  method: string;
  path: string;
  /** Header values by lowercase name, in arrival order. */
  headers: Map<string, string[]>;
}

/**
 * The streaming server.
 *
 * @example
 * ```ts
 * declare const runtime: StreamingRuntime;
 * const containerId = "0123abcd";
 * const server = new StreamingServer(runtime);
 * await server.start();
 * const { url } = server.getExec({
 *   containerId,
 *   cmd: ["sh"],
 *   stdin: true,
 *   stdout: true,
 *   stderr: true,
 *   tty: false,
 * });
 * // ... a client upgrades a POST to `url` ...
 * await server.stop();
 * ```
 */
export class StreamingServer {
  #runtime: StreamingRuntime;
  #clock: Clock;
  #cache: RequestCache<CachedRequest>;
  #options: Required<Omit<StreamingServerOptions, "clock">>;
  #listener: Deno.Listener | undefined;
  #conns = new Set<Deno.Conn>();
  #spdy = new Set<SpdyConnection>();
  #serving: Promise<void> | undefined;
  #baseUrl = "";

  /** A server for `runtime`; nothing listens until {@linkcode start}. */
  constructor(runtime: StreamingRuntime, options: StreamingServerOptions = {}) {
    this.#runtime = runtime;
    this.#clock = options.clock ?? new RealClock();
    this.#cache = new RequestCache({ clock: this.#clock });
    this.#options = {
      hostname: options.hostname ?? "127.0.0.1",
      port: options.port ?? 0,
      streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? defaultStreamIdleTimeoutMs,
      streamCreationTimeoutMs: options.streamCreationTimeoutMs ?? defaultStreamCreationTimeoutMs,
      readHeaderTimeoutMs: options.readHeaderTimeoutMs ?? 10_000,
    };
  }

  /** Where the server listens (`http://127.0.0.1:<port>/`); empty before `start`. */
  get baseUrl(): string {
    return this.#baseUrl;
  }

  /** Listens and serves in the background. */
  start(): Promise<void> {
    if (this.#listener) return Promise.resolve();
    const listener = Deno.listen({ hostname: this.#options.hostname, port: this.#options.port });
    this.#listener = listener;
    const addr = listener.addr as Deno.NetAddr;
    const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
    this.#baseUrl = `http://${host}:${addr.port}/`;
    this.#serving = this.#acceptLoop(listener);
    return Promise.resolve();
  }

  /** Stops listening and closes every connection (`Stop`). */
  async stop(): Promise<void> {
    const listener = this.#listener;
    if (!listener) return;
    this.#listener = undefined;
    try {
      listener.close();
    } catch {
      // closed already
    }
    for (const s of this.#spdy) s.close();
    for (const c of this.#conns) abortConn(c);
    await this.#serving;
  }

  /** Validates an exec request and returns its URL (`GetExec`). */
  getExec(req: ExecRequest): StreamingResponse {
    if (req.containerId === "") invalid("missing required container_id");
    if (req.tty && req.stderr) invalid("tty and stderr cannot both be true");
    if (!req.stdin && !req.stdout && !req.stderr) {
      invalid("one of stdin, stdout, or stderr must be set");
    }
    return { url: this.#buildUrl("exec", this.#cache.insert({ kind: "exec", req })) };
  }

  /** Validates an attach request and returns its URL (`GetAttach`). */
  getAttach(req: AttachRequest): StreamingResponse {
    if (req.containerId === "") invalid("missing required container_id");
    if (req.tty && req.stderr) invalid("tty and stderr cannot both be true");
    if (!req.stdin && !req.stdout && !req.stderr) {
      invalid("one of stdin, stdout, and stderr must be set");
    }
    return { url: this.#buildUrl("attach", this.#cache.insert({ kind: "attach", req })) };
  }

  /** Validates a port-forward request and returns its URL (`GetPortForward`). */
  getPortForward(req: PortForwardRequest): StreamingResponse {
    if (req.podSandboxId === "") invalid("missing required pod_sandbox_id");
    return {
      url: this.#buildUrl("portforward", this.#cache.insert({ kind: "portforward", req })),
    };
  }

  #buildUrl(method: string, token: string): string {
    if (!this.#baseUrl) throw new Error("streaming server is not started");
    return `${this.#baseUrl}${method}/${token}`;
  }

  async #acceptLoop(listener: Deno.Listener): Promise<void> {
    const handlers = new Set<Promise<void>>();
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        if (this.#listener !== listener) break;
        continue;
      }
      const h = this.#serveConn(conn).finally(() => handlers.delete(h));
      handlers.add(h);
    }
    await Promise.all(handlers);
  }

  async #serveConn(conn: Deno.Conn): Promise<void> {
    this.#conns.add(conn);
    try {
      const timer = this.#clock.afterFunc(this.#options.readHeaderTimeoutMs, () => abortConn(conn));
      let head: { head: RequestHead; rest: Uint8Array } | undefined;
      try {
        head = await readRequestHead(conn);
      } finally {
        timer.stop();
      }
      if (!head) {
        await writeError(conn, 400, "400 Bad Request");
        return;
      }
      await this.#route(conn, head.head, head.rest);
    } catch (err) {
      klog.V(4).info("Streaming connection failed", { err: (err as Error).message });
    } finally {
      this.#conns.delete(conn);
      abortConn(conn);
    }
  }

  async #route(conn: Deno.Conn, head: RequestHead, rest: Uint8Array): Promise<void> {
    const m = /^\/(exec|attach|portforward)\/([^/]+)$/.exec(head.path);
    if (!m) return await writeError(conn, 404, "404 page not found");
    if (head.method !== "GET" && head.method !== "POST") {
      return await writeError(conn, 405, "405: Method Not Allowed");
    }
    const cached = this.#cache.consume(m[2]);
    if (!cached || cached.kind !== m[1]) return await writeError(conn, 404, "404 page not found");
    if (isWebSocketRequest(head)) {
      return await writeError(conn, 400, "WebSocket streaming is not supported by this server");
    }
    const protocols = cached.kind === "portforward"
      ? supportedPortForwardProtocols
      : supportedStreamingProtocols;
    const protocol = await handshake(conn, head, protocols);
    if (protocol === undefined) return;
    if (!(await upgradeResponse(conn, head, protocol))) return;
    if (cached.kind === "portforward") {
      await this.#servePortForward(conn, rest, cached.req);
    } else {
      await this.#serveCommand(conn, rest, protocol, cached);
    }
  }

  async #serveCommand(
    conn: Deno.Conn,
    initial: Uint8Array,
    protocol: string,
    cached: Extract<CachedRequest, { kind: "exec" | "attach" }>,
  ): Promise<void> {
    const opts: StreamOptions = {
      stdin: cached.req.stdin,
      stdout: cached.req.stdout,
      stderr: cached.req.stderr,
      tty: cached.req.tty,
    };
    const collector = new StreamCollector(protocol, expectedStreams(opts, protocol), {
      clock: this.#clock,
      timeoutMs: this.#options.streamCreationTimeoutMs,
    });
    const spdy = new SpdyConnection(conn, {
      initial,
      clock: this.#clock,
      idleTimeoutMs: this.#options.streamIdleTimeoutMs,
      onStream: (stream, replySent) => collector.add(stream, replySent),
    });
    this.#spdy.add(spdy);
    const serving = spdy.serve();
    try {
      let ctx;
      try {
        ctx = await Promise.race([collector.ready, spdy.closed.then(() => undefined)]);
      } catch (err) {
        klog.error(err, "Streams not created");
      }
      if (!ctx) {
        await spdy.close();
        return;
      }
      const run = cached.kind === "exec"
        ? (s: CommandStreams) => this.#runtime.exec(cached.req.containerId, cached.req.cmd, s)
        : (s: CommandStreams) => this.#runtime.attach(cached.req.containerId, s);
      await serveCommand(spdy, ctx, opts, cached.kind, run);
    } finally {
      await serving;
      this.#spdy.delete(spdy);
    }
  }

  async #servePortForward(
    conn: Deno.Conn,
    initial: Uint8Array,
    req: PortForwardRequest,
  ): Promise<void> {
    const forward: PortForwarder = (port, stream) =>
      this.#runtime.portForward(req.podSandboxId, port, stream);
    const handler = new PortForwardHandler(forward, {
      clock: this.#clock,
      streamCreationTimeoutMs: this.#options.streamCreationTimeoutMs,
      podSandboxId: req.podSandboxId,
    });
    const spdy = new SpdyConnection(conn, {
      initial,
      clock: this.#clock,
      idleTimeoutMs: this.#options.streamIdleTimeoutMs,
      onStream: (stream, replySent) => handler.onStream(stream, replySent),
    });
    handler.connection = spdy;
    this.#spdy.add(spdy);
    try {
      await spdy.serve();
    } finally {
      this.#spdy.delete(spdy);
    }
  }
}

function invalid(desc: string): never {
  throw new StreamingError(GrpcStatus.InvalidArgument, desc);
}

const crlf2 = new TextEncoder().encode("\r\n\r\n");

function indexOfHeadEnd(buf: Uint8Array, from: number): number {
  outer: for (let i = Math.max(0, from - 3); i + 4 <= buf.length; i++) {
    for (let j = 0; j < 4; j++) if (buf[i + j] !== crlf2[j]) continue outer;
    return i;
  }
  return -1;
}

/**
 * Reads an HTTP/1.1 request head from `conn`; `undefined` when the connection ended first or the
 * head is malformed or larger than {@linkcode maxRequestHeadBytes}. `rest` is what followed it.
 */
export async function readRequestHead(
  conn: Deno.Conn,
): Promise<{ head: RequestHead; rest: Uint8Array } | undefined> {
  let buf = new Uint8Array(0);
  const chunk = new Uint8Array(16 * 1024);
  for (;;) {
    const end = indexOfHeadEnd(buf, 0);
    if (end >= 0) {
      const head = parseRequestHead(new TextDecoder().decode(buf.subarray(0, end)));
      return head ? { head, rest: buf.slice(end + 4) } : undefined;
    }
    if (buf.length > maxRequestHeadBytes) return undefined;
    const n = await conn.read(chunk);
    if (n === null) return undefined;
    const next = new Uint8Array(buf.length + n);
    next.set(buf);
    next.set(chunk.subarray(0, n), buf.length);
    buf = next;
  }
}

function parseRequestHead(text: string): RequestHead | undefined {
  const lines = text.split("\r\n");
  const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0]);
  if (!m) return undefined;
  const headers = new Map<string, string[]>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "host") continue; // Go keeps it in Request.Host, not Header
    headers.set(name, [...(headers.get(name) ?? []), value]);
  }
  const path = m[2].split("?")[0];
  return { method: m[1], path, headers };
}

function isWebSocketRequest(head: RequestHead): boolean {
  const connection = (head.headers.get("connection")?.[0] ?? "").toLowerCase();
  const upgrade = (head.headers.get("upgrade")?.[0] ?? "").toLowerCase();
  return connection.includes("upgrade") && upgrade === "websocket";
}

// Go's http.Error: text/plain, nosniff, the message and a newline; then the connection closes.
async function writeError(
  conn: Deno.Conn,
  code: number,
  message: string,
  extra: [string, string][] = [],
): Promise<void> {
  const body = new TextEncoder().encode(`${message}\n`);
  const lines = [
    `HTTP/1.1 ${code} ${statusText(code)}`,
    ...extra.map(([k, v]) => `${k}: ${v}`),
    "Content-Type: text/plain; charset=utf-8",
    "X-Content-Type-Options: nosniff",
    `Content-Length: ${body.length}`,
    "Connection: close",
  ];
  const head = new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n");
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  await writeAll(conn, out).catch(() => {});
}

// Go's %v of a []string.
function goList(values: string[]): string {
  return `[${values.join(" ")}]`;
}

/**
 * Negotiates the subprotocol (apimachinery's `httpstream.Handshake`): the first of the client's
 * `X-Stream-Protocol-Version` values (comma-separated lists allowed) that the server supports.
 * Answers the failure itself and returns `undefined`.
 */
export async function handshake(
  conn: Deno.Conn,
  head: RequestHead,
  serverProtocols: string[],
): Promise<string | undefined> {
  const values = head.headers.get("x-stream-protocol-version");
  if (values === undefined) {
    await writeError(
      conn,
      400,
      `unable to upgrade: header X-Stream-Protocol-Version does not exist in request with ${head.headers.size} headers`,
    );
    return undefined;
  }
  const clientProtocols = values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) =>
    v !== ""
  );
  if (clientProtocols.length === 0) {
    await writeError(
      conn,
      400,
      `unable to upgrade: header X-Stream-Protocol-Version contains ${
        goList(values)
      }, but no valid protocols`,
    );
    return undefined;
  }
  const negotiated = clientProtocols.find((p) => serverProtocols.includes(p));
  if (negotiated === undefined) {
    await writeError(
      conn,
      403,
      `unable to upgrade: unable to negotiate protocol: client supports ${
        goList(clientProtocols)
      }, server accepts ${goList(serverProtocols)}`,
      serverProtocols.map((p) => ["X-Accepted-Stream-Protocol-Versions", p]),
    );
    return undefined;
  }
  return negotiated;
}

// Go's http.CanonicalHeaderKey.
function canonicalHeaderKey(name: string): string {
  return name.split("-").map((w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()).join(
    "-",
  );
}

/**
 * Answers 101 Switching Protocols to SPDY/3.1 (`UpgradeResponse`), or 400 when the request does
 * not ask for it; true when upgraded.
 */
export async function upgradeResponse(
  conn: Deno.Conn,
  head: RequestHead,
  protocol: string,
): Promise<boolean> {
  const connection = (head.headers.get("connection")?.[0] ?? "").toLowerCase();
  const upgrade = (head.headers.get("upgrade")?.[0] ?? "").toLowerCase();
  if (!connection.includes("upgrade") || !upgrade.includes("spdy/3.1")) {
    // Go prints the request's headers with %#v.
    const entries = [...head.headers].map(([k, v]) => [canonicalHeaderKey(k), v] as const)
      .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
      .map(([k, v]) =>
        `${JSON.stringify(k)}:[]string{${v.map((x) => JSON.stringify(x)).join(", ")}}`
      );
    await writeError(
      conn,
      400,
      `unable to upgrade: missing upgrade headers in request: http.Header{${entries.join(", ")}}`,
    );
    return false;
  }
  const response = [
    "HTTP/1.1 101 Switching Protocols",
    "Connection: Upgrade",
    "Upgrade: SPDY/3.1",
    `X-Stream-Protocol-Version: ${protocol}`,
    `Date: ${new Date().toUTCString()}`,
  ].join("\r\n") + "\r\n\r\n";
  await writeAll(conn, new TextEncoder().encode(response));
  return true;
}
