/**
 * The agent's read-only HTTP endpoints: `/healthz`, `/pods` (pods with their status as a PodList),
 * `/events` (the bounded event list) and `/metrics/probes` (the prober's Prometheus registry).
 * Mirrors the read-only handlers of kubelet's pkg/kubelet/server/server.go.
 * @module
 */
import type { Registry } from "prom-client";
import type { PodWithStatus } from "../kubelet.ts";
import type { StoredEvent } from "../kubelet_events.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { openFileLimit } from "../../util/rlimit.ts";
import {
  defaultIdleTimeoutMs,
  defaultReadHeaderTimeoutMs,
  HttpServer,
  type HttpServerStats,
} from "./http_server.ts";

/** What the server reads; the `Kubelet` provides all of it. */
export interface ServerSource {
  pods(): PodWithStatus[];
  events: { list(filter?: { podUID?: string }): StoredEvent[] };
  metrics: { registry: Registry };
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
 * const handler = newHandler(kubelet);
 * await (await handler(new Request("http://x/healthz"))).text(); // "ok"
 * ```
 */
export function newHandler(source: ServerSource): (req: Request) => Promise<Response> {
  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
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

function json(value: unknown): Response {
  return new Response(JSON.stringify(value, null, 2) + "\n", {
    headers: { "content-type": "application/json" },
  });
}

/** Options of {@linkcode serve}. */
export interface ServeOptions {
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

/**
 * Binds `hostname:port` at once and serves the endpoints of `source`. The source may be given
 * later ({@linkcode KubeletServer.setSource}): the agent binds its port before it touches any
 * state, so that a second agent fails before cleaning anything up. Until then `/healthz` answers
 * and the other paths answer 503.
 *
 * @example
 * ```ts
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
  let handler = source ? newHandler(source) : undefined;
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
    setSource: (s) => handler = newHandler(s),
    shutdown: () => server.shutdown(),
  };
}
