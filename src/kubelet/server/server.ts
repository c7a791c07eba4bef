/**
 * The agent's HTTP endpoints. The read-only port (`--read-only-port`, plain HTTP, no auth):
 * `/healthz`, `/pods` (pods with their status as a PodList), `/events` (the bounded event list) and
 * `/metrics/probes` (the prober's Prometheus registry). The secure port (`--port`, TLS, kubelet's
 * authentication and authorization): the same paths, `/containerLogs/{ns}/{pod}/{container}`, and
 * the streaming routes of streaming.ts (`/exec`, `/attach`, `/portForward`, `/run`).
 * Both share {@linkcode HttpServer}'s connection handling.
 * Mirrors kubelet's pkg/kubelet/server/server.go (`ListenAndServeKubeletServer`,
 * `ListenAndServeKubeletReadOnlyServer`, `getContainerLogs`).
 * @module
 */
import type { Registry } from "../../util/prometheus/mod.ts";
import type { Pod, PodStatus } from "../../api/core/v1/mod.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { openFileLimit } from "../../util/rlimit.ts";
import {
  defaultIdleTimeoutMs,
  defaultReadHeaderTimeoutMs,
  HttpServer,
  type HttpServerStats,
  streamingResponse,
} from "./http_server.ts";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import type { PodLogOptions } from "../../cri_client/logs/logs.ts";
import { getContainerLogs } from "../kuberuntime/kuberuntime_logs.ts";
import { validateContainerLogStatus } from "../kubelet_pods.ts";
import { type AuthInterface, withAuth } from "./auth.ts";
import { newStatsRoutes, type StatsSource } from "./stats/routes.ts";
import { hasPeerCertificates, listenTls, type ServingCertificate } from "./tls_listener.ts";
import type { TlsVersionName } from "../../util/flag/ciphersuites_flag.ts";
import { type StreamingHost, streamingRoute } from "./streaming.ts";

/** A pod with its latest API status, as the host lists it (the `Kubelet`'s `PodWithStatus`). */
export interface HostPod extends Pod {
  status: PodStatus;
}

/**
 * An event as the host lists it (the `Kubelet`'s `StoredEvent`): served at `/events` as it is,
 * without the two bookkeeping fields named here.
 */
export interface HostEvent {
  /** Epoch milliseconds of the latest occurrence (not served). */
  lastMs: number;
  /** Sequence number of the latest occurrence (not served). */
  seq: number;
}

/**
 * What the server reads, declared here so the server does not import the kubelet (Go's
 * `HostInterface` in server.go); the `Kubelet` provides all of it.
 */
export interface ServerSource extends StatsSource {
  /** The pods with their status (`/pods`). */
  pods(): HostPod[];
  /** The bounded event list (`/events`). */
  events: { list(filter?: { podUID?: string }): HostEvent[] };
  metrics: { registry: Registry };
  /**
   * Where container logs are found (the secure port's `/containerLogs`), and what the stats
   * read (`/stats/summary`, `/metrics`, `/metrics/resource`).
   */
  runtime?:
    & Pick<
      RuntimeService,
      "containerStatus" | "listPodSandbox" | "listContainers" | "podSandboxStatus"
    >
    & Partial<Pick<RuntimeService, "listContainerStats">>;
  /** What `/exec`, `/attach`, `/portForward` and `/run` call (undefined while starting). */
  streaming?: StreamingHost;
  clock?: Clock;
}

/** What the handlers need besides the source: where the pods' files are, the configuration. */
export interface HandlerOptions {
  /** The agent's root folder (pod logs and volumes under `<rootDir>/pods`, for the stats). */
  rootDir?: string;
  /** The effective configuration `/configz` shows (secure port). */
  configz?: () => Record<string, unknown>;
}

/** A listening server. */
export interface KubeletServer {
  /** The port actually bound (useful with port 0). */
  port: number;
  hostname: string;
  /**
   * Connection counters (open, accepted, rejected or evicted at the limit, closed idle or at the
   * header or write timeout, accept errors).
   */
  stats: HttpServerStats;
  /** Starts answering from `source` (see {@linkcode serve}). */
  setSource(source: ServerSource): void;
  /** Stops listening and closes open connections. */
  shutdown(): Promise<void>;
}

/** kubelet's probe metrics path. */
export const proberMetricsPath = "/metrics/probes";

/**
 * Builds the request handler (exported for tests that call it without a socket).
 *
 * @example
 * ```ts
 * import type { Kubelet } from "../kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 *
 * const handler = newHandler(kubelet);
 * await (await handler(new Request("http://x/healthz"))).text(); // "ok"
 * ```
 */
