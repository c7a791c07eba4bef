/**
 * The labels and annotations kubelet puts on sandboxes and containers, and reading them back: a
 * restarted agent maps the runtime's objects to pods and container specs with them (name,
 * namespace and UID of the pod, the container's name, the hash of the spec it was created from,
 * its restart count, the grace periods to kill it with).
 * Mirrors kubelet's pkg/kubelet/kuberuntime/labels.go and the label keys of
 * pkg/kubelet/types/labels.go. probelet adds one label of its own, the node's name, so that agents
 * sharing a runtime only ever touch their own objects.
 * @module
 */
import type { Container, Pod } from "../../api/core/v1/mod.ts";
import * as log from "../../util/log.ts";

/** Label with the pod's name (kubelet's `types.KubernetesPodNameLabel`). */
export const kubernetesPodNameLabel = "io.kubernetes.pod.name";
/** Label with the pod's namespace (`types.KubernetesPodNamespaceLabel`). */
export const kubernetesPodNamespaceLabel = "io.kubernetes.pod.namespace";
/** Label with the pod's UID (`types.KubernetesPodUIDLabel`). */
export const kubernetesPodUIDLabel = "io.kubernetes.pod.uid";
/** Label with the container's name in the pod spec (`types.KubernetesContainerNameLabel`). */
export const kubernetesContainerNameLabel = "io.kubernetes.container.name";

/** Annotation: the pod's deletion grace period, when it is being deleted. */
export const podDeletionGracePeriodLabel = "io.kubernetes.pod.deletionGracePeriod";
/** Annotation: the pod's `terminationGracePeriodSeconds`. */
export const podTerminationGracePeriodLabel = "io.kubernetes.pod.terminationGracePeriod";
/** Annotation: hash of the container spec the container was created from (hexadecimal). */
export const containerHashLabel = "io.kubernetes.container.hash";
/** Annotation: how many restarts preceded this container instance. */
export const containerRestartCountLabel = "io.kubernetes.container.restartCount";
/** Annotation: the container's `terminationMessagePath`. */
export const containerTerminationMessagePathLabel =
  "io.kubernetes.container.terminationMessagePath";
/** Annotation: the container's `terminationMessagePolicy`. */
export const containerTerminationMessagePolicyLabel =
  "io.kubernetes.container.terminationMessagePolicy";
/** Annotation: the container's ports as JSON. */
export const containerPortsLabel = "io.kubernetes.container.ports";
/** Annotation: `init` or `container`. */
export const containerTypeLabel = "io.kubernetes.container.type";

/**
 * probelet's own label on every sandbox and container it creates: the name of the node (agent)
 * that owns it. Listing, adoption, clean-up and garbage collection select on it, so two agents on
 * one runtime never touch each other's pods.
 */
export const probeletNodeLabel = "io.probelet.node";

/**
 * probelet's own sandbox annotation: when the agent first acknowledged the pod (its status
 * `startTime`, RFC 3339). A restarted agent adopting the pod reports the same start time. kubelet
 * gets it back from the API server's copy of the status instead.
 */
export const probeletPodStartTimeAnnotation = "io.probelet.pod.startTime";

/** Value of {@linkcode containerTypeLabel} for init containers. */
export const InitContainer = "init";
/** Value of {@linkcode containerTypeLabel} for regular containers. */
export const RegularContainer = "container";

/** kubelet's default `terminationMessagePath`. */
export const defaultTerminationMessagePath = "/dev/termination-log";
/** kubelet's default `terminationMessagePolicy`. */
export const defaultTerminationMessagePolicy = "File";

/** The pod as its sandbox's labels describe it (kubelet's `labeledPodSandboxInfo`). */
export interface LabeledPodSandboxInfo {
  /** The pod's own labels (kubelet's and probelet's keys removed). */
  labels: Record<string, string>;
  podName: string;
  podNamespace: string;
  podUID: string;
  /** The owning node (probelet's label); empty when absent. */
  nodeName: string;
}

/** A container as its labels describe it (kubelet's `labeledContainerInfo`). */
export interface LabeledContainerInfo {
  containerName: string;
  podName: string;
  podNamespace: string;
  podUID: string;
}

/** A container as its annotations describe it (kubelet's `annotatedContainerInfo`). */
export interface AnnotatedContainerInfo {
  /** Hash of the spec it was created from; empty when absent. */
  hash: string;
  restartCount: number;
  podDeletionGracePeriod?: number;
  podTerminationGracePeriod?: number;
  terminationMessagePath: string;
  terminationMessagePolicy: string;
  containerType: string;
}

/**
 * The sandbox labels of a pod: its own labels plus kubelet's name, namespace and UID keys and the
 * owning node (kubelet's `newPodLabels`).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * newPodLabels(pod, { nodeName: "node-a" })["io.kubernetes.pod.uid"]; // pod.metadata.uid
 * ```
 */
export function newPodLabels(pod: Pod, options: { nodeName: string }): Record<string, string> {
  return {
    ...(pod.metadata.labels ?? {}),
    [kubernetesPodNameLabel]: pod.metadata.name ?? "",
    [kubernetesPodNamespaceLabel]: pod.metadata.namespace ?? "",
    [kubernetesPodUIDLabel]: pod.metadata.uid ?? "",
    [probeletNodeLabel]: options.nodeName,
  };
}

