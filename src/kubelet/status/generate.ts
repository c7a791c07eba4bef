/**
 * The `Initialized`, `ContainersReady` and `Ready` pod conditions, computed from container
 * statuses. Mirrors kubelet's pkg/kubelet/status/generate.go.
 * @module
 */
import type {
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodStatus,
} from "../../api/core/v1/mod.ts";
import { goQuote } from "../../util/go_format.ts";
import {
  getContainerStatus,
  getPodCondition,
  isRestartableInitContainer,
} from "../container/mod.ts";

/** Reason: no container statuses are known at all. */
export const UnknownContainerStatuses = "UnknownContainerStatuses";
/** Reason: every container succeeded. */
export const PodCompleted = "PodCompleted";
/** Reason: the pod failed, so its containers are not ready. */
export const PodFailed = "PodFailed";
/** Reason: some container is not ready or has no status. */
export const ContainersNotReady = "ContainersNotReady";
/** Reason: some init container has not succeeded. */
export const ContainersNotInitialized = "ContainersNotInitialized";
/** Reason: some readiness gate is not satisfied. */
export const ReadinessGatesNotReady = "ReadinessGatesNotReady";

/** The `Initialized` condition type. */
export const PodInitialized = "Initialized";
/** The `ContainersReady` condition type. */
export const ContainersReady = "ContainersReady";
/** The `Ready` condition type. */
export const PodReady = "Ready";

/**
 * `ContainersReady`: True when every regular and restartable init container has a ready status.
 * `containerStatuses` holds init and regular statuses together; undefined means none are known.
 * (`_oldPodStatus` is kept for kubelet's signature; it only matters for observedGeneration.)
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * generateContainersReadyCondition(pod, {}, [], "Running");
 * // { type: "ContainersReady", status: "False", reason: "ContainersNotReady", message: "containers with unknown status: [app]" }
 * ```
 */
export function generateContainersReadyCondition(
  pod: Pod,
  _oldPodStatus: PodStatus,
  containerStatuses: ContainerStatus[] | undefined,
  podPhase: PodPhase | undefined,
): PodCondition {
  if (containerStatuses === undefined) {
    return condition(ContainersReady, "False", UnknownContainerStatuses);
  }
  const unknownContainers: string[] = [];
  const unreadyContainers: string[] = [];
  const check = (name: string) => {
    const status = getContainerStatus(containerStatuses, name);
    if (!status) unknownContainers.push(name);
    else if (!status.ready) unreadyContainers.push(name);
  };
  for (const c of pod.spec?.initContainers ?? []) {
    if (isRestartableInitContainer(c)) check(c.name);
  }
  for (const c of pod.spec?.containers ?? []) check(c.name);

  if (podPhase === "Succeeded" && unknownContainers.length === 0) {
    return condition(ContainersReady, "False", PodCompleted);
  }
  // A failed pod's containers may still be terminating: never ready.
  if (podPhase === "Failed") return condition(ContainersReady, "False", PodFailed);

  const messages: string[] = [];
  if (unknownContainers.length > 0) {
    messages.push(`containers with unknown status: ${goSlice(unknownContainers)}`);
  }
  if (unreadyContainers.length > 0) {
    messages.push(`containers with unready status: ${goSlice(unreadyContainers)}`);
  }
  if (messages.length > 0) {
    return condition(ContainersReady, "False", ContainersNotReady, messages.join(", "));
  }
  return condition(ContainersReady, "True");
}

/**
 * `Initialized`: True when every regular init container succeeded and every sidecar (restartable
 * init container) has started; also True once a regular container has run (a restarting sidecar
 * does not un-initialize the pod) and, with reason PodCompleted, for a Succeeded pod whose init
 * containers all have a status. `containerStatuses` holds init and regular statuses together.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * generatePodInitializedCondition(pod, {}, [], "Pending");
 * // with init container "setup": { type: "Initialized", status: "False",
 * //   reason: "ContainersNotInitialized", message: "containers with unknown status: [setup]" }
 * ```
 */
