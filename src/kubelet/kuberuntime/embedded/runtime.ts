/**
 * An in-process container runtime that runs each container's command as a host process in the
 * host network namespace (every pod's IP is 127.0.0.1), behind the same `RuntimeService` and
 * `ImageManagerService` interfaces as the CRI client, so the node agent and the prober work on a
 * laptop without root or containerd.
 *
 * Sandboxes are bookkeeping only. A container is a process group: created → running → exited,
 * with its output in a CRI-format log file. Any image name is accepted (nothing is pulled); the
 * command must therefore come from the pod spec. The state transitions, error texts and exit codes
 * follow containerd's CRI plugin (pkg/cri/server) where a host process allows it.
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
} from "../../../cri_client/api.ts";
import type {
  CallOptions,
  ImageManagerService,
  RuntimeService,
} from "../../../cri_client/runtime_service.ts";
import { CommandTimedOutError, ExitError } from "../../../probe/exec/errors.ts";
import {
  type HostCommandResult,
  maxProbeOutputBytes,
  runHostCommand,
} from "../../../probe/exec/host_runner.ts";
import { type Clock, RealClock } from "../../../util/clock.ts";
import { goQuote } from "../../../util/go_format.ts";
import * as klog from "../../../util/log.ts";
import { ContainerLog } from "./log.ts";
import { killRecordedGroups, removePidRecord, writePidRecord } from "./pid_records.ts";
import { HostProcess, type ProcessExit, signalGroup, spawnError } from "./process.ts";

/** The runtime's name, and so the type in container IDs: `embedded://<id>`. */
export const embeddedRuntimeName = "embedded";
/** The version of the embedded runtime. */
export const embeddedRuntimeVersion = "0.1.0";
/** Exit code and reason of a container whose process could not be started (containerd's). */
export const startErrorExitCode = 128;
export const startErrorReason = "StartError";
/**
 * The most ExecSync keeps of each stream: kubelet's exec probe keeps 10 KiB, and only the prober
 * calls ExecSync here (containerd allows 16 MiB, the CRI message limit).
 */
export const maxExecOutputBytes = maxProbeOutputBytes;

/** Options of {@link EmbeddedRuntimeService}. */
export interface EmbeddedRuntimeOptions {
  /** Where container logs go (`<rootDir>/containers/<id>.log` unless the sandbox sets a log folder). */
  rootDir: string;
  /** Timestamps, stop grace periods and exec timeouts (default: the wall clock). */
  clock?: Clock;
  /** The IP every sandbox reports (default 127.0.0.1: containers share the host's network). */
  podIP?: string;
  /** Start containers with probelet's environment plus their own (default true; false: only theirs). */
  inheritEnv?: boolean;
}

interface SandboxRecord {
  id: string;
  config: PodSandboxConfig;
  state: PodSandboxState;
  createdAt: bigint;
  runtimeHandler: string;
  nameKey: string;
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
  process?: HostProcess;
  /** Resolves when the process has exited and its output is written. */
  done?: Promise<void>;
}

