/**
 * An in-process container runtime that runs each container's command as a host process in the
 * host network namespace (every pod's IP is 127.0.0.1), behind the same `RuntimeService` and
 * `ImageManagerService` interfaces as the CRI client, so the node agent and the prober work on a
 * laptop without root or containerd.
 *
 * Sandboxes are bookkeeping only. A container is a process started by its own shim (shim.ts): the
 * shim holds the output and writes the CRI-format log with rotation, records the exit, and
 * outlives the agent. Sandboxes and containers are recorded under the root folder (records.ts),
 * so a new runtime on the same folder lists the same IDs, metadata, labels, annotations, times
 * and states, adopts the running containers without touching them, and reports the containers
 * that ended meanwhile with the exit code their shim recorded. Every process of a container, and
 * of an exec in it, is kept in the container's cgroup where the machine allows one (cgroup.ts).
 * Any image name is accepted (nothing is pulled); the command must therefore come from the pod
 * spec. The state transitions, error texts and exit codes follow containerd's CRI plugin
 * (pkg/cri/server) where a host process allows it.
 * @module
 */
import { createHash } from "node:crypto";
import { isAbsolute, join, resolve } from "node:path";
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerState,
  ContainerStatus,
  ContainerStatusResponse,
  ExecSyncResult,
  Image,
  ImageFilter,
  ImageSpec,
  ImageStatusResponse,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxState,
  PodSandboxStatusResponse,
  VersionResponse,
} from "../../cri_client/api.ts";
import type {
  CallOptions,
  ContainerStats,
  ImageManagerService,
  RuntimeService,
} from "../../cri_client/runtime_service.ts";
import {
  type AttachRequest,
  type CommandStreams,
  type ExecRequest,
  type PortForwardRequest,
  type StreamingResponse,
  StreamingServer,
} from "../../cri_streaming/mod.ts";
import { CommandTimedOutError, ExitError } from "../../util/exec/errors.ts";
import {
  type HostCommandResult,
  maxProbeOutputBytes,
  runHostCommand,
} from "../../probe/exec/host_runner.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import { goQuote } from "../../util/go_format.ts";
import * as klog from "../../util/log.ts";
import {
  createCgroup,
  execCgroupPrefix,
  joinCgroupWrapper,
  killAndRemoveCgroup,
  killCgroup,
  removeCgroup,
  runtimeCgroup,
} from "./cgroup.ts";
import {
  defaultLogMaxFiles,
  defaultLogMaxSizeBytes,
  type LogRotation,
  rotatedLogFiles,
} from "./log.ts";
import { signalGroup, spawnError } from "./process.ts";
import { readContainerUsage } from "./stats.ts";
import {
  attachStreaming,
  type ExecPlacement,
  execStreaming,
  portForwardHost,
} from "./streaming.ts";
import {
  execMarkerVariable,
  isSameProcess,
  killLegacyPidRecords,
  killRecordedExecs,
  procStat,
  readJson,
  readRecords,
  recordDirs,
  removeExecRecord,
  writeExecRecord,
  writeJsonAtomic,
} from "./records.ts";
import {
  type ShimExit,
  shimFiles,
  shimModulePath,
  type ShimReport,
  type ShimSpec,
  type ShimState,
} from "./shim.ts";
import { errorText } from "../../util/errors.ts";
import { GrpcStatus } from "../../util/grpc_codes.ts";

/** The runtime's name, and so the type in container IDs: `embedded://<id>`. */
export const embeddedRuntimeName = "embedded";
/** The version of the embedded runtime. */
export const embeddedRuntimeVersion = "0.2.0";
/** Exit code and reason of a container whose process could not be started (containerd's). */
export const startErrorExitCode = 128;
export const startErrorReason = "StartError";
/**
 * Exit code and reason of a container whose end nobody recorded (its shim was killed), as
 * containerd reports a task it lost (`unknownExitCode`, `unknownExitReason`).
 */
export const unknownExitCode = 255;
export const unknownExitReason = "Unknown";
/**
 * The most ExecSync keeps of each stream: kubelet's exec probe keeps 10 KiB, and only the prober
 * calls ExecSync here (containerd allows 16 MiB, the CRI message limit).
 */
export const maxExecOutputBytes = maxProbeOutputBytes;

// How often the runtime looks whether the shim of an adopted container (not its child) is gone.
const adoptedPollMs = 100;

/** Options of {@link EmbeddedRuntimeService}. */
export interface EmbeddedRuntimeOptions {
  /**
   * Where the runtime keeps its records and the containers' logs (`<rootDir>/containers/<id>.log`
   * unless the sandbox sets a log folder). A new runtime on the same folder adopts what is there.
   */
  rootDir: string;
  /** Timestamps, stop grace periods and exec timeouts (default: the wall clock). */
  clock?: Clock;
  /** The IP every sandbox reports (default 127.0.0.1: containers share the host's network). */
  podIP?: string;
  /** Start containers with probelet's environment plus their own (default true; false: only theirs). */
  inheritEnv?: boolean;
  /** Log rotation: kubelet's `--container-log-max-size` (default 10Mi). */
  containerLogMaxSizeBytes?: number;
  /** Log rotation: kubelet's `--container-log-max-files` (default 5). */
  containerLogMaxFiles?: number;
  /**
   * What {@link EmbeddedRuntimeService.shutdown} does with running containers by default: stop
   * them (true, the default: Ctrl-C on a laptop leaves no process) or leave them running for the
   * next agent to adopt (false, kubelet's behaviour).
   */
  stopContainersOnShutdown?: boolean;
  /** Use a cgroup per container when the machine allows it (default true). */
  cgroups?: boolean;
}

interface SandboxRecord {
  id: string;
  config: PodSandboxConfig;
  state: PodSandboxState;
  createdAt: bigint;
  runtimeHandler: string;
  nameKey: string;
}

/** `sandboxes/<id>.json`. */
interface SandboxFile {
  id: string;
  config: PodSandboxConfig;
  state: PodSandboxState;
  createdAtNs: string;
  runtimeHandler: string;
}

/** A running container's processes. */
interface ShimHandle {
  /** The container's main process (and process group). */
  pid: number;
  pidStartTime: number;
  shimPid: number;
  shimStartTime: number;
  /** The shim when this runtime started it; absent for an adopted container. */
  child?: Deno.ChildProcess;
}

