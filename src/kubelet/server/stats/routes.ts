/**
 * The stats and metrics paths both ports serve: `/stats/summary`, `/metrics` (kubelet's own
 * metrics), `/metrics/resource` (what metrics-server reads); and the paths each port refuses
 * (debugging handlers) plus `/configz` on the secure port. `/metrics/cadvisor` is not served: it
 * answers 404 as any unknown path (see docs/kubelet_server.md).
 * Mirrors the stats and metrics part of kubelet's pkg/kubelet/server/server.go
 * (`InstallAuthNotRequiredHandlers`, `InstallAuthRequiredHandlers`).
 * @module
 */
import { join } from "node:path";
import type { PodStatus } from "../../../api/core/v1/mod.ts";
import type { Clock } from "../../../util/clock.ts";
import type { RuntimeService } from "../../../cri_client/runtime_service.ts";
import { newKubeletMetrics } from "../../metrics/metrics.ts";
import {
  collectResourceMetrics,
  readNodeStats,
} from "../../metrics/collectors/resource_metrics.ts";
import {
  configz,
  configzPath,
  debuggingDisabled,
  disabledEndpoint,
} from "../debugging_handlers.ts";
import { CRIStatsProvider } from "./cri_stats_provider.ts";
import { handleSummary, statsPath } from "./handler.ts";
import { SummaryProvider } from "./summary.ts";

/** kubelet's metrics path. */
export const metricsPath = "/metrics";

/** kubelet's resource metrics path (what metrics-server reads). */
export const resourceMetricsPath = "/metrics/resource";

/** What the routes read (a part of the server's source). */
export interface StatsSource {
  /** The pods with their status (the running containers' start times). */
  pods(): { status: PodStatus }[];
  nodeName?: string;
  runtime?:
    & Pick<RuntimeService, "listPodSandbox" | "listContainers" | "podSandboxStatus">
    & Partial<Pick<RuntimeService, "listContainerStats">>;
  clock?: Clock;
}

/** Options of {@linkcode newStatsRoutes}. */
export interface StatsRoutesOptions {
  /** The read-only port (debugging paths refused) or the secure port (`/configz` served). */
  readOnly: boolean;
  /** The agent's root folder: pod logs and volumes are under `<rootDir>/pods`. */
  rootDir?: string;
  /** The effective configuration `/configz` shows (secure port only). */
  configz?: () => Record<string, unknown>;
  /** The /proc to read (tests). */
  procDir?: string;
}

/**
 * The routes of one source: a function answering the paths above, or undefined for others.
 *
 * @example
 * ```ts
 * import type { Kubelet } from "../../kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 *
 * const route = newStatsRoutes(kubelet, { readOnly: false, rootDir: "/var/lib/probelet" });
 * const res = await route(new Request("https://x/stats/summary"));
 * ```
 */
export function newStatsRoutes(
  source: StatsSource,
  options: StatsRoutesOptions,
): (req: Request) => Promise<Response> | undefined {
  const now = () => source.clock?.now() ?? Date.now();
  const runtime = source.runtime;
  const rootDir = options.rootDir;
  const summary = runtime && rootDir
    ? new SummaryProvider(
      new CRIStatsProvider(runtime, {
        podLogsDir: join(rootDir, "pods"),
        podsDir: join(rootDir, "pods"),
        // The kubelet's pod folders (`<rootDir>/pod-dirs/<uid>`) hold the managed /etc/hosts.
        podEtcHostsPath: (uid) => join(rootDir, "pod-dirs", uid, "etc-hosts"),
        rootFsPath: rootDir,
        procDir: options.procDir,
        now,
      }),
      { nodeName: source.nodeName ?? "", procDir: options.procDir, now },
    )
    : undefined;
  const metrics = newKubeletMetrics({ nodeName: source.nodeName ?? "", runtime });
  return (req) => {
    const url = new URL(req.url);
    const path = url.pathname;
    if (path.startsWith(statsPath)) {
      if (!summary) return Promise.resolve(text(503, "starting\n"));
      return handleSummary(req, summary);
    }
    if (path === metricsPath) {
      return metrics.metrics().then((body) =>
        new Response(body, { headers: { "content-type": metrics.contentType } })
      );
    }
    if (path === resourceMetricsPath) {
      return collectResourceMetrics({
        nodeStats: () => readNodeStats(now(), options.procDir),
        listContainerStats: runtime?.listContainerStats
          ? () => runtime.listContainerStats!()
          : undefined,
        containerStartTimes: () => runningStartTimes(source.pods()),
      }).then((body) =>
        new Response(body, {
          headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
        })
      );
    }
    if (options.readOnly) {
      const refused = debuggingDisabled(url);
      return refused ? Promise.resolve(refused) : undefined;
    }
    return refusedOrConfigz(url, options);
  };
}

function refusedOrConfigz(url: URL, options: StatsRoutesOptions): Promise<Response> | undefined {
  const refused = disabledEndpoint(url);
  if (refused) return Promise.resolve(refused);
  if (url.pathname === configzPath && options.configz) {
    return Promise.resolve(configz(options.configz()));
  }
  return undefined;
}

// Start times of running containers by runtime ID, from the pods' statuses.
function runningStartTimes(pods: { status: PodStatus }[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of pods) {
    for (const cs of pod.status.containerStatuses ?? []) {
      const startedAt = cs.state?.running?.startedAt;
      const id = cs.containerID?.slice(cs.containerID.indexOf("://") + 3);
      if (startedAt && id) out.set(id, Date.parse(startedAt));
    }
  }
  return out;
}

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
