/**
 * Container lifecycle through the CRI: the container config with kubelet's labels, starting and
 * killing one container with kubelet's events and grace periods, a CRI status in kubelet's
 * runtime-neutral form, and the `CommandRunner` exec probes use, backed by `ExecSync`.
 * Mirrors generateContainerConfig, startContainer, killContainer, toKubeContainerStatus,
 * RunInContainer, GetExec and GetAttach (the CRI streaming URLs) in kubelet's
 * pkg/kubelet/kuberuntime/kuberuntime_container.go.
 * @module
 */
import { join } from "node:path";
import { buildContainerLogsDirectory, getImageUser } from "./helpers.ts";
import type { Container, EnvVar, Pod } from "../../api/core/v1/mod.ts";
import type {
  ContainerConfig,
  ContainerStatus as CriContainerStatus,
  DNSConfig,
  Mount,
  PodSandboxConfig,
} from "../../cri_client/api.ts";
import type { ImageManagerService, RuntimeService } from "../../cri_client/runtime_service.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { GrpcStatus } from "../../util/grpc_codes.ts";
import type { CommandRunner } from "../container/command_runner.ts";
import { type ContainerID, containerIDString } from "../container/container_id.ts";
import { expandContainerCommandAndArgs } from "../container/expansion.ts";
import { generateContainerRef, getPodReference } from "../container/ref.ts";
import type { EventRecorder, EventType } from "../events/mod.ts";
import type { ImageManager } from "../images/types.ts";
import type { Secret } from "../../credentialprovider/keyring.ts";
import type { HandlerRunner } from "../lifecycle/handlers.ts";
import { hashContainer, podKey } from "../container/helpers.ts";
import type {
  PodStatus,
  RuntimeContainerState,
  RuntimeContainerStatus,
} from "../container/runtime.ts";
import {
  applyPlatformSpecificContainerConfig,
  type LinuxConfigOptions,
} from "./kuberuntime_container_linux.ts";
import { verifyRunAsNonRoot } from "./security_context_others.ts";
import {
  containerRestartCountLabel,
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  kubernetesContainerNameLabel,
  newContainerAnnotations,
  newContainerLabels,
} from "./labels.ts";
import { errorText } from "../../util/errors.ts";

/** Why a container is killed (kubelet's `containerKillReason`). */
export type ContainerKillReason =
  | ""
  | "StartupProbe"
  | "LivenessProbe"
  | "FailedPostStartHook"
  | "Unknown";

/** kubelet's floor for any kill grace period, in seconds. */
export const minimumGracePeriodInSeconds = 2;

/** Waiting reasons of containers that could not be started (kubecontainer errors). */
export const ErrCrashLoopBackOff = "CrashLoopBackOff";
/** See {@linkcode ErrCrashLoopBackOff}. */
export const ErrCreateContainerConfig = "CreateContainerConfigError";
/** See {@linkcode ErrCrashLoopBackOff}. */
export const ErrCreateContainer = "CreateContainerError";
/** See {@linkcode ErrCrashLoopBackOff}. */
export const ErrRunContainer = "RunContainerError";
/** See {@linkcode ErrCrashLoopBackOff}: the postStart hook failed and the container was killed. */
export const ErrPostStartHook = "PostStartHookError";

/** Bytes of a container's termination message file read (kubelet's). */
export const maxContainerTerminationMessageLength = 1024 * 4;
/** Bytes of the log tail used as a termination message (kubelet's). */
export const maxContainerTerminationMessageLogLength = 1024 * 2;
/** Lines of the log tail used as a termination message (kubelet's). */
export const maxContainerTerminationMessageLogLines = 80;

/**
 * What kubelet computes per container before creating it (`kubecontainer.RunContainerOptions`):
 * the mounts it adds (the managed `/etc/hosts`), and the folder for the termination message file.
 */
export interface RunContainerOptions {
  mounts: Mount[];
  /** `<pods dir>/<uid>/containers/<name>`, or "" when the container has no message path. */
  podContainerDir: string;
}

/**
 * What the runtime manager asks the kubelet for (kubelet's `RuntimeHelper`): a container's run
 * options, and the sandbox's DNS configuration and host name.
 */
