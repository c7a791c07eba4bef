/**
 * A tiny structured logger in the style of klog's `InfoS`: one line per entry, `key=value` pairs,
 * and a global verbosity that gates `V(n)` entries.
 *
 * ```
 * level=info msg="Probe failed" probeType=Liveness pod=default/web output="HTTP probe failed with statuscode: 500"
 * ```
 * @module
 */

/** Key/value pairs of one log entry, printed in insertion order. */
export type LogFields = Record<string, unknown>;

/** Where finished log lines go (default: stderr, as klog). */
export type LogSink = (line: string) => void;

let verbosity = 0;
let sink: LogSink = (line) => console.error(line);

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
  const enabled = level <= verbosity;
  return {
    enabled,
    info: (msg, fields) => {
      if (enabled) sink(formatLine("info", msg, fields));
    },
  };
}

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
 * Formats one entry as `level=<level> msg="<msg>" key=value ...`.
 *
 * @example
 * ```ts
 * formatLine("info", "Probe failed", { probeType: "Liveness" });
 * // 'level=info msg="Probe failed" probeType=Liveness'
 * ```
 */
export function formatLine(level: string, msg: string, fields?: LogFields): string {
  let line = `level=${level} msg=${JSON.stringify(msg)}`;
  for (const [key, value] of Object.entries(fields ?? {})) {
    line += ` ${key}=${formatValue(value)}`;
  }
  return line;
}

// Bare words stay bare; anything with spaces, quotes, '=' or nothing at all is quoted.
function formatValue(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = value;
  else if (value instanceof Error) text = value.message;
  else if (value === undefined) text = "<nil>";
  else if (typeof value === "object" && value !== null) {
    try {
      text = JSON.stringify(value);
    } catch {
      text = String(value);
    }
  } else text = String(value);
  return text === "" || /[\s"=\\]/.test(text) || /[^\x21-\x7e]/.test(text)
    ? JSON.stringify(text)
    : text;
}
