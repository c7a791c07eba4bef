/**
 * The runtime-neutral view of pods and containers kubelet's components share: what the runtime
 * manager reports (`PodStatus`, `RuntimeContainerStatus`), what PLEG relists (`RuntimePod`,
 * `RuntimeContainer`) and container states.
 * Mirrors kubelet's pkg/kubelet/container/runtime.go.
 * @module
 */
import type { PodSandboxStatus } from "../../cri_client/api.ts";
import type { ContainerID } from "./container_id.ts";

/** Container states as kubelet's runtime-neutral `kubecontainer.State`. */
export type RuntimeContainerState = "created" | "running" | "exited" | "unknown";

/**
 * One container instance as the runtime reports it: kubelet's `kubecontainer.Status`.
 * Times are milliseconds since the epoch (0 = unset).
 */
export interface RuntimeContainerStatus {
  id: ContainerID;
  name: string;
  state: RuntimeContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: string;
  imageID: string;
  /** Hash of the container spec it was created from (annotation `io.kubernetes.container.hash`). */
  hash: string;
  /** Restarts before this instance (annotation `io.kubernetes.container.restartCount`). */
  restartCount: number;
  reason: string;
  message: string;
  /** The pod's `terminationGracePeriodSeconds` when it was created (its annotation), if recorded. */
  podTerminationGracePeriod?: number;
}

/**
 * The runtime's view of one pod: kubelet's `kubecontainer.PodStatus`. Container statuses hold every
 * instance still known to the runtime, newest first; sandbox statuses likewise.
 */
export interface PodStatus {
  id: string;
  name: string;
  namespace: string;
  ips: string[];
  containerStatuses: RuntimeContainerStatus[];
  sandboxStatuses: PodSandboxStatus[];
}

/**
 * A container or sandbox as the runtime lists it, without inspecting it (kubelet's
 * `kubecontainer.Container`). Times are milliseconds since the epoch.
 */
export interface RuntimeContainer {
  id: ContainerID;
  name: string;
  state: RuntimeContainerState;
  /** Hash of the spec it was created from; empty for sandboxes. */
  hash: string;
  createdAt: number;
}

/** A pod as the runtime lists it (kubelet's `kubecontainer.Pod`). */
export interface RuntimePod {
  /** The pod's UID. */
  id: string;
  name: string;
  namespace: string;
  containers: RuntimeContainer[];
  sandboxes: RuntimeContainer[];
}

/** The newest status of the named container, kubelet's `FindContainerStatusByName`. */
export function findContainerStatusByName(
  podStatus: PodStatus,
  name: string,
): RuntimeContainerStatus | undefined {
  return podStatus.containerStatuses.find((s) => s.name === name);
}