export interface RuntimeHelper {
  /** The sandbox's DNS configuration (kubelet's `GetPodDNS`). */
  getPodDNS(pod: Pod): Promise<DNSConfig>;
  /** The pod's host name and domain (kubelet's `GeneratePodHostNameAndDomain`). */
  generatePodHostNameAndDomain(pod: Pod): { hostname: string; hostDomain: string };
  /**
   * Mounts and message folder (kubelet's `GenerateRunContainerOptions`); `envs` is the
   * container's environment, which `subPathExpr` expands against.
   */
  generateRunContainerOptions(
    pod: Pod,
    container: Container,
    options: { podIPs: string[]; envs?: EnvVar[] },
  ): Promise<RunContainerOptions>;
}

/**
 * The container config (kubelet's `generateContainerConfig`), with kubelet's labels and the Linux
 * part (security context, resources). `image` is the image's user as the runtime reports it.
 * Throws what kubelet reports as `CreateContainerConfigError`: `runAsNonRoot` not met, a
 * `Localhost` seccomp profile without a name.
 */
export function generateContainerConfig(
  pod: Pod,
  container: Container,
  options: {
    restartCount: number;
    nodeName: string;
    mounts?: Mount[];
    /**
     * The container's environment as `makeEnvironmentVariables` built it; without it, the
     * literal `env` values (a caller with no kubelet behind it).
     */
    envs?: EnvVar[];
    image?: { uid: number | undefined; username: string };
    linux: LinuxConfigOptions;
  },
): ContainerConfig {
  const { restartCount } = options;
  const image = options.image ?? { uid: undefined, username: "" };
  // Non-root verification only supports a numeric user.
  const nonRoot = verifyRunAsNonRoot(pod, container, image);
  if (nonRoot) throw nonRoot;
  const optsEnvs = options.envs ??
    (container.env ?? []).map((e) => ({ name: e.name, value: e.value ?? "" }));
  const envs = optsEnvs.map((e) => ({ key: e.name, value: e.value ?? "" }));
  const { command, args } = expandContainerCommandAndArgs(container, optsEnvs);
  const config: ContainerConfig = {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: container.image ?? "" },
    envs,
    labels: newContainerLabels(container, pod, { nodeName: options.nodeName }),
    annotations: newContainerAnnotations(container, pod, {
      restartCount,
      hash: hashContainer(container),
    }),
    logPath: `${container.name}/${restartCount}.log`,
  };
  if (command) config.command = command;
  if (args) config.args = args;
  if (container.workingDir) config.workingDir = container.workingDir;
  if (options.mounts && options.mounts.length > 0) config.mounts = options.mounts;
  // The runtime keeps the container's stdin open (closing it after the first attach detaches
  // under stdinOnce) and gives it a terminal; false is the CRI's default, so only true is sent.
  if (container.stdin) config.stdin = true;
  if (container.stdinOnce) config.stdinOnce = true;
  if (container.tty) config.tty = true;
  applyPlatformSpecificContainerConfig(config, container, pod, image, options.linux);
  return config;
}

/**
 * The container's mounts (kubelet's `makeMounts`): the run options' mounts, then the termination
 * message file, created empty (mode 0666) under the pod's container folder with a random name so
 * each instance of the container gets its own, mounted at `terminationMessagePath`.
 */
export async function makeMounts(
  opts: RunContainerOptions,
  container: Container,
): Promise<Mount[]> {
  const mounts = [...opts.mounts];
  const path = container.terminationMessagePath ?? "";
  if (opts.podContainerDir !== "" && path !== "") {
    const hostPath = join(opts.podContainerDir, makeUID());
    try {
      await Deno.writeFile(hostPath, new Uint8Array());
      // The umask applies at creation; the container may run as any user.
      await Deno.chmod(hostPath, 0o666);
      mounts.push({ hostPath, containerPath: path });
    } catch (e) {
      log.error(e, "error on creating termination-log file", { path: hostPath });
    }
  }
  return mounts;
}

/** Eight random hex digits (kubelet's `makeUID`). */
export function makeUID(): string {
  return crypto.getRandomValues(new Uint32Array(1))[0].toString(16).padStart(8, "0");
}