interface ContainerRecord {
  id: string;
  sandboxId: string;
  config: ContainerConfig;
  command: string[];
  env: Record<string, string>;
  state: ContainerState;
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  message: string;
  logPath: string;
  /** True when the log path is the runtime's own choice, so removing the container removes it. */
  ownsLog: boolean;
  nameKey: string;
  /** The container's cgroup, when it has one. */
  cgroup?: string;
  shim?: ShimHandle;
  /** Resolves when the container has exited and its output is written. */
  done?: Promise<void>;
}

/** `containers/<id>/container.json`: what the agent knows (the shim writes the rest). */
interface ContainerFile {
  id: string;
  sandboxId: string;
  config: ContainerConfig;
  command: string[];
  env: Record<string, string>;
  logPath: string;
  ownsLog: boolean;
  cgroup?: string;
  createdAtNs: string;
  /**
   * `created`; `started` (the shim's files say the rest); `failed` to start; `exited`, as this
   * agent saw it end (its times win over the shim's, so a restart shows the same ones).
   */
  phase: "created" | "started" | "failed" | "exited";
  startedAtNs?: string;
  finishedAtNs?: string;
  exitCode?: number;
  reason?: string;
  message?: string;
}

/**
 * The embedded runtime. Call {@link shutdown} before exiting: by default it stops every container
 * and exec the runtime started and waits for them; with `stopContainers: false` it leaves the
 * containers running for the next runtime on the same root folder to adopt.
 *
 * @example
 * ```ts
 * const runtime = new EmbeddedRuntimeService({ rootDir: "/tmp/probelet" });
 * const pod = await runtime.runPodSandbox({ metadata: { name: "web", uid: "u1", namespace: "default" } });
 * const id = await runtime.createContainer(pod, {
 *   metadata: { name: "app" },
 *   image: { image: "any" },
 *   command: ["sh", "-c", "echo hello; sleep 60"],
 * });
 * await runtime.startContainer(id);
 * await runtime.execSync(id, ["true"], { timeoutMs: 1000 });
 * await runtime.shutdown();
 * ```
 */
export class EmbeddedRuntimeService implements RuntimeService, ImageManagerService {
  readonly rootDir: string;
  readonly podIP: string;
  /** The cgroup holding the containers' cgroups; undefined when the machine allows none. */
  readonly cgroupRoot: string | undefined;
  #clock: Clock;
  #inheritEnv: boolean;
  #logRotation: LogRotation;
  #stopOnShutdown: boolean;
  #sandboxes = new Map<string, SandboxRecord>();
  #containers = new Map<string, ContainerRecord>();
  /** Reserved names, as containerd's name index: sandbox and container names must be unique. */
  #names = new Map<string, string>();
  /** Running execs: process group id → settles when the exec is over. */
  #execs = new Map<number, { done: Promise<void>; cgroup?: string }>();
  #images = new Map<string, Image>();
  /** Container folders whose records cannot be read: their processes cannot be adopted. */
  #unadoptable: string[] = [];
  #closed = false;
  #shutdown: Promise<void> | undefined;
  /** Stops the polling of adopted containers' shims. */
  #detached = new AbortController();
  /** The streaming server for exec, attach and port-forward; started at the first request. */
  #streaming: StreamingServer | undefined;

