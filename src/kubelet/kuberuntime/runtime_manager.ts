/**
 * The runtime manager: reads a pod's state from a CRI runtime and carries out the actions
 * `computePodActions` decides — create the sandbox, start init containers, sidecars and containers
 * (honouring the restart back-off), kill containers that failed liveness or startup probes, kill
 * and remove whole pods.
 * Mirrors SyncPod / KillPod / GetPodStatus in kubelet's pkg/kubelet/kuberuntime/kuberuntime_manager.go,
 * startContainer / killContainer in kuberuntime_container.go, the sandbox config of
 * kuberuntime_sandbox.go and the label keys of labels.go.
 * @module
 */
import { resolve } from "node:path";
import type { Container, Pod } from "../../api/core/v1/mod.ts";
import type { ContainerConfig, PodSandboxConfig, PodSandboxStatus } from "../../cri_client/api.ts";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import type { Clock } from "../../util/clock.ts";
import type { Backoff } from "../../util/flowcontrol/backoff.ts";
import { goDuration } from "../../util/go_format.ts";
import * as log from "../../util/log.ts";
import { type ContainerID, containerIDString } from "../container/container_id.ts";
import { expandContainerCommandOnlyStatic } from "../container/expansion.ts";
import { generateContainerRef } from "../container/ref.ts";
import type { EventRecorder, EventType } from "../events/mod.ts";
import {
  computePodActions,
  type ContainerKillReason,
  hashContainer,
  isRestartableInitContainer,
  podKey,
  type ProbeResultsLookups,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from "./kuberuntime_manager.ts";
import { toKubeContainerStatus } from "./kuberuntime_status.ts";
import { buildContainerLogsDirectory, buildPodLogsDirectory } from "./helpers.ts";

/** Label keys kubelet puts on sandboxes and containers (labels.go). */
export const podNameLabel = "io.kubernetes.pod.name";
/** See {@linkcode podNameLabel}. */
export const podNamespaceLabel = "io.kubernetes.pod.namespace";
/** See {@linkcode podNameLabel}. */
export const podUIDLabel = "io.kubernetes.pod.uid";
/** See {@linkcode podNameLabel}. */
export const containerNameLabel = "io.kubernetes.container.name";
/** Annotation holding {@linkcode hashContainer} of the spec a container was created from. */
export const containerHashAnnotation = "io.kubernetes.container.hash";
/** Annotation holding how many restarts preceded a container instance. */
export const containerRestartCountAnnotation = "io.kubernetes.container.restartCount";
/** Annotation holding the pod's termination grace period. */
export const podTerminationGracePeriodAnnotation = "io.kubernetes.pod.terminationGracePeriod";

/**
 * Label probelet adds to every sandbox and container it creates, so that housekeeping only ever
 * removes what this agent made (other clients of a shared runtime use kubelet's labels too).
 */
export const probeletManagedLabel = "io.probelet.managed";

/** kubelet's floor for any kill grace period, in seconds. */
export const minimumGracePeriodInSeconds = 2;

/** Waiting reasons of containers that could not be started (kubecontainer errors). */
export const ErrCrashLoopBackOff = "CrashLoopBackOff";
/** See {@linkcode ErrCrashLoopBackOff}. */
export const ErrCreateContainer = "CreateContainerError";
/** See {@linkcode ErrCrashLoopBackOff}. */
export const ErrRunContainer = "RunContainerError";

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
}

