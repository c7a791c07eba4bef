/**
 * Entry point of `deno task probe`:
 *
 * ```sh
 * deno task probe <manifest.yaml> [--container NAME] [--type liveness|readiness|startup]
 *                 [--pod-ip IP] [--output text|json] [--watch] [--v N]
 * ```
 *
 * Without `--watch` every selected probe runs once and the exit status is 0 only if all of them
 * succeeded (a warning counts as success, as in kubelet). With `--watch` the prober manager keeps
 * probing until Ctrl-C and prints each transition.
 * @module
 */
import { parseArgs } from "node:util";
import { loadPodManifests } from "../../kubelet/config/mod.ts";
import type { ProbeType } from "../../kubelet/prober/probe_type.ts";
import { type LogSink, setLogSink, setVerbosity } from "../../util/log.ts";
import { formatReports, isHealthy, probeOnce } from "./probe_once.ts";
import { watchProbes } from "./watch.ts";
import { errorText } from "../../util/errors.ts";

const usage = `Usage: deno task probe <manifest.yaml> [options]

Runs the probes of a pod manifest with kubelet's probe handlers.

Options:
  --container NAME     only this container
  --type TYPE          only liveness, readiness or startup probes
  --pod-ip IP          the pod IP probes target (default 127.0.0.1)
  --output FORMAT      text (default) or json
  --watch              keep probing with the prober manager and print each transition
  --v N                show the prober's klog lines on stderr at verbosity N (default: warnings
                       and errors only)
  -h, --help           show this help`;

/** Parsed command line of the probe command. */
export interface ProbeCommand {
  manifest: string;
  container?: string;
  probeType?: ProbeType;
  podIP: string;
  output: "text" | "json";
  watch: boolean;
  verbosity: number;
  /** Whether `--v` was on the command line (klog's info lines are shown only then). */
  verbosityGiven: boolean;
  help: boolean;
}

/**
 * Parses the command line; throws an Error naming the flag when it is wrong.
 *
 * @example
 * ```ts
 * parseProbeCommand(["pod.yaml", "--type", "liveness"]).probeType; // "liveness"
 * ```
 */
export function parseProbeCommand(args: string[]): ProbeCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        container: { type: "string" },
        type: { type: "string" },
        "pod-ip": { type: "string", default: "127.0.0.1" },
        output: { type: "string", default: "text" },
        watch: { type: "boolean", default: false },
        v: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (e) {
    throw new Error(describeParseError(e));
  }
  const { values, positionals } = parsed;
  const help = values.help ?? false;
  if (!help && positionals.length !== 1) {
    throw new Error(
      positionals.length === 0
        ? "a manifest file is required"
        : `exactly one manifest is expected, got ${positionals.length}`,
    );
  }
  const type = values.type;
  if (type !== undefined && !["liveness", "readiness", "startup"].includes(type)) {
    throw new Error(`--type: must be liveness, readiness or startup, got "${type}"`);
  }
  const output = values.output ?? "text";
  if (output !== "text" && output !== "json") {
    throw new Error(`--output: must be text or json, got "${output}"`);
  }
  const verbosity = Number(values.v ?? "0");
  if (!Number.isInteger(verbosity) || verbosity < 0) {
    throw new Error(`--v: must be a non-negative integer, got "${values.v}"`);
  }
  const podIP = values["pod-ip"] ?? "127.0.0.1";
  if (podIP === "") throw new Error("--pod-ip: must not be empty");
  return {
    manifest: positionals[0] ?? "",
    container: values.container,
    probeType: type as ProbeType | undefined,
    podIP,
    output,
    watch: values.watch ?? false,
    verbosity,
    verbosityGiven: values.v !== undefined,
    help,
  };
}

/** The flags `parseProbeCommand` knows, for suggestions. */
const knownFlags = ["container", "type", "pod-ip", "output", "watch", "v", "help"];

/**
 * Turns node:util's parse errors into this command's texts: an unknown flag is named with the
 * closest known one (`unknown flag: --pod-ipp (did you mean --pod-ip?)`) instead of node's advice
 * about positionals.
 */
function describeParseError(e: unknown): string {
  const message = errorText(e);
  const unknown = /^Unknown option '(-{1,2})([^']*)'/.exec(message);
  if (unknown === null) return message;
  const [, dashes, name] = unknown;
  const suggestion = closestFlag(name);
  return `unknown flag: ${dashes}${name}` +
    (suggestion === undefined ? "" : ` (did you mean --${suggestion}?)`);
}

/** The known flag within two edits of `name` (the nearest one), if any. */
function closestFlag(name: string): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const flag of knownFlags) {
    const distance = editDistance(name, flag);
    if (distance < bestDistance) [best, bestDistance] = [flag, distance];
  }
  return best;
}

/** Levenshtein distance between two short strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * Runs the command and returns its exit status: 0 all probes healthy, 1 some probe unhealthy or
 * errored, 2 bad usage or a manifest that yielded no pod.
 */
export async function main(args: string[]): Promise<number> {
  let cmd: ProbeCommand;
  try {
    cmd = parseProbeCommand(args);
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${usage}`);
    return 2;
  }
  if (cmd.help) {
    console.log(usage);
    return 0;
  }
  setVerbosity(cmd.verbosity);
  // The human output owns the terminal: the prober's own klog lines (kubelet logs some at level 0,
  // e.g. "Failed to trigger a manual run") are shown only when --v is given; warnings and errors
  // always are.
  if (cmd.verbosityGiven) return await run(cmd);
  const previousSink = setLogSink(() => {});
  setLogSink(dropInfoLines(previousSink));
  try {
    return await run(cmd);
  } finally {
    setLogSink(previousSink);
  }
}

/** A sink passing everything but klog info lines (`I` header) on to `next`. */
export function dropInfoLines(next: LogSink): LogSink {
  return (line) => {
    if (!line.startsWith("I")) next(line);
  };
}

async function run(cmd: ProbeCommand): Promise<number> {
  const { pods, errors } = await loadPodManifests(cmd.manifest);
  for (const e of errors) console.error(`error: ${e.message}`);
  if (pods.length === 0) {
    console.error(`error: ${cmd.manifest}: no valid pod to probe`);
    return 2;
  }
  if (cmd.container && !pods.some((p) => hasContainer(p.spec, cmd.container!))) {
    console.error(`error: --container: no container named "${cmd.container}" in ${cmd.manifest}`);
    return 2;
  }

  if (cmd.watch) {
    const ac = new AbortController();
    const stop = () => ac.abort();
    Deno.addSignalListener("SIGINT", stop);
    Deno.addSignalListener("SIGTERM", stop);
    try {
      await watchProbes(pods, { podIP: cmd.podIP, signal: ac.signal });
    } finally {
      Deno.removeSignalListener("SIGINT", stop);
      Deno.removeSignalListener("SIGTERM", stop);
    }
    return errors.length > 0 ? 1 : 0;
  }

  const reports = await probeOnce(pods, {
    container: cmd.container,
    probeType: cmd.probeType,
    podIP: cmd.podIP,
  });
  if (cmd.output === "json") {
    console.log(JSON.stringify(reports, null, 2));
  } else {
    console.log(formatReports(reports));
  }
  return errors.length === 0 && reports.length > 0 && reports.every(isHealthy) ? 0 : 1;
}

function hasContainer(
  spec: { containers: { name: string }[]; initContainers?: { name: string }[] },
  name: string,
) {
  return [...spec.containers, ...spec.initContainers ?? []].some((c) => c.name === name);
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