export function newHandler(
  source: ServerSource,
  options: HandlerOptions & { readOnly?: boolean } = {},
): (req: Request) => Promise<Response> {
  const statsRoutes = newStatsRoutes(source, { ...options, readOnly: options.readOnly ?? true });
  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const routed = statsRoutes(req);
    if (routed) return routed;
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response("method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    switch (url.pathname) {
      case "/healthz":
        return new Response("ok", { headers: { "content-type": "text/plain; charset=utf-8" } });
      case "/pods":
      case "/pods/":
        return json({ kind: "PodList", apiVersion: "v1", metadata: {}, items: source.pods() });
      case "/events": {
        const podUID = url.searchParams.get("podUID") ?? undefined;
        const items = source.events.list({ podUID }).map(({ lastMs: _l, seq: _s, ...e }) => e);
        return json({ kind: "EventList", apiVersion: "v1", items });
      }
      case proberMetricsPath: {
        const body = await source.metrics.registry.metrics();
        return new Response(body, {
          headers: { "content-type": source.metrics.registry.contentType },
        });
      }
      default:
        return new Response("404 page not found\n", {
          status: 404,
          headers: { "content-type": "text/plain; charset=utf-8" },
        });
    }
  };
}

/** kubelet's resource metrics path (what metrics-server reads). */
export { resourceMetricsPath } from "./stats/routes.ts";

/** kubelet's container logs path prefix. */
export const containerLogsPath = "/containerLogs/";

/**
 * The secure port's handler: the read-only endpoints plus `/containerLogs` (exported for tests
 * that call it without a socket; authentication is {@linkcode withAuth}'s).
 *
 * @example
 * ```ts
 * import type { Kubelet } from "../kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 *
 * const handler = newSecureHandler(kubelet);
 * await handler(new Request("https://x/containerLogs/default/web/app?tailLines=10"));
 * ```
 */
export function newSecureHandler(
  source: ServerSource,
  options: HandlerOptions = {},
): (req: Request) => Promise<Response> {
  const common = newHandler(source, { ...options, readOnly: false });
  return (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const streamed = streamingRoute(source.streaming, req, { clock: source.clock });
    if (streamed) return streamed;
    if (url.pathname.startsWith(containerLogsPath) && req.method === "GET") {
      return getContainerLogsResponse(source, url, req.signal);
    }
    return common(req);
  };
}

