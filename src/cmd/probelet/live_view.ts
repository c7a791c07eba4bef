/**
 * The live view: a compact table of pods and containers (phase, ready, started, restarts, the
 * cached probe verdicts and the latest event) redrawn in place on a terminal; without a terminal,
 * one log line per container whose state changed.
 * @module
 */
import type { ContainerStatus } from "../../api/core/v1/mod.ts";
import { type ContainerID, parseContainerID } from "../../kubelet/container/container_id.ts";
import type { PodWithStatus } from "../../kubelet/kubelet.ts";
import type { StoredEvent } from "../../kubelet/kubelet_events.ts";
import type { Clock, ClockTimer } from "../../util/clock.ts";
import * as log from "../../util/log.ts";

/** The cached verdict of one probe type: -1 Unknown, 0 Success, 1 Failure, undefined none. */
export interface ResultsGetter {
  get(id: ContainerID): number | undefined;
}

/** What the view reads. */
export interface LiveViewSource {
  /** With `shared`, the source's own objects: read here and dropped, never kept or changed. */
  pods(options?: { shared?: boolean }): PodWithStatus[];
  events: { list(): StoredEvent[] };
  livenessManager: ResultsGetter;
  readinessManager: ResultsGetter;
  startupManager: ResultsGetter;
}

/** One row of the table: a container of a pod. */
export interface ContainerRow {
  pod: string;
  phase: string;
  podReady: string;
  container: string;
  state: string;
  ready: boolean;
  started: boolean | undefined;
  restarts: number;
  probes: string;
  lastEvent: string;
}

function stateText(cs: ContainerStatus): string {
  const s = cs.state ?? {};
  if (s.running) return "Running";
  if (s.waiting) return s.waiting.reason ?? "Waiting";
  if (s.terminated) {
    return `${s.terminated.reason ?? "Terminated"}(${s.terminated.exitCode})`;
  }
  return "Unknown";
}

function verdict(r: number | undefined): string {
  switch (r) {
    case 0:
      return "ok";
    case 1:
      return "fail";
    case -1:
      return "?";
    default:
      return "-";
  }
}

function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/**
 * The rows of the table, one per container (init containers first), from pods and events.
 *
 * @example
 * ```ts
 * import type { Kubelet } from "../../kubelet/kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 *
 * const rows = buildRows(kubelet, Date.now());
 * rows[0].restarts; // 0
 * ```
 */
export function buildRows(source: LiveViewSource, now: number): ContainerRow[] {
  const events = source.events.list();
  const rows: ContainerRow[] = [];
  for (const pod of source.pods({ shared: true })) {
    const status = pod.status;
    const ready = status.conditions?.find((c) => c.type === "Ready")?.status ?? "Unknown";
    const podName = `${pod.metadata.namespace ?? "default"}/${pod.metadata.name ?? ""}`;
    const specs = [
      ...(pod.spec.initContainers ?? []).map((c) => ({ c, init: true })),
      ...pod.spec.containers.map((c) => ({ c, init: false })),
    ];
    for (const { c, init } of specs) {
      const list = init ? status.initContainerStatuses : status.containerStatuses;
      const cs = list?.find((s) => s.name === c.name);
      const id = parseContainerID(cs?.containerID);
      const probes = [
        c.startupProbe ? `S:${verdict(source.startupManager.get(id))}` : "",
        c.livenessProbe ? `L:${verdict(source.livenessManager.get(id))}` : "",
        c.readinessProbe ? `R:${verdict(source.readinessManager.get(id))}` : "",
      ].filter(Boolean).join(" ") || "-";
      const fieldPath = `${init ? "spec.initContainers" : "spec.containers"}{${c.name}}`;
      const last = events.findLast((e) =>
        e.involvedObject.uid === pod.metadata.uid && e.involvedObject.fieldPath === fieldPath &&
        e.reason !== "Created" && e.reason !== "Started"
      );
      rows.push({
        pod: podName,
        phase: status.phase ?? "Pending",
        podReady: ready,
        container: init ? `${c.name} (init)` : c.name,
        state: cs ? stateText(cs) : "Waiting",
        ready: cs?.ready ?? false,
        started: cs?.started,
        restarts: cs?.restartCount ?? 0,
        probes,
        lastEvent: last
          ? `${age(now - last.lastMs)} ago ${last.reason}: ${last.message}${
            last.count > 1 ? ` (x${last.count})` : ""
          }`
          : "",
      });
    }
  }
  return rows;
}

/**
 * Formats the rows as an aligned table, each line cut to `width` columns.
 *
 * @example
 * ```ts
 * import type { Kubelet } from "../../kubelet/kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 *
 * console.log(renderTable(buildRows(kubelet, Date.now()), { width: 120 }).join("\n"));
 * ```
 */
