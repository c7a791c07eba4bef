/**
 * The runtime manager: reads a pod's state from a CRI runtime (`GetPodStatus`), decides what to do
 * to move it towards its spec (`computePodActions`: create the sandbox, start (init) containers,
 * kill containers that failed their liveness or startup probe, or kill the whole pod; a pure
 * function of its inputs, so the decisions are testable without a runtime) and carries those
 * actions out (`SyncPod`, honouring the restart back-off), and kills and removes whole pods
 * (`KillPod`).
 * Mirrors kubelet's pkg/kubelet/kuberuntime/kuberuntime_manager.go, and PodSandboxChanged from
 * pkg/kubelet/kuberuntime/util (kubecontainer types and helpers are in src/kubelet/container/).
 * @module
 */
import type { Secret } from "../../credentialprovider/keyring.ts";
import {
  ErrImageInspect,
  ErrImageNeverPull,
  ErrImagePull,
  ErrImagePullBackOff,
  ErrInvalidImageName,
  ErrRegistryUnavailable,
  ErrSignatureValidationFailed,
  type ImageManager,
} from "../images/types.ts";
import { resolve } from "node:path";
import type { Container, Pod } from "../../api/core/v1/mod.ts";
import type { DNSConfig, PodSandboxNetworkStatus, PodSandboxStatus } from "../../cri_client/api.ts";
import type { ImageManagerService, RuntimeService } from "../../cri_client/runtime_service.ts";
import { type HttpClient, newHttpClient } from "../../probe/http/mod.ts";
import type { Clock } from "../../util/clock.ts";
import type { Backoff } from "../../util/flowcontrol/backoff.ts";
import { goDuration } from "../../util/go_format.ts";
import * as log from "../../util/log.ts";
import { V } from "../../util/log.ts";
import { type ContainerID, containerIDString } from "../container/container_id.ts";
import type { EventRecorder, EventType } from "../events/mod.ts";
import {
  type ContainerManagerContext,
  convertToKubeContainerStatus,
  ErrCrashLoopBackOff,
  killContainer,
  recordEvent,
  RuntimeCommandRunner,
  type RuntimeHelper,
  startContainer,
  toRuntimeState,
} from "./kuberuntime_container.ts";
import type { ContainerKillReason } from "./kuberuntime_container.ts";
import { type HandlerRunner, newHandlerRunner } from "../lifecycle/handlers.ts";
import type { ContainerLogManager } from "../logs/container_log_manager.ts";
import { getNodenameForKernel } from "../util/util.ts";
import { getMachineInfo } from "../cadvisor/cadvisor.ts";
import {
  defaultLinuxConfigOptions,
  type LinuxConfigOptions,
} from "./kuberuntime_container_linux.ts";
import { generatePodSandboxConfig } from "./kuberuntime_sandbox.ts";
import {
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  getPodSandboxInfoFromLabels,
  kubernetesPodUIDLabel,
  probeletNodeLabel,
} from "./labels.ts";
import { formatPod } from "../util/format.ts";
import {
  findContainerStatusByName,
  type PodStatus,
  type RuntimeContainerStatus,
  type RuntimePod,
} from "../container/runtime.ts";
import {
  hashContainer,
  legacyHashContainer,
  podKey,
  podRestartPolicy,
  shouldContainerBeRestarted,
} from "../container/helpers.ts";
import { errorText } from "../../util/errors.ts";
import { isNotFound } from "../../cri_client/errors.ts";
import { isRestartableInitContainer } from "../container/podutil.ts";

/** A container to kill and the message of its `Killing` event. */
export interface ContainerToKillInfo {
  name: string;
  container: Container;
  message: string;
  reason: ContainerKillReason;
}

/** The result of {@linkcode computePodActions}: kubelet's `podActions`. */
export interface PodActions {
  /** Stop every container and the sandbox. */
  killPod: boolean;
  /** Create a new sandbox (after killing the pod). */
  createSandbox: boolean;
  /** The sandbox to use (or the one being replaced). */
  sandboxID: string;
  /** Attempt number of the sandbox to create. */
  attempt: number;
  /** Indexes into `spec.initContainers` to start, in spec order. */
  initContainersToStart: number[];
  /** Indexes into `spec.containers` to start. */
  containersToStart: number[];
  /** Containers to kill, keyed by `<type>://<id>`. */
  containersToKill: Map<string, ContainerToKillInfo & { id: ContainerID }>;
}

/** A results cache lookup, the part of a results manager computePodActions reads. */
export interface ResultsLookup {
  /** The cached result for the container: -1 Unknown, 0 Success, 1 Failure, or undefined. */
  get(id: ContainerID): number | undefined;
}

/** Runtime traits that change decisions. */
export interface ComputePodActionsOptions {
  /**
   * The runtime puts every sandbox in the host network (the embedded runtime does), so a sandbox
   * reporting `NODE` for a pod without `hostNetwork` is expected, not a reason to recreate it.
   */
  runtimeHostNetworkOnly?: boolean;
}

/** Liveness and startup verdicts that drive kills. */
export interface ProbeResultsLookups {
  livenessManager: ResultsLookup;
  startupManager: ResultsLookup;
}

const resultSuccess = 0;
const resultFailure = 1;

/** Kubelet's `shouldRestartOnFailure`: anything but `Never`. */
export function shouldRestartOnFailure(pod: Pod): boolean {
  return podRestartPolicy(pod) !== "Never";
}

