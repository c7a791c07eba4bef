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
import { setVerbosity } from "../../util/log.ts";
import { formatReports, isHealthy, probeOnce } from "./probe_once.ts";
import { watchProbes } from "./watch.ts";

const usage = `Usage: deno task probe <manifest.yaml> [options]

Runs the probes of a pod manifest with kubelet's probe handlers.

Options:
  --container NAME     only this container
  --type TYPE          only liveness, readiness or startup probes
  --pod-ip IP          the pod IP probes target (default 127.0.0.1)
  --output FORMAT      text (default) or json
  --watch              keep probing with the prober manager and print each transition
  --v N                log verbosity (default 0)
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
        v: { type: "string", default: "0" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (e) {
    throw new Error(e instanceof Error ? e.message : String(e));
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
  const verbosity = Number(values.v);
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
    help,
  };
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
