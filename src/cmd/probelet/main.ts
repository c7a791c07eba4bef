/**
 * `probelet`: the node agent's command line. Parses kubelet-style flags, starts the agent, shows
 * the live view, and shuts down cleanly on SIGINT/SIGTERM (exit 0). Bad flags exit with code 2.
 *
 * ```sh
 * deno run --allow-all src/cmd/probelet/main.ts --pod-manifest-path fixtures/pods/host
 * ```
 * @module
 */
import { join } from "node:path";
import { RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { kubernetesVersion } from "../../version.ts";
import { FlagError, type KubeletFlags, parseFlags, usage } from "./flags.ts";
import { runKubelet, type RunningKubelet, stopSlackMs } from "./app.ts";
import { raiseOpenFileLimit } from "../../util/rlimit.ts";
import { LiveView } from "./live_view.ts";
import { RotatingLogFile, type RotatingLogFileOptions } from "../../util/log_file.ts";

/**
 * Sends the log to `path` while the live view owns the terminal: the file is rotated at 10 MiB and
 * 5 files are kept (kubelet's container log defaults), so a chatty agent cannot fill the disk.
 * Returns the file; `close()` it when done.
 *
 * @example
 * ```ts
 * const file = openLiveViewLog(".run/probelet/probelet.log");
 * // ... log.info(...) lines land in the file ...
 * file.close();
 * ```
 */
export function openLiveViewLog(
  path: string,
  options: RotatingLogFileOptions = {},
): RotatingLogFile {
  const file = RotatingLogFile.open(path, options);
  log.setLogSink((line) => file.writeLine(line));
  return file;
}

/**
 * Runs the CLI with `args`; resolves with the exit code.
 *
 * @example
 * ```ts
 * Deno.exit(await main(["--pod-manifest-path", "fixtures/pods/host"]));
 * ```
 */
export async function main(args: string[]): Promise<number> {
  const flags = parseCommandLine(args);
  if (typeof flags === "number") return flags;
  log.setVerbosity(flags.verbosity);
  log.setLogFormat(flags.loggingFormat);
  const tty = flags.liveView === "always" ||
    (flags.liveView === "auto" && Deno.stdout.isTerminal());
  await Deno.mkdir(flags.rootDir, { recursive: true });
  const logFile = join(flags.rootDir, "probelet.log");
  // The table owns the terminal; log lines go to a file next to the agent's state.
  const logHandle = tty ? openLiveViewLog(logFile) : undefined;

  let agent: RunningKubelet | undefined;
  // Exits now, but never leaves a process of ours running untracked: the embedded runtime's exec
  // probes are killed first, and its containers unless they are left for the next start (their
  // shims keep track of them, as a CRI runtime does of its own).
  const exitNow = (why: string) => {
    console.error(`probelet: ${why}, killing what is left and exiting`);
    log.info("Exiting without waiting for the teardown", { reason: why });
    agent?.kill();
    Deno.exit(1);
  };
  // Listen before starting, so a signal during start-up still tears down what was started.
  const signals = listenForStopSignals(() => exitNow("second signal"));
  const limit = raiseOpenFileLimit().after;
  if (limit) log.info("Open file limit", { soft: limit.soft, hard: limit.hard });
  try {
    agent = await runKubelet(flags);
  } catch (e) {
    log.error(e, "Failed to start the node agent");
    console.error(
      `probelet: ${e instanceof Error ? e.message : e}${tty ? ` (log: ${logFile})` : ""}`,
    );
    signals.remove();
    logHandle?.close();
    return 1;
  }
  const view = newAgentView(agent, flags, { tty, logFile });
  view.start();

  const sig = await signals.first;
  view.stop();
  const code = await shutDown(agent, flags, { sig, tty, exitNow });
  signals.remove();
  log.info("Stopped", {});
  logHandle?.close();
  return code;
}

// The flags, or the exit code when the command line asks for no agent: usage or a bad flag (2),
// --help or --version (0).
function parseCommandLine(args: string[]): KubeletFlags | number {
  let flags;
  try {
    flags = parseFlags(args);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    console.error(`Error: ${e.message}\nRun 'probelet --help' for usage.`);
    return 2;
  }
  if (flags.help) {
    console.log(usage());
    return 0;
  }
  if (flags.version) {
    console.log(
      `probelet (kubelet ${kubernetesVersion.gitVersion} prober port)`,
    );
    return 0;
  }
  return flags;
}

// SIGINT and SIGTERM: `first` resolves with the first one; a second one well after it means
// "stop waiting" and calls `onSecond`. `remove()` unregisters the listeners.
function listenForStopSignals(
  onSecond: () => void,
): { first: Promise<Deno.Signal>; remove(): void } {
  const { promise: first, resolve } = Promise.withResolvers<Deno.Signal>();
  let firstAt = 0;
  const handlers = (["SIGINT", "SIGTERM"] as const).map((sig) => {
    const handler = () => {
      // Ctrl-C reaches both `deno task` and the agent, and the task runner forwards it again: only
      // a signal well after the first one means "stop waiting".
      if (firstAt === 0) firstAt = Date.now();
      else if (Date.now() - firstAt > 1500) onSecond();
      resolve(sig);
    };
    Deno.addSignalListener(sig, handler);
    return { sig, handler };
  });
  return {
    first,
    remove: () => {
      for (const { sig, handler } of handlers) Deno.removeSignalListener(sig, handler);
    },
  };
}

// The live view of the running agent, with a footer saying where it runs and how to stop it.
function newAgentView(
  agent: RunningKubelet,
  flags: KubeletFlags,
  options: { tty: boolean; logFile: string },
): LiveView {
  const { tty, logFile } = options;
  const runtimeText = flags.containerRuntimeEndpoint ||
    "embedded (host processes, pod IP 127.0.0.1)";
  return new LiveView(agent.kubelet, {
    tty,
    clock: new RealClock(),
    footer: () => [
      `node ${flags.nodeName}  runtime ${runtimeText}  manifests ${flags.podManifestPath || "-"}`,
      `${agent.url ? `http ${agent.url}/pods /events /metrics/probes /healthz  ` : ""}log ${
        tty ? logFile : "stderr"
      }  ${
        agent.stopPodsOnExit
          ? "Ctrl-C stops the agent and its pods"
          : "Ctrl-C stops the agent; pods keep running for the next start to adopt"
      }`,
      ...(agent.node ? [`api server (${flags.kubeconfig}): node ${agent.node.summary()}`] : []),
      ...agent.kubelet.manifestErrors().map((e) => `manifest error: ${e.message}`),
    ],
  });
}

// Stops the agent after `sig`; resolves with the exit code (1 when the stop failed).
async function shutDown(
  agent: RunningKubelet,
  flags: KubeletFlags,
  context: { sig: Deno.Signal; tty: boolean; exitNow: (why: string) => void },
): Promise<number> {
  const { sig, tty, exitNow } = context;
  log.info("Received signal, shutting down", { signal: sig });
  if (tty) {
    console.error(
      `probelet: ${sig}: ${agent.stopPodsOnExit ? "stopping pods..." : "leaving pods running..."}`,
    );
  }
  // The stop itself is bounded (--shutdown-grace-period plus removal time); this is the backstop
  // for a stop stuck elsewhere (a runtime that does not answer).
  const backstop = setTimeout(
    () => exitNow("shutdown did not finish in time"),
    flags.shutdownGracePeriodMs + stopSlackMs + 10_000,
  );
  let code = 0;
  try {
    await agent.stop();
  } catch (e) {
    log.error(e, "Shutdown failed");
    code = 1;
  }
  clearTimeout(backstop);
  return code;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
