/**
 * A tiny structured logger in the style of klog's `InfoS`/`ErrorS`: one line per entry with klog's
 * header (severity, date, time in microseconds, pid, `file:line` of the caller), the quoted
 * message and `key=value` pairs, and a global verbosity that gates `V(n)` entries.
 * `setLogFormat("json")` switches to kubelet's JSON logging (`--logging-format=json`): one JSON
 * object per line with `ts` (epoch milliseconds), `caller`, `msg`, `v` (info) or `err` (errors),
 * then the pairs.
 *
 * ```
 * I1123 03:04:05.123456   12345 prober.ts:120] "Probe failed" probeType="Liveness" pod="default/web"
 * {"ts":1700708645123.456,"caller":"prober/prober.ts:120","msg":"Probe failed","v":0,"probeType":"Liveness"}
 * ```
 * Mirrors klog's text header (k8s.io/klog/v2 internal/buffer FormatHeader) and
 * k8s.io/component-base/logs/json.
 * @module
 */

/** Key/value pairs of one log entry, printed in insertion order. */
export type LogFields = Record<string, unknown>;

/** Where finished log lines go (default: stderr, as klog). */
export type LogSink = (line: string) => void;

/** `text`: klog's header and key=value pairs; `json`: kubelet's JSON logging. */
export type LogFormat = "text" | "json";

let verbosity = 0;
let sink: LogSink = (line) => console.error(line);
let format: LogFormat = "text";

/**
 * Sets the line format of every later entry (`--logging-format`).
 *
 * @example
 * ```ts
 * setLogFormat("json");
 * info("Probe failed"); // {"ts":...,"caller":"...","msg":"Probe failed","v":0}
 * ```
 */
export function setLogFormat(next: LogFormat): void {
  format = next;
}

/** The current line format. */
export function getLogFormat(): LogFormat {
  return format;
}

/**
 * Sets the global verbosity: `V(n)` entries are written when `n <= verbosity`.
 *
 * @example
 * ```ts
 * setVerbosity(4);
 * V(4).info("Probe started"); // written
 * ```
 */
export function setVerbosity(n: number): void {
  verbosity = n;
}

/** The current global verbosity. */
export function getVerbosity(): number {
  return verbosity;
}

/**
 * Replaces the sink and returns the previous one (tests capture or silence logs with it).
 *
 * @example
 * ```ts
 * const lines: string[] = [];
 * const previous = setLogSink((l) => lines.push(l));
 * info("hello");
 * setLogSink(previous);
 * ```
 */
export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

/**
 * Writes an info entry regardless of verbosity (klog's `InfoS`).
 *
 * @example
 * ```ts
 * info("Probe failed", { probeType: "Liveness", pod: "default/web" });
 * ```
 */
export function info(msg: string, fields?: LogFields): void {
  sink(formatLine("info", msg, fields));
}

/**
 * Writes a warning entry regardless of verbosity (klog's `Warning`, severity `W`).
 *
 * @example
 * ```ts
 * warning("Exec probe timed out but ExecProbeTimeout feature gate was disabled");
 * ```
 */
export function warning(msg: string, fields?: LogFields): void {
  sink(formatLine("warning", msg, fields));
}

/**
 * Writes an error entry with the error's message as `err` (klog's `ErrorS`).
 *
 * @example
 * ```ts
 * error(new Error("boom"), "Probe errored", { probeType: "Readiness" });
 * ```
 */
export function error(err: unknown, msg: string, fields?: LogFields): void {
  const all: LogFields = {};
  if (err !== undefined && err !== null) all.err = err instanceof Error ? err.message : err;
  sink(formatLine("error", msg, { ...all, ...fields }));
}

/** A verbosity-gated logger, as returned by `V(n)`. */
export interface Verbose {
  /** True when entries at this level are written. */
  readonly enabled: boolean;
  /** Writes an info entry when enabled. */
  info(msg: string, fields?: LogFields): void;
}

/**
 * klog's `V(n)`: entries at level `n` are written only when `n <= verbosity`.
 *
 * @example
 * ```ts
 * V(3).info("No status for pod", { pod: "default/web" });
 * ```
 */
export function V(level: number): Verbose {
  // Most V(n) calls are below the verbosity: one shared logger that writes nothing, rather than
  // a new object and closure for each.
  if (level > verbosity) return disabledVerbose;
  return {
    enabled: true,
    info: (msg, fields) => sink(formatLine("info", msg, fields, { v: level })),
  };
}

const disabledVerbose: Verbose = Object.freeze({ enabled: false, info: () => {} });