export function renderTable(rows: ContainerRow[], options: { width: number }): string[] {
  const header = [
    "POD",
    "PHASE",
    "POD READY",
    "CONTAINER",
    "STATE",
    "READY",
    "STARTED",
    "RESTARTS",
    "PROBES",
    "LAST EVENT",
  ];
  const cells = rows.map((r) => [
    r.pod,
    r.phase,
    r.podReady,
    r.container,
    r.state,
    String(r.ready),
    r.started === undefined ? "-" : String(r.started),
    String(r.restarts),
    r.probes,
    oneLine(r.lastEvent),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) =>
    c.map((v, i) => i === c.length - 1 ? v : v.padEnd(widths[i])).join("  ").trimEnd();
  const out = [line(header), ...cells.map(line)];
  if (rows.length === 0) out.push("(no pods)");
  return out.map((l) =>
    l.length > options.width ? l.slice(0, Math.max(1, options.width - 1)) + "…" : l
  );
}

/** Options of {@linkcode LiveView}. */
export interface LiveViewOptions {
  /** Redraw on a terminal (true) or log changes (false). */
  tty: boolean;
  clock: Clock;
  /** Redraw period (default 500 ms). */
  intervalMs?: number;
  /** Where the table goes (default: stdout). */
  write?: (text: string) => void;
  /** Terminal width (default: the console's, else 120). */
  columns?: () => number;
  /** Extra lines under the table (e.g. the HTTP address). */
  footer?: () => string[];
}

/**
 * Redraws the table in place on a terminal, or logs container state changes otherwise.
 *
 * @example
 * ```ts
 * import { RealClock } from "../../util/clock.ts";
 * import type { Kubelet } from "../../kubelet/kubelet.ts";
 *
 * declare const kubelet: Kubelet;
 *
 * const view = new LiveView(kubelet, { tty: Deno.stdout.isTerminal(), clock: new RealClock() });
 * view.start();
 * view.stop();
 * ```
 */
export class LiveView {
  #source: LiveViewSource;
  #options: LiveViewOptions;
  #timer?: ClockTimer;
  #lastLines = 0;
  #lastState = new Map<string, string>();
  #stopped = false;
  #encoder = new TextEncoder();

  /** Nothing is drawn until `start()`. */
  constructor(source: LiveViewSource, options: LiveViewOptions) {
    this.#source = source;
    this.#options = options;
  }

  /** Draws now and then every interval. */
  start(): void {
    if (this.#options.tty) this.#write("\x1b[?25l"); // hide the cursor while redrawing
    this.#tick();
  }

  /** Stops redrawing (the last table stays on screen). */
  stop(): void {
    this.#stopped = true;
    this.#timer?.stop();
    if (this.#options.tty) this.#write("\x1b[?25h\n");
  }

  #tick(): void {
    if (this.#stopped) return;
    try {
      this.render();
    } catch (e) {
      log.error(e, "Live view failed to render");
    }
    this.#timer = this.#options.clock.afterFunc(
      this.#options.intervalMs ?? 500,
      () => this.#tick(),
    );
  }

  /** One redraw (terminal) or one round of change detection (log). */
  render(): void {
    const rows = buildRows(this.#source, this.#options.clock.now());
    if (!this.#options.tty) {
      for (const r of rows) {
        const key = `${r.pod}/${r.container}`;
        const state = `phase=${r.phase} state=${r.state} ready=${r.ready} started=${
          r.started ?? "-"
        } restarts=${r.restarts} probes="${r.probes}"`;
        if (this.#lastState.get(key) === state) continue;
        this.#lastState.set(key, state);
        log.info("Container status", {
          pod: r.pod,
          container: r.container,
          phase: r.phase,
          state: r.state,
          ready: r.ready,
          started: r.started ?? "-",
          restartCount: r.restarts,
          probes: r.probes,
        });
      }
      return;
    }
    const width = this.#columns();
    const lines = renderTable(rows, { width });
    const events = this.#source.events.list().slice(-8);
    lines.push("", "RECENT EVENTS");
    const now = this.#options.clock.now();
    for (const e of events) {
      const obj = `${e.involvedObject.name ?? ""}${
        e.involvedObject.fieldPath ? " " + e.involvedObject.fieldPath : ""
      }`;
      const text = `${age(now - e.lastMs).padStart(6)} ${e.type.padEnd(7)} ${
        e.reason.padEnd(13)
      } ${obj}: ${oneLine(e.message)}`;
      lines.push(text.length > width ? text.slice(0, width - 1) + "…" : text);
    }
    if (events.length === 0) lines.push("(none yet)");
    lines.push("", ...(this.#options.footer?.() ?? []));
    // More lines than the terminal has would scroll and break the redraw: keep the top.
    const height = this.#rows();
    if (lines.length > height - 1) lines.splice(height - 2, lines.length, "…");
    // Move to the start of the previous drawing, clear it, draw again.
    let out = this.#lastLines > 0 ? `\x1b[${this.#lastLines}A\r\x1b[J` : "";
    out += lines.map((l) => l + "\x1b[K").join("\n") + "\n";
    this.#lastLines = lines.length;
    this.#write(out);
  }

  #columns(): number {
    if (this.#options.columns) return this.#options.columns();
    try {
      // A pseudo-terminal without a size reports 0 columns.
      const { columns } = Deno.consoleSize();
      return columns >= 40 ? columns : 120;
    } catch {
      return 120;
    }
  }

  #rows(): number {
    try {
      const { rows } = Deno.consoleSize();
      return rows >= 10 ? rows : 50;
    } catch {
      return 50;
    }
  }

  #write(text: string): void {
    if (this.#options.write) this.#options.write(text);
    else writeAllSync(Deno.stdout, this.#encoder.encode(text));
  }
}

// Probe outputs often end in a newline (exec stderr, HTTP bodies): one table line each.
function oneLine(text: string): string {
  return text.replace(/[\s\p{Cc}]+/gu, " ").trim();
}

function writeAllSync(w: { writeSync(p: Uint8Array): number }, data: Uint8Array): void {
  let off = 0;
  while (off < data.length) off += w.writeSync(data.subarray(off));
}