/** What starting and killing a container needs from the runtime manager. */
export interface ContainerManagerContext {
  runtime: RuntimeService;
  recorder: EventRecorder;
  /** The owning node, put in probelet's node label. */
  nodeName: string;
  /**
   * Pulls images by the pull policy before a container is created (a CRI runtime's); without
   * one the image is passed to the runtime by name (the embedded runtime: no images).
   */
  imageManager?: ImageManager;
  /** Runs postStart and preStop hooks; without one, hooks are not run. */
  runner?: HandlerRunner;
  /** The container ID type (`containerd`). */
  runtimeName?: string;
  /** Mounts (volumes, /etc/hosts) and the message folder of a container; without one, none. */
  runtimeHelper?: RuntimeHelper;
  /**
   * The container's environment (kubelet's `makeEnvironmentVariables`, the first step of its
   * `GenerateRunContainerOptions`), on every runtime; throws what makes the container's config
   * fail (`CreateContainerConfigError`). Without it, the literal `env` values.
   */
  makeEnvironmentVariables?: (
    pod: Pod,
    container: Container,
    ips: { podIP: string; podIPs: string[] },
  ) => Promise<EnvVar[]>;
  /** Times the preStop hook against the grace period. */
  clock?: Clock;
  /**
   * Where the image's user comes from (`ImageStatus`), for `runAsNonRoot` and the default user.
   * Without one (the embedded runtime: its processes run as the agent) no image user is known.
   */
  imageService?: ImageManagerService;
  /** Node settings of the containers' Linux config. */
  linux: LinuxConfigOptions;
}

/** Arguments of {@linkcode startContainer}. */
export interface StartContainerOptions {
  sandboxID: string;
  sandboxConfig: PodSandboxConfig;
  container: Container;
  pod: Pod;
  /** The runtime's view of the pod; its newest instance of the container gives the restart count. */
  podStatus: PodStatus;
  podIP: string;
  /** The pod's image pull secrets, as read for this sync (kubelet's `getPullSecretsForPod`). */
  pullSecrets?: Secret[];
  /**
   * Every IP of the pod (the managed /etc/hosts lists them, `status.podIPs` reads them); defaults
   * to `[podIP]`.
   */
  podIPs?: string[];
}

/**
 * Pulls the image (with an image manager), creates and starts one container; resolves with the
 * failure (reason and message) or undefined on success. Kubelet's `startContainer` without
 * lifecycle hooks: a config that cannot be made (`runAsNonRoot` not met, say) is
 * `CreateContainerConfigError`.
 */
export async function startContainer(
  m: ContainerManagerContext,
  options: StartContainerOptions,
): Promise<{ reason: string; message: string } | undefined> {
  const { sandboxID, sandboxConfig, container, pod, podStatus } = options;
  const previous = podStatus.containerStatuses.find((c) => c.name === container.name);
  const restartCount = previous ? previous.restartCount + 1 : 0;
  // Step 1: pull the image. The failure's reason is the waiting reason; the event says only it.
  let imageRef: string | undefined;
  if (m.imageManager) {
    const pulled = await m.imageManager.ensureImageExists(pod, {
      objRef: generateContainerRef(pod, container),
      requestedImage: container.image ?? "",
      pullSecrets: options.pullSecrets ?? [],
      podSandboxConfig: sandboxConfig,
      pullPolicy: container.imagePullPolicy ?? "",
    });
    if (pulled.error) {
      recordEvent(m.recorder, pod, container, {
        type: "Warning",
        reason: "Failed",
        message: `Error: ${pulled.error}`,
      });
      return { reason: pulled.error, message: pulled.message };
    }
    imageRef = pulled.imageRef;
  }
  // kubelet reports the gRPC status message, not the `rpc error: code = ...` wrapping.
  const failed = (reason: string, e: unknown) => {
    const message = statusMessage(e);
    recordEvent(m.recorder, pod, container, {
      type: "Warning",
      reason: "Failed",
      message: `Error: ${message}`,
    });
    return { reason, message };
  };
  let mounts: Mount[] = [];
  let envs: EnvVar[] | undefined;
  const podIPs = options.podIPs ?? (options.podIP ? [options.podIP] : []);
  try {
    // kubelet's GenerateRunContainerOptions: the environment, then the mounts (whose subPathExpr
    // expands against it).
    envs = await m.makeEnvironmentVariables?.(pod, container, {
      podIP: podIPs[0] ?? "",
      podIPs,
    });
    if (m.runtimeHelper) {
      const opts = await m.runtimeHelper.generateRunContainerOptions(pod, container, {
        podIPs,
        envs,
      });
      mounts = await makeMounts(opts, container);
    }
  } catch (e) {
    return failed(ErrCreateContainerConfig, e);
  }
  let config: ContainerConfig;
  try {
    const image = m.imageService
      ? await getImageUser(m.imageService, container.image ?? "")
      : undefined;
    config = generateContainerConfig(pod, container, {
      restartCount,
      nodeName: m.nodeName,
      mounts,
      envs,
      image,
      linux: m.linux,
    });
  } catch (e) {
    return failed(ErrCreateContainerConfig, e);
  }
  if (imageRef !== undefined) {
    config.image = { image: imageRef, userSpecifiedImage: container.image ?? "" };
  }
  let containerID: string;
  try {
    await Deno.mkdir(buildContainerLogsDirectory(sandboxConfig.logDirectory!, container.name), {
      recursive: true,
    });
    containerID = await m.runtime.createContainer(sandboxID, config, { sandboxConfig });
  } catch (e) {
    return failed(ErrCreateContainer, e);
  }
  recordEvent(m.recorder, pod, container, {
    type: "Normal",
    reason: "Created",
    message: "Container created",
  });
  try {
    await m.runtime.startContainer(containerID);
  } catch (e) {
    return failed(ErrRunContainer, e);
  }
  recordEvent(m.recorder, pod, container, {
    type: "Normal",
    reason: "Started",
    message: "Container started",
  });
  const postStart = container.lifecycle?.postStart;
  if (postStart && m.runner) {
    const id: ContainerID = { type: m.runtimeName ?? "", id: containerID };
    const { message, error } = await m.runner.run(id, pod, container, postStart);
    if (error) {
      log.error(error, "Failed to execute PostStartHook", {
        pod: podKey(pod),
        podUID: pod.metadata.uid ?? "",
        containerName: container.name,
        containerID: containerIDString(id),
      });
      // The message stays out of the event, so secrets in the output do not reach the server.
      recordEvent(m.recorder, pod, container, {
        type: "Warning",
        reason: "FailedPostStartHook",
        message: "PostStartHook failed",
      });
      try {
        await killContainer(m, {
          pod,
          id,
          container,
          message: "FailedPostStartHook",
          reason: "FailedPostStartHook",
        });
      } catch (e) {
        log.error(e, "Failed to kill container", {
          pod: podKey(pod),
          containerName: container.name,
          containerID: containerIDString(id),
        });
      }
      return { reason: ErrPostStartHook, message };
    }
  }
  return undefined;
}

