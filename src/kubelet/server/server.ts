/**
 * The agent's read-only HTTP endpoints: `/healthz`, `/pods` (pods with their status as a PodList),
 * `/events` (the bounded event list) and `/metrics/probes` (the prober's Prometheus registry).
 * Mirrors the read-only handlers of kubelet's pkg/kubelet/server/server.go.
 * @module
 */
import type { Registry } from "prom-client";
import type { PodWithStatus } from "../kubelet.ts";
import type { StoredEvent } from "../kubelet_events.ts";
import * as log from "../../util/log.ts";

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

/**
 * Serves the endpoints on `hostname:port` (port 0 picks a free one).
 *
 * @example
 * ```ts
 * const server = await serve(kubelet, { hostname: "127.0.0.1", port: 10255 });
 * await server.shutdown();
 * ```
 */
export function serve(
  source: ServerSource,
  options: { hostname: string; port: number },
): Promise<KubeletServer> {
  const handler = newHandler(source);
  return new Promise((resolve, reject) => {
    try {
      const server = Deno.serve({
        hostname: options.hostname,
        port: options.port,
        onListen: (addr) => {
          log.info("Starting to listen", { address: addr.hostname, port: addr.port });
          resolve({
            port: addr.port,
            hostname: addr.hostname,
            shutdown: () => server.shutdown(),
          });
        },
        onError: (e) => {
          log.error(e, "HTTP handler failed");
          return new Response("internal error\n", { status: 500 });
        },
      }, handler);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      reject(new Error(`listen tcp ${options.hostname}:${options.port}: ${why}`, { cause: e }));
    }
  });
}