/**
 * klog's `KObj`: `namespace/name`, or just `name` without a namespace.
 *
 * @example
 * ```ts
 * kObj({ metadata: { name: "web", namespace: "default" } }); // "default/web"
 * ```
 */
export function kObj(obj: { metadata?: { name?: string; namespace?: string } }): string {
  const name = obj.metadata?.name ?? "";
  const ns = obj.metadata?.namespace ?? "";
  return ns ? `${ns}/${name}` : name;
}

/**
 * Formats one entry in the current format (see the module doc): `level` is `info`, `warning` or
 * `error`; `options.v` is the verbosity level of a `V(n)` entry (JSON's `v`). The caller is the
 * first stack frame outside this file.
 *
 * @example
 * ```ts
 * formatLine("info", "Probe failed", { probeType: "Liveness" });
 * // 'I1123 03:04:05.123456   12345 prober.ts:120] "Probe failed" probeType="Liveness"'
 * ```
 */
export function formatLine(
  level: string,
  msg: string,
  fields?: LogFields,
  options: { v?: number; now?: number; pid?: number; caller?: string } = {},
): string {
  const now = options.now ?? nowMicros() / 1000;
  const caller = options.caller ?? callerOf(new Error().stack ?? "");
  const pid = options.pid ?? Deno.pid;
  if (format === "json") {
    const entry: Record<string, unknown> = { ts: now, caller, msg };
    const rest = { ...(fields ?? {}) };
    if (level === "error") {
      entry.err = "err" in rest ? jsonValue(rest.err) : null;
      delete rest.err;
    } else {
      entry.v = options.v ?? 0;
    }
    for (const [key, value] of Object.entries(rest)) entry[key] = jsonValue(value);
    return JSON.stringify(entry);
  }
  let line = `${klogHeader(severityChar(level), { now, pid, caller })}${JSON.stringify(msg)}`;
  for (const [key, value] of Object.entries(fields ?? {})) {
    line += ` ${key}=${formatValue(value)}`;
  }
  return line;
}

/**
 * klog's header: `Lmmdd hh:mm:ss.uuuuuu threadid file:line] ` in local time, the pid right-aligned
 * in 7 columns (klog prints the pid where a thread id would go).
 *
 * @example
 * ```ts
 * klogHeader("I", { now: Date.UTC(2026, 10, 23, 3, 4, 5, 123), pid: 12345, caller: "main.ts:7" });
 * // "I1123 03:04:05.123000   12345 main.ts:7] " (with TZ=UTC)
 * ```
 */
export function klogHeader(
  severity: string,
  options: { now: number; pid: number; caller: string },
): string {
  const d = new Date(Math.floor(options.now));
  const micros = Math.floor((options.now - Math.floor(options.now / 1000) * 1000) * 1000);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${severity}${two(d.getMonth() + 1)}${two(d.getDate())} ${two(d.getHours())}:${
    two(d.getMinutes())
  }:${two(d.getSeconds())}.${String(micros).padStart(6, "0")} ${
    String(options.pid).padStart(7, " ")
  } ${options.caller}] `;
}

function severityChar(level: string): string {
  switch (level) {
    case "error":
      return "E";
    case "warning":
      return "W";
    case "fatal":
      return "F";
    default:
      return "I";
  }
}

// Wall-clock time in microseconds: Date has milliseconds only, performance.now() the fraction.
function nowMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

// `file.ts:line` of the first frame outside this module (klog's caller; JSON wants `dir/file`).
function callerOf(stack: string): string {
  for (const frame of stack.split("\n").slice(1)) {
    const m = frame.match(/((?:file:\/\/)?[^\s()]+):(\d+):\d+\)?$/);
    if (!m || m[1].endsWith("/util/log.ts")) continue;
    const parts = m[1].split("/");
    const file = parts[parts.length - 1];
    return format === "json" && parts.length > 1
      ? `${parts[parts.length - 2]}/${file}:${m[2]}`
      : `${file}:${m[2]}`;
  }
  return "???:1";
}

function jsonValue(value: unknown): unknown {
  if (value instanceof Error) return value.message;
  if (value === undefined) return null;
  if (typeof value === "bigint") return value.toString();
  return value;
}

// klog's value formatting: strings and errors quoted, numbers and booleans bare, nil as <nil>,
// anything else as JSON (Go would print %+v).
function formatValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof Error) return JSON.stringify(value.message);
  if (value === undefined || value === null) return "<nil>";
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return String(value);
  }
  try {
    return JSON.stringify(value);
  } catch {
    return JSON.stringify(String(value));
  }
}
