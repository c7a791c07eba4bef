/**
 * The differential suite's comparison: the API server's view of one pod (its status and the events
 * whose involvedObject is the pod) from two nodes, normalised (names, UIDs, times, container and
 * image IDs, IPs and node names masked), flattened into `path → value` lines and compared, each
 * difference either covered by an allow-list entry or reported. No kubelet file mirrors this: it is
 * the harness that holds probelet's pod status and events against kubelet v1.36.3's.
 * @module
 */

// deno-lint-ignore no-explicit-any
type Json = any;

/** One allowed difference: where it is, and why it is allowed. */
export interface AllowEntry {
  /** The flattened paths it covers (`status.conditions[Ready].status`, `events[...].count`). */
  path: RegExp;
  /** Only in these scenarios; every scenario when absent. */
  scenarios?: string[];
  /** `feature`: probelet does not do this yet (see `issue`); `timing`: when, not what. */
  kind: "feature" | "timing";
  /** The issue that tracks the feature. */
  issue?: number;
  /** Why the difference is allowed, in one sentence. */
  reason: string;
  /**
   * For an event count: the largest difference allowed; the entry then covers nothing else. Absent:
   * any difference at the path.
   */
  countTolerance?: number;
  /**
   * Rewrites a value so that what the entry allows is gone: the difference is allowed when both
   * values are equal after it (e.g. one known step removed from a status history).
   */
  equalAfter?: (value: string) => string;
}

/** One difference between the two nodes' views at one path. */
export interface Difference {
  path: string;
  /** The oracle's (kubelet's) value; undefined when it has no such path. */
  kubelet: unknown;
  /** probelet's value; undefined when it has no such path. */
  probelet: unknown;
  /** The allow-list entry that covers it, if any. */
  allowedBy?: AllowEntry;
}

/** What one node's API objects are masked with: the strings that name this node's copy. */
export interface MaskNames {
  /** Empty for cluster-scoped objects (Nodes). */
  namespace: string;
  nodeName: string;
  /** The pod's name when it differs between the nodes (generated names). */
  podName?: string;
}

const patterns: [RegExp, string][] = [
  [/containerd:\/\/[0-9a-f]{64}/g, "<container-id>"],
  [/sha256:[0-9a-f]{64}/g, "<digest>"],
  [/\b[0-9a-f]{64}\b/g, "<id>"],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, "<uid>"],
  [/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g, "<time>"],
  [/\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b/g, "<ip>"],
];

/** Masks one string: this copy's names first, then IDs, times and addresses. */
export function maskString(s: string, names: MaskNames): string {
  let out = s;
  const named: [string | undefined, string][] = [
    [names.podName, "<pod>"],
    [names.namespace, "<ns>"],
    [names.nodeName, "<node>"],
  ];
  for (const [name, mask] of named) if (name) out = out.split(name).join(mask);
  for (const [re, mask] of patterns) out = out.replace(re, mask);
  return out;
}

/** A deep copy with every string masked. */
export function normalise(value: Json, names: MaskNames): Json {
  if (typeof value === "string") return maskString(value, names);
  if (Array.isArray(value)) return value.map((v) => normalise(v, names));
  if (value && typeof value === "object") {
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(value)) out[k] = normalise(v, names);
    return out;
  }
  return value;
}

/**
 * Flattens a value into `path → JSON text` lines. Array items with a `name` or `type` are keyed by
 * it (`conditions[Ready]`), so order does not matter where the API says it does not.
 */
export function flatten(value: Json, prefix: string, out: Map<string, string> = new Map()) {
  if (Array.isArray(value)) {
    if (value.length === 0) out.set(prefix, "[]");
    value.forEach((item, i) => {
      const key = item && typeof item === "object" && !Array.isArray(item)
        ? item.name ?? item.type ?? i
        : i;
      flatten(item, `${prefix}[${key}]`, out);
    });
  } else if (value && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 0) out.set(prefix, "{}");
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix, JSON.stringify(value));
  }
  return out;
}

/**
 * Events grouped by what they say (type, reason, the container they are about, the masked
 * message): `events[<type> <reason> <fieldPath>: <message>]` with `.count` (summed over the
 * events of that group, a series' count when present) and `.source`.
 */
export function flattenEvents(events: Json[], names: MaskNames): Map<string, string> {
  const counts = new Map<string, number>();
  const sources = new Map<string, string>();
  const reporting = new Map<string, string>();
  for (const e of events) {
    const ev = normalise(e, names);
    const key = `events[${ev.type} ${ev.reason} ${ev.involvedObject?.fieldPath ?? ""}: ${
      ev.message ?? ""
    }]`;
    const count = ev.series?.count ?? ev.count ?? 1;
    counts.set(key, (counts.get(key) ?? 0) + count);
    sources.set(key, `${ev.source?.component ?? ""}/${ev.source?.host ?? ""}`);
    reporting.set(key, `${ev.reportingComponent ?? ""}/${ev.reportingInstance ?? ""}`);
  }
  const out = new Map<string, string>();
  for (const [key, count] of [...counts].sort(([a], [b]) => a.localeCompare(b))) {
    out.set(`${key}.count`, String(count));
    out.set(`${key}.source`, JSON.stringify(sources.get(key)));
    out.set(`${key}.reporting`, JSON.stringify(reporting.get(key)));
  }
  return out;
}

