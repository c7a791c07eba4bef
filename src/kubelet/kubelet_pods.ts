/**
 * The API pod status the agent reports, generated from the runtime's view of a pod: container
 * states, restart counts, the last termination, CrashLoopBackOff waiting reasons, the pod phase
 * (kubelet's `getPhase` rules) and the pod IP; and the pod's image pull secrets.
 * Mirrors generateAPIPodStatus / convertToAPIContainerStatuses / getPhase / getPullSecretsForPod
 * in kubelet's pkg/kubelet/kubelet_pods.go.
 * @module
 */
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodPhase,
  PodStatus,
} from "../api/core/v1/mod.ts";
import { metav1Time } from "../api/meta/v1/mod.ts";
import { containerIDString } from "./container/container_id.ts";
import {
  isRestartableInitContainer,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
  shouldContainerBeRestarted,
} from "./kuberuntime/kuberuntime_manager.ts";
import { isStaticPod } from "./types/pod_update.ts";
import type { Secret } from "../credentialprovider/keyring.ts";
import { getPodReference } from "./container/ref.ts";
import type { EventRecorder } from "./events/mod.ts";
import * as log from "../util/log.ts";

/**
 * The secrets named by the pod's `imagePullSecrets` that could be read, in order (kubelet's
 * `getPullSecretsForPod`). One that cannot be read is logged and skipped, and a
 * `FailedToRetrieveImagePullSecret` event names them all: the pull is tried without them.
 */
export async function getPullSecretsForPod(
  pod: Pod,
  options: {
    getSecret?: (namespace: string, name: string) => Promise<Secret>;
    recorder: EventRecorder;
  },
): Promise<Secret[]> {
  const pullSecrets: Secret[] = [];
  const failed: string[] = [];
  const namespace = pod.metadata.namespace ?? "";
  for (const ref of pod.spec.imagePullSecrets ?? []) {
    if (typeof ref.name !== "string" || ref.name === "") continue;
    try {
      if (!options.getSecret) throw new Error("no API server to read secrets from");
      pullSecrets.push(await options.getSecret(namespace, ref.name));
    } catch (e) {
      log.info("Unable to retrieve pull secret, the image pull may not succeed.", {
        pod: `${namespace}/${pod.metadata.name ?? ""}`,
        secret: `${namespace}/${ref.name}`,
        err: e instanceof Error ? e.message : String(e),
      });
      failed.push(ref.name);
    }
  }
  if (failed.length > 0) {
    options.recorder.event(getPodReference(pod), {
      type: "Warning",
      reason: "FailedToRetrieveImagePullSecret",
      message: `Unable to retrieve some image pull secrets (${
        failed.join(", ")
      }); attempting to pull the image may not succeed.`,
    });
  }
  return pullSecrets;
}

/** Why a container could not be started in the last sync: kubelet's reason cache entry. */
export interface StartFailure {
  /** The waiting reason, e.g. `CrashLoopBackOff`. */
  reason: string;
  /** e.g. `back-off 10s restarting failed container=app pod=web_default(uid)`. */
  message: string;
}

/** Waiting reason of a container that has not been created yet. */
export const ContainerCreating = "ContainerCreating";
/** Waiting reason of a container not created yet in a pod that has init containers. */
export const PodInitializing = "PodInitializing";
/** Waiting reason of a container waiting out its restart back-off. */
export const CrashLoopBackOff = "CrashLoopBackOff";

/** Formats epoch milliseconds as the API's RFC 3339 time with whole seconds (`metav1.Time`). */
export const rfc3339: (ms: number) => string = metav1Time;

/**
 * The API state of one runtime container instance (kubelet's `convertContainerStatus`).
 */
function convertContainerState(cs: RuntimeContainerStatus): ContainerState {
  switch (cs.state) {
    case "running":
      return { running: { startedAt: rfc3339(cs.startedAt) } };
    case "created":
      return { waiting: {} };
    case "exited":
    case "unknown": {
      const terminated: NonNullable<ContainerState["terminated"]> = {
        exitCode: cs.exitCode,
        reason: cs.reason || (cs.state === "unknown" ? "Unknown" : undefined),
        startedAt: cs.startedAt ? rfc3339(cs.startedAt) : undefined,
        finishedAt: cs.finishedAt ? rfc3339(cs.finishedAt) : undefined,
        containerID: containerIDString(cs.id),
      };
      if (cs.message) terminated.message = cs.message;
      return { terminated };
    }
  }
}

/**
 * Container statuses in spec order: the newest instance gives the state, the one before it the
 * last termination; containers never created wait with `ContainerCreating` (`PodInitializing` in a pod with init
 * containers); containers that will
 * be restarted and could not be started in the last sync wait with the start failure's reason
 * (`CrashLoopBackOff`). `ready` is false here: the prober manager sets it.
 */