/** The sandbox annotations of a pod: its own annotations (kubelet's `newPodAnnotations`). */
export function newPodAnnotations(pod: Pod): Record<string, string> {
  return { ...(pod.metadata.annotations ?? {}) };
}

/** A container's labels: pod name, namespace, UID, container name, node (`newContainerLabels`). */
export function newContainerLabels(
  container: Container,
  pod: Pod,
  options: { nodeName: string },
): Record<string, string> {
  return {
    [kubernetesPodNameLabel]: pod.metadata.name ?? "",
    [kubernetesPodNamespaceLabel]: pod.metadata.namespace ?? "",
    [kubernetesPodUIDLabel]: pod.metadata.uid ?? "",
    [kubernetesContainerNameLabel]: container.name,
    [probeletNodeLabel]: options.nodeName,
  };
}

/**
 * A container's annotations (kubelet's `newContainerAnnotations`): the spec hash, the restart
 * count, the termination message path and policy, the pod's grace periods, the ports and whether
 * it is an init container.
 */
export function newContainerAnnotations(
  container: Container,
  pod: Pod,
  options: { restartCount: number; hash: string },
): Record<string, string> {
  const annotations: Record<string, string> = {
    [containerHashLabel]: options.hash,
    [containerRestartCountLabel]: String(options.restartCount),
    [containerTerminationMessagePathLabel]: container.terminationMessagePath ??
      defaultTerminationMessagePath,
    [containerTerminationMessagePolicyLabel]: container.terminationMessagePolicy ??
      defaultTerminationMessagePolicy,
  };
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) {
    annotations[podDeletionGracePeriodLabel] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    annotations[podTerminationGracePeriodLabel] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.ports && container.ports.length > 0) {
    annotations[containerPortsLabel] = JSON.stringify(container.ports);
  }
  if ((pod.spec.initContainers ?? []).some((c) => c.name === container.name)) {
    annotations[containerTypeLabel] = InitContainer;
  } else if (pod.spec.containers.some((c) => c.name === container.name)) {
    annotations[containerTypeLabel] = RegularContainer;
  }
  return annotations;
}

/** Reads a sandbox's labels back (kubelet's `getPodSandboxInfoFromLabels`). */
export function getPodSandboxInfoFromLabels(labels: Record<string, string>): LabeledPodSandboxInfo {
  const own: Record<string, string> = {};
  // A key loop rather than Object.entries: every relist reads every sandbox's labels, and the
  // entries' pair arrays were a good part of what a relist allocated.
  for (const k in labels) {
    if (
      Object.hasOwn(labels, k) && k !== kubernetesPodNameLabel &&
      k !== kubernetesPodNamespaceLabel && k !== kubernetesPodUIDLabel && k !== probeletNodeLabel
    ) own[k] = labels[k];
  }
  return {
    labels: own,
    podName: stringValue(labels, kubernetesPodNameLabel),
    podNamespace: stringValue(labels, kubernetesPodNamespaceLabel),
    podUID: stringValue(labels, kubernetesPodUIDLabel),
    nodeName: labels[probeletNodeLabel] ?? "",
  };
}

/** Reads a container's labels back (kubelet's `getContainerInfoFromLabels`). */
export function getContainerInfoFromLabels(labels: Record<string, string>): LabeledContainerInfo {
  return {
    containerName: stringValue(labels, kubernetesContainerNameLabel),
    podName: stringValue(labels, kubernetesPodNameLabel),
    podNamespace: stringValue(labels, kubernetesPodNamespaceLabel),
    podUID: stringValue(labels, kubernetesPodUIDLabel),
  };
}

/**
 * Reads a container's annotations back (kubelet's `getContainerInfoFromAnnotations`). A value that
 * does not parse is logged and read as absent (0 for the restart count), as kubelet does.
 */
export function getContainerInfoFromAnnotations(
  annotations: Record<string, string>,
): AnnotatedContainerInfo {
  const info: AnnotatedContainerInfo = {
    hash: annotations[containerHashLabel] ?? "",
    restartCount: intValue(annotations, containerRestartCountLabel) ?? 0,
    terminationMessagePath: stringValue(annotations, containerTerminationMessagePathLabel),
    terminationMessagePolicy: stringValue(annotations, containerTerminationMessagePolicyLabel),
    containerType: stringValue(annotations, containerTypeLabel),
  };
  const deletion = intValue(annotations, podDeletionGracePeriodLabel);
  if (deletion !== undefined) info.podDeletionGracePeriod = deletion;
  const termination = intValue(annotations, podTerminationGracePeriodLabel);
  if (termination !== undefined) info.podTerminationGracePeriod = termination;
  return info;
}

function stringValue(labels: Record<string, string>, label: string): string {
  const value = labels[label];
  if (value !== undefined) return value;
  log.V(3).info(
    "Container doesn't have requested label, it may be an old or invalid container",
    { label },
  );
  return "";
}

// Go's strconv.Atoi: an optional sign and decimal digits, nothing else.
function intValue(labels: Record<string, string>, label: string): number | undefined {
  const text = labels[label];
  if (text === undefined) return undefined;
  if (!/^[+-]?\d+$/.test(text)) {
    log.error(
      new Error(`strconv.Atoi: parsing ${JSON.stringify(text)}: invalid syntax`),
      "Unable to get label value from annotations",
      { label },
    );
    return undefined;
  }
  return Number.parseInt(text, 10);
}