export function generatePodInitializedCondition(
  pod: Pod,
  _oldPodStatus: PodStatus,
  containerStatuses: ContainerStatus[] | undefined,
  podPhase: PodPhase | undefined,
): PodCondition {
  const initContainers = pod.spec?.initContainers ?? [];
  if (containerStatuses === undefined && initContainers.length > 0) {
    return condition(PodInitialized, "False", UnknownContainerStatuses);
  }
  const statuses = containerStatuses ?? [];
  const unknownContainers: string[] = [];
  const incompleteContainers: string[] = [];
  for (const c of initContainers) {
    const status = getContainerStatus(statuses, c.name);
    if (!status) {
      unknownContainers.push(c.name);
      continue;
    }
    // A sidecar counts once started; a regular init container once it succeeded (ready).
    const initialized = isRestartableInitContainer(c) ? status.started === true : status.ready;
    if (!initialized) incompleteContainers.push(c.name);
  }
  if (podPhase === "Succeeded" && unknownContainers.length === 0) {
    return condition(PodInitialized, "True", PodCompleted);
  }
  if (hasAnyRegularContainerStarted(pod, statuses)) return condition(PodInitialized, "True");
  const messages: string[] = [];
  if (unknownContainers.length > 0) {
    messages.push(`containers with unknown status: ${goSlice(unknownContainers)}`);
  }
  if (incompleteContainers.length > 0) {
    messages.push(`containers with incomplete status: ${goSlice(incompleteContainers)}`);
  }
  if (messages.length > 0) {
    return condition(PodInitialized, "False", ContainersNotInitialized, messages.join(", "));
  }
  return condition(PodInitialized, "True");
}

// Kubelet's HasAnyRegularContainerStarted: a regular container running or terminated means the
// init containers were done once.
function hasAnyRegularContainerStarted(pod: Pod, statuses: ContainerStatus[]): boolean {
  const regular = new Set((pod.spec?.containers ?? []).map((c) => c.name));
  return statuses.some((s) =>
    regular.has(s.name) && (s.state?.running !== undefined || s.state?.terminated !== undefined)
  );
}

/**
 * `Ready`: the `ContainersReady` verdict, then every readiness gate's condition must be True.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * generatePodReadyCondition(pod, {}, [], [], "Running");
 * // with a gate "gate1": { type: "Ready", status: "False", reason: "ReadinessGatesNotReady",
 * //   message: 'corresponding condition of pod readiness gate "gate1" does not exist.' }
 * ```
 */
export function generatePodReadyCondition(
  pod: Pod,
  oldPodStatus: PodStatus,
  conditions: PodCondition[] | undefined,
  containerStatuses: ContainerStatus[] | undefined,
  podPhase: PodPhase | undefined,
): PodCondition {
  const containersReady = generateContainersReadyCondition(
    pod,
    oldPodStatus,
    containerStatuses,
    podPhase,
  );
  if (containersReady.status !== "True") {
    return condition(
      PodReady,
      containersReady.status,
      containersReady.reason,
      containersReady.message,
    );
  }
  const messages: string[] = [];
  for (const gate of pod.spec?.readinessGates ?? []) {
    const c = getPodCondition(conditions, gate.conditionType);
    if (!c) {
      messages.push(
        `corresponding condition of pod readiness gate ${
          goQuote(gate.conditionType)
        } does not exist.`,
      );
    } else if (c.status !== "True") {
      messages.push(
        `the status of pod readiness gate ${
          goQuote(gate.conditionType)
        } is not "True", but ${c.status}`,
      );
    }
  }
  if (messages.length > 0) {
    return condition(PodReady, "False", ReadinessGatesNotReady, messages.join(", "));
  }
  return condition(PodReady, "True");
}

// Go's zero-value strings are simply absent here.
function condition(
  type: string,
  status: PodCondition["status"],
  reason?: string,
  message?: string,
): PodCondition {
  const c: PodCondition = { type, status };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

// `%s` of a Go []string: "[a b]".
function goSlice(items: string[]): string {
  return `[${items.join(" ")}]`;
}
