/**
 * Where a batch of pods' start-up time goes, per pod and per phase, read from an agent's klog at
 * `--v=4` (kubelet v1.36.3's or probelet's: the same messages) and the API server's audit log
 * (when each pod was created). For `bench/vs_kubelet.ts`'s start-up batch (issue 20, item 4):
 *
 *   deno run -A bench/startup_timeline.ts --log .run/kubelet/kubelet.log \
 *     --audit .run/kube-apiserver/audit.log [--prefix fp-] [--json FILE]
 *
 * Each pod's phases are the first matching line after its last `SyncLoop ADD` in the log:
 * created (audit: the pod's create) → seen (`SyncLoop ADD`) → sandbox (`Created PodSandbox for
 * pod`) → pulled (the `Pulled` event) → created (the `Created` event) → started (the `Started`
 * event) → probed (the first readiness `Probe succeeded`) → ready (the status patch that sets the
 * Ready condition True, logged once the API server answered). Prints each phase's duration (from
 * the phase before) and its time since creation, p50 / p99 / max over the pods. klog's header has
 * local time without a year: it is read as UTC of this year (the agents here run with TZ UTC).
 * @module
 */
import { quantile } from "./proc_stats.ts";

/** The phases, in order. */
export const phases = [
  "created",
  "seen",
  "sandbox",
  "pulled",
  "containerCreated",
  "started",
  "probed",
  "ready",
] as const;

/** One phase of a pod's start-up. */
export type Phase = typeof phases[number];

/** Each pod's phase times (ms since the epoch). */
export type Timelines = Map<string, Partial<Record<Phase, number>>>;

