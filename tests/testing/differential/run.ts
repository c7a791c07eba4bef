/**
 * The differential run: for each generated case, two raw servers on 127.0.0.1 serve the same bytes,
 * one to kubelet's handler (the Go program) and one to probelet's (`src/probe/http`,
 * `src/probe/grpc`), both probing at once; the verdicts are compared, each difference is matched
 * against the allow-list, and a report with counts by class is built.
 * Mirrors nothing upstream: test tooling for issue 21 ("How it is tested").
 * @module
 */
import { newHttpProber, newProbeRequest } from "../../../src/probe/http/mod.ts";
import { newGrpcProber } from "../../../src/probe/grpc/mod.ts";
import type { ProbeOutcome } from "../../../src/probe/probe.ts";
import { generateHttp1Cases } from "./http1_cases.ts";
import { generateGrpcCases } from "./grpc_cases.ts";
import { type RawServer, startH2Server, startHttp1Server } from "./raw_server.ts";
import type { KubeletHandlers, KubeletVerdict } from "./kubelet_handlers.ts";

/** The handler and transport of a case: HTTP/1.1 cases also run over TLS as "https". */
export type Kind = "http" | "https" | "grpc";

/** A handler's verdict, normalized for comparison. */
export interface Verdict {
  /** kubelet's probe.Result, or "hang" when probelet's handler outlived the watchdog. */
  result: string;
  /** Output text with the server's port replaced by `PORT`. */
  output: string;
  /** The error return's text ("" for none), ports replaced too. */
  error: string;
}

/** How two verdicts differ: the result (or error presence), or only the texts. */
export type Difference = "verdict" | "text";

/** One case's outcome. */
export interface CaseOutcome {
  kind: Kind;
  /** The case's position in its generated stream (replay: same seed and count, `--case`). */
  index: number;
  /** The mutation class. */
  cls: string;
  /** The variant within the class. */
  variant: string;
  /** kubelet's handler's verdict. */
  kubelet: Verdict;
  /** probelet's handler's verdict. */
  probelet: Verdict;
  /** How they differ; absent when they agree. */
  difference?: Difference;
  /** Run a second time (two cases at a time) because a side had hit its deadline. */
  rerun?: boolean;
}

/** An allow-list entry: one class of difference, with the reasoning behind it. */
export interface AllowEntry {
  kind: Kind;
  cls: string;
  /** Variants covered; all of the class when absent. */
  variants?: string[];
  /** Which kinds of difference the entry covers. */
  differences: Difference[];
  /** Why the handlers differ. */
  why: string;
  /** Who matches Go/kubelet's intent: "kubelet" means probelet is wrong. */
  right: "kubelet" | "probelet" | "neither";
  /** The issue-21 row the difference belongs to ("" when none). */
  row: string;
}

/** Options of a run. */
export interface RunOptions {
  seed: number;
  /** Cases per kind. */
  count: number;
  kinds: Kind[];
  /** Walk every variant once before random picks. */
  everyVariant: boolean;
  /** Each probe's timeout. */
  timeoutMs: number;
  /** Cases in flight at once. */
  concurrency: number;
  /** Make half the random HTTP picks byte-level havoc (unclassifiable: for triage, not CI). */
  havoc?: boolean;
  /** Run only the case at this index of each kind's stream (replay). */
  only?: number;
}

const watchdogSlackMs = 5000;

/**
 * Runs the cases of `options` against kubelet's handlers and probelet's.
 *
 * @example
 * ```ts
 * const outcomes = await runDifferential(handlers, { seed: 1, count: 50, kinds: ["http"], everyVariant: true, timeoutMs: 500, concurrency: 8 });
 * ```
 */
