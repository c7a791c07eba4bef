/**
 * Helpers for the node agent's end-to-end tests: manifests written to a temporary folder, the agent
 * started in-process with `runKubelet`, and polling of observable state with a deadline (never a
 * fixed sleep as synchronisation).
 * @module
 */
import { join } from "node:path";
import { runKubelet, type RunningKubelet } from "../../src/cmd/probelet/app.ts";
import type { KubeletFlags } from "../../src/cmd/probelet/flags.ts";
import type { ContainerStatus } from "../../src/api/core/v1/mod.ts";
import type { PodWithStatus } from "../../src/kubelet/kubelet.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import * as log from "../../src/util/log.ts";
import { startTaskDenoFlags } from "../testing/start_task.ts";

/** Which runtime an e2e run uses. */
export type E2ERuntime = "embedded" | "containerd";

/** A started agent with its manifest folder. */
export interface E2EAgent extends RunningKubelet {
  manifestDir: string;
  rootDir: string;
  /** Every event as `"<type> <reason> <message>"` with the object, in order. */
  recorder: FakeRecorder;
  /** Writes (or replaces) a manifest file. */
  writeManifest(name: string, yaml: string): Promise<void>;
  /** Deletes a manifest file. */
  removeManifest(name: string): Promise<void>;
  /** The pod `<name>-<node>` in namespace default, if present. */
  pod(name: string): PodWithStatus | undefined;
  /** Events (as FakeRecorder strings) recorded for the pod `<name>-<node>`. */
  eventsOf(name: string): string[];
  /** Every container status the status manager cached, in order (pod name without the node). */
  history: StatusRecord[];
  /** Stops the agent and removes its folders. */
  close(): Promise<void>;
}

/** One container's status at one moment. */
export interface StatusRecord {
  at: number;
  pod: string;
  container: string;
  running: boolean;
  started: boolean | undefined;
  ready: boolean;
  restartCount: number;
}

/** The node name the e2e agents use; static pod names are `<name>-e2e`. */
export const e2eNodeName = "e2e";

/**
 * Starts an agent on `runtime` with the given manifests (file name → YAML).
 * Logs are silenced unless `PROBELET_E2E_LOG=1`.
 */
export async function startAgent(
  runtime: E2ERuntime,
  manifests: Record<string, string>,
  options: { endpoint?: string; port?: number; flags?: Partial<KubeletFlags> } = {},
): Promise<E2EAgent> {
  const base = await Deno.makeTempDir({ prefix: `probelet-e2e-${runtime}-` });
  const manifestDir = join(base, "pods");
  const rootDir = join(base, "root");
  await Deno.mkdir(manifestDir);
  for (const [name, yaml] of Object.entries(manifests)) {
    await Deno.writeTextFile(join(manifestDir, name), yaml);
  }
  const previousSink = Deno.env.get("PROBELET_E2E_LOG") === "1"
    ? undefined
    : log.setLogSink(() => {});
  const recorder = new FakeRecorder();
  let agent: RunningKubelet;
  try {
    agent = await runKubelet({
      podManifestPath: manifestDir,
      rootDir,
      nodeName: e2eNodeName,
      containerRuntimeEndpoint: runtime === "containerd" ? options.endpoint : "",
      port: options.port ?? -1,
      address: "127.0.0.1",
      syncFrequencyMs: 1000,
      // The tests own their runtime objects: stop them on close on containerd too.
      stopPodsOnExit: true,
      // Only file notifications should be needed; the re-list is a fallback.
      fileCheckFrequencyMs: 5000,
      recorders: [recorder],
      ...options.flags,
    });
  } catch (e) {
    if (previousSink) log.setLogSink(previousSink);
    await Deno.remove(base, { recursive: true }).catch(() => {});
    throw e;
  }
  const podName = (name: string) => `${name}-${e2eNodeName}`;
  const history: StatusRecord[] = [];
  const unsubscribe = agent.kubelet.statusManager.subscribe((uid, status) => {
    const pod = agent.kubelet.podManager.getPodByUID(uid);
    const name = (pod?.metadata.name ?? "").replace(new RegExp(`-${e2eNodeName}$`), "");
    for (const cs of status.containerStatuses ?? []) {
      history.push({
        at: Date.now(),
        pod: name,
        container: cs.name,
        running: cs.state?.running !== undefined,
        started: cs.started,
        ready: cs.ready,
        restartCount: cs.restartCount,
      });
    }
  });
  return {
    ...agent,
    manifestDir,
    rootDir,
    recorder,
    writeManifest: (name, yaml) => Deno.writeTextFile(join(manifestDir, name), yaml),
    removeManifest: (name) => Deno.remove(join(manifestDir, name)),
    pod: (name) => agent.kubelet.getPod(podName(name)),
    eventsOf: (name) => recorder.events.filter((_, i) => recorder.refs[i].name === podName(name)),
    history,
    close: async () => {
      unsubscribe();
      try {
        await agent.stop();
      } finally {
        if (previousSink) log.setLogSink(previousSink);
        await Deno.remove(base, { recursive: true }).catch(() => {});
      }
    },
  };
}