/** Arguments of {@linkcode killContainer}. */
export interface KillContainerOptions {
  pod: Pod;
  id: ContainerID;
  container: Container;
  /** Message of the `Killing` event; empty for `Stopping container <name>`. */
  message: string;
  reason: ContainerKillReason;
  gracePeriodOverrideSeconds?: number;
}

/**
 * Stops one container with the grace period kubelet would use and a `Killing` event carrying
 * `message` (e.g. `Container app failed liveness probe, will be restarted`). Kubelet's
 * `killContainer` without preStop hooks.
 */
export async function killContainer(
  m: ContainerManagerContext,
  options: KillContainerOptions,
): Promise<void> {
  const { pod, id, container, message, reason } = options;
  let gracePeriod = setTerminationGracePeriod(pod, container, reason);
  recordEvent(m.recorder, pod, container, {
    type: "Normal",
    reason: "Killing",
    message: message || `Stopping container ${container.name}`,
  });
  if (options.gracePeriodOverrideSeconds !== undefined) {
    gracePeriod = options.gracePeriodOverrideSeconds;
  }
  // The preStop hook runs only when there is time for it, and what it takes is taken from the
  // grace period.
  const preStop = container.lifecycle?.preStop;
  if (preStop && m.runner && gracePeriod > 0) {
    gracePeriod -= await executePreStopHook(m, { pod, id, container, gracePeriod });
  }
  // Always a minimal shutdown window, to avoid needless SIGKILLs.
  if (gracePeriod < minimumGracePeriodInSeconds) gracePeriod = minimumGracePeriodInSeconds;
  log.V(2).info("Killing container with a grace period", {
    pod: podKey(pod),
    containerName: container.name,
    containerID: containerIDString(id),
    gracePeriod,
  });
  await m.runtime.stopContainer(id.id, { timeoutMs: gracePeriod * 1000 });
}

/**
 * Runs the container's preStop hook for at most `gracePeriod` seconds and returns the whole
 * seconds it took (kubelet's `executePreStopHook`). A failed hook is a `FailedPreStopHook` event;
 * a hook still running at the end of the grace period is left to finish (a sleep hook is
 * stopped) while the container is stopped.
 */