export function convertToAPIContainerStatuses(
  pod: Pod,
  podStatus: RuntimePodStatus,
  containers: Container[],
  options: {
    isInit: boolean;
    /** The pod has init containers: the never-created wait as `PodInitializing`. */
    hasInitContainers?: boolean;
    startFailures: Map<string, StartFailure>;
    previous?: ContainerStatus[];
  },
): ContainerStatus[] {
  const statuses = new Map<string, ContainerStatus>();
  const defaultReason = options.hasInitContainers ? PodInitializing : ContainerCreating;
  for (const container of containers) {
    const prev = options.previous?.find((s) => s.name === container.name);
    statuses.set(container.name, {
      name: container.name,
      image: container.image ?? "",
      imageID: "",
      ready: false,
      restartCount: prev?.restartCount ?? 0,
      state: { waiting: { reason: defaultReason } },
      ...(prev?.lastState ? { lastState: prev.lastState } : {}),
    });
  }

  // Newest first: the first instance per name is the current one, the second the previous one.
  const seen = new Map<string, number>();
  for (const cs of podStatus.containerStatuses) {
    const status = statuses.get(cs.name);
    if (!status) continue;
    const count = seen.get(cs.name) ?? 0;
    seen.set(cs.name, count + 1);
    if (count === 0) {
      status.state = convertContainerState(cs);
      status.containerID = containerIDString(cs.id);
      status.image = cs.image || status.image;
      status.imageID = cs.imageID;
      status.restartCount = cs.restartCount;
      delete status.lastState;
    } else if (count === 1 && (cs.state === "exited" || cs.state === "unknown")) {
      status.lastState = convertContainerState(cs);
    }
  }

  for (const container of containers) {
    if (options.isInit && !isRestartableInitContainer(container)) {
      // A regular init container that succeeded is not restarted.
      const current = statuses.get(container.name)!;
      if (current.state?.terminated?.exitCode === 0) continue;
    }
    if (!shouldContainerBeRestarted(container, pod, podStatus)) continue;
    const failure = options.startFailures.get(container.name);
    if (!failure) continue;
    const status = statuses.get(container.name)!;
    if (status.state?.terminated) status.lastState = status.state;
    status.state = { waiting: { reason: failure.reason, message: failure.message } };
  }
  return containers.map((c) => statuses.get(c.name)!);
}

/**
 * The pod phase from its container statuses, kubelet's `getPhase`: Pending while init containers
 * run or containers wait, Running once all started and one runs, Succeeded/Failed when all
 * stopped and the restart policy will not bring them back.
 *
 * @example
 * ```ts
 * getPhase(pod, [...initStatuses, ...statuses], { podIsTerminal: false, podHasInitialized: true });
 * ```
 */
