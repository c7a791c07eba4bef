/**
 * A pod's status as read from the container runtime: the sandbox's IPs and every container instance
 * in the sandbox, as kubelet's runtime-neutral `PodStatus` (`getRuntimePodStatus`) and, for callers
 * that only need what the prober reads, as the API's `PodStatus` (`getPodStatus`).
 * A sandbox-ID based reader for the probe tools and tests (no Go counterpart); the agent's own
 * `GetPodStatus` is `KubeGenericRuntimeManager.getPodStatus`. The API part follows the container
 * part of convertToAPIContainerStatuses in pkg/kubelet/kubelet_pods.go.
 * @module
 */
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodStatus,
} from "../../api/core/v1/mod.ts";
import { metav1Time } from "../../api/meta/v1/mod.ts";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import { containerIDString } from "../container/container_id.ts";
import { nsToMs, toKubeContainerStatus } from "./kuberuntime_container.ts";
import type {
  PodStatus as RuntimePodStatus,
  RuntimeContainerStatus,
} from "../container/runtime.ts";
import { isNotFound } from "../../cri_client/errors.ts";

/** Waiting reason of a container not created yet. */
const containerCreating = "ContainerCreating";
/** Waiting reason of a regular container while init containers have not all succeeded. */
const podInitializing = "PodInitializing";

/** Options of `getRuntimePodStatus` and `getPodStatus`. */
export interface GetPodStatusOptions {
  /** The pod's sandbox; its containers are the pod's containers. */
  sandboxId: string;
  /** The pod, for its UID, name and namespace (and, in `getPodStatus`, its container list). */
  pod: Pod;
  /**
   * The runtime's name, the `<type>` of `<type>://<id>` container IDs. Default: the runtime's
   * `Version().runtimeName` (`containerd`), asked once per runtime object.
   */
  runtimeName?: string;
  signal?: AbortSignal;
}

const runtimeNames = new WeakMap<RuntimeService, Promise<string>>();

function runtimeNameOf(runtime: RuntimeService, signal?: AbortSignal): Promise<string> {
  let name = runtimeNames.get(runtime);
  if (!name) {
    name = runtime.version(undefined, { signal }).then((v) => v.runtimeName);
    name.catch(() => runtimeNames.delete(runtime));
    runtimeNames.set(runtime, name);
  }
  return name;
}

/**
 * The runtime's view of a pod (kubelet's `kubecontainer.PodStatus`): the sandbox's IPs when it is
 * ready, and the status of every container instance in the sandbox, newest first.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 * declare const sandboxId: string;
 * declare const pod: Pod;
 *
 * const status = await getRuntimePodStatus(runtime, { sandboxId, pod });
 * status.containerStatuses[0].id; // { type: "containerd", id: "0123..." }
 * ```
 */
export async function getRuntimePodStatus(
  runtime: RuntimeService,
  options: GetPodStatusOptions,
): Promise<RuntimePodStatus> {
  const { sandboxId, pod, signal } = options;
  const runtimeName = options.runtimeName ?? await runtimeNameOf(runtime, signal);
  const sandbox = await runtime.podSandboxStatus(sandboxId, { signal });
  const ips: string[] = [];
  const network = sandbox.status.network;
  if (sandbox.status.state === "SANDBOX_READY" && network && network.ip !== "") {
    ips.push(network.ip, ...network.additionalIps.map((p) => p.ip));
  }
  const containers = await runtime.listContainers({ podSandboxId: sandboxId }, { signal });
  const statuses: RuntimeContainerStatus[] = [];
  for (const c of containers) {
    let status;
    try {
      status = (await runtime.containerStatus(c.id, { signal })).status;
    } catch (err) {
      // Removed between the list and the status call: kubelet skips such containers too.
      if (isNotFound(err)) continue;
      throw err;
    }
    statuses.push(toKubeContainerStatus(status, runtimeName));
  }
  // Newest first; kubelet orders by creation time, the attempt breaks ties.
  statuses.sort((a, b) => b.createdAt - a.createdAt || b.restartCount - a.restartCount);
  return {
    id: pod.metadata.uid ?? "",
    name: pod.metadata.name ?? "",
    namespace: pod.metadata.namespace ?? "",
    ips,
    containerStatuses: statuses,
    sandboxStatuses: [sandbox.status],
  };
}