/**
 * Whether the pod needs a new sandbox, with the attempt to create and the current sandbox ID.
 * Kubelet's `PodSandboxChanged` (the network-namespace check compares host network).
 */
export function podSandboxChanged(
  pod: Pod,
  podStatus: PodStatus,
  options: ComputePodActionsOptions = {},
): { changed: boolean; attempt: number; sandboxID: string } {
  const sandboxes = podStatus.sandboxStatuses;
  if (sandboxes.length === 0) {
    V(2).info("No sandbox for pod can be found. Need to start a new one", { pod: podKey(pod) });
    return { changed: true, attempt: 0, sandboxID: "" };
  }
  const ready = sandboxes.filter((s) => s.state === "SANDBOX_READY").length;
  const latest = sandboxes[0];
  const nextAttempt = (latest.metadata.attempt ?? 0) + 1;
  if (ready > 1) {
    V(2).info("Multiple sandboxes are ready for Pod. Need to reconcile them", {
      pod: podKey(pod),
    });
    return { changed: true, attempt: nextAttempt, sandboxID: latest.id };
  }
  if (latest.state !== "SANDBOX_READY") {
    V(2).info("No ready sandbox for pod can be found. Need to start a new one", {
      pod: podKey(pod),
    });
    return { changed: true, attempt: nextAttempt, sandboxID: latest.id };
  }
  const network = latest.linux?.namespaces?.options?.network;
  const wanted = pod.spec.hostNetwork ? "NODE" : "POD";
  if (!options.runtimeHostNetworkOnly && network !== undefined && network !== wanted) {
    V(2).info("Sandbox for pod has changed. Need to start a new one", { pod: podKey(pod) });
    return { changed: true, attempt: nextAttempt, sandboxID: "" };
  }
  if (!pod.spec.hostNetwork && latest.network && latest.network.ip === "") {
    V(2).info("Sandbox for pod has no IP address. Need to start a new one", { pod: podKey(pod) });
    return { changed: true, attempt: nextAttempt, sandboxID: latest.id };
  }
  return { changed: false, attempt: latest.metadata.attempt ?? 0, sandboxID: latest.id };
}

/** Kubelet's `containerChanged`: the running instance was created from a different spec. */
export function containerChanged(container: Container, status: RuntimeContainerStatus): boolean {
  return status.hash !== "" && status.hash !== hashContainer(container) &&
    status.hash !== legacyHashContainer(container);
}

/** An init container whose last instance failed (kubelet's `isInitContainerFailed`). */
export function isInitContainerFailed(status: RuntimeContainerStatus): boolean {
  if (status.state === "exited" && status.exitCode !== 0) return true;
  if (status.state === "unknown") return true;
  return false;
}

/** Whether the named container's last instance exited 0 (kubelet's `containerSucceeded`). */
function containerSucceeded(container: Container, podStatus: PodStatus): boolean {
  const status = findContainerStatusByName(podStatus, container.name);
  return status !== undefined && status.state === "exited" && status.exitCode === 0;
}

function hasAnyRegularContainerCreated(pod: Pod, podStatus: PodStatus): boolean {
  for (const container of pod.spec.containers) {
    const status = findContainerStatusByName(podStatus, container.name);
    if (!status) continue;
    if (status.state === "created" || status.state === "running" || status.state === "exited") {
      return true;
    }
  }
  return false;
}

function killInfo(
  status: RuntimeContainerStatus,
  container: Container,
  message: string,
  reason: ContainerKillReason,
): ContainerToKillInfo & { id: ContainerID } {
  return { id: status.id, name: status.name, container, message, reason };
}

/**
 * Decides what to do for the pod. Kubelet's `computePodActions`:
 * - no usable sandbox → kill the pod and create a new sandbox, then the first init container (or
 *   every regular container that should run);
 * - init containers are progressed by {@linkcode computeInitContainerActions};
 * - a running container whose liveness (then startup) result is Failure is killed, and started
 *   again unless the restart policy is `Never`;
 * - a container not running is started again when {@linkcode shouldContainerBeRestarted} says so;
 * - when nothing is left running and nothing is to start, the whole pod is killed.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { ResultsManager } from "../prober/results/results_manager.ts";
 *
 * declare const pod: Pod;
 * declare const livenessManager: ResultsManager;
 * declare const startupManager: ResultsManager;
 *
 * declare const podStatus: Parameters<typeof computePodActions>[1];
 * const actions = computePodActions(pod, podStatus, { livenessManager, startupManager });
 * actions.containersToKill.size; // 1 after a liveness failure
 * ```
 */