export async function runDifferential(
  handlers: KubeletHandlers,
  options: RunOptions,
): Promise<CaseOutcome[]> {
  type Job = () => Promise<CaseOutcome>;
  const jobs: Job[] = [];
  for (const kind of (["http", "https"] as const).filter((k) => options.kinds.includes(k))) {
    const tls = kind === "https" ? testCertificate() : undefined;
    generateHttp1Cases(options.seed, options.count, options).forEach((c, index) => {
      if (options.only !== undefined && index !== options.only) return;
      jobs.push(() =>
        compareOn(
          () => startHttp1Server({ responses: c.responses }, { tls }),
          async (kubeletServer, probeletServer) => {
            const url = (port: number) => `${kind}://127.0.0.1:${port}${c.path}`;
            return await Promise.all([
              handlers.probe({
                kind: "http",
                url: url(kubeletServer.port),
                timeoutMs: options.timeoutMs,
              }),
              probeletHttp(url(probeletServer.port), options.timeoutMs),
            ]);
          },
          { kind, index, cls: c.cls, variant: c.variant },
        )
      );
    });
  }
  if (options.kinds.includes("grpc")) {
    generateGrpcCases(options.seed, options.count, options).forEach((c, index) => {
      if (options.only !== undefined && index !== options.only) return;
      jobs.push(() =>
        compareOn(
          () => startH2Server(c.script),
          async (kubeletServer, probeletServer) =>
            await Promise.all([
              handlers.probe({
                kind: "grpc",
                host: "127.0.0.1",
                port: kubeletServer.port,
                service: c.service,
                timeoutMs: options.timeoutMs,
              }),
              probeletGrpc(probeletServer.port, c.service, options.timeoutMs),
            ]),
          { kind: "grpc", index, cls: c.cls, variant: c.variant },
        )
      );
    });
  }
  const outcomes: CaseOutcome[] = new Array(jobs.length);
  await runAll(
    jobs.map((job, i) => async () => void (outcomes[i] = await job())),
    options.concurrency,
  );
  // A difference where a side hit its deadline may be the machine's load (e.g. eleven redirect
  // connections, or TLS handshakes, in 500 ms): such cases run once more, fewer at a time, and
  // that result counts. A real deadline difference (a stalled trailer) shows again.
  const again = outcomes.flatMap((o, i) =>
    o.difference && (hitDeadline(o.kubelet) || hitDeadline(o.probelet)) ? [i] : []
  );
  await runAll(
    again.map((i) => async () => void (outcomes[i] = { ...(await jobs[i]()), rerun: true })),
    rerunConcurrency,
  );
  return outcomes;
}

const rerunConcurrency = 2;

// The HTTP probe tests' throwaway self-signed certificate (both handlers skip verification).
function testCertificate(): { cert: string; key: string } {
  const testdata = new URL("../../probe/http/testdata/", import.meta.url);
  return {
    cert: Deno.readTextFileSync(new URL("cert.pem", testdata)),
    key: Deno.readTextFileSync(new URL("key.pem", testdata)),
  };
}

async function runAll(tasks: (() => Promise<void>)[], concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]();
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}

const deadlineTexts = [
  "Client.Timeout",
  "context deadline exceeded",
  "did not complete within",
  "context canceled",
];

function hitDeadline(v: Verdict): boolean {
  return deadlineTexts.some((t) => v.output.includes(t) || v.error.includes(t));
}

async function compareOn(
  start: () => RawServer,
  probe: (
    kubelet: RawServer,
    probelet: RawServer,
  ) => Promise<[KubeletVerdict, ProbeOutcome | "hang"]>,
  label: Pick<CaseOutcome, "kind" | "index" | "cls" | "variant">,
): Promise<CaseOutcome> {
  const kubeletServer = start();
  const probeletServer = start();
  try {
    const [k, p] = await probe(kubeletServer, probeletServer);
    const kubelet = normalize(k.result, k.output, k.error, kubeletServer.port);
    const probelet = p === "hang"
      ? { result: "hang", output: "", error: "" }
      : normalize(p.result, p.output, p.error?.message ?? "", probeletServer.port);
    return { ...label, kubelet, probelet, difference: differenceOf(kubelet, probelet) };
  } finally {
    kubeletServer.close();
    probeletServer.close();
  }
}