/**
 * Drives one CRI runtime for the agent's pods.
 *
 * @example
 * ```ts
 * const m = new KubeGenericRuntimeManager({ runtime, runtimeName: "containerd", clock, recorder,
 *   lookups: { livenessManager, startupManager }, backoff, podLogsRootDir: ".run/probelet/pods" });
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
  }

  /**
   * The runtime's view of the pod: its sandboxes and every container instance still known,
   * newest first. Kubelet's `GetPodStatus`.
   */
  async getPodStatus(pod: Pod): Promise<RuntimePodStatus> {
    const uid = pod.metadata.uid ?? "";
    const selector = { labelSelector: { [podUIDLabel]: uid } };
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
      if (i === 0 && status.state === "SANDBOX_READY" && status.network?.ip) {
        ips = [status.network.ip, ...status.network.additionalIps.map((a) => a.ip)];
      }
    }
    const containers = await this.runtime.listContainers(selector);
    const statuses: RuntimeContainerStatus[] = [];
    for (const c of containers) {
      try {
        const { status } = await this.runtime.containerStatus(c.id);
        statuses.push(toKubeContainerStatus(status, this.runtimeName));
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
  async syncPod(pod: Pod, podStatus: RuntimePodStatus): Promise<SyncResult> {
    const result: SyncResult = { startResults: new Map(), changed: false };
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
      for (const info of changes.containersToKill.values()) {
        log.V(3).info("Killing unwanted container for pod", {
          containerName: info.name,
          containerID: containerIDString(info.id),
          pod: podKey(pod),
        });
        try {
          await this.killContainer(pod, info.id, info.container, info.message, info.reason);
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

    let sandboxID = changes.sandboxID;
    let podIP = podStatus.ips[0] ?? "";
    const sandboxConfig = this.generatePodSandboxConfig(pod, changes.attempt);
    if (changes.createSandbox) {
      try {
        await Deno.mkdir(sandboxConfig.logDirectory!, { recursive: true });
        sandboxID = await this.runtime.runPodSandbox(sandboxConfig);
        result.changed = true;
        log.V(4).info("Created PodSandbox for pod", { podSandboxID: sandboxID, pod: podKey(pod) });
        const { status } = await this.runtime.podSandboxStatus(sandboxID);
        podIP = status.network?.ip ?? "";
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
      const failure = await this.startContainer(
        sandboxID,
        sandboxConfig,
        container,
        pod,
        podStatus,
        podIP,
      );
      result.changed = true;
      result.startResults.set(container.name, failure ?? null);
      return failure === undefined;
    };

    const initContainers = pod.spec.initContainers ?? [];
    for (const idx of changes.initContainersToStart) {
      const container = initContainers[idx];
      if (!(await start(container, "init container")) && !isRestartableInitContainer(container)) {
        return result;
      }
    }
    for (const idx of changes.containersToStart) {
      await start(pod.spec.containers[idx], "container");
    }
    return result;
  }

  // Kubelet's doBackOff: the finish time of the newest exited instance starts the back-off clock.
  #doBackOff(
    pod: Pod,
    container: Container,
    podStatus: RuntimePodStatus,
  ): { inBackOff: boolean; message: string; retryAt: number } {
    const exited = podStatus.containerStatuses.find((c) =>
      c.name === container.name && c.state === "exited"
    );
    if (!exited) return { inBackOff: false, message: "", retryAt: 0 };
    const key = getStableKey(pod, container);
    const ts = exited.finishedAt;
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
   * Creates and starts one container; resolves with the failure (reason and message) or undefined
   * on success. Kubelet's `startContainer` without image pulls and lifecycle hooks.
   */
  async startContainer(
    sandboxID: string,
    sandboxConfig: PodSandboxConfig,
    container: Container,
    pod: Pod,
    podStatus: RuntimePodStatus,
    _podIP: string,
  ): Promise<{ reason: string; message: string } | undefined> {
    const previous = podStatus.containerStatuses.find((c) => c.name === container.name);
    const restartCount = previous ? previous.restartCount + 1 : 0;
    const config = this.generateContainerConfig(pod, container, restartCount);
    let containerID: string;
    try {
      await Deno.mkdir(buildContainerLogsDirectory(sandboxConfig.logDirectory!, container.name), {
        recursive: true,
      });
      containerID = await this.runtime.createContainer(sandboxID, config, { sandboxConfig });
    } catch (e) {
      // kubelet reports the gRPC status message, not the `rpc error: code = ...` wrapping.
      const message = statusMessage(e);
      this.#event(pod, container, "Warning", "Failed", `Error: ${message}`);
      return { reason: ErrCreateContainer, message };
    }
    this.#event(pod, container, "Normal", "Created", `Created container: ${container.name}`);
    try {
      await this.runtime.startContainer(containerID);
    } catch (e) {
      const message = statusMessage(e);
      this.#event(pod, container, "Warning", "Failed", `Error: ${message}`);
      return { reason: ErrRunContainer, message };
    }
    this.#event(pod, container, "Normal", "Started", `Started container ${container.name}`);
    return undefined;
  }

  /**
   * Stops one container with the grace period kubelet would use and a `Killing` event carrying
   * `message` (e.g. `Container app failed liveness probe, will be restarted`).
   */
  async killContainer(
    pod: Pod,
    id: ContainerID,
    container: Container,
    message: string,
    reason: ContainerKillReason,
    options: { gracePeriodOverrideSeconds?: number } = {},
  ): Promise<void> {
    let gracePeriod = setTerminationGracePeriod(pod, container, reason);
    if (options.gracePeriodOverrideSeconds !== undefined) {
      gracePeriod = options.gracePeriodOverrideSeconds;
    }
    if (gracePeriod < minimumGracePeriodInSeconds) gracePeriod = minimumGracePeriodInSeconds;
    this.#event(
      pod,
      container,
      "Normal",
      "Killing",
      message || `Stopping container ${container.name}`,
    );
    log.V(2).info("Killing container with a grace period", {
      pod: podKey(pod),
      containerName: container.name,
      containerID: containerIDString(id),
      gracePeriod,
    });
    await this.runtime.stopContainer(id.id, { timeoutMs: gracePeriod * 1000 });
  }

  /**
   * Stops every running container (regular containers first, then init containers and sidecars in
   * reverse order) and every sandbox of the pod. Kubelet's `KillPod`.
   */
  async killPod(
    pod: Pod,
    podStatus: RuntimePodStatus,
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
      this.killContainer(pod, c.id, specOf(c.name), "", "", options).catch((e) => errors.push(e));
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
  async removePod(_pod: Pod, podStatus: RuntimePodStatus): Promise<void> {
    for (const c of podStatus.containerStatuses) {
      await this.runtime.removeContainer(c.id.id).catch((e) =>
        log.V(4).info("RemoveContainer failed", { containerID: c.id.id, err: errorText(e) })
      );
    }
    for (const sandbox of podStatus.sandboxStatuses) {
      await this.runtime.removePodSandbox(sandbox.id);
    }
  }

  /**
   * The pods (name, namespace and UID from the labels) that have sandboxes made by probelet on the
   * runtime, whatever run of the agent made them.
   */
  async listManagedPods(): Promise<Pod[]> {
    const sandboxes = await this.runtime.listPodSandbox({
      labelSelector: { [probeletManagedLabel]: "true" },
    });
    const pods = new Map<string, Pod>();
    for (const s of sandboxes) {
      const uid = s.labels[podUIDLabel] ?? s.metadata?.uid ?? "";
      if (uid === "" || pods.has(uid)) continue;
      pods.set(uid, {
        metadata: {
          name: s.labels[podNameLabel] ?? s.metadata?.name ?? "",
          namespace: s.labels[podNamespaceLabel] ?? s.metadata?.namespace ?? "",
          uid,
        },
        spec: { containers: [] },
      });
    }
    return [...pods.values()];
  }

  /**
   * Stops and removes a pod known only from the runtime (no spec): containers get the minimum
   * grace period, as kubelet's killPod of an orphaned running pod without its spec.
   */
  async removeOrphanedPod(pod: Pod): Promise<void> {
    let status = await this.getPodStatus(pod);
    await this.killPod(pod, status);
    status = await this.getPodStatus(pod);
    await this.removePod(pod, status);
  }

  /** The sandbox config of the pod (kubelet's `generatePodSandboxConfig`). */
  generatePodSandboxConfig(pod: Pod, attempt: number): PodSandboxConfig {
    const name = pod.metadata.name ?? "";
    const namespace = pod.metadata.namespace ?? "";
    const uid = pod.metadata.uid ?? "";
    const hostNetwork = pod.spec.hostNetwork === true;
    const config: PodSandboxConfig = {
      metadata: { name, namespace, uid, attempt },
      logDirectory: buildPodLogsDirectory(this.#logsRoot, { namespace, name, uid }),
      labels: {
        ...(pod.metadata.labels ?? {}),
        [podNameLabel]: name,
        [podNamespaceLabel]: namespace,
        [podUIDLabel]: uid,
        [probeletManagedLabel]: "true",
      },
      annotations: { ...(pod.metadata.annotations ?? {}) },
      linux: {
        securityContext: {
          namespaceOptions: { network: hostNetwork ? "NODE" : "POD", pid: "CONTAINER", ipc: "POD" },
        },
      },
    };
    if (!hostNetwork) config.hostname = name.slice(0, 63);
    const portMappings = [...(pod.spec.containers ?? [])].flatMap((c) =>
      (c.ports ?? []).filter((p) => p.hostPort).map((p) => ({
        protocol: p.protocol ?? "TCP",
        containerPort: p.containerPort,
        hostPort: p.hostPort,
        hostIp: p.hostIP,
      }))
    );
    if (portMappings.length > 0) config.portMappings = portMappings;
    return config;
  }

  /** The container config (kubelet's `generateContainerConfig`), with kubelet's labels. */
  generateContainerConfig(pod: Pod, container: Container, restartCount: number): ContainerConfig {
    const envs = (container.env ?? []).map((e) => ({ key: e.name, value: e.value ?? "" }));
    const config: ContainerConfig = {
      metadata: { name: container.name, attempt: restartCount },
      image: { image: container.image ?? "" },
      envs,
      labels: {
        [podNameLabel]: pod.metadata.name ?? "",
        [podNamespaceLabel]: pod.metadata.namespace ?? "",
        [podUIDLabel]: pod.metadata.uid ?? "",
        [containerNameLabel]: container.name,
        [probeletManagedLabel]: "true",
      },
      annotations: {
        [containerHashAnnotation]: hashContainer(container),
        [containerRestartCountAnnotation]: String(restartCount),
        [podTerminationGracePeriodAnnotation]: String(pod.spec.terminationGracePeriodSeconds ?? 30),
      },
      logPath: `${container.name}/${restartCount}.log`,
      linux: {
        securityContext: {
          namespaceOptions: {
            network: pod.spec.hostNetwork ? "NODE" : "POD",
            pid: "CONTAINER",
            ipc: "POD",
          },
        },
      },
    };
    if (container.command) {
      config.command = expandContainerCommandOnlyStatic(container.command, container.env);
    }
    if (container.args) {
      config.args = expandContainerCommandOnlyStatic(container.args, container.env);
    }
    if (container.workingDir) config.workingDir = container.workingDir;
    return config;
  }

  #event(
    pod: Pod,
    container: Container | undefined,
    type: EventType,
    reason: string,
    message: string,
  ): void {
    const ref = container ? generateContainerRef(pod, container) : {
      kind: "Pod",
      apiVersion: "v1",
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      uid: pod.metadata.uid,
    };
    this.#recorder.event(ref, { type, reason, message });
  }
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

/** Key of a container in the back-off table (kubelet's `getStableKey`). */
export function getStableKey(pod: Pod, container: Container): string {
  const m = pod.metadata;
  return `${m.name ?? ""}_${m.namespace ?? ""}_${m.uid ?? ""}_${container.name}_${
    hashContainer(container)
  }`;
}

/** kubelet's `format.Pod`: `<name>_<namespace>(<uid>)`. */
export function formatPod(pod: Pod): string {
  return `${pod.metadata.name ?? ""}_${pod.metadata.namespace ?? ""}(${pod.metadata.uid ?? ""})`;
}

function compareBigDesc(a: bigint, b: bigint): number {
  return a === b ? 0 : a > b ? -1 : 1;
}

/** gRPC's NotFound status code, which runtimes use for "no such sandbox/container". */
const grpcNotFound = 5;

/** Whether a CRI call failed because the object does not exist (gRPC NotFound). */
export function isNotFound(e: unknown): boolean {
  return (e as { code?: unknown } | null)?.code === grpcNotFound;
}

/** A CRI error's status message (Go's `status.FromError(err).Message()`), else the error text. */
export function statusMessage(e: unknown): string {
  const details = (e as { details?: unknown } | null)?.details;
  return typeof details === "string" && typeof (e as { code?: unknown }).code === "number"
    ? details
    : errorText(e);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