export function computePodActions(
  pod: Pod,
  podStatus: PodStatus,
  lookups: ProbeResultsLookups,
  options: ComputePodActionsOptions = {},
): PodActions {
  const sandbox = podSandboxChanged(pod, podStatus, options);
  const changes: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxID: sandbox.sandboxID,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: new Map(),
  };

  if (sandbox.changed) {
    if (
      !shouldRestartOnFailure(pod) && sandbox.attempt !== 0 &&
      podStatus.containerStatuses.length !== 0
    ) {
      // The pod must not run again: kill what is left, but create nothing.
      changes.createSandbox = false;
      return changes;
    }
    const containersToStart: number[] = [];
    pod.spec.containers.forEach((c, idx) => {
      if (podRestartPolicy(pod) === "OnFailure" && containerSucceeded(c, podStatus)) return;
      containersToStart.push(idx);
    });
    if (containersToStart.length === 0 && hasAnyRegularContainerCreated(pod, podStatus)) {
      changes.createSandbox = false;
      return changes;
    }
    if ((pod.spec.initContainers ?? []).length !== 0) {
      changes.initContainersToStart = [0];
      return changes;
    }
    changes.containersToStart = containersToStart;
    return changes;
  }

  const hasInitialized = computeInitContainerActions(pod, podStatus, changes, lookups);
  if (changes.killPod || !hasInitialized) return changes;

  let keepCount = 0;
  pod.spec.containers.forEach((container, idx) => {
    const status = findContainerStatusByName(podStatus, container.name);
    if (!status || status.state !== "running") {
      if (shouldContainerBeRestarted(container, pod, podStatus)) {
        V(3).info("Container of pod is not in the desired state and shall be started", {
          containerName: container.name,
          pod: podKey(pod),
        });
        changes.containersToStart.push(idx);
        if (status && status.state === "unknown") {
          changes.containersToKill.set(
            containerIDString(status.id),
            killInfo(
              status,
              container,
              `Container is in "${status.state}" state, try killing it before restart`,
              "Unknown",
            ),
          );
        }
      }
      return;
    }

    let message: string;
    let reason: ContainerKillReason = "";
    let restart = shouldRestartOnFailure(pod);
    if (containerChanged(container, status)) {
      message = `Container ${container.name} definition changed`;
      restart = true;
    } else if (lookups.livenessManager.get(status.id) === resultFailure) {
      message = `Container ${container.name} failed liveness probe`;
      reason = "LivenessProbe";
    } else if (lookups.startupManager.get(status.id) === resultFailure) {
      message = `Container ${container.name} failed startup probe`;
      reason = "StartupProbe";
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      changes.containersToStart.push(idx);
    }
    changes.containersToKill.set(
      containerIDString(status.id),
      killInfo(status, container, message, reason),
    );
    V(2).info("Message for Container of pod", {
      containerName: container.name,
      containerStatusID: containerIDString(status.id),
      pod: podKey(pod),
      containerMessage: message,
    });
  });

  if (keepCount === 0 && changes.containersToStart.length === 0) {
    changes.killPod = true;
    // Sidecars alone must not keep the pod alive.
    changes.initContainersToStart = [];
  }
  return changes;
}

/**
 * Progresses init containers: regular ones run to completion one after another; restartable ones
 * (sidecars) are started in order and kept running, restarted after a startup or liveness failure.
 * Walks the list backwards from the last init container that has a status, as kubelet does.
 * Returns whether the pod has finished initialising. Kubelet's `computeInitContainerActions`.
 */
export function computeInitContainerActions(
  pod: Pod,
  podStatus: PodStatus,
  changes: PodActions,
  lookups: ProbeResultsLookups,
): boolean {
  const initContainers = pod.spec.initContainers ?? [];
  if (initContainers.length === 0) return true;

  let podHasInitialized = false;
  for (const container of pod.spec.containers) {
    const status = findContainerStatusByName(podStatus, container.name);
    if (status && (status.state === "created" || status.state === "running")) {
      podHasInitialized = true;
      break;
    }
  }

  let isPreviouslyInitialized = podHasInitialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const toStart: number[] = [];

  for (let i = initContainers.length - 1; i >= 0; i--) {
    const container = initContainers[i];
    const restartable = isRestartableInitContainer(container);
    const status = findContainerStatusByName(podStatus, container.name);
    V(4).info("Computing init container action", {
      pod: podKey(pod),
      container: container.name,
      state: status?.state ?? "<nil>",
    });
    if (!status) {
      if (isPreviouslyInitialized && restartable) toStart.push(i);
      continue;
    }
    if (isPreviouslyInitialized && !restartable) continue;

    switch (status.state) {
      case "created":
        toStart.push(i);
        break;
      case "running": {
        if (!restartable) break; // a regular init container: wait for it to finish
        if (container.startupProbe) {
          const startup = lookups.startupManager.get(status.id);
          if (startup === undefined) break; // wait for the startup probe
          if (startup !== resultSuccess) {
            if (startup === resultFailure) {
              changes.containersToKill.set(
                containerIDString(status.id),
                killInfo(
                  status,
                  container,
                  `Init container ${container.name} failed startup probe`,
                  "StartupProbe",
                ),
              );
              toStart.push(i);
            }
            break;
          }
        }
        V(4).info("Init container has been initialized", {
          pod: podKey(pod),
          container: container.name,
        });
        if (i === initContainers.length - 1) podHasInitialized = true;
        else if (!isPreviouslyInitialized) toStart.push(i + 1);

        if (containerChanged(container, status)) {
          changes.containersToKill.set(
            containerIDString(status.id),
            killInfo(
              status,
              container,
              `Init container ${container.name} definition changed`,
              "",
            ),
          );
          toStart.push(i);
          break;
        }
        if (container.livenessProbe) {
          const liveness = lookups.livenessManager.get(status.id);
          if (liveness === undefined) break;
          if (liveness === resultFailure) {
            changes.containersToKill.set(
              containerIDString(status.id),
              killInfo(
                status,
                container,
                `Init container ${container.name} failed liveness probe`,
                "LivenessProbe",
              ),
            );
            toStart.push(i);
          }
        }
        break;
      }
      case "exited":
        if (restartable) {
          toStart.push(i);
        } else if (isInitContainerFailed(status)) {
          if (!restartOnFailure) {
            changes.killPod = true;
            changes.initContainersToStart = [];
            return false;
          }
          toStart.push(i);
        } else {
          V(4).info("Init container has been initialized", {
            pod: podKey(pod),
            container: container.name,
          });
          if (i === initContainers.length - 1) podHasInitialized = true;
          else toStart.push(i + 1);
        }
        break;
      default: {
        // Unknown state: kill and restart, or give up on a regular init container that may not
        // be restarted.
        if (!restartable && !restartOnFailure) {
          changes.killPod = true;
          changes.initContainersToStart = [];
          return false;
        }
        changes.containersToKill.set(
          containerIDString(status.id),
          killInfo(
            status,
            container,
            `Init container is in "${status.state}" state, try killing it before restart`,
            "Unknown",
          ),
        );
        toStart.push(i);
      }
    }
    if (!isPreviouslyInitialized) isPreviouslyInitialized = true;
  }

  if (!isPreviouslyInitialized) toStart.push(0);
  changes.initContainersToStart = [...changes.initContainersToStart, ...toStart.reverse()];
  return podHasInitialized;
}

