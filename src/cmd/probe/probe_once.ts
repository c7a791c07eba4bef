/**
 * `deno task probe`: runs a pod manifest's probes once against a given pod IP, with kubelet's
 * handlers and exact output texts, and reports each verdict with its output and duration.
 * Exec probes run on this machine (there is no container here).
 * @module
 */
import type { Pod, Probe } from "../../api/core/v1/mod.ts";
import type { ProbeOutcome } from "../../probe/probe.ts";
import { probeOf, type ProbeType } from "../../kubelet/prober/probe_type.ts";
import { newProber, type Prober } from "../../kubelet/prober/prober.ts";
import { HostCommandRunner } from "../../probe/exec/host_runner.ts";
import { FakeRecorder } from "../../kubelet/events/mod.ts";
import { probedContainers } from "../../kubelet/prober/prober_manager.ts";

/** Probe types in the order kubelet creates their workers. */
export const probeTypeOrder: readonly ProbeType[] = ["startup", "readiness", "liveness"];

/** One probe run by the one-shot command. */
export interface ProbeReport {
  pod: string;
  container: string;
  probeType: ProbeType;
  handler: "exec" | "httpGet" | "tcpSocket" | "grpc" | "none";
  result: ProbeOutcome["result"];
  output: string;
  error?: string;
  durationMs: number;
}

/** Which probes to run. */
export interface ProbeSelection {
  /** Only this container (regular or restartable init). */
  container?: string;
  /** Only this probe type. */
  probeType?: ProbeType;
  /** The pod IP HTTP, TCP and gRPC probes target unless the probe names a host. */
  podIP: string;
}

/**
 * Runs every selected probe of `pods` once, in order, and returns one report per probe.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pods: Pod[];
 * const reports = await probeOnce(pods, { podIP: "127.0.0.1" });
 * ```
 */
export async function probeOnce(
  pods: Pod[],
  selection: ProbeSelection,
  options: { prober?: Prober } = {},
): Promise<ProbeReport[]> {
  const prober = options.prober ?? newProber(new HostCommandRunner(), new FakeRecorder());
  const reports: ProbeReport[] = [];
  for (const pod of pods) {
    for (const container of probedContainers(pod)) {
      if (selection.container && container.name !== selection.container) continue;
      for (const probeType of probeTypeOrder) {
        if (selection.probeType && probeType !== selection.probeType) continue;
        const spec = probeOf(container, probeType);
        if (!spec) continue;
        const start = performance.now();
        const outcome = await prober.runProbe(probeType, {
          pod,
          status: { phase: "Running", podIP: selection.podIP },
          container,
          containerID: { type: "host", id: container.name },
        });
        reports.push({
          pod: `${pod.metadata.namespace ?? "default"}/${pod.metadata.name ?? ""}`,
          container: container.name,
          probeType,
          handler: handlerOf(spec),
          result: outcome.result,
          output: outcome.output,
          error: outcome.error?.message,
          durationMs: performance.now() - start,
        });
      }
    }
  }
  return reports;
}

/** True when the verdict counts as healthy (a warning is logically a success, as in kubelet). */
export function isHealthy(report: ProbeReport): boolean {
  return !report.error && (report.result === "success" || report.result === "warning");
}

/**
 * Formats reports as aligned text lines: `pod container type handler result duration output`.
 *
 * @example
 * ```ts
 * declare const reports: ProbeReport[];
 * console.log(formatReports(reports));
 * ```
 */
export function formatReports(reports: ProbeReport[]): string {
  if (reports.length === 0) return "no probes matched";
  const rows = reports.map((r) => [
    r.pod,
    r.container,
    r.probeType,
    r.handler,
    r.error ? "error" : r.result,
    `${r.durationMs.toFixed(1)}ms`,
    oneLine(r.error ?? r.output),
  ]);
  const header = ["POD", "CONTAINER", "PROBE", "HANDLER", "RESULT", "DURATION", "OUTPUT"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  return [header, ...rows]
    .map((row) =>
      row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd(widths[i])).join("  ")
    )
    .join("\n");
}

function handlerOf(spec: Probe): ProbeReport["handler"] {
  if (spec.exec) return "exec";
  if (spec.httpGet) return "httpGet";
  if (spec.tcpSocket) return "tcpSocket";
  if (spec.grpc) return "grpc";
  return "none";
}

// Long or multi-line outputs (an HTML body, a stack) stay on one line in the table.
function oneLine(s: string): string {
  const flat = s.replace(/\s+/g, " ").trim();
  return flat.length > 120 ? `${flat.slice(0, 117)}...` : flat;
}