export function getPhase(
  pod: Pod,
  info: ContainerStatus[],
  options: { podIsTerminal: boolean; podHasInitialized: boolean },
): PodPhase {
  const spec = pod.spec;
  const policy = spec.restartPolicy ?? "Always";
  const find = (name: string) => info.find((s) => s.name === name);
  let pendingRestartableInit = 0;
  let pendingRegularInit = 0;
  let failedInitialization = 0;

  for (const container of spec.initContainers ?? []) {
    if (isRestartableInitContainer(container)) continue;
    const cs = find(container.name);
    if (!cs) {
      pendingRegularInit++;
      continue;
    }
    if (cs.state?.running) pendingRegularInit++;
    else if (cs.state?.terminated) {
      if (cs.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (cs.state?.waiting) {
      if (cs.lastState?.terminated) {
        if (cs.lastState.terminated.exitCode !== 0) failedInitialization++;
      } else pendingRegularInit++;
    } else pendingRegularInit++;
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;

  for (const container of spec.initContainers ?? []) {
    if (!isRestartableInitContainer(container)) continue;
    const cs = find(container.name);
    if (!cs) {
      unknown++;
      continue;
    }
    if (cs.state?.running) {
      if (!cs.started) pendingRestartableInit++;
      running++;
    }
  }

  for (const container of spec.containers) {
    const cs = find(container.name);
    if (!cs) {
      unknown++;
      continue;
    }
    if (cs.state?.running) running++;
    else if (cs.state?.terminated) {
      stopped++;
      if (cs.state.terminated.exitCode === 0) succeeded++;
    } else if (cs.state?.waiting) {
      if (cs.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0 && policy === "Never") return "Failed";

  if (
    pendingRegularInit > 0 || (pendingRestartableInit > 0 && !options.podHasInitialized) ||
    waiting > 0
  ) {
    return "Pending";
  }
  if (running > 0 && unknown === 0) return "Running";
  if (running === 0 && stopped > 0 && unknown === 0) {
    // A pod being terminated (SyncTerminatingPod's final status) will not be restarted whatever
    // its policy; static pods keep the policy's answer (kubelet's TODO #116484).
    if (options.podIsTerminal && !isStaticPod(pod)) {
      return stopped === succeeded ? "Succeeded" : "Failed";
    }
    if (policy === "Always") return "Running";
    if (stopped === succeeded) return "Succeeded";
    if (policy === "Never") return "Failed";
    return "Running";
  }
  return "Pending";
}

/**
 * Builds the API status of a pod from the runtime's view (conditions and readiness are added
 * afterwards by the prober manager and the status generators).
 */
export function generateAPIPodStatus(
  pod: Pod,
  podStatus: RuntimePodStatus,
  options: {
    startFailures: Map<string, StartFailure>;
    oldStatus?: PodStatus;
    /** The node's IPs (getHostIPsAnyWay): the first is `hostIP`; host-network pods use them all. */
    hostIPs: string[];
    startTime: string;
    /** The pod is being terminated: its stopped containers will not run again. */
    podIsTerminal?: boolean;
  },
): PodStatus {
  const hasInitContainers = (pod.spec.initContainers ?? []).length > 0;
  const initContainerStatuses = convertToAPIContainerStatuses(
    pod,
    podStatus,
    pod.spec.initContainers ?? [],
    {
      isInit: true,
      hasInitContainers,
      startFailures: options.startFailures,
      previous: options.oldStatus?.initContainerStatuses,
    },
  );
  const containerStatuses = convertToAPIContainerStatuses(pod, podStatus, pod.spec.containers, {
    isInit: false,
    hasInitContainers,
    startFailures: options.startFailures,
    previous: options.oldStatus?.containerStatuses,
  });
  // Keep `started` known from the previous status until the prober manager recomputes it.
  for (const list of [initContainerStatuses, containerStatuses]) {
    for (const s of list) {
      const prev = [
        ...(options.oldStatus?.initContainerStatuses ?? []),
        ...(options.oldStatus?.containerStatuses ?? []),
      ].find((p) => p.name === s.name && p.containerID === s.containerID);
      if (prev?.started !== undefined) s.started = prev.started;
    }
  }
  const podHasInitialized = pod.spec.containers.some((c) => {
    const cs = podStatus.containerStatuses.find((s) => s.name === c.name);
    return cs !== undefined && (cs.state === "created" || cs.state === "running");
  });
  const all = [...initContainerStatuses, ...containerStatuses];
  let phase = getPhase(pod, all, {
    podIsTerminal: options.podIsTerminal ?? false,
    podHasInitialized,
  });
  // A terminal phase is never undone: the status manager's, then the API's (kubelet's three-way
  // merge after getPhase).
  if (phase !== "Failed" && phase !== "Succeeded") {
    const old = options.oldStatus?.phase;
    if (old === "Failed" || old === "Succeeded") phase = old;
    else if (pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded") {
      phase = pod.status.phase;
    }
  }
  const podIPs = pod.spec.hostNetwork ? options.hostIPs : podStatus.ips;
  const status: PodStatus = {
    phase,
    hostIP: options.hostIPs[0],
    hostIPs: options.hostIPs.map((ip) => ({ ip })),
    startTime: options.startTime,
    containerStatuses,
  };
  if (podIPs.length > 0) {
    status.podIP = podIPs[0];
    status.podIPs = podIPs.map((ip) => ({ ip }));
  }
  if ((pod.spec.initContainers ?? []).length > 0) {
    status.initContainerStatuses = initContainerStatuses;
  }
  return status;
}

/**
 * The runtime ID of the container whose log `kubectl logs` reads (kubelet's
 * `validateContainerLogStatus`): the running one, the last terminated one for `previous`, or the
 * terminated one; otherwise kubelet's error text (waiting to start, not available, terminated).
 *
 * @example
 * ```ts
 * validateContainerLogStatus("web", pod.status, "app", false); // "containerd://abc..."
 * ```
 */
export function validateContainerLogStatus(
  podName: string,
  podStatus: PodStatus,
  containerName: string,
  previous: boolean,
): string {
  const cStatus = [
    ...(podStatus.containerStatuses ?? []),
    ...(podStatus.initContainerStatuses ?? []),
  ].find((s) => s.name === containerName);
  if (!cStatus) {
    throw new Error(`container "${containerName}" in pod "${podName}" is not available`);
  }
  const last = cStatus.lastState?.terminated;
  const { waiting, running, terminated } = cStatus.state ?? {};
  let id: string;
  if (previous) {
    if (!last?.containerID) {
      throw new Error(
        `previous terminated container "${containerName}" in pod "${podName}" not found`,
      );
    }
    id = last.containerID;
  } else if (running) {
    id = cStatus.containerID ?? "";
  } else if (terminated) {
    // When the next container did not start, the terminated state has no ID: the last one's log.
    if (terminated.containerID) id = terminated.containerID;
    else if (last?.containerID) id = last.containerID;
    else throw new Error(`container "${containerName}" in pod "${podName}" is terminated`);
  } else if (last) {
    if (!last.containerID) {
      throw new Error(`container "${containerName}" in pod "${podName}" is terminated`);
    }
    id = last.containerID;
  } else if (waiting) {
    const why = waiting.reason === "ErrImagePull"
      ? "image can't be pulled"
      : waiting.reason === "ImagePullBackOff"
      ? "trying and failing to pull image"
      : waiting.reason ?? "";
    throw new Error(`container "${containerName}" in pod "${podName}" is waiting to start: ${why}`);
  } else {
    throw new Error(
      `container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`,
    );
  }
  const sep = id.indexOf("://");
  if (sep <= 0 || id.slice(sep + 3) === "") {
    throw new Error(`unable to parse container id "${id}": invalid container ID: "${id}"`);
  }
  return id;
}