export async function executePreStopHook(
  m: ContainerManagerContext,
  options: { pod: Pod; id: ContainerID; container: Container; gracePeriod: number },
): Promise<number> {
  const { pod, id, container, gracePeriod } = options;
  const clock = m.clock ?? new RealClock();
  const keys = {
    pod: podKey(pod),
    podUID: pod.metadata.uid ?? "",
    containerName: container.name,
    containerID: containerIDString(id),
  };
  log.V(3).info("Running preStop hook", keys);
  const start = clock.now();
  const stop = new AbortController();
  const done = m.runner!.run(id, pod, container, container.lifecycle!.preStop!, {
    signal: stop.signal,
  }).then(({ error }) => {
    if (!error || stop.signal.aborted) return;
    log.error(error, "PreStop hook failed", keys);
    // The message stays out of the event, so secrets in the output do not reach the server.
    recordEvent(m.recorder, pod, container, {
      type: "Warning",
      reason: "FailedPreStopHook",
      message: "PreStopHook failed",
    });
  });
  let timer: { stop(): boolean } | undefined;
  const expired = new Promise<"expired">((resolve) => {
    timer = clock.afterFunc(gracePeriod * 1000, () => resolve("expired"));
  });
  const outcome = await Promise.race([done.then(() => "done" as const), expired]);
  timer?.stop();
  if (outcome === "expired") {
    log.V(2).info("PreStop hook not completed in grace period", { ...keys, gracePeriod });
    stop.abort();
  } else {
    log.V(3).info("PreStop hook completed", keys);
  }
  return Math.trunc(clock.since(start) / 1000);
}

/**
 * Records an event about the pod, or about one of its containers when `container` is given.
 */
export function recordEvent(
  recorder: EventRecorder,
  pod: Pod,
  container: Container | undefined,
  event: { type: EventType; reason: string; message: string },
): void {
  const ref = container ? generateContainerRef(pod, container) : getPodReference(pod);
  recorder.event(ref, event);
}

/**
 * The grace period for killing a container, kubelet's `setTerminationGracePeriod`: the pod's
 * deletion grace period if set; else for liveness/startup kills the probe-level
 * `terminationGracePeriodSeconds` when set, otherwise the pod's; else the minimum (2 s).
 */
export function setTerminationGracePeriod(
  pod: Pod,
  container: Container,
  reason: ContainerKillReason,
): number {
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) {
    return pod.metadata.deletionGracePeriodSeconds;
  }
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    if (
      reason === "StartupProbe" &&
      container.startupProbe?.terminationGracePeriodSeconds !== undefined
    ) {
      return container.startupProbe.terminationGracePeriodSeconds;
    }
    if (
      reason === "LivenessProbe" &&
      container.livenessProbe?.terminationGracePeriodSeconds !== undefined
    ) {
      return container.livenessProbe.terminationGracePeriodSeconds;
    }
    return pod.spec.terminationGracePeriodSeconds;
  }
  return minimumGracePeriodInSeconds;
}

/** CRI nanoseconds since the epoch as milliseconds (0 stays 0). */
export function nsToMs(ns: bigint): number {
  return Number(ns / 1_000_000n);
}

/** A CRI container state as kubelet's `kubecontainer.State`. */
export function toRuntimeState(state: CriContainerStatus["state"]): RuntimeContainerState {
  switch (state) {
    case "CONTAINER_CREATED":
      return "created";
    case "CONTAINER_RUNNING":
      return "running";
    case "CONTAINER_EXITED":
      return "exited";
    default:
      return "unknown";
  }
}

/**
 * One CRI container status in kubelet's runtime-neutral form (`toKubeContainerStatus`). The name
 * and restart count come from kubelet's label and annotation; containers created without them
 * (by tests, say) fall back to the CRI metadata's name and attempt.
 */