function errorString(status: number, text: string): Response {
  return new Response(text, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

const boolTrue = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const boolFalse = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/**
 * `v1.PodLogOptions` from the query (kubelet's `DecodeParameters` then `ValidatePodLogOptions`):
 * a string on a decode failure ("decode"), or on an invalid combination ("invalid").
 */
export function decodePodLogOptions(query: URLSearchParams): PodLogOptions | "decode" | "invalid" {
  const params = new URLSearchParams(query);
  // The old "tail" parameter; "all" is the same as none.
  const tail = params.get("tail");
  if (tail) {
    params.set("tailLines", tail);
    if (tail === "all") params.delete("tailLines");
  }
  const opts: PodLogOptions = {};
  for (const key of ["follow", "previous", "timestamps"] as const) {
    const v = params.get(key);
    if (v === null) continue;
    if (boolTrue.has(v)) opts[key] = true;
    else if (boolFalse.has(v)) opts[key] = false;
    else return "decode";
  }
  for (const key of ["sinceSeconds", "tailLines", "limitBytes"] as const) {
    const v = params.get(key);
    if (v === null) continue;
    if (!/^[+-]?\d+$/.test(v)) return "decode";
    opts[key] = Number(v);
  }
  const sinceTime = params.get("sinceTime");
  if (sinceTime !== null) {
    if (Number.isNaN(Date.parse(sinceTime)) || !/^\d{4}-\d{2}-\d{2}T/.test(sinceTime)) {
      return "decode";
    }
    opts.sinceTime = sinceTime;
  }
  const stream = params.get("stream");
  if (stream !== null) opts.stream = stream;
  if (opts.tailLines !== undefined && opts.tailLines < 0) return "invalid";
  if (opts.limitBytes !== undefined && opts.limitBytes < 1) return "invalid";
  if (opts.sinceSeconds !== undefined && opts.sinceSeconds < 1) return "invalid";
  if (opts.sinceSeconds !== undefined && opts.sinceTime !== undefined) return "invalid";
  if (opts.stream !== undefined && !["All", "Stdout", "Stderr"].includes(opts.stream)) {
    return "invalid";
  }
  if (opts.stream !== undefined && opts.stream !== "All" && opts.tailLines !== undefined) {
    return "invalid";
  }
  return opts;
}

// kubelet's getContainerLogs (server.go) with GetKubeletContainerLogs (kubelet_pods.go).
async function getContainerLogsResponse(
  source: ServerSource,
  url: URL,
  signal: AbortSignal,
): Promise<Response> {
  const [podNamespace = "", podID = "", containerName = ""] = url.pathname
    .slice(containerLogsPath.length).split("/").map(decodeURIComponent);
  if (podID === "") return errorString(400, `{"message": "Missing podID."}`);
  if (containerName === "") return errorString(400, `{"message": "Missing container name."}`);
  if (podNamespace === "") return errorString(400, `{"message": "Missing podNamespace."}`);
  const logOptions = decodePodLogOptions(url.searchParams);
  if (logOptions === "decode") return errorString(400, `{"message": "Unable to decode query."}`);
  if (logOptions === "invalid") return errorString(422, `{"message": "Invalid request."}`);
  const pod = source.pods().find((p) =>
    p.metadata.namespace === podNamespace && p.metadata.name === podID
  );
  if (!pod) return errorString(404, `pod "${podID}" does not exist`);
  const spec = [
    ...pod.spec.containers,
    ...(pod.spec.initContainers ?? []),
  ].find((c) => c.name === containerName);
  if (!spec) return errorString(404, `container "${containerName}" not found in pod "${podID}"`);
  if (!source.runtime || !source.clock) return errorString(503, "starting\n");
  let read: Awaited<ReturnType<typeof getContainerLogs>>;
  try {
    const id = validateContainerLogStatus(podID, pod.status, containerName, !!logOptions.previous);
    read = await getContainerLogs(source.runtime, id.slice(id.indexOf("://") + 3), id);
  } catch (e) {
    return errorString(400, e instanceof Error ? e.message : String(e));
  }
  // One body for both streams, as kubelet's flush writer; the unwanted stream is not read.
  const body = new TransformStream<Uint8Array, Uint8Array>();
  const writer = body.writable.getWriter();
  const ac = new AbortController();
  signal.addEventListener("abort", () => ac.abort(), { once: true });
  writer.closed.catch(() => ac.abort());
  // Lines are sent in batches of up to 32 KiB, and whatever is held back before a follow waits:
  // one chunk per line (Go's flushwriter) costs a TLS record and a write each.
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  const flush = async () => {
    if (heldBytes === 0) return;
    const out = new Uint8Array(heldBytes);
    let off = 0;
    for (const b of held) {
      out.set(b, off);
      off += b.length;
    }
    held = [];
    heldBytes = 0;
    await writer.write(out);
  };
  const sink = async (bytes: Uint8Array) => {
    // The reader hands over a fresh array per line: held as is.
    held.push(bytes);
    heldBytes += bytes.length;
    if (heldBytes >= 32 * 1024) await flush();
  };
  const stream = logOptions.stream ?? "All";
  const clock = source.clock;
  (async () => {
    try {
      await read(logOptions, {
        stdout: stream === "Stderr" ? undefined : sink,
        stderr: stream === "Stdout" ? undefined : sink,
        flush,
      }, { clock, signal: ac.signal });
      await flush();
    } catch (e) {
      // The status is sent already: the error ends the body, as go-restful's late WriteError.
      await flush().catch(() => {});
      await writer.write(new TextEncoder().encode(e instanceof Error ? e.message : String(e)))
        .catch(() => {});
    } finally {
      await writer.close().catch(() => {});
    }
  })();
  return streamingResponse(body.readable, {
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}

function json(value: unknown): Response {
  return new Response(JSON.stringify(value, null, 2) + "\n", {
    headers: { "content-type": "application/json" },
  });
}

/** Options of {@linkcode serve}. */
export interface ServeOptions extends HandlerOptions {
  hostname: string;
  /** Port to bind; 0 picks a free one. */
  port: number;
  /** Most connections at once (default: {@link defaultMaxConnections} of the descriptor limit). */
  maxConnections?: number;
  /** Idle connections are closed after this long (default 90 s, kubelet's `IdleTimeout`). */
  idleTimeoutMs?: number;
  /** A request head must arrive within this (default 10 s, Go's `ReadHeaderTimeout`). */
  readHeaderTimeoutMs?: number;
  /** Drives the server's timers (default: the wall clock). */
  clock?: Clock;
}

/**
 * The connection limit for a soft descriptor limit of `openFiles`: a quarter of it, between 16 and
 * 1024. The other three quarters stay for what the agent exists for: probe sockets, container
 * pipes and log files, runtime connections.
 *
 * @example
 * ```ts
 * defaultMaxConnections(256); // 64
 * defaultMaxConnections(1048576); // 1024
 * ```
 */
export function defaultMaxConnections(openFiles = openFileLimit()?.soft ?? 1024): number {
  return Math.max(16, Math.min(1024, Math.floor(openFiles / 4)));
}

/** Options of {@linkcode serveKubeletServer}. */
export interface SecureServeOptions extends ServeOptions {
  /**
   * The serving certificate; without one, handshakes fail until
   * {@linkcode SecureKubeletServer.setCertificate} gives one (a certificate still to be issued).
   */
  certificate?: ServingCertificate;
  /** `--tls-min-version` (default TLS 1.2). */
  minVersion?: TlsVersionName;
  /** Who may ask what. */
  auth: AuthInterface;
  /** Ask clients for a certificate (a client CA is configured). */
  requestClientCert: boolean;
}

/** The secure port's server, whose certificate can be replaced while it serves. */
export interface SecureKubeletServer extends KubeletServer {
  /** Serves `certificate` to new connections; undefined makes new handshakes fail. */
  setCertificate(certificate: ServingCertificate | undefined): void;
}

/**
 * kubelet's `ListenAndServeKubeletServer`: the secure port, TLS, every request authenticated and
 * authorized ({@linkcode withAuth}), on the same connection handling as the read-only port.
 *
 * @example
 * ```ts
 * import type { Kubelet } from "../kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 * declare const certPem: string;
 * declare const keyPem: string;
 * declare const auth: Parameters<typeof serveKubeletServer>[1]["auth"];
 *
 * const server = await serveKubeletServer(kubelet, { hostname: "0.0.0.0", port: 10250, certificate: { certPem, keyPem }, auth, requestClientCert: true });
 * ```
 */
export async function serveKubeletServer(
  source: ServerSource | undefined,
  options: SecureServeOptions,
): Promise<SecureKubeletServer> {
  let listener: Awaited<ReturnType<typeof listenTls>>;
  try {
    listener = await listenTls({
      hostname: options.hostname,
      port: options.port,
      certificate: options.certificate,
      requestCert: options.requestClientCert,
      minVersion: options.minVersion,
    });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`listen tcp ${options.hostname}:${options.port}: ${why}`, { cause: e });
  }
  let handler = source ? newSecureHandler(source, options) : undefined;
  const authed = withAuth(options.auth, ({ request }) => {
    if (handler) return handler(request);
    if (new URL(request.url).pathname === "/healthz") return new Response("ok");
    return new Response("starting\n", { status: 503 });
  });
  const maxConnections = options.maxConnections ?? defaultMaxConnections();
  const server = new HttpServer(listener, {
    handler: (request, conn) =>
      authed({
        request,
        peerCertificates: hasPeerCertificates(conn) ? conn.peerCertificates : [],
      }),
    maxConnections,
    idleTimeoutMs: options.idleTimeoutMs,
    readHeaderTimeoutMs: options.readHeaderTimeoutMs,
    clock: options.clock,
  });
  const addr = listener.addr as Deno.NetAddr;
  log.info("Starting to listen", { address: addr.hostname, port: addr.port });
  return {
    port: addr.port,
    hostname: addr.hostname,
    stats: server.stats,
    setSource: (s) => handler = newSecureHandler(s, options),
    setCertificate: (c) => listener.setCertificate(c),
    shutdown: () => server.shutdown(),
  };
}

/**
 * Binds `hostname:port` at once and serves the endpoints of `source`. The source may be given
 * later ({@linkcode KubeletServer.setSource}): the agent binds its port before it touches any
 * state, so that a second agent fails before cleaning anything up. Until then `/healthz` answers
 * and the other paths answer 503.
 *
 * @example
 * ```ts
 * import type { Kubelet } from "../kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 *
 * const server = serve(kubelet, { hostname: "127.0.0.1", port: 10255 });
 * await server.shutdown();
 * ```
 */
export function serve(source: ServerSource | undefined, options: ServeOptions): KubeletServer {
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname: options.hostname, port: options.port });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`listen tcp ${options.hostname}:${options.port}: ${why}`, { cause: e });
  }
  let handler = source ? newHandler(source, options) : undefined;
  const maxConnections = options.maxConnections ?? defaultMaxConnections();
  const server = new HttpServer(listener, {
    handler: (req) => {
      if (handler) return handler(req);
      if (new URL(req.url).pathname === "/healthz") return new Response("ok");
      return new Response("starting\n", { status: 503 });
    },
    maxConnections,
    idleTimeoutMs: options.idleTimeoutMs,
    readHeaderTimeoutMs: options.readHeaderTimeoutMs,
    clock: options.clock,
  });
  const addr = listener.addr;
  log.info("Starting to listen", {
    address: addr.hostname,
    port: addr.port,
    maxConnections,
    idleTimeout: `${(options.idleTimeoutMs ?? defaultIdleTimeoutMs) / 1000}s`,
    readHeaderTimeout: `${(options.readHeaderTimeoutMs ?? defaultReadHeaderTimeoutMs) / 1000}s`,
  });
  return {
    port: addr.port,
    hostname: addr.hostname,
    stats: server.stats,
    setSource: (s) => handler = newHandler(s, options),
    shutdown: () => server.shutdown(),
  };
}