const klogLine = /^[IWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})\s/;
const podField = /\b(?:pod|object)="([^"/]+\/[^"]+)"|\bpods=\["([^"/]+\/[^"]+)"\]/;

/** The time of a klog line (its header has no year: `year` is assumed), or undefined. */
export function klogTime(line: string, year: number): number | undefined {
  const m = klogLine.exec(line);
  if (!m) return undefined;
  const [, mo, d, h, mi, s, us] = m.map(Number);
  return Date.UTC(year, mo - 1, d, h, mi, s) + us / 1000;
}

const matchers: [Exclude<Phase, "created">, (line: string) => boolean][] = [
  ["seen", (l) => l.includes('"SyncLoop ADD"')],
  ["sandbox", (l) => l.includes('"Created PodSandbox for pod"')],
  ["pulled", (l) => l.includes('"Event occurred"') && l.includes('reason="Pulled"')],
  ["containerCreated", (l) => l.includes('"Event occurred"') && l.includes('reason="Created"')],
  ["started", (l) => l.includes('"Event occurred"') && l.includes('reason="Started"')],
  ["probed", (l) => l.includes('"Probe succeeded"') && l.includes('probeType="Readiness"')],
  [
    "ready",
    (l) =>
      l.includes('"Patch status for pod"') &&
      l.includes('\\"status\\":\\"True\\",\\"type\\":\\"Ready\\"'),
  ],
];

/**
 * Reads each pod's phases (all but `created`) from an agent's klog text; only pods whose name
 * starts with `prefix`.
 */
export function parseAgentLog(text: string, options: { prefix: string; year: number }): Timelines {
  const lines = text.split("\n");
  const lastAdd = new Map<string, number>();
  const podOf = (line: string) => {
    const m = podField.exec(line);
    const key = m?.[1] ?? m?.[2];
    const name = key?.split("/")[1];
    return name?.startsWith(options.prefix) ? name : undefined;
  };
  lines.forEach((line, i) => {
    if (!line.includes('"SyncLoop ADD"')) return;
    const pod = podOf(line);
    if (pod) lastAdd.set(pod, i);
  });
  const timelines: Timelines = new Map();
  lines.forEach((line, i) => {
    const pod = podOf(line);
    if (!pod || i < (lastAdd.get(pod) ?? Infinity)) return;
    const t = klogTime(line, options.year);
    if (t === undefined) return;
    const timeline = timelines.get(pod) ?? {};
    for (const [phase, matches] of matchers) {
      if (timeline[phase] === undefined && matches(line)) timeline[phase] = t;
    }
    timelines.set(pod, timeline);
  });
  return timelines;
}

/**
 * Adds each pod's `created` time from the API server's audit log (JSON lines): its last create
 * before the agent saw it.
 */
export function addCreated(timelines: Timelines, auditText: string): void {
  for (const line of auditText.split("\n")) {
    if (!line.includes('"verb":"create"') || !line.includes('"resource":"pods"')) continue;
    const event = JSON.parse(line);
    const ref = event.objectRef;
    if (ref?.subresource || !timelines.has(ref?.name)) continue;
    const t = Date.parse(event.requestReceivedTimestamp);
    const timeline = timelines.get(ref.name)!;
    if (t <= (timeline.seen ?? Infinity)) timeline.created = t;
  }
}

/** A phase's figures over the pods (ms). */
export interface PhaseFigures {
  phase: Phase;
  pods: number;
  /** From the phase before. */
  step: { p50: number; p99: number; max: number };
  /** From `created` (or from `seen` without an audit log). */
  since: { p50: number; p99: number; max: number };
}

/** Each phase's p50 / p99 / max over the pods that reached it. */
export function summarise(timelines: Timelines): PhaseFigures[] {
  const figures: PhaseFigures[] = [];
  const stats = (values: number[]) => {
    const sorted = values.toSorted((a, b) => a - b);
    return {
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      max: sorted.at(-1) ?? NaN,
    };
  };
  for (const [i, phase] of phases.entries()) {
    const steps: number[] = [];
    const sinces: number[] = [];
    for (const t of timelines.values()) {
      const origin = t.created ?? t.seen;
      const at = t[phase];
      if (at === undefined || origin === undefined) continue;
      sinces.push(at - origin);
      const before = phases.slice(0, i).findLast((p) => t[p] !== undefined);
      steps.push(before === undefined ? 0 : at - t[before]!);
    }
    if (sinces.length) {
      figures.push({ phase, pods: sinces.length, step: stats(steps), since: stats(sinces) });
    }
  }
  return figures;
}

/** The figures as a markdown table (seconds). */
export function formatTimeline(figures: PhaseFigures[]): string {
  const s = (ms: number) => (ms / 1000).toFixed(2);
  return [
    "| phase | pods | step p50 / p99 / max (s) | since created p50 / p99 / max (s) |",
    "|---|--:|--:|--:|",
    ...figures.map((f) =>
      `| ${f.phase} | ${f.pods} | ${s(f.step.p50)} / ${s(f.step.p99)} / ${s(f.step.max)} | ` +
      `${s(f.since.p50)} / ${s(f.since.p99)} / ${s(f.since.max)} |`
    ),
  ].join("\n");
}

if (import.meta.main) {
  const arg = (name: string) => {
    const i = Deno.args.indexOf(`--${name}`);
    return i >= 0 ? Deno.args[i + 1] : undefined;
  };
  const logPath = arg("log");
  if (!logPath) {
    console.error("usage: startup_timeline.ts --log FILE [--audit FILE] [--prefix fp-] [--json F]");
    Deno.exit(2);
  }
  const timelines = parseAgentLog(Deno.readTextFileSync(logPath), {
    prefix: arg("prefix") ?? "fp-",
    year: new Date().getUTCFullYear(),
  });
  const audit = arg("audit");
  if (audit) addCreated(timelines, Deno.readTextFileSync(audit));
  const figures = summarise(timelines);
  console.log(formatTimeline(figures));
  const json = arg("json");
  if (json) {
    Deno.writeTextFileSync(
      json,
      JSON.stringify({ log: logPath, figures, pods: Object.fromEntries(timelines) }, null, 2),
    );
  }
}