/**
 * One pod status in a line: the phase, then each container's state kind (with its reason) and
 * readiness, e.g. `Running app=running/ready` or `Failed app=terminated:Error`.
 */
export function statusSummary(status: Json): string {
  const containers = [
    ...(status?.initContainerStatuses ?? []),
    ...(status?.containerStatuses ?? []),
  ].map((cs: Json) => {
    const [kind, detail] = Object.entries(cs.state ?? {})[0] ?? ["none", {}];
    const reason = (detail as Json)?.reason ? `:${(detail as Json).reason}` : "";
    return `${cs.name}=${kind}${reason}${cs.ready ? "/ready" : ""}`;
  });
  return [status?.phase ?? "-", ...containers].join(" ");
}

/** The distinct successive summaries of a pod's statuses as the API server stored them. */
export function statusHistory(statuses: Json[]): string {
  const out: string[] = [];
  for (const status of statuses) {
    const line = statusSummary(status);
    if (out[out.length - 1] !== line) out.push(line);
  }
  return out.join(" → ");
}

/**
 * The paths of a pod and its events as compared: `status.*`, `events[...]`, and `history` (the
 * pod's successive statuses, see {@linkcode statusHistory}) when given.
 */
export function podView(
  pod: Json | undefined,
  events: Json[],
  names: MaskNames,
  history?: Json[],
): Map<string, string> {
  const view = flatten(normalise(pod?.status ?? {}, names), "status");
  if (history) view.set("history", JSON.stringify(statusHistory(history)));
  for (const [k, v] of flattenEvents(events, names)) view.set(k, v);
  return view;
}

/** A Node as compared: `status.*` (heartbeats and images left out) and `metadata.labels.*`. */
export function nodeView(node: Json, names: MaskNames): Map<string, string> {
  const status = { ...node?.status };
  delete status.images;
  const view = flatten(normalise(status, names), "status");
  for (const [k, v] of flatten(normalise(node?.metadata?.labels ?? {}, names), "metadata.labels")) {
    view.set(k, v);
  }
  return view;
}

/** A flattened value as its string: JSON strings unquoted, anything else as written. */
function plain(value: unknown): string {
  try {
    const parsed = JSON.parse(String(value));
    return typeof parsed === "string" ? parsed : String(value);
  } catch {
    return String(value);
  }
}

/** The first entry of the allow-list that covers a difference in a scenario. */
export function allowedBy(
  allowList: AllowEntry[],
  scenario: string,
  d: { path: string; kubelet: unknown; probelet: unknown },
): AllowEntry | undefined {
  return allowList.find((entry) => {
    if (entry.scenarios && !entry.scenarios.includes(scenario)) return false;
    if (!entry.path.test(d.path)) return false;
    if (entry.equalAfter) {
      return d.kubelet !== undefined && d.probelet !== undefined &&
        entry.equalAfter(plain(d.kubelet)) === entry.equalAfter(plain(d.probelet));
    }
    if (entry.countTolerance === undefined) return true;
    if (!d.path.endsWith(".count")) return false;
    const a = Number(d.kubelet ?? 0), b = Number(d.probelet ?? 0);
    return Math.abs(a - b) <= entry.countTolerance;
  });
}

/** Every path whose value differs between the two views, with the entry that allows it. */
export function compareViews(
  kubelet: Map<string, string>,
  probelet: Map<string, string>,
  scenario: string,
  allowList: AllowEntry[],
): Difference[] {
  const paths = [...new Set([...kubelet.keys(), ...probelet.keys()])].sort();
  const out: Difference[] = [];
  for (const path of paths) {
    const k = kubelet.get(path), p = probelet.get(path);
    if (k === p) continue;
    const d: Difference = { path, kubelet: k, probelet: p };
    d.allowedBy = allowedBy(allowList, scenario, d);
    out.push(d);
  }
  return out;
}

/** A readable diff: `-` kubelet's line, `+` probelet's, allowed ones marked with their reason. */
export function formatDifferences(scenario: string, diffs: Difference[]): string {
  const lines = [`scenario ${scenario}: (- kubelet v1.36.3, + probelet)`];
  for (const d of diffs) {
    const why = d.allowedBy
      ? `   [allowed: ${d.allowedBy.kind}${
        d.allowedBy.issue ? ` #${d.allowedBy.issue}` : ""
      }: ${d.allowedBy.reason}]`
      : "   [NOT ALLOWED]";
    lines.push(`  ${d.path}${why}`);
    lines.push(`    - ${d.kubelet ?? "(absent)"}`);
    lines.push(`    + ${d.probelet ?? "(absent)"}`);
  }
  return lines.join("\n");
}