/** The API state of one container instance (kubelet's container-state switch). */
function apiContainerState(cs: RuntimeContainerStatus): ContainerState {
  switch (cs.state) {
    case "running":
      return { running: cs.startedAt ? { startedAt: metav1Time(cs.startedAt) } : {} };
    case "exited": {
      const terminated: NonNullable<ContainerState["terminated"]> = {
        exitCode: cs.exitCode,
        containerID: containerIDString(cs.id),
      };
      if (cs.reason) terminated.reason = cs.reason;
      if (cs.message) terminated.message = cs.message;
      if (cs.startedAt) terminated.startedAt = metav1Time(cs.startedAt);
      if (cs.finishedAt) terminated.finishedAt = metav1Time(cs.finishedAt);
      return { terminated };
    }
    default:
      // Created but not started, or unknown: "waiting to be running".
      return { waiting: {} };
  }
}

/** API container statuses in spec order; the newest instance per name wins. */
export function toAPIContainerStatuses(
  containers: Container[],
  podStatus: RuntimePodStatus,
  options: { waitingReason: string },
): ContainerStatus[] {
  return containers.map((container) => {
    const instances = podStatus.containerStatuses.filter((s) => s.name === container.name);
    const [current, previous] = instances;
    if (!current) {
      return {
        name: container.name,
        state: { waiting: { reason: options.waitingReason } },
        ready: false,
        restartCount: 0,
        image: container.image ?? "",
        imageID: "",
      };
    }
    const status: ContainerStatus = {
      name: container.name,
      state: apiContainerState(current),
      ready: false,
      restartCount: current.restartCount,
      image: current.image || container.image || "",
      imageID: current.imageID,
      containerID: containerIDString(current.id),
    };
    if (previous?.state === "exited") status.lastState = apiContainerState(previous);
    return status;
  });
}

/**
 * The pod's API status as far as the runtime knows it: pod IP(s), start time (the sandbox's
 * creation), and each init and regular container's ID (`containerd://<id>`), state (waiting /
 * running / terminated with reason, exit code and RFC 3339 times), last termination, and restart
 * count. `ready` is false and `phase` and conditions are absent: the prober manager and the status
 * generators own those.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 * declare const sandboxId: string;
 * declare const pod: Pod;
 *
 * const status = await getPodStatus(runtime, { sandboxId, pod });
 * status.containerStatuses?.[0].state?.running?.startedAt; // "2025-01-02T03:04:05Z"
 * ```
 */
export async function getPodStatus(
  runtime: RuntimeService,
  options: GetPodStatusOptions & { hostIP?: string },
): Promise<PodStatus> {
  const { pod } = options;
  const runtimeStatus = await getRuntimePodStatus(runtime, options);
  const initContainers = pod.spec.initContainers ?? [];
  const initStatuses = toAPIContainerStatuses(initContainers, runtimeStatus, {
    waitingReason: containerCreating,
  });
  const initialized = initContainers.every((c, i) =>
    c.restartPolicy === "Always"
      ? initStatuses[i].state?.running !== undefined
      : initStatuses[i].state?.terminated?.exitCode === 0
  );
  const status: PodStatus = {
    containerStatuses: toAPIContainerStatuses(pod.spec.containers, runtimeStatus, {
      waitingReason: initialized ? containerCreating : podInitializing,
    }),
  };
  if (initContainers.length > 0) status.initContainerStatuses = initStatuses;
  const ips = pod.spec.hostNetwork && options.hostIP ? [options.hostIP] : runtimeStatus.ips;
  if (options.hostIP) status.hostIP = options.hostIP;
  if (ips.length > 0) {
    status.podIP = ips[0];
    status.podIPs = ips.map((ip) => ({ ip }));
  }
  const created = runtimeStatus.sandboxStatuses[0]?.createdAt ?? 0n;
  if (created > 0n) status.startTime = metav1Time(nsToMs(created));
  return status;
}