// The start failures of the image manager (its error names).
const imageErrors: ReadonlySet<string> = new Set([
  ErrImagePull,
  ErrImagePullBackOff,
  ErrImageNeverPull,
  ErrInvalidImageName,
  ErrImageInspect,
  ErrRegistryUnavailable,
  ErrSignatureValidationFailed,
]);

/** Outcome of one {@linkcode KubeGenericRuntimeManager.syncPod}. */
export interface SyncResult {
  /**
   * Per container name: the reason it could not be started (`CrashLoopBackOff`, ...), or null when
   * it was started (kubelet's reason cache is updated from this).
   */
  startResults: Map<string, { reason: string; message: string } | null>;
  /** Whether anything was created, started or killed. */
  changed: boolean;
  /** Earliest time (epoch ms) at which a container in back-off may be started, if any. */
  retryAt?: number;
  /**
   * A start failed with an image error (`ErrImagePull`, `ImagePullBackOff`, ...): kubelet's sync
   * returns that error, and its pod worker retries after the back-off period (10 s, jittered).
   */
  syncFailed?: boolean;
}

/**
 * The sandbox's IPs, primary first (kubelet's `determinePodSandboxIPs`); none without a network.
 */
export function determinePodSandboxIPs(network: PodSandboxNetworkStatus | undefined): string[] {
  if (!network?.ip) return [];
  return [network.ip, ...(network.additionalIps ?? []).map((a) => a.ip)];
}

/** What the runtime manager needs. */
export interface RuntimeManagerOptions {
  runtime: RuntimeService;
  /** The runtime's name, used as the container ID type (`containerd://<id>`). */
  runtimeName: string;
  clock: Clock;
  recorder: EventRecorder;
  /** The liveness and startup verdicts that drive kills. */
  lookups: ProbeResultsLookups;
  /** Restart back-off per container. */
  backoff: Backoff;
  /** Folder under which pod log folders are created. */
  podLogsRootDir: string;
  /** The runtime runs every sandbox in the host network (the embedded runtime). */
  runtimeHostNetworkOnly?: boolean;
  /**
   * The node this agent runs as. Every sandbox and container it creates carries it (label
   * `io.probelet.node`), and it only ever lists, adopts or removes objects that carry it.
   */
  nodeName: string;
  /** Removes a container's logs before the container (a CRI runtime's; kubelet's logManager). */
  logManager?: Pick<ContainerLogManager, "clean">;
  /** Pulls images before containers are created (a CRI runtime's; kubelet's imagePuller). */
  imageManager?: ImageManager;
  /** The pod's image pull secrets (kubelet's `getPullSecretsForPod`); none when undefined. */
  getPullSecrets?: (pod: Pod) => Promise<Secret[]>;
  /** A container's mounts (volumes, /etc/hosts) and message folder (the kubelet's); none without. */
  runtimeHelper?: RuntimeHelper;
  /** A container's environment (the kubelet's, on every runtime); literal values without. */
  makeEnvironmentVariables?: ContainerManagerContext["makeEnvironmentVariables"];
  /** Sends HTTP lifecycle hooks; default: kubelet's hook client (TLS unverified, no timeout). */
  httpDoer?: HttpClient;
  /**
   * The runtime's image service, for the image's user (`runAsNonRoot`, the default user). Left
   * out for the embedded runtime, whose processes run as the agent.
   */
  imageService?: ImageManagerService;
  /**
   * Node settings of the containers' Linux config; kubelet's defaults for what is left out:
   * `seccompProfileRoot` `/var/lib/kubelet/seccomp`, `cpuCFSQuota` true, `seccompDefault` false,
   * `memoryCapacity` this machine's memory.
   */
  linux?: Partial<LinuxConfigOptions>;
}

/**
 * Drives one CRI runtime for the agent's pods.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 * import type { EventRecorder } from "../events/event.ts";
 * import type { ResultsManager } from "../prober/results/results_manager.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const runtime: RuntimeService;
 * declare const clock: Clock;
 * declare const recorder: EventRecorder;
 * declare const livenessManager: ResultsManager;
 * declare const startupManager: ResultsManager;
 * declare const pod: Pod;
 *
 * declare const backoff: ConstructorParameters<typeof KubeGenericRuntimeManager>[0]["backoff"];
 * const m = new KubeGenericRuntimeManager({ runtime, runtimeName: "containerd", clock, recorder,
 *   lookups: { livenessManager, startupManager }, backoff, podLogsRootDir: ".run/probelet/pods",
 *   nodeName: "node-a" });
 * const status = await m.getPodStatus(pod);
 * await m.syncPod(pod, status);
 * ```
 */