  /**
   * Creates the runtime and loads what a previous runtime on the same root folder recorded:
   * sandboxes and containers come back with their IDs, configs and times; running containers are
   * adopted (nothing is signalled); those that ended meanwhile show their recorded exit.
   */
  constructor(options: EmbeddedRuntimeOptions) {
    this.rootDir = resolve(options.rootDir);
    this.podIP = options.podIP ?? "127.0.0.1";
    this.#clock = options.clock ?? new RealClock();
    this.#inheritEnv = options.inheritEnv ?? true;
    this.#logRotation = {
      maxSizeBytes: options.containerLogMaxSizeBytes ?? defaultLogMaxSizeBytes,
      maxFiles: options.containerLogMaxFiles ?? defaultLogMaxFiles,
    };
    this.#stopOnShutdown = options.stopContainersOnShutdown ?? true;
    this.cgroupRoot = options.cgroups === false ? undefined : runtimeCgroup(this.rootDir);
    this.#load();
  }

  /** The runtime's name and versions. */
  version(_apiVersion?: string, _options?: CallOptions): Promise<VersionResponse> {
    return this.#call(() => ({
      version: "0.1.0",
      runtimeName: embeddedRuntimeName,
      runtimeVersion: embeddedRuntimeVersion,
      runtimeApiVersion: "v1",
    }));
  }

  // ---------------------------------------------------------------------------------------------
  // Sandboxes

  /** Records a sandbox (no process is started for it); resolves with its ID. */
  runPodSandbox(
    config: PodSandboxConfig,
    options: CallOptions & { runtimeHandler?: string } = {},
  ): Promise<string> {
    return this.#call(() => {
      const m = config.metadata;
      if (!m?.name || !m.uid || !m.namespace) {
        throw new Error("sandbox config must include metadata with name, uid and namespace");
      }
      const id = newID();
      const nameKey = sandboxNameKey(config);
      this.#reserve(nameKey, id);
      const sandbox: SandboxRecord = {
        id,
        config: structuredClone(config),
        state: "SANDBOX_READY",
        createdAt: this.#nowNs(),
        runtimeHandler: options.runtimeHandler ?? "",
        nameKey,
      };
      try {
        this.#saveSandbox(sandbox);
      } catch (err) {
        this.#names.delete(nameKey);
        throw new Error(`failed to record sandbox: ${errorText(err)}`, { cause: err });
      }
      this.#sandboxes.set(id, sandbox);
      return id;
    });
  }

  /** Kills every container of the sandbox at once (as containerd does) and marks it not ready. */
  stopPodSandbox(podSandboxId: string, _options?: CallOptions): Promise<void> {
    return this.#call(async () => {
      const sandbox = this.#sandboxes.get(podSandboxId);
      if (!sandbox) return;
      await Promise.all(
        this.#containersOf(podSandboxId).map((c) => this.#stop(c, 0)),
      );
      sandbox.state = "SANDBOX_NOTREADY";
      this.#saveSandbox(sandbox);
    });
  }

  /** Removes the sandbox and its containers, killing any that still run. */
  removePodSandbox(podSandboxId: string, _options?: CallOptions): Promise<void> {
    return this.#call(async () => {
      const sandbox = this.#sandboxes.get(podSandboxId);
      if (!sandbox) return;
      sandbox.state = "SANDBOX_NOTREADY";
      await Promise.all(this.#containersOf(podSandboxId).map((c) => this.#remove(c)));
      this.#sandboxes.delete(podSandboxId);
      this.#names.delete(sandbox.nameKey);
      removePath(join(recordDirs.sandboxes(this.rootDir), `${podSandboxId}.json`));
    });
  }

  /** The sandbox's status; its IP is the runtime's pod IP (host network). */
  podSandboxStatus(
    podSandboxId: string,
    options: CallOptions & { verbose?: boolean } = {},
  ): Promise<PodSandboxStatusResponse> {
    return this.#call(() => {
      const s = this.#sandbox(podSandboxId);
      const info: Record<string, string> = options.verbose
        ? { info: JSON.stringify({ runtime: embeddedRuntimeName, network: "host" }) }
        : {};
      return {
        status: {
          ...this.#sandboxEntry(s),
          network: { ip: this.podIP, additionalIps: [] },
          linux: { namespaces: { options: { network: "NODE", pid: "NODE", ipc: "NODE" } } },
        },
        info,
        containersStatuses: [],
        timestamp: this.#nowNs(),
      };
    });
  }

  /** Sandboxes matching the filter, oldest first. */
  listPodSandbox(filter: PodSandboxFilter = {}, _options?: CallOptions): Promise<PodSandbox[]> {
    return this.#call(() =>
      [...this.#sandboxes.values()]
        .filter((s) =>
          (!filter.id || s.id.startsWith(filter.id)) &&
          (!filter.state || s.state === filter.state) &&
          matchesLabels(s.config.labels, filter.labelSelector)
        )
        .map((s) => this.#sandboxEntry(s))
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Containers

  /**
   * Creates a container in a ready sandbox. Rejects when the config has no command: a host process
   * cannot take its entrypoint from an image.
   */
  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    _options: CallOptions & { sandboxConfig?: PodSandboxConfig } = {},
  ): Promise<string> {
    return this.#call(() => {
      const sandbox = this.#sandbox(podSandboxId);
      if (sandbox.state !== "SANDBOX_READY") {
        throw new Error(`sandbox ${goQuote(podSandboxId)} is not ready`);
      }
      const name = config.metadata?.name;
      if (!name) throw new Error("container config must include metadata with a name");
      const image = config.image?.image ?? "";
      if (!config.command?.length) {
        throw new Error(
          `container ${goQuote(name)} has no command: the embedded runtime runs host processes ` +
            `and cannot use the entrypoint of image ${goQuote(image)}; set command in the pod spec`,
        );
      }
      const id = newID();
      const nameKey = containerNameKey(podSandboxId, config);
      this.#reserve(nameKey, id);

      const logDirectory = sandbox.config.logDirectory;
      const ownsLog = !(logDirectory && config.logPath);
      const logPath = ownsLog
        ? join(this.rootDir, "containers", `${id}.log`)
        : resolve(this.rootDir, logDirectory!, config.logPath!);

      const env: Record<string, string> = {};
      for (const kv of config.envs ?? []) env[kv.key] = kv.value;
      const c: ContainerRecord = {
        id,
        sandboxId: podSandboxId,
        config: structuredClone(config),
        command: [...config.command, ...(config.args ?? [])],
        env,
        state: "CONTAINER_CREATED",
        createdAt: this.#nowNs(),
        startedAt: 0n,
        finishedAt: 0n,
        exitCode: 0,
        reason: "",
        message: "",
        logPath,
        ownsLog,
        nameKey,
      };
      try {
        Deno.mkdirSync(this.#containerDir(id), { recursive: true });
        this.#saveContainer(c, "created");
      } catch (err) {
        this.#names.delete(nameKey);
        removePath(this.#containerDir(id));
        throw new Error(`failed to record container: ${errorText(err)}`, { cause: err });
      }
      this.#rememberImage(image);
      this.#containers.set(id, c);
      return id;
    });
  }

  /**
   * Starts a created container: its shim starts the process and reports. When the process cannot
   * be started, the container ends up exited with code 128 and reason `StartError`, as in
   * containerd, and the call rejects.
   */
  startContainer(containerId: string, _options?: CallOptions): Promise<void> {
    return this.#call(async () => {
      const c = this.#container(containerId);
      if (c.state !== "CONTAINER_CREATED") {
        throw new Error(`container ${goQuote(containerId)} is in ${c.state} state`);
      }
      const sandbox = this.#sandboxes.get(c.sandboxId);
      if (sandbox?.state !== "SANDBOX_READY") {
        throw new Error(`sandbox ${goQuote(c.sandboxId)} of container is not ready`);
      }
      // Claim the transition before the first await, so two starts cannot both spawn.
      c.state = "CONTAINER_UNKNOWN";
      const cwd = c.config.workingDir || undefined;
      const fail = (message: string) => {
        this.#startFailed(c, message);
        return new Error(`failed to start container ${goQuote(containerId)}: ${message}`);
      };
      if (cwd !== undefined && !isAbsolute(cwd)) {
        throw fail(`the working directory ${goQuote(cwd)} is invalid, it needs to be absolute`);
      }
      const dir = this.#containerDir(c.id);
      if (this.cgroupRoot) {
        try {
          c.cgroup = createCgroup(join(this.cgroupRoot, c.id));
        } catch (err) {
          klog.V(1).info("No cgroup for the container: process group only", {
            containerID: c.id,
            err: errorText(err),
          });
        }
      }
      const spec: ShimSpec = {
        id: c.id,
        command: c.command,
        env: c.env,
        clearEnv: !this.#inheritEnv,
        cwd,
        logPath: c.logPath,
        logRotation: this.#logRotation,
        cgroup: c.cgroup,
      };
      let child: Deno.ChildProcess;
      try {
        writeJsonAtomic(join(dir, shimFiles.spec), spec);
        this.#saveContainer(c, "created");
        child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--allow-all",
            "--no-config",
            "--no-lock",
            "--quiet",
            "--v8-flags=--max-semi-space-size=1",
            shimModulePath,
            dir,
          ],
          stdin: "null",
          stdout: "piped",
          stderr: "null",
          // Its own session: Ctrl-C on the agent's terminal does not reach the container.
          detached: true,
        }).spawn();
      } catch (err) {
        if (c.cgroup) removeCgroup(c.cgroup);
        throw fail(`failed to start shim: ${errorText(err)}`);
      }
      const reportText = await firstLine(child.stdout);
      let report: ShimReport | undefined;
      try {
        report = JSON.parse(reportText);
      } catch {
        report = undefined;
      }
      if (!report || "error" in report) {
        if (!report) killShim(child); // it said nothing sensible: do not wait on it
        await child.status;
        if (c.cgroup) removeCgroup(c.cgroup);
        throw fail(report ? report.error : "the shim exited before starting the container");
      }
      const state = readJson<ShimState>(join(dir, shimFiles.state));
      c.shim = {
        pid: report.pid,
        pidStartTime: state && !(state instanceof Error) ? state.pidStartTime : 0,
        shimPid: child.pid,
        shimStartTime: state && !(state instanceof Error) ? state.shimStartTime : 0,
        child,
      };
      c.state = "CONTAINER_RUNNING";
      c.startedAt = this.#nowNs();
      this.#trySave(c, "started");
      c.done = child.status.then(() => this.#shimGone(c, { ownChild: true }));
      if (this.#closed) await this.#stop(c, 0); // shut down meanwhile: start nothing new
    });
  }

  /**
   * Stops a running container: SIGTERM to its process group, SIGKILL (to its whole cgroup when it
   * has one) after `timeoutMs` (0 = at once). Resolves once it has exited. Does nothing for a
   * container that is not running or does not exist.
   */
  stopContainer(containerId: string, options: CallOptions & { timeoutMs: number }): Promise<void> {
    return this.#call(async () => {
      const c = this.#containers.get(containerId);
      if (c) await this.#stop(c, options.timeoutMs);
    });
  }

  /** Removes a container, killing it first if it runs. Does nothing when it does not exist. */
  removeContainer(containerId: string, _options?: CallOptions): Promise<void> {
    return this.#call(async () => {
      const c = this.#containers.get(containerId);
      if (c) await this.#remove(c);
    });
  }

  /** Containers matching the filter, oldest first (an `id` filter matches ID prefixes). */
  listContainers(filter: ContainerFilter = {}, _options?: CallOptions): Promise<Container[]> {
    return this.#call(() =>
      [...this.#containers.values()]
        .filter((c) =>
          (!filter.id || c.id.startsWith(filter.id)) &&
          (!filter.state || c.state === filter.state) &&
          (!filter.podSandboxId || c.sandboxId.startsWith(filter.podSandboxId)) &&
          matchesLabels(c.config.labels, filter.labelSelector)
        )
        .map((c) => ({
          id: c.id,
          podSandboxId: c.sandboxId,
          metadata: { name: c.config.metadata.name, attempt: c.config.metadata.attempt ?? 0 },
          image: { image: c.config.image.image },
          imageRef: imageID(c.config.image.image),
          state: c.state,
          createdAt: c.createdAt,
          labels: { ...c.config.labels },
          annotations: { ...c.config.annotations },
          imageId: imageID(c.config.image.image),
        }))
    );
  }

  /**
   * CPU and memory of the running containers, from their cgroups (or main processes): see
   * stats.ts.
   */
  listContainerStats(_options?: CallOptions): Promise<ContainerStats[]> {
    return this.#call(async () => {
      const out: ContainerStats[] = [];
      for (const c of [...this.#containers.values()]) {
        if (c.state !== "CONTAINER_RUNNING") continue;
        const usage = await readContainerUsage({ cgroup: c.cgroup, pid: c.shim?.pid });
        if (!usage) continue;
        const timestampNs = this.#nowNs();
        out.push({
          id: c.id,
          name: c.config.metadata.name,
          labels: { ...c.config.labels },
          cpu: { timestampNs, usageCoreNanoSeconds: usage.usageCoreNanoSeconds },
          memory: {
            timestampNs,
            workingSetBytes: usage.workingSetBytes,
            usageBytes: usage.usageBytes,
            rssBytes: usage.rssBytes,
          },
        });
      }
      return out;
    });
  }

  /** The container's status; `verbose` adds the pid and command under `info`. */
  containerStatus(
    containerId: string,
    options: CallOptions & { verbose?: boolean } = {},
  ): Promise<ContainerStatusResponse> {
    return this.#call(() => {
      const c = this.#container(containerId);
      const status: ContainerStatus = {
        id: c.id,
        metadata: { name: c.config.metadata.name, attempt: c.config.metadata.attempt ?? 0 },
        state: c.state,
        createdAt: c.createdAt,
        startedAt: c.startedAt,
        finishedAt: c.finishedAt,
        exitCode: c.exitCode,
        image: { image: c.config.image.image },
        imageRef: imageID(c.config.image.image),
        reason: c.reason,
        message: c.message,
        labels: { ...c.config.labels },
        annotations: { ...c.config.annotations },
        mounts: [],
        logPath: c.logPath,
        imageId: imageID(c.config.image.image),
      };
      const info: Record<string, string> = options.verbose
        ? {
          info: JSON.stringify({
            pid: c.state === "CONTAINER_RUNNING" ? c.shim?.pid ?? 0 : 0,
            shimPid: c.shim?.shimPid ?? 0,
            cgroup: c.cgroup ?? "",
            command: c.command,
          }),
        }
        : {};
      return { status, info };
    });
  }

  /**
   * Runs `cmd` on the host with the container's environment and working directory, in its own
   * process group and inside the container's cgroup (so that whatever it leaves behind goes with
   * the container). It is over when the command has exited and its output is closed, or at the
   * timeout (see host_runner.ts). Errors follow the `RuntimeService` contract: a non-zero exit is
   * an `ExitError` carrying stdout then stderr; past `timeoutMs` everything the exec started is
   * killed and the call rejects with `CommandTimedOutError`; a container that is not running, or
   * a command that cannot be started, is a plain `Error`. At most 10 KiB of each stream are kept.
   */
  execSync(
    containerId: string,
    cmd: string[],
    options: CallOptions & { timeoutMs: number },
  ): Promise<ExecSyncResult> {
    return this.#call(async () => {
      const c = this.#container(containerId);
      if (c.state !== "CONTAINER_RUNNING") {
        throw new Error(`failed to exec in container: container is in ${c.state} state`);
      }
      options.signal?.throwIfAborted();
      const placement = this.#execPlacement(c);
      let pid = 0;
      let r: HostCommandResult;
      try {
        r = await runHostCommand(cmd, {
          timeoutMs: options.timeoutMs,
          clock: this.#clock,
          capBytes: maxExecOutputBytes,
          env: placement.env,
          clearEnv: placement.clearEnv,
          cwd: placement.cwd,
          signal: options.signal,
          wrapper: placement.wrapper,
          onStarted: (started) => {
            pid = started;
            placement.onStarted(started);
          },
          onKill: placement.onKill,
        });
      } catch (err) {
        // Not started: worded as the OCI runtime words it.
        const why = pid === 0
          ? spawnError(cmd[0] ?? "", c.config.workingDir || undefined, err)
          : err;
        throw new Error(`failed to exec in container: ${errorText(why)}`, { cause: err });
      } finally {
        placement.finish();
      }
      options.signal?.throwIfAborted();
      if (r.timedOut) throw new CommandTimedOutError(cmd, { timeoutMs: options.timeoutMs });
      const exitCode = r.status.code;
      if (exitCode !== 0) {
        const output = new Uint8Array(r.stdout.length + r.stderr.length);
        output.set(r.stdout);
        output.set(r.stderr, r.stdout.length);
        throw new ExitError(exitCode, {
          output,
          message: `command '${cmd.join(" ")}' exited with ${exitCode}: ${
            new TextDecoder().decode(r.stderr)
          }`,
        });
      }
      return { stdout: r.stdout, stderr: r.stderr };
    });
  }

  // Streaming: exec, attach and port-forward through the runtime's own streaming server
  // (src/cri_streaming), started on 127.0.0.1 at the first request, as containerd's.

  /**
   * CRI `Exec`: validates the request and returns a single-use URL on the streaming server where
   * the command runs with the client's streams (and a TTY when asked), in the container's folder,
   * environment and cgroup as for ExecSync. Rejects for a container that is not running
   * (containerd's `container is not running`).
   */
  exec(request: ExecRequest, _options?: CallOptions): Promise<StreamingResponse> {
    return this.#call(async () => {
      const c = this.#container(request.containerId);
      if (c.state !== "CONTAINER_RUNNING") throw new Error("container is not running");
      return (await this.#streamingServer()).getExec(request);
    });
  }

  /**
   * CRI `Attach`: a URL where the client receives what the container's main process writes from
   * now on (read from its log: the shim holds its output); the shim keeps no stdin, so input is
   * dropped. Rejects for a container that is not running (containerd's `container is in
   * CONTAINER_EXITED state`).
   */
  attach(request: AttachRequest, _options?: CallOptions): Promise<StreamingResponse> {
    return this.#call(async () => {
      const c = this.#container(request.containerId);
      if (c.state !== "CONTAINER_RUNNING") throw new Error(`container is in ${c.state} state`);
      return (await this.#streamingServer()).getAttach(request);
    });
  }

  /**
   * CRI `PortForward`: a URL where each forwarded connection is dialed to the port on 127.0.0.1
   * (every sandbox has the host's network). Rejects for a sandbox that is not ready (containerd's
   * `sandbox container is not running`).
   */
  portForward(request: PortForwardRequest, _options?: CallOptions): Promise<StreamingResponse> {
    return this.#call(async () => {
      const s = this.#sandboxes.get(request.podSandboxId);
      if (!s) {
        throw notFound(`failed to find sandbox ${goQuote(request.podSandboxId)}: not found`);
      }
      if (s.state !== "SANDBOX_READY") throw new Error("sandbox container is not running");
      return (await this.#streamingServer()).getPortForward(request);
    });
  }

  /** The streaming server's base URL once started (for tests and diagnostics). */
  get streamingUrl(): string | undefined {
    return this.#streaming?.baseUrl || undefined;
  }

  async #streamingServer(): Promise<StreamingServer> {
    if (!this.#streaming) {
      const server = new StreamingServer({
        exec: (id, cmd, streams) => this.#streamExec(id, cmd, streams),
        attach: (id, streams) => {
          const c = this.#container(id);
          return attachStreaming(id, c.logPath, streams, { clock: this.#clock, runtime: this });
        },
        portForward: async (sandboxId, port, stream) => {
          if (!this.#sandboxes.has(sandboxId)) {
            throw new Error(`failed to find sandbox ${goQuote(sandboxId)} in store: not found`);
          }
          await portForwardHost(sandboxId, port, stream, { clock: this.#clock });
        },
      }, { clock: this.#clock });
      this.#streaming = server;
      await server.start();
    }
    return this.#streaming;
  }

  async #streamExec(id: string, cmd: string[], streams: CommandStreams): Promise<void> {
    const c = this.#container(id);
    if (c.state !== "CONTAINER_RUNNING") {
      throw new Error(`failed to exec in container: container is in ${c.state} state`);
    }
    const placement = this.#execPlacement(c);
    try {
      await execStreaming(cmd, streams, placement);
    } finally {
      placement.finish();
    }
  }

  // Images: any name is accepted; nothing is pulled.

  /** The images of the containers created so far. */
  listImages(filter: ImageFilter = {}, _options?: CallOptions): Promise<Image[]> {
    return this.#call(() =>
      [...this.#images.values()].filter((i) =>
        !filter.image?.image || i.repoTags.includes(filter.image.image)
      ).map((i) => structuredClone(i))
    );
  }

  /** Every image "exists": a host process needs none. */
  imageStatus(
    image: ImageSpec,
    _options?: CallOptions & { verbose?: boolean },
  ): Promise<ImageStatusResponse> {
    return this.#call(() => ({ image: syntheticImage(image.image), info: {} }));
  }

  /** Nothing to pull: a host process needs no image; the reference is the synthetic image's ID. */
  pullImage(image: ImageSpec, _options?: CallOptions): Promise<string> {
    return this.#call(() => syntheticImage(image.image).id);
  }

  // ---------------------------------------------------------------------------------------------
  // ---------------------------------------------------------------------------------------------
  // Shutdown and clean-up

  /** Starts {@link shutdown} (with the default for running containers); later calls reject. */
  close(): void {
    this.shutdown().catch((e) => klog.error(e, "Embedded runtime shutdown failed"));
  }

  /**
   * Kills what a previous run on the same root folder left and no runtime can adopt: execs that
   * were running when the agent died, containers whose records cannot be read, and process groups
   * recorded by the previous version of the runtime. Running containers with good records are
   * adopted by the constructor instead, and never signalled here. Call once at start-up, before
   * starting containers. Returns the process group ids killed.
   */
  killLeftoverProcesses(): number[] {
    const killed = [...killLegacyPidRecords(this.rootDir), ...killRecordedExecs(this.rootDir)];
    for (const dir of this.#unadoptable) {
      killed.push(...killContainerFolder(dir));
      removePath(dir);
    }
    this.#unadoptable = [];
    // Empty cgroups of containers that are over (their shim was killed before removing them).
    if (this.cgroupRoot) {
      for (const c of this.#containers.values()) {
        if (c.cgroup && c.state !== "CONTAINER_RUNNING") removeCgroup(c.cgroup);
      }
    }
    return killed;
  }

  /**
   * Stops the runtime; later calls reject. Running execs are killed. Containers are stopped
   * (SIGKILL, waiting for their shims to record the exit) when `stopContainers` is true (the
   * default unless the runtime was created with `stopContainersOnShutdown: false`); otherwise they
   * keep running, and a new runtime on the same root folder adopts them. Safe to call more than
   * once; the first call decides.
   */
  shutdown(options: { stopContainers?: boolean } = {}): Promise<void> {
    this.#closed = true;
    this.#shutdown ??= (async () => {
      const stop = options.stopContainers ?? this.#stopOnShutdown;
      // No new streams; running execs are killed below with the others.
      const streaming = this.#streaming?.stop();
      for (const [pgid, exec] of this.#execs) {
        signalGroup(pgid, "SIGKILL");
        if (exec.cgroup) killCgroup(exec.cgroup);
      }
      await Promise.all([...this.#execs.values()].map((e) => e.done));
      if (stop) {
        this.killAll({ containers: true });
        await Promise.all([...this.#containers.values()].map((c) => c.done));
      } else {
        // The shims live on; this process must not wait for them.
        for (const c of this.#containers.values()) c.shim?.child?.unref();
      }
      this.#detached.abort();
      await streaming;
      // Only empty cgroups go: those of containers left running stay.
      if (this.cgroupRoot) removeCgroup(this.cgroupRoot);
    })();
    return this.#shutdown;
  }

  /**
   * Sends SIGKILL to every exec still running and, when `containers` is true (default: what
   * {@link shutdown} does by default, so false with `stopContainersOnShutdown: false`), to every
   * running container, synchronously: for an exit path that cannot wait (a second signal, an
   * `unload` handler). Prefer {@link shutdown}.
   */
  killAll(options: { containers?: boolean } = {}): void {
    if (options.containers ?? this.#stopOnShutdown) {
      for (const c of this.#containers.values()) {
        if (c.state === "CONTAINER_RUNNING") this.#signal(c, "SIGKILL");
      }
    }
    for (const [pgid, exec] of this.#execs) {
      signalGroup(pgid, "SIGKILL");
      if (exec.cgroup) killCgroup(exec.cgroup);
    }
  }

  /** Process IDs (group leaders) of running containers and execs, for tests and diagnostics. */
  processIds(): number[] {
    const pids: number[] = [];
    for (const c of this.#containers.values()) {
      if (c.state === "CONTAINER_RUNNING" && c.shim) pids.push(c.shim.pid);
    }
    pids.push(...this.#execs.keys());
    return pids;
  }

  /** Process IDs of the shims of running containers, for tests and diagnostics. */
  shimProcessIds(): number[] {
    return [...this.#containers.values()].filter((c) => c.state === "CONTAINER_RUNNING" && c.shim)
      .map((c) => c.shim!.shimPid);
  }

  // ---------------------------------------------------------------------------------------------
  // Records

  #load(): void {
    for (const [file, f] of readRecords<SandboxFile>(recordDirs.sandboxes(this.rootDir))) {
      if (!f?.id || !f.config?.metadata) {
        klog.info("Ignoring an unreadable sandbox record", { file });
        continue;
      }
      const nameKey = sandboxNameKey(f.config);
      this.#sandboxes.set(f.id, {
        id: f.id,
        config: f.config,
        state: f.state,
        createdAt: BigInt(f.createdAtNs),
        runtimeHandler: f.runtimeHandler ?? "",
        nameKey,
      });
      this.#names.set(nameKey, f.id);
    }
    let entries: Deno.DirEntry[] = [];
    try {
      entries = [...Deno.readDirSync(recordDirs.containers(this.rootDir))];
    } catch {
      // nothing recorded yet
    }
    const loaded: ContainerRecord[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory) continue;
      const dir = join(recordDirs.containers(this.rootDir), entry.name);
      const f = readJson<ContainerFile>(join(dir, "container.json"));
      if (!f || f instanceof Error || f.id !== entry.name || !f.config?.metadata) {
        this.#unadoptable.push(dir);
        continue;
      }
      loaded.push(this.#restore(f, dir));
    }
    loaded.sort((a, b) => a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0);
    for (const c of loaded) {
      this.#containers.set(c.id, c);
      this.#names.set(c.nameKey, c.id);
      this.#rememberImage(c.config.image?.image ?? "");
    }
  }

  #restore(f: ContainerFile, dir: string): ContainerRecord {
    const c: ContainerRecord = {
      id: f.id,
      sandboxId: f.sandboxId,
      config: f.config,
      command: f.command,
      env: f.env,
      state: "CONTAINER_CREATED",
      createdAt: BigInt(f.createdAtNs),
      startedAt: BigInt(f.startedAtNs ?? "0"),
      finishedAt: BigInt(f.finishedAtNs ?? "0"),
      exitCode: f.exitCode ?? 0,
      reason: f.reason ?? "",
      message: f.message ?? "",
      logPath: f.logPath,
      ownsLog: f.ownsLog,
      nameKey: containerNameKey(f.sandboxId, f.config),
      cgroup: f.cgroup,
    };
    if (f.phase === "failed" || f.phase === "exited") {
      c.state = "CONTAINER_EXITED";
      return c;
    }
    const state = readJson<ShimState>(join(dir, shimFiles.state));
    if (!state || state instanceof Error) return c; // never started (or died before running)
    // Started, possibly by an agent that died before it could record so.
    if (c.startedAt === 0n) c.startedAt = msToNs(state.startedAtMs);
    c.shim = {
      pid: state.pid,
      pidStartTime: state.pidStartTime,
      shimPid: state.shimPid,
      shimStartTime: state.shimStartTime,
    };
    const exitFile = join(dir, shimFiles.exit);
    if (!exists(exitFile) && isSameProcess(state.shimPid, state.shimStartTime)) {
      c.state = "CONTAINER_RUNNING";
      c.done = this.#watchShim(c.shim, exitFile).then(() => this.#shimGone(c, { ownChild: false }));
    } else {
      this.#shimGone(c, { ownChild: false });
      c.done = Promise.resolve();
    }
    return c;
  }

  /**
   * Resolves when the shim of an adopted container (not this process's child) is gone; polls
   * `/proc` until then, or until the runtime is shut down (the next runtime watches).
   */
  #watchShim(shim: ShimHandle, exitFile: string): Promise<void> {
    const signal = this.#detached.signal;
    return new Promise<void>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => clearTimeout(timer);
      signal.addEventListener("abort", onAbort, { once: true });
      const check = () => {
        // The exit record comes first; the shim then removes the cgroup and exits.
        if (exists(exitFile) || !isSameProcess(shim.shimPid, shim.shimStartTime)) {
          signal.removeEventListener("abort", onAbort);
          return resolve();
        }
        if (!signal.aborted) timer = setTimeout(check, adoptedPollMs);
      };
      check();
    });
  }

  // The shim has exited: the container is over. Its exit comes from exit.json; without one the
  // shim was killed, and whatever the container left is killed too (no one holds its output).
  #shimGone(c: ContainerRecord, options: { ownChild: boolean }): void {
    const exit = readJson<ShimExit>(join(this.#containerDir(c.id), shimFiles.exit));
    c.state = "CONTAINER_EXITED";
    if (exit && !(exit instanceof Error)) {
      c.exitCode = exit.exitCode;
      c.reason = exit.exitCode === 0 ? "Completed" : "Error";
      c.finishedAt = options.ownChild ? this.#nowNs() : msToNs(exit.finishedAtMs);
      if (options.ownChild) this.#trySave(c, "exited");
    } else {
      if (c.shim && isSameProcess(c.shim.pid, c.shim.pidStartTime)) {
        signalGroup(c.shim.pid, "SIGKILL");
      }
      if (c.cgroup) killAndRemoveCgroup(c.cgroup);
      c.exitCode = unknownExitCode;
      c.reason = unknownExitReason;
      c.message = "the container's shim exited without recording how the container ended";
      c.finishedAt = this.#nowNs();
      klog.info("Container shim gone without an exit record", { containerID: c.id });
    }
  }

  #saveSandbox(s: SandboxRecord): void {
    const dir = recordDirs.sandboxes(this.rootDir);
    Deno.mkdirSync(dir, { recursive: true });
    const f: SandboxFile = {
      id: s.id,
      config: s.config,
      state: s.state,
      createdAtNs: String(s.createdAt),
      runtimeHandler: s.runtimeHandler,
    };
    writeJsonAtomic(join(dir, `${s.id}.json`), f);
  }

  #saveContainer(c: ContainerRecord, phase: ContainerFile["phase"]): void {
    const f: ContainerFile = {
      id: c.id,
      sandboxId: c.sandboxId,
      config: c.config,
      command: c.command,
      env: c.env,
      logPath: c.logPath,
      ownsLog: c.ownsLog,
      cgroup: c.cgroup,
      createdAtNs: String(c.createdAt),
      phase,
      startedAtNs: String(c.startedAt),
    };
    if (phase === "failed" || phase === "exited") {
      Object.assign(f, {
        finishedAtNs: String(c.finishedAt),
        exitCode: c.exitCode,
        reason: c.reason,
        message: c.message,
      });
    }
    writeJsonAtomic(join(this.#containerDir(c.id), "container.json"), f);
  }

  // A record that cannot be written (full disk) is logged: the container itself is fine, and the
  // shim's own files still tell a later agent how it ended.
  #trySave(c: ContainerRecord, phase: ContainerFile["phase"]): void {
    try {
      this.#saveContainer(c, phase);
    } catch (err) {
      klog.error(err, "Could not record the container", { containerID: c.id, phase });
    }
  }

  #containerDir(id: string): string {
    return join(recordDirs.containers(this.rootDir), id);
  }

  // ---------------------------------------------------------------------------------------------

  #startFailed(c: ContainerRecord, message: string): void {
    c.state = "CONTAINER_EXITED";
    c.finishedAt = this.#nowNs();
    c.exitCode = startErrorExitCode;
    c.reason = startErrorReason;
    c.message = message;
    this.#trySave(c, "failed");
  }

  /** Signals the container's process group (SIGKILL: its whole cgroup), if it is still ours. */
  #signal(c: ContainerRecord, sig: Deno.Signal): void {
    const shim = c.shim;
    if (!shim) return;
    // The group too: it reaches a process that has not joined its cgroup yet.
    if (shim.child || isSameProcess(shim.pid, shim.pidStartTime)) signalGroup(shim.pid, sig);
    if (sig === "SIGKILL" && c.cgroup) killCgroup(c.cgroup);
  }

  async #stop(c: ContainerRecord, gracePeriodMs: number): Promise<void> {
    if (c.state === "CONTAINER_RUNNING") {
      if (gracePeriodMs > 0) {
        this.#signal(c, "SIGTERM");
        let timer: { stop(): boolean } | undefined;
        const expired = new Promise<"expired">((resolve) => {
          timer = this.#clock.afterFunc(gracePeriodMs, () => resolve("expired"));
        });
        const first = await Promise.race([c.done, expired]);
        timer?.stop();
        if (first !== "expired") return;
      }
      this.#signal(c, "SIGKILL");
    }
    await c.done;
  }

  async #remove(c: ContainerRecord): Promise<void> {
    await this.#stop(c, 0);
    if (!this.#containers.has(c.id)) return; // removed by a concurrent call
    this.#containers.delete(c.id);
    this.#names.delete(c.nameKey);
    if (c.cgroup) removeCgroup(c.cgroup);
    removePath(this.#containerDir(c.id));
    if (c.ownsLog) {
      for (const file of [c.logPath, ...await rotatedLogFiles(c.logPath)]) removePath(file);
    }
  }

  #containersOf(sandboxId: string): ContainerRecord[] {
    return [...this.#containers.values()].filter((c) => c.sandboxId === sandboxId);
  }

  /**
   * Where an exec in `c` runs, for ExecSync and streaming exec alike: the container's folder and
   * environment, its own cgroup below the container's (or a marker in the environment where there
   * is none), recorded once started so the next start kills it if the agent dies meanwhile.
   * `finish` forgets it once it is over (what it left running stays with the container, as under
   * runc).
   */
  #execPlacement(c: ContainerRecord): ExecPlacement & { finish(): void } {
    let cgroup: string | undefined;
    if (c.cgroup) {
      try {
        cgroup = createCgroup(join(c.cgroup, `${execCgroupPrefix}${newID().slice(0, 12)}`));
      } catch {
        cgroup = undefined; // the container is going away; the exec still runs in its group
      }
    }
    // Without a cgroup, a marker in the environment finds what escapes the exec's group.
    const marker = cgroup ? undefined : `${c.id}:${newID().slice(0, 12)}`;
    let pid = 0;
    let done = () => {};
    return {
      env: marker ? { ...c.env, [execMarkerVariable]: marker } : c.env,
      clearEnv: !this.#inheritEnv,
      cwd: c.config.workingDir || undefined,
      wrapper: cgroup ? joinCgroupWrapper(cgroup) : undefined,
      onStarted: (started) => {
        pid = started;
        this.#execs.set(pid, { done: new Promise<void>((resolve) => done = resolve), cgroup });
        writeExecRecord(this.rootDir, {
          pgid: pid,
          startTime: procStat(pid)?.startTime ?? 0,
          containerId: c.id,
          cgroup,
          marker,
        });
      },
      onKill: () => {
        if (cgroup) killCgroup(cgroup);
      },
      finish: () => {
        if (pid > 0) removeExecRecord(this.rootDir, pid);
        this.#execs.delete(pid);
        if (cgroup) removeCgroup(cgroup);
        done();
      },
    };
  }

  #sandbox(id: string): SandboxRecord {
    const s = this.#sandboxes.get(id);
    if (!s) throw notFound(`an error occurred when try to find sandbox ${goQuote(id)}: not found`);
    return s;
  }

  #container(id: string): ContainerRecord {
    const c = this.#containers.get(id);
    if (!c) {
      throw notFound(`an error occurred when try to find container ${goQuote(id)}: not found`);
    }
    return c;
  }

  #sandboxEntry(s: SandboxRecord): PodSandbox {
    return {
      id: s.id,
      metadata: {
        name: s.config.metadata.name,
        uid: s.config.metadata.uid,
        namespace: s.config.metadata.namespace,
        attempt: s.config.metadata.attempt ?? 0,
      },
      state: s.state,
      createdAt: s.createdAt,
      labels: { ...s.config.labels },
      annotations: { ...s.config.annotations },
      runtimeHandler: s.runtimeHandler,
    };
  }

  #reserve(nameKey: string, id: string): void {
    const holder = this.#names.get(nameKey);
    if (holder !== undefined) {
      const name = nameKey.split("_").slice(1).join("_");
      throw new Error(
        `failed to reserve name ${goQuote(name)}: name ${goQuote(name)} is reserved for ${
          goQuote(holder)
        }`,
      );
    }
    this.#names.set(nameKey, id);
  }

  #rememberImage(image: string): void {
    if (image && !this.#images.has(image)) this.#images.set(image, syntheticImage(image));
  }

  #nowNs(): bigint {
    return msToNs(this.#clock.now());
  }

  async #call<T>(fn: () => T | Promise<T>): Promise<T> {
    if (this.#closed) throw new Error("embedded runtime is closed");
    return await fn();
  }
}