// The server's port differs between the two sides; Go's protobuf errors put a random U+00A0 in
// place of a space (detrand) so that nobody matches on them; and a client timeout gets one of two
// texts ("net/http: request canceled" or "context deadline exceeded") depending on which of Go's
// transport cancellation paths reports first (both seen for the same HTTPS stall), so both read
// as the latter.
function normalize(result: string, output: string, error: string, port: number): Verdict {
  const ports = new RegExp(`127\\.0\\.0\\.1:${port}\\b`, "g");
  const clean = (s: string) =>
    s.replace(ports, "127.0.0.1:PORT").replaceAll("\u00a0", " ").replaceAll(
      "net/http: request canceled (Client.Timeout",
      "context deadline exceeded (Client.Timeout",
    );
  return { result, output: clean(output), error: clean(error) };
}

function differenceOf(kubelet: Verdict, probelet: Verdict): Difference | undefined {
  if (kubelet.result !== probelet.result) return "verdict";
  if ((kubelet.error === "") !== (probelet.error === "")) return "verdict";
  if (kubelet.output !== probelet.output || kubelet.error !== probelet.error) return "text";
  return undefined;
}

// A handler that outlives its timeout by the slack is reported as "hang" rather than waited for.
function withWatchdog(
  run: Promise<ProbeOutcome>,
  timeoutMs: number,
): Promise<ProbeOutcome | "hang"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watchdog = new Promise<"hang">((resolve) => {
    timer = setTimeout(() => resolve("hang"), timeoutMs + watchdogSlackMs);
  });
  return Promise.race([run, watchdog]).finally(() => clearTimeout(timer));
}

function probeletHttp(url: string, timeoutMs: number): Promise<ProbeOutcome | "hang"> {
  const { request, error } = newProbeRequest(url);
  if (!request) return Promise.resolve({ result: "unknown", output: "", error });
  return withWatchdog(newHttpProber().probe(request, { timeoutMs }), timeoutMs);
}

function probeletGrpc(
  port: number,
  service: string,
  timeoutMs: number,
): Promise<ProbeOutcome | "hang"> {
  return withWatchdog(newGrpcProber().probe("127.0.0.1", { service, port, timeoutMs }), timeoutMs);
}

/**
 * Whether `entry` explains `outcome`'s difference: same kind and class, a listed variant (or any),
 * and a kind of difference the entry names.
 *
 * @example
 * ```ts
 * allows(knownBeingFixed[0], outcome); // true for an http content-length/hex verdict difference
 * ```
 */
export function allows(entry: AllowEntry, outcome: CaseOutcome): boolean {
  // The same HTTP/1.1 reader runs over TLS: an "http" entry covers "https" cases too.
  const kindMatches = entry.kind === outcome.kind ||
    (entry.kind === "http" && outcome.kind === "https");
  return kindMatches && entry.cls === outcome.cls &&
    (entry.variants === undefined || entry.variants.includes(outcome.variant)) &&
    outcome.difference !== undefined && entry.differences.includes(outcome.difference);
}

/** The allow-list's sections (tests/probe/differential_allow_list.ts). */
export interface AllowLists {
  allowed: AllowEntry[];
  knownBeingFixed: AllowEntry[];
  notInIssue: AllowEntry[];
}

/** A run's differences sorted into the allow-list's sections and the unexplained rest. */
export interface Classified {
  allowed: CaseOutcome[];
  knownBeingFixed: CaseOutcome[];
  notInIssue: CaseOutcome[];
  unexplained: CaseOutcome[];
  /** Entries of `knownBeingFixed` that matched no difference (fixed: remove them). */
  staleKnown: AllowEntry[];
}

/**
 * Sorts each difference into the first section with an entry for it, else unexplained.
 *
 * @example
 * ```ts
 * const { unexplained } = classify(outcomes, { allowed, knownBeingFixed, notInIssue });
 * ```
 */