export function toKubeContainerStatus(
  status: CriContainerStatus,
  runtimeName: string,
): RuntimeContainerStatus {
  const annotated = getContainerInfoFromAnnotations(status.annotations);
  const hasRestartCount = status.annotations[containerRestartCountLabel] !== undefined;
  const state = toRuntimeState(status.state);
  const exited = status.state === "CONTAINER_EXITED";
  return {
    id: { type: runtimeName, id: status.id },
    name: status.labels[kubernetesContainerNameLabel] !== undefined
      ? getContainerInfoFromLabels(status.labels).containerName
      : status.metadata.name,
    state,
    createdAt: nsToMs(status.createdAt),
    // A container past "created" has been started, so its start time counts.
    startedAt: state === "created" ? 0 : nsToMs(status.startedAt),
    finishedAt: exited ? nsToMs(status.finishedAt) : 0,
    exitCode: exited ? status.exitCode : 0,
    image: status.image?.image ?? "",
    imageID: status.imageRef,
    hash: annotated.hash,
    restartCount: hasRestartCount ? annotated.restartCount : status.metadata.attempt,
    reason: exited ? status.reason : "",
    message: exited ? status.message : "",
    ...(annotated.podTerminationGracePeriod !== undefined
      ? { podTerminationGracePeriod: annotated.podTerminationGracePeriod }
      : {}),
  };
}

/**
 * The termination message of an exited container (kubelet's `getTerminationMessage`): the last
 * 4 KiB of the file mounted at `terminationMessagePath`; `checkLogs` says the log tail is to be
 * used instead (the policy is `FallbackToLogsOnError` and the file is absent or empty).
 */
export async function getTerminationMessage(
  status: Pick<CriContainerStatus, "mounts">,
  terminationMessagePath: string,
  fallbackToLogs: boolean,
): Promise<{ message: string; checkLogs: boolean }> {
  if (terminationMessagePath === "") return { message: "", checkLogs: fallbackToLogs };
  for (const mount of status.mounts) {
    if (mount.containerPath !== terminationMessagePath) continue;
    const path = mount.hostPath;
    try {
      const data = await readAtMost(path, maxContainerTerminationMessageLength);
      return {
        message: new TextDecoder().decode(data),
        checkLogs: fallbackToLogs && data.length === 0,
      };
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return { message: "", checkLogs: fallbackToLogs };
      return {
        message: `Error on reading termination log ${path}: ${errorText(e)}`,
        checkLogs: false,
      };
    }
  }
  return { message: "", checkLogs: fallbackToLogs };
}

/** The last `max` bytes of a file (kubelet's `tail.ReadAtMost`). */
export async function readAtMost(path: string, max: number): Promise<Uint8Array> {
  using file = await Deno.open(path, { read: true });
  const size = (await file.stat()).size;
  const offset = Math.max(0, size - max);
  await file.seek(offset, Deno.SeekMode.Start);
  const buf = new Uint8Array(size - offset);
  let read = 0;
  while (read < buf.length) {
    const n = await file.read(buf.subarray(read));
    if (n === null) break;
    read += n;
  }
  return buf.subarray(0, read);
}

/**
 * The tail of a CRI-format container log as a termination message (kubelet's
 * `readLastStringFromContainerLogs`): the last 80 lines of both streams, of which the last 2 KiB.
 */
export async function readLastStringFromContainerLogs(path: string): Promise<string> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    return `Error on reading termination message from logs: ${errorText(e)}`;
  }
  // `<time> <stream> <P|F> <content>`: P is a partial line continued by the next record.
  const lines: string[] = [];
  let partial = "";
  for (const record of text.split("\n")) {
    if (record === "") continue;
    const fields = record.split(" ");
    if (fields.length < 3) continue;
    const tag = fields[2];
    const content = fields.slice(3).join(" ");
    if (tag === "P") {
      partial += content;
      continue;
    }
    lines.push(`${partial}${content}\n`);
    partial = "";
  }
  const bytes = new TextEncoder().encode(
    lines.slice(-maxContainerTerminationMessageLogLines).join(""),
  );
  return new TextDecoder().decode(
    bytes.subarray(Math.max(0, bytes.length - maxContainerTerminationMessageLogLength)),
  );
}

/**
 * A CRI status in kubelet's form with the termination message of an exited container appended to
 * the runtime's message (kubelet's `convertToKubeContainerStatus`).
 */
export async function convertToKubeContainerStatus(
  status: CriContainerStatus,
  runtimeName: string,
): Promise<RuntimeContainerStatus> {
  const cStatus = toKubeContainerStatus(status, runtimeName);
  if (status.state !== "CONTAINER_EXITED") return cStatus;
  const annotated = getContainerInfoFromAnnotations(status.annotations);
  // A container that could not even start has no logs to fall back to.
  const fallbackToLogs = annotated.terminationMessagePolicy === "FallbackToLogsOnError" &&
    cStatus.exitCode !== 0 && cStatus.reason !== "ContainerCannotRun";
  let { message, checkLogs } = await getTerminationMessage(
    status,
    annotated.terminationMessagePath,
    fallbackToLogs,
  );
  if (checkLogs) message = await readLastStringFromContainerLogs(status.logPath);
  if (message !== "") {
    cStatus.message = cStatus.message !== "" ? `${cStatus.message}: ${message}` : message;
  }
  return cStatus;
}