/**
 * Kills everything a runtime recorded under `rootDir` (containers, their shims and cgroups, execs,
 * the previous version's process groups), for clean-up after a test or a crashed agent whose
 * state is to be thrown away. Returns the process group ids signalled.
 */
export function killRecordedGroups(rootDir: string): number[] {
  const root = resolve(rootDir);
  const killed = [...killLegacyPidRecords(root), ...killRecordedExecs(root)];
  let entries: Deno.DirEntry[] = [];
  try {
    entries = [...Deno.readDirSync(recordDirs.containers(root))];
  } catch {
    // nothing recorded
  }
  for (const e of entries) {
    if (e.isDirectory) {
      killed.push(...killContainerFolder(join(recordDirs.containers(root), e.name)));
    }
  }
  return killed;
}

// Kills the processes a container folder names (cgroup, process group, shim), after checking that
// each pid is still the recorded process.
function killContainerFolder(dir: string): number[] {
  const killed: number[] = [];
  const spec = readJson<ShimSpec>(join(dir, shimFiles.spec));
  const state = readJson<ShimState>(join(dir, shimFiles.state));
  const cgroup = spec && !(spec instanceof Error) ? spec.cgroup : undefined;
  if (state && !(state instanceof Error)) {
    if (isSameProcess(state.pid, state.pidStartTime)) {
      signalGroup(state.pid, "SIGKILL");
      killed.push(state.pid);
    }
    if (isSameProcess(state.shimPid, state.shimStartTime)) signalGroup(state.shimPid, "SIGKILL");
  }
  if (cgroup) killAndRemoveCgroup(cgroup);
  return killed;
}