/**
 * Polls `check` every 100 ms until it returns a value other than undefined/false, or throws after
 * `timeoutMs` with `what` and the last observed state.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: { timeoutMs?: number; describe?: () => unknown } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      const state = options.describe ? `; last state: ${JSON.stringify(options.describe())}` : "";
      throw new Error(
        `timed out after ${options.timeoutMs ?? 20_000} ms waiting for ${what}${state}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The named container's status in the pod. */
export function containerStatus(
  pod: PodWithStatus | undefined,
  name: string,
): ContainerStatus | undefined {
  return pod?.status.containerStatuses?.find((c) => c.name === name);
}

/** The status of a pod condition (`Ready`, `ContainersReady`, ...). */
export function condition(pod: PodWithStatus | undefined, type: string): string | undefined {
  return pod?.status.conditions?.find((c) => c.type === type)?.status;
}

const probeletMain = new URL("../../src/cmd/probelet/main.ts", import.meta.url).pathname;
// As `deno task start` runs it (its V8 mode and code cache setting).
const probeletDenoFlags = startTaskDenoFlags();

/** A probelet CLI process started by {@link startCli}, with what its readiness check returned. */
export interface CliProcess<T> {
  child: Deno.ChildProcess;
  port: number;
  /** Everything the agent writes to stderr, once it has exited. */
  stderr: Promise<string>;
  ready: T;
}

/**
 * Runs `probelet <args> --port <p> --live-view never` as a subprocess on a random port below the
 * ephemeral range and waits until `ready(port)` returns a value (default: `/healthz` answers
 * `ok`). A port somebody else holds makes the agent exit at once; another port is tried then, at
 * most six in all. A readiness timeout kills the agent before it is reported.
 *
 * @example
 * ```ts
 * const cli = await startCli(["--pod-manifest-path", dir]);
 * cli.child.kill("SIGTERM");
 * ```
 */
export async function startCli<T = string>(
  args: string[],
  options: { ready?: (port: number) => Promise<T | undefined>; what?: string } = {},
): Promise<CliProcess<T>> {
  const ready = options.ready ??
    (async (port: number) =>
      (await (await fetch(`http://127.0.0.1:${port}/healthz`)).text()) === "ok"
        ? "up" as T
        : undefined);
  for (let attempt = 0;; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        ...probeletDenoFlags,
        probeletMain,
        ...args,
        "--read-only-port",
        String(port),
        "--port",
        "0",
        "--live-view",
        "never",
      ],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    let exited = false;
    child.status.then(() => exited = true);
    const seen = await waitFor(`${options.what ?? "/healthz"} (or the agent exiting)`, async () => {
      if (exited) return { exited: true as const };
      try {
        const value = await ready(port);
        return value === undefined ? undefined : { value };
      } catch {
        return undefined;
      }
    }).catch(async (e) => {
      if (!exited) child.kill("SIGKILL");
      await child.status;
      throw e;
    });
    if ("value" in seen) return { child, port, stderr, ready: seen.value as T };
    const text = await stderr;
    if (!/AddrInUse|address already in use/i.test(text) || attempt >= 5) {
      throw new Error(`probelet exited at start:\n${text}`);
    }
  }
}