export class KubeGenericRuntimeManager {
  readonly runtime: RuntimeService;
  readonly runtimeName: string;
  #clock: Clock;
  #recorder: EventRecorder;
  #lookups: ProbeResultsLookups;
  #backoff: Backoff;
  #logsRoot: string;
  #hostNetworkOnly: boolean;
  #logManager?: Pick<ContainerLogManager, "clean">;
  #imageManager?: ImageManager;
  #getPullSecrets?: (pod: Pod) => Promise<Secret[]>;
  #runtimeHelper?: RuntimeHelper;
  #makeEnvironmentVariables?: ContainerManagerContext["makeEnvironmentVariables"];
  #runner: HandlerRunner;
  #imageService?: ImageManagerService;
  #linux: LinuxConfigOptions;
  readonly nodeName: string;
  /** Per back-off key: when a BackOff event was last emitted (cleared when the container starts). */
  #backOffEvented = new Map<string, number>();

  /** Creates the manager; nothing is called on the runtime yet. */
  constructor(options: RuntimeManagerOptions) {
    this.runtime = options.runtime;
    this.runtimeName = options.runtimeName;
    this.#clock = options.clock;
    this.#recorder = options.recorder;
    this.#lookups = options.lookups;
    this.#backoff = options.backoff;
    this.#logsRoot = resolve(options.podLogsRootDir);
    this.#hostNetworkOnly = options.runtimeHostNetworkOnly ?? false;
    this.nodeName = options.nodeName;
    this.#logManager = options.logManager;
    this.#imageManager = options.imageManager;
    this.#getPullSecrets = options.getPullSecrets;
    this.#runtimeHelper = options.runtimeHelper;
    this.#makeEnvironmentVariables = options.makeEnvironmentVariables;
    this.#runner = newHandlerRunner({
      httpDoer: options.httpDoer ?? newHttpClient({ clock: options.clock }),
      commandRunner: new RuntimeCommandRunner(options.runtime),
      containerManager: this,
      eventRecorder: options.recorder,
      clock: options.clock,
    });
    this.#imageService = options.imageService;
    this.#linux = {
      ...defaultLinuxConfigOptions,
      seccompProfileRoot: "/var/lib/kubelet/seccomp",
      ...stripUndefined(options.linux ?? {}),
      memoryCapacity: options.linux?.memoryCapacity ?? getMachineInfo().memoryCapacity,
    };
  }

  /**
   * Kubelet's removeContainer: the container's logs (rotated ones included) first, then the
   * container; a log that cannot be removed keeps the container for the next attempt.
   */
  async removeContainer(containerId: string): Promise<void> {
    log.V(4).info("Removing container", { containerID: containerId });
    await this.#logManager?.clean(containerId);
    await this.runtime.removeContainer(containerId);
  }

  /**
   * The runtime's view of the pod: its sandboxes and every container instance still known,
   * newest first. Kubelet's `GetPodStatus`.
   */
  async getPodStatus(pod: Pod): Promise<PodStatus> {
    const uid = pod.metadata.uid ?? "";
    const selector = {
      labelSelector: { [kubernetesPodUIDLabel]: uid, [probeletNodeLabel]: this.nodeName },
    };
    const sandboxes = await this.runtime.listPodSandbox(selector);
    sandboxes.sort((a, b) => compareBigDesc(a.createdAt, b.createdAt));
    const sandboxStatuses: PodSandboxStatus[] = [];
    let ips: string[] = [];
    for (const [i, sandbox] of sandboxes.entries()) {
      let status: PodSandboxStatus;
      try {
        status = (await this.runtime.podSandboxStatus(sandbox.id)).status;
      } catch (e) {
        // Removed since the listing: skip it. Any other error (a deadline, an unavailable
        // runtime) fails this status read, so nothing is created on a partial view; the next
        // resync tries again.
        if (!isNotFound(e)) {
          throw new Error(
            `PodSandboxStatus of sandbox ${sandbox.id} for pod ${podKey(pod)}: ${errorText(e)}`,
            { cause: e },
          );
        }
        log.V(4).info("PodSandboxStatus of sandbox for pod: not found", {
          podSandboxID: sandbox.id,
          pod: podKey(pod),
        });
        continue;
      }
      sandboxStatuses.push(status);
      // Only the newest sandbox's IPs count, and only while it is ready.
      if (i === 0 && status.state === "SANDBOX_READY") ips = determinePodSandboxIPs(status.network);
    }
    const containers = await this.runtime.listContainers(selector);
    const statuses: RuntimeContainerStatus[] = [];
    for (const c of containers) {
      try {
        const { status } = await this.runtime.containerStatus(c.id);
        statuses.push(await convertToKubeContainerStatus(status, this.runtimeName));
      } catch (e) {
        if (!isNotFound(e)) {
          throw new Error(
            `ContainerStatus of container ${c.id} for pod ${podKey(pod)}: ${errorText(e)}`,
            { cause: e },
          );
        }
        log.V(4).info("ContainerStatus for container: not found", {
          containerID: c.id,
          pod: podKey(pod),
        });
      }
    }
    // Newest first; the restart count breaks ties of the millisecond clock.
    statuses.sort((a, b) => b.createdAt - a.createdAt || b.restartCount - a.restartCount);
    return {
      id: uid,
      name: pod.metadata.name ?? "",
      namespace: pod.metadata.namespace ?? "",
      ips,
      containerStatuses: statuses,
      sandboxStatuses,
    };
  }

  /**
   * Moves the pod one step towards its spec. Kubelet's `SyncPod`: compute the actions; kill the pod
   * or the containers to kill; create the sandbox if needed; start init containers, then regular
   * containers, each subject to the restart back-off.
   */
  async syncPod(
    pod: Pod,
    podStatus: PodStatus,
    options: { podStartTime?: string } = {},
  ): Promise<SyncResult> {
    const result: SyncResult = { startResults: new Map(), changed: false };
    // Step 1: Compute sandbox and container changes.
    const changes = computePodActions(pod, podStatus, this.#lookups, {
      runtimeHostNetworkOnly: this.#hostNetworkOnly,
    });
    log.V(3).info("computePodActions got for pod", {
      pod: podKey(pod),
      killPod: changes.killPod,
      createSandbox: changes.createSandbox,
      initContainersToStart: changes.initContainersToStart,
      containersToStart: changes.containersToStart,
      containersToKill: [...changes.containersToKill.values()].map((k) => k.name),
    });

    if (changes.createSandbox && changes.sandboxID !== "") {
      this.#event(
        pod,
        undefined,
        "Normal",
        "SandboxChanged",
        "Pod sandbox changed, it will be killed and re-created.",
      );
    }

    // Step 2: Kill the pod if the sandbox has changed.
    if (changes.killPod) {
      if (changes.createSandbox) {
        log.V(4).info("Stopping PodSandbox for pod, will start new one", { pod: podKey(pod) });
      } else {
        log.V(4).info("Stopping PodSandbox for pod, because all other containers are dead", {
          pod: podKey(pod),
        });
      }
      const running = podStatus.containerStatuses.some((c) => c.state === "running") ||
        podStatus.sandboxStatuses.some((s) => s.state === "SANDBOX_READY");
      await this.killPod(pod, podStatus);
      result.changed = running;
    } else {
      // Step 3: kill any running containers in this pod which are not to keep.
      for (const info of changes.containersToKill.values()) {
        log.V(3).info("Killing unwanted container for pod", {
          containerName: info.name,
          containerID: containerIDString(info.id),
          pod: podKey(pod),
        });
        try {
          await killContainer(this.#context(), {
            pod,
            id: info.id,
            container: info.container,
            message: info.message,
            reason: info.reason,
          });
          result.changed = true;
        } catch (e) {
          log.error(e, "killContainer for pod failed", {
            containerName: info.name,
            containerID: containerIDString(info.id),
            pod: podKey(pod),
          });
          return result;
        }
      }
    }

    // Step 4: Create a sandbox for the pod if it is necessary.
    let sandboxID = changes.sandboxID;
    let podIPs = podStatus.ips;
    let sandboxConfig;
    try {
      sandboxConfig = generatePodSandboxConfig(pod, {
        attempt: changes.attempt,
        podLogsRootDir: this.#logsRoot,
        nodeName: this.nodeName,
        podStartTime: options.podStartTime,
        cpuCFSQuota: this.#linux.cpuCFSQuota,
        ...(await this.#sandboxNaming(pod, changes)),
      });
    } catch (e) {
      log.error(e, "Failed to generate sandbox config for pod", { pod: podKey(pod) });
      this.#event(
        pod,
        undefined,
        "Warning",
        "FailedCreatePodSandBox",
        `Failed to create pod sandbox: ${errorText(e)}`,
      );
      return result;
    }
    if (changes.createSandbox) {
      try {
        await Deno.mkdir(sandboxConfig.logDirectory!, { recursive: true });
        sandboxID = await this.runtime.runPodSandbox(sandboxConfig);
        result.changed = true;
        log.V(4).info("Created PodSandbox for pod", { podSandboxID: sandboxID, pod: podKey(pod) });
        const { status } = await this.runtime.podSandboxStatus(sandboxID);
        // A host-network pod keeps the IPs it came with (the node's): its sandbox reports none.
        if (!pod.spec.hostNetwork) {
          podIPs = determinePodSandboxIPs(status.network);
        }
      } catch (e) {
        log.error(e, "CreatePodSandbox for pod failed", { pod: podKey(pod) });
        this.#event(
          pod,
          undefined,
          "Warning",
          "FailedCreatePodSandBox",
          `Failed to create pod sandbox: ${errorText(e)}`,
        );
        return result;
      }
    }

    // Read once per sync, and only when something is to be started.
    let pullSecrets: Secret[] | undefined;
    const start = async (container: Container, kind: string): Promise<boolean> => {
      const backoff = this.#doBackOff(pod, container, podStatus);
      if (backoff.inBackOff) {
        result.startResults.set(container.name, {
          reason: ErrCrashLoopBackOff,
          message: backoff.message,
        });
        const at = backoff.retryAt;
        if (result.retryAt === undefined || at < result.retryAt) result.retryAt = at;
        return false;
      }
      log.V(4).info(`Creating ${kind} in pod`, { containerName: container.name, pod: podKey(pod) });
      if (this.#imageManager && pullSecrets === undefined) {
        pullSecrets = (await this.#getPullSecrets?.(pod)) ?? [];
      }
      const failure = await startContainer(this.#context(), {
        sandboxID,
        sandboxConfig,
        container,
        pod,
        podStatus,
        podIP: podIPs[0] ?? "",
        podIPs,
        pullSecrets,
      });
      if (failure && imageErrors.has(failure.reason)) result.syncFailed = true;
      result.changed = true;
      result.startResults.set(container.name, failure ?? null);
      return failure === undefined;
    };

    // Step 5: start ephemeral containers. None here: pod_features.ts refuses pods with
    // ephemeralContainers (`kubectl debug`).

    // Step 6: start init containers.
    const initContainers = pod.spec.initContainers ?? [];
    for (const idx of changes.initContainersToStart) {
      const container = initContainers[idx];
      if (!(await start(container, "init container")) && !isRestartableInitContainer(container)) {
        return result;
      }
    }
    // Step 7: resize containers in place (UpdateContainerResources). None here: an in-place
    // resize needs resources, which pod_features.ts refuses.

    // Step 8: start containers in changes.containersToStart.
    for (const idx of changes.containersToStart) {
      await start(pod.spec.containers[idx], "container");
    }
    return result;
  }

  // Kubelet's doBackOff: the finish time of the newest exited instance starts the back-off clock.
  #doBackOff(
    pod: Pod,
    container: Container,
    podStatus: PodStatus,
  ): { inBackOff: boolean; message: string; retryAt: number } {
    const exited = podStatus.containerStatuses.find((c) =>
      c.name === container.name && c.state === "exited"
    );
    if (!exited) return { inBackOff: false, message: "", retryAt: 0 };
    const key = getStableKey(pod, container);
    const ts = exited.finishedAt;
    if (this.#backoff.get(key) === 0 && exited.restartCount > 0) {
      // No entry but restarts on record: this agent restarted (or the entry expired, which the
      // restored entry's age tells too). Each restart stepped the back-off once, the last one
      // right before this instance started.
      this.#backoff.restore(key, {
        steps: exited.restartCount,
        lastUpdate: exited.startedAt || exited.createdAt,
      });
    }
    if (this.#backoff.isInBackOffSince(key, ts)) {
      // kubelet requeues a pod in back-off after the back-off, not every resync: one BackOff event
      // per back-off window and container, not one per sync.
      const retryAt = ts + this.#backoff.get(key);
      const now = this.#clock.now();
      const last = this.#backOffEvented.get(key);
      if (last === undefined || now - last >= this.#backoff.get(key)) {
        this.#backOffEvented.set(key, now);
        this.#event(
          pod,
          container,
          "Warning",
          "BackOff",
          `Back-off restarting failed container ${container.name} in pod ${formatPod(pod)}`,
        );
      }
      const message = `back-off ${
        goDuration(this.#backoff.get(key))
      } restarting failed container=${container.name} pod=${formatPod(pod)}`;
      log.V(3).info("Back-off restarting failed container", { err: message });
      return { inBackOff: true, message, retryAt };
    }
    this.#backOffEvented.delete(key);
    this.#backoff.next(key, ts);
    return { inBackOff: false, message: "", retryAt: 0 };
  }

  /**
   * Stops every running container (regular containers first, then init containers and sidecars in
   * reverse order) and every sandbox of the pod. Kubelet's `KillPod`.
   */
  async killPod(
    pod: Pod,
    podStatus: PodStatus,
    options: { gracePeriodOverrideSeconds?: number } = {},
  ): Promise<void> {
    const running = podStatus.containerStatuses.filter((c) =>
      c.state === "running" || c.state === "unknown"
    );
    const specOf = (name: string): Container =>
      pod.spec.containers.find((c) => c.name === name) ??
        (pod.spec.initContainers ?? []).find((c) => c.name === name) ?? { name };
    const isRegular = (name: string) => pod.spec.containers.some((c) => c.name === name);
    const errors: unknown[] = [];
    const kill = (c: RuntimeContainerStatus) =>
      killContainer(this.#context(), {
        pod,
        id: c.id,
        container: specOf(c.name),
        message: "",
        reason: "",
        gracePeriodOverrideSeconds: options.gracePeriodOverrideSeconds,
      }).catch((e) => errors.push(e));
    await Promise.all(running.filter((c) => isRegular(c.name)).map(kill));
    const inits = running.filter((c) => !isRegular(c.name));
    const order = (pod.spec.initContainers ?? []).map((c) => c.name).reverse();
    inits.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
    for (const c of inits) await kill(c);
    for (const sandbox of podStatus.sandboxStatuses) {
      if (sandbox.state !== "SANDBOX_READY") continue;
      try {
        await this.runtime.stopPodSandbox(sandbox.id);
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length > 0) {
      throw new Error(`failed to kill pod ${podKey(pod)}: ${errors.map(errorText).join("; ")}`);
    }
  }

  /** Removes every sandbox (and with it every container) of the pod. */
  async removePod(_pod: Pod, podStatus: PodStatus): Promise<void> {
    for (const c of podStatus.containerStatuses) {
      await this.removeContainer(c.id.id).catch((e) =>
        log.V(4).info("RemoveContainer failed", { containerID: c.id.id, err: errorText(e) })
      );
    }
    for (const sandbox of podStatus.sandboxStatuses) {
      await this.runtime.removePodSandbox(sandbox.id);
    }
  }

  /**
   * The pods (name, namespace and UID from the labels) that have sandboxes made by this node's
   * agent on the runtime, whatever run of the agent made them. Objects of other nodes sharing the
   * runtime are not listed.
   */
  async listManagedPods(): Promise<Pod[]> {
    const sandboxes = await this.runtime.listPodSandbox({
      labelSelector: { [probeletNodeLabel]: this.nodeName },
    });
    const pods = new Map<string, Pod>();
    for (const s of sandboxes) {
      const info = getPodSandboxInfoFromLabels(s.labels);
      const uid = info.podUID || s.metadata?.uid || "";
      if (uid === "" || pods.has(uid)) continue;
      pods.set(uid, {
        metadata: {
          name: info.podName || s.metadata?.name || "",
          namespace: info.podNamespace || s.metadata?.namespace || "",
          uid,
        },
        spec: { containers: [] },
      });
    }
    return [...pods.values()];
  }

  /**
   * Every pod of this node on the runtime with its containers and sandboxes, running or not
   * (kubelet's `GetPods(all=true)`): one listing of each, grouped by the pod UID label.
   */
  async getPods(): Promise<RuntimePod[]> {
    const selector = { labelSelector: { [probeletNodeLabel]: this.nodeName } };
    const sandboxes = await this.runtime.listPodSandbox(selector);
    const containers = await this.runtime.listContainers(selector);
    const pods = new Map<string, RuntimePod>();
    const podOf = (uid: string, name: string, namespace: string): RuntimePod => {
      let pod = pods.get(uid);
      if (!pod) {
        pod = { id: uid, name, namespace, containers: [], sandboxes: [] };
        pods.set(uid, pod);
      }
      return pod;
    };
    for (const s of sandboxes) {
      const info = getPodSandboxInfoFromLabels(s.labels);
      podOf(info.podUID, info.podName, info.podNamespace).sandboxes.push({
        id: { type: this.runtimeName, id: s.id },
        name: info.podName,
        state: s.state === "SANDBOX_READY" ? "running" : "exited",
        hash: "",
        createdAt: Number(s.createdAt / 1_000_000n),
      });
    }
    for (const c of containers) {
      const info = getContainerInfoFromLabels(c.labels);
      podOf(info.podUID, info.podName, info.podNamespace).containers.push({
        id: { type: this.runtimeName, id: c.id },
        name: info.containerName,
        state: toRuntimeState(c.state),
        hash: getContainerInfoFromAnnotations(c.annotations).hash,
        createdAt: Number(c.createdAt / 1_000_000n),
      });
    }
    return [...pods.values()];
  }

  /**
   * Stops and removes a pod known only from the runtime (no spec): containers get the grace period
   * recorded in their annotations (the minimum, 2 s, when there is none), as kubelet's killPod of a
   * running pod without its spec.
   */
  async removeOrphanedPod(pod: Pod): Promise<void> {
    let status = await this.getPodStatus(pod);
    // Without the spec, the grace period comes from the containers' annotations, as kubelet's
    // restoreSpecsFromContainerLabels does.
    const recorded = status.containerStatuses.map((c) => c.podTerminationGracePeriod)
      .filter((g): g is number => g !== undefined);
    if (recorded.length > 0 && pod.spec.terminationGracePeriodSeconds === undefined) {
      pod = { ...pod, spec: { ...pod.spec, terminationGracePeriodSeconds: Math.max(...recorded) } };
    }
    await this.killPod(pod, status);
    status = await this.getPodStatus(pod);
    await this.removePod(pod, status);
  }

  // The sandbox's DNS configuration and host name, from the kubelet (kubelet's
  // generatePodSandboxConfig); only when something is to be created, as the DNS configuration
  // may record events.
  async #sandboxNaming(
    pod: Pod,
    changes: PodActions,
  ): Promise<{ dnsConfig?: DNSConfig; hostname?: string }> {
    const helper = this.#runtimeHelper;
    const creating = changes.createSandbox || changes.containersToStart.length > 0 ||
      changes.initContainersToStart.length > 0;
    if (!helper || !creating) return {};
    const dnsConfig = await helper.getPodDNS(pod);
    if (pod.spec.hostNetwork) return { dnsConfig };
    const { hostname, hostDomain } = helper.generatePodHostNameAndDomain(pod);
    return {
      dnsConfig,
      hostname: getNodenameForKernel(hostname, hostDomain, pod.spec.setHostnameAsFQDN),
    };
  }

  #context(): ContainerManagerContext {
    return {
      runtime: this.runtime,
      recorder: this.#recorder,
      nodeName: this.nodeName,
      imageManager: this.#imageManager,
      runner: this.#runner,
      runtimeName: this.runtimeName,
      runtimeHelper: this.#runtimeHelper,
      makeEnvironmentVariables: this.#makeEnvironmentVariables,
      clock: this.#clock,
      imageService: this.#imageService,
      linux: this.#linux,
    };
  }

  #event(
    pod: Pod,
    container: Container | undefined,
    type: EventType,
    reason: string,
    message: string,
  ): void {
    recordEvent(this.#recorder, pod, container, { type, reason, message });
  }
}

/** Key of a container in the back-off table (kubelet's `getStableKey`). */
export function getStableKey(pod: Pod, container: Container): string {
  const m = pod.metadata;
  return `${m.name ?? ""}_${m.namespace ?? ""}_${m.uid ?? ""}_${container.name}_${
    hashContainer(container)
  }`;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function compareBigDesc(a: bigint, b: bigint): number {
  return a === b ? 0 : a > b ? -1 : 1;
}

export { formatPod };