// The first line of a stream (the shim keeps its stdout open, so the end cannot be awaited).
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  const reader = stream.getReader();
  try {
    while (!text.includes("\n")) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // the shim died: what arrived is all there is
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text.split("\n")[0];
}

function sandboxNameKey(config: PodSandboxConfig): string {
  const m = config.metadata;
  return ["sandbox", m.name, m.namespace, m.uid, m.attempt ?? 0].join("_");
}

function containerNameKey(sandboxId: string, config: ContainerConfig): string {
  return ["container", sandboxId, config.metadata.name, config.metadata.attempt ?? 0].join("_");
}

function killShim(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // exited already
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function removePath(path: string): void {
  try {
    Deno.removeSync(path, { recursive: true });
  } catch {
    // gone already
  }
}

function syntheticImage(name: string): Image {
  return {
    id: imageID(name),
    repoTags: name ? [name] : [],
    repoDigests: [],
    size: 0n,
    username: "",
    spec: { image: name },
    pinned: false,
  };
}

/** A stable image ID derived from the name, since there is no image content. */
function imageID(name: string): string {
  return `sha256:${createHash("sha256").update(name).digest("hex")}`;
}

/** A random 64-hex-digit ID, like containerd's. */
function newID(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function matchesLabels(
  labels: Record<string, string> | undefined,
  selector: Record<string, string> | undefined,
): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

function msToNs(ms: number): bigint {
  return BigInt(Math.round(ms * 1000)) * 1000n;
}

// A "no such object" error carrying gRPC's NotFound code, as containerd's CRI returns it.
function notFound(message: string): Error {
  return Object.assign(new Error(message), { code: GrpcStatus.NotFound });
}