export function classify(outcomes: CaseOutcome[], lists: AllowLists): Classified {
  const out: Classified = {
    allowed: [],
    knownBeingFixed: [],
    notInIssue: [],
    unexplained: [],
    staleKnown: [],
  };
  const used = new Set<AllowEntry>();
  const sections = ["allowed", "knownBeingFixed", "notInIssue"] as const;
  for (const o of outcomes) {
    if (!o.difference) continue;
    const section = sections.find((name) => {
      const entry = lists[name].find((e) => allows(e, o));
      if (entry) used.add(entry);
      return entry !== undefined;
    });
    out[section ?? "unexplained"].push(o);
  }
  out.staleKnown = lists.knownBeingFixed.filter((e) => !used.has(e));
  return out;
}

/**
 * The report: totals, then per `kind class/variant` the cases and differences, each difference
 * tagged allowed / known / not-in-issue / UNEXPLAINED, with one example pair of verdicts.
 *
 * @example
 * ```ts
 * console.log(formatReport(outcomes, classify(outcomes, lists)));
 * ```
 */
export function formatReport(outcomes: CaseOutcome[], classified: Classified): string {
  const tag = new Map<CaseOutcome, string>();
  for (const o of classified.allowed) tag.set(o, "allowed");
  for (const o of classified.knownBeingFixed) tag.set(o, "known");
  for (const o of classified.notInIssue) tag.set(o, "not-in-issue");
  for (const o of classified.unexplained) tag.set(o, "UNEXPLAINED");
  const groups = new Map<string, CaseOutcome[]>();
  for (const o of outcomes) {
    const key = `${o.kind} ${o.cls}/${o.variant}`;
    groups.set(key, [...(groups.get(key) ?? []), o]);
  }
  const lines: string[] = [];
  const diffs = outcomes.filter((o) => o.difference);
  lines.push(
    `cases=${outcomes.length} same=${outcomes.length - diffs.length} ` +
      `verdict_differences=${diffs.filter((o) => o.difference === "verdict").length} ` +
      `text_differences=${diffs.filter((o) => o.difference === "text").length} ` +
      `allowed=${classified.allowed.length} known_being_fixed=${classified.knownBeingFixed.length} ` +
      `not_in_issue=${classified.notInIssue.length} unexplained=${classified.unexplained.length} ` +
      `reruns=${outcomes.filter((o) => o.rerun).length}`,
  );
  const byClass = new Map<string, { cases: number; diffs: number }>();
  for (const o of outcomes) {
    const key = `${o.kind} ${o.cls}`;
    const c = byClass.get(key) ?? { cases: 0, diffs: 0 };
    c.cases++;
    if (o.difference) c.diffs++;
    byClass.set(key, c);
  }
  lines.push("by class (cases, differences):");
  for (const [key, c] of [...byClass].sort()) lines.push(`  ${key}: ${c.cases} ${c.diffs}`);
  lines.push("differing variants:");
  for (const [key, group] of [...groups].sort()) {
    const differing = group.filter((o) => o.difference);
    if (differing.length === 0) continue;
    const kinds = [...new Set(differing.map((o) => `${o.difference}:${tag.get(o)}`))].join(",");
    const example = differing[0];
    lines.push(
      `  ${key}: ${differing.length}/${group.length} ${kinds}\n` +
        `    kubelet:  ${show(example.kubelet)}\n    probelet: ${show(example.probelet)}`,
    );
  }
  if (classified.staleKnown.length > 0) {
    lines.push(
      "knownBeingFixed entries that matched nothing in this run (fixed, or not drawn by these seeds):",
    );
    for (const e of classified.staleKnown) {
      lines.push(`  ${e.kind} ${e.cls}/${e.variants?.join(",") ?? "*"} (row ${e.row})`);
    }
  }
  return lines.join("\n");
}

function show(v: Verdict): string {
  const cut = (s: string) => (s.length > 160 ? `${s.slice(0, 160)}…` : s);
  return `${v.result} ${JSON.stringify(cut(v.output))}${
    v.error ? ` error=${JSON.stringify(cut(v.error))}` : ""
  }`;
}