/**
 * The embedded runtime. Call {@link shutdown} before exiting: it kills every process group the
 * runtime started (containers and execs) and waits for them.
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
  #clock: Clock;
  #inheritEnv: boolean;
  #sandboxes = new Map<string, SandboxRecord>();
  #containers = new Map<string, ContainerRecord>();
  /** Reserved names, as containerd's name index: sandbox and container names must be unique. */
  #names = new Map<string, string>();
  /** Running execs: process group id → settles when the exec is over. */
  #execs = new Map<number, Promise<void>>();
  #images = new Map<string, Image>();
  #closed = false;
  #shutdown: Promise<void> | undefined;

  /** Creates an empty runtime; nothing runs until a container is started. */
  constructor(options: EmbeddedRuntimeOptions) {
    this.rootDir = resolve(options.rootDir);
    this.podIP = options.podIP ?? "127.0.0.1";
    this.#clock = options.clock ?? new RealClock();
    this.#inheritEnv = options.inheritEnv ?? true;
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
      const nameKey = ["sandbox", m.name, m.namespace, m.uid, m.attempt ?? 0].join("_");
      this.#reserve(nameKey, id);
      this.#sandboxes.set(id, {
        id,
        config: structuredClone(config),
        state: "SANDBOX_READY",
        createdAt: this.#nowNs(),
        runtimeHandler: options.runtimeHandler ?? "",
        nameKey,
      });
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
      const attempt = config.metadata.attempt ?? 0;
      const nameKey = ["container", podSandboxId, name, attempt].join("_");
      this.#reserve(nameKey, id);

      const logDirectory = sandbox.config.logDirectory;
      const ownsLog = !(logDirectory && config.logPath);
      const logPath = ownsLog
        ? join(this.rootDir, "containers", `${id}.log`)
        : resolve(this.rootDir, logDirectory!, config.logPath!);

      const env: Record<string, string> = {};
      for (const kv of config.envs ?? []) env[kv.key] = kv.value;
      this.#rememberImage(image);
      this.#containers.set(id, {
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
      });
      return id;
    });
  }

  /**
   * Starts a created container's process. When the process cannot be started, the container ends
   * up exited with code 128 and reason `StartError`, as in containerd, and the call rejects.
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
      let log: ContainerLog;
      let process: HostProcess;
      try {
        log = await ContainerLog.open(c.logPath, this.#clock);
      } catch (err) {
        this.#startFailed(c, `failed to open log ${goQuote(c.logPath)}: ${errorText(err)}`);
        throw new Error(`failed to start container ${goQuote(containerId)}: ${c.message}`);
      }
      if (this.#closed) { // shut down while the log was being opened: start nothing new
        await log.close();
        this.#startFailed(c, "embedded runtime is closed");
        throw new Error(`failed to start container ${goQuote(containerId)}: ${c.message}`);
      }
      try {
        process = this.#spawn(c, (stream, chunk) => log.append(stream, chunk));
      } catch (err) {
        await log.close();
        this.#startFailed(c, errorText(err));
        throw new Error(`failed to start container ${goQuote(containerId)}: ${c.message}`);
      }
      c.process = process;
      c.state = "CONTAINER_RUNNING";
      c.startedAt = this.#nowNs();
      // Lets a later run kill this group should the agent die without shutting down.
      writePidRecord(this.rootDir, c.id, process.pid);
      process.exited.then((exit) => this.#exited(c, exit));
      c.done = process.done.then(() => log.close()).catch((e) =>
        klog.error(e, "Could not finish the container log", { containerID: c.id })
      ).finally(() => removePidRecord(this.rootDir, c.id));
    });
  }

  /**
   * Stops a running container: SIGTERM to its process group, SIGKILL after `timeoutMs`
   * (0 = at once). Resolves once it has exited. Does nothing for a container that is not running
   * or does not exist.
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
        ? { info: JSON.stringify({ pid: c.process?.pid ?? 0, command: c.command }) }
        : {};
      return { status, info };
    });
  }

  /**
   * Runs `cmd` on the host with the container's environment and working directory, in its own
   * process group. Errors follow the `RuntimeService` contract: a non-zero exit is an `ExitError`
   * carrying stdout then stderr; past `timeoutMs` the group is killed and the call rejects with
   * `CommandTimedOutError`; a container that is not running, or a command that cannot be started,
   * is a plain `Error`.
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
      let pid = 0;
      let done = () => {};
      let r: HostCommandResult;
      try {
        r = await runHostCommand(cmd, {
          timeoutMs: options.timeoutMs,
          clock: this.#clock,
          capBytes: maxExecOutputBytes,
          env: c.env,
          clearEnv: !this.#inheritEnv,
          cwd: c.config.workingDir || undefined,
          signal: options.signal,
          onStarted: (started) => {
            pid = started;
            this.#execs.set(pid, new Promise<void>((resolve) => done = resolve));
          },
        });
      } catch (err) {
        // Not started: worded as the OCI runtime words it.
        const why = pid === 0
          ? spawnError(cmd[0] ?? "", c.config.workingDir || undefined, err)
          : err;
        throw new Error(`failed to exec in container: ${errorText(why)}`, { cause: err });
      } finally {
        this.#execs.delete(pid);
        done();
      }
      options.signal?.throwIfAborted();
      if (r.timedOut) throw new CommandTimedOutError(cmd, { timeoutMs: options.timeoutMs });
      const exit = { code: r.status.code };
      const result = { stdout: r.stdout, stderr: r.stderr };
      if (exit.code !== 0) {
        const output = new Uint8Array(result.stdout.length + result.stderr.length);
        output.set(result.stdout);
        output.set(result.stderr, result.stdout.length);
        throw new ExitError(exit.code, {
          output,
          message: `command '${cmd.join(" ")}' exited with ${exit.code}: ${
            new TextDecoder().decode(result.stderr)
          }`,
        });
      }
      return result;
    });
  }

  // ---------------------------------------------------------------------------------------------
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

  // ---------------------------------------------------------------------------------------------
  // Shutdown

  /** Starts {@link shutdown} and makes later calls reject. */
  close(): void {
    this.shutdown().catch((e) => klog.error(e, "Embedded runtime shutdown failed"));
  }

  /**
   * Kills the container process groups a previous run on the same `rootDir` left behind (the agent
   * crashed or was SIGKILLed), after checking each is still the group it started (see
   * pid_records.ts). Call once at start-up, before starting containers. Returns the group ids killed.
   */
  killLeftoverProcesses(): number[] {
    return killRecordedGroups(this.rootDir);
  }

  /**
   * Kills every process group the runtime started (containers and running execs) with SIGKILL,
   * waits for them and their logs, and makes later calls reject. Safe to call more than once.
   */
  shutdown(): Promise<void> {
    this.#closed = true;
    this.#shutdown ??= (async () => {
      this.killAll();
      await Promise.all([
        ...[...this.#containers.values()].map((c) => c.done),
        ...this.#execs.values(),
      ]);
    })();
    return this.#shutdown;
  }

  /**
   * Sends SIGKILL to every process group still running, synchronously: for an exit path that
   * cannot wait (an `unload` handler). Prefer {@link shutdown}.
   */
  killAll(): void {
    for (const c of this.#containers.values()) c.process?.signal("SIGKILL");
    for (const pgid of this.#execs.keys()) signalGroup(pgid, "SIGKILL");
  }

  /** Process IDs (group leaders) of running containers and execs, for tests and diagnostics. */
  processIds(): number[] {
    const pids: number[] = [];
    for (const c of this.#containers.values()) {
      if (c.process && !c.process.exit) pids.push(c.process.pid);
    }
    pids.push(...this.#execs.keys());
    return pids;
  }

  // ---------------------------------------------------------------------------------------------

  #spawn(
    c: ContainerRecord,
    onOutput: (stream: "stdout" | "stderr", chunk: Uint8Array) => void,
  ): HostProcess {
    const cwd = c.config.workingDir || undefined;
    if (cwd !== undefined && !isAbsolute(cwd)) {
      throw new Error(`the working directory ${goQuote(cwd)} is invalid, it needs to be absolute`);
    }
    return HostProcess.spawn(c.command, {
      env: c.env,
      clearEnv: !this.#inheritEnv,
      cwd,
      clock: this.#clock,
      onOutput,
    });
  }

  #exited(c: ContainerRecord, exit: ProcessExit): void {
    c.state = "CONTAINER_EXITED";
    c.finishedAt = msToNs(exit.finishedAt);
    c.exitCode = exit.code;
    c.reason = exit.code === 0 ? "Completed" : "Error";
  }

  #startFailed(c: ContainerRecord, message: string): void {
    c.state = "CONTAINER_EXITED";
    c.finishedAt = this.#nowNs();
    c.exitCode = startErrorExitCode;
    c.reason = startErrorReason;
    c.message = message;
  }

  async #stop(c: ContainerRecord, gracePeriodMs: number): Promise<void> {
    if (c.process && !c.process.exit) await c.process.terminate(Math.max(0, gracePeriodMs));
    await c.done;
  }

  async #remove(c: ContainerRecord): Promise<void> {
    await this.#stop(c, 0);
    if (!this.#containers.has(c.id)) return; // removed by a concurrent call
    this.#containers.delete(c.id);
    this.#names.delete(c.nameKey);
    if (c.ownsLog) await Deno.remove(c.logPath).catch(() => {});
  }

  #containersOf(sandboxId: string): ContainerRecord[] {
    return [...this.#containers.values()].filter((c) => c.sandboxId === sandboxId);
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

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// A "no such object" error carrying gRPC's NotFound code (5), as containerd's CRI returns it.
function notFound(message: string): Error {
  return Object.assign(new Error(message), { code: 5 });
}