/** A CRI error's status message (Go's `status.FromError(err).Message()`), else the error text. */
export function statusMessage(e: unknown): string {
  const details = (e as { details?: unknown } | null)?.details;
  return typeof details === "string" && typeof (e as { code?: unknown }).code === "number"
    ? details
    : errorText(e);
}

/**
 * Runs commands through a `RuntimeService`'s `ExecSync`, as kubelet's runtime manager does.
 *
 * Output is stdout followed by stderr, not interleaved (kubelet accepts the same imprecision).
 * Errors are the runtime service's: a non-zero exit rejects with `ExitError` carrying that same
 * combined output, a timeout with `CommandTimedOutError`, anything else with a plain error.
 *
 * @example
 * ```ts
 * import { parseContainerID } from "../container/container_id.ts";
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const runner = new RuntimeCommandRunner(runtime);
 * const out = await runner.runInContainer(parseContainerID("containerd://0123"), ["cat", "/tmp/ok"], {
 *   timeoutMs: 1000,
 * });
 * ```
 */
export class RuntimeCommandRunner implements CommandRunner {
  readonly #runtime: RuntimeService;

  constructor(runtime: RuntimeService) {
    this.#runtime = runtime;
  }

  /** kubelet's `RunInContainer`: `ExecSync` with the probe's timeout; stdout then stderr. */
  async runInContainer(
    id: ContainerID,
    cmd: string[],
    options: { timeoutMs: number },
  ): Promise<Uint8Array> {
    const { stdout, stderr } = await this.#runtime.execSync(id.id, cmd, {
      timeoutMs: options.timeoutMs,
    });
    const out = new Uint8Array(stdout.length + stderr.length);
    out.set(stdout);
    out.set(stderr, stdout.length);
    return out;
  }
}

/** Which streams a remote command carries (kubelet's `remotecommandserver.Options`). */
export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * kubelet's `GetExec`: asks the runtime (CRI `Exec`) where it serves `cmd` in the container;
 * resolves with the URL. A runtime without a streaming server fails as a runtime that does not
 * implement the call.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const url = await getExec(runtime, { type: "containerd", id: "0123" }, ["sh"], {
 *   stdin: true,
 *   stdout: true,
 *   stderr: false,
 *   tty: true,
 * });
 * ```
 */
export async function getExec(
  runtime: Pick<RuntimeService, "exec">,
  id: ContainerID,
  cmd: string[],
  streamOpts: StreamOptions,
): Promise<URL> {
  if (!runtime.exec) throw unimplemented("Exec");
  const { url } = await runtime.exec({ containerId: id.id, cmd, ...streamOpts });
  return new URL(url);
}

/**
 * kubelet's `GetAttach`: asks the runtime (CRI `Attach`) where it serves the container's main
 * process's streams; `streamOpts.tty` must be the container's own setting.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const url = await getAttach(runtime, { type: "containerd", id: "0123" }, {
 *   stdin: false,
 *   stdout: true,
 *   stderr: true,
 *   tty: false,
 * });
 * ```
 */
export async function getAttach(
  runtime: Pick<RuntimeService, "attach">,
  id: ContainerID,
  streamOpts: StreamOptions,
): Promise<URL> {
  if (!runtime.attach) throw unimplemented("Attach");
  const { url } = await runtime.attach({ containerId: id.id, ...streamOpts });
  return new URL(url);
}

/**
 * The error a CRI server gives for a method it lacks (gRPC `Unimplemented`, the generated stub's
 * text), for a runtime that has no streaming server.
 *
 * @example
 * ```ts
 * unimplemented("Exec").message; // "rpc error: code = Unimplemented desc = method Exec not implemented"
 * ```
 */
export function unimplemented(method: string): Error & { code: number } {
  const err = new Error(
    `rpc error: code = Unimplemented desc = method ${method} not implemented`,
  ) as Error & { code: number };
  err.code = GrpcStatus.Unimplemented;
  return err;
}
