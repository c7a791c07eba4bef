/**
 * What flows from pod sources (manifest files, the API server) to the kubelet: the pod operations,
 * the source names, the annotations kubelet stamps on pods, and the tests for static and mirror
 * pods and for the pod conditions kubelet owns.
 * Mirrors kubelet's pkg/kubelet/types/pod_update.go.
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";

/** The source a pod came from (`file` or `api`). */
export const ConfigSourceAnnotationKey = "kubernetes.io/config.source";
/** Set on mirror pods: the hash of the static pod they mirror. */
export const ConfigMirrorAnnotationKey = "kubernetes.io/config.mirror";
/** When the kubelet first saw the pod (RFC 3339 with fractional seconds). */
export const ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen";
/** A static pod's content hash (its UID for probelet's file source). */
export const ConfigHashAnnotationKey = "kubernetes.io/config.hash";

/**
 * What a {@linkcode PodUpdate} asks for. A string union (Go's iota carries no meaning):
 * - `SET`: the whole current set of one source;
 * - `ADD`: pods new to the source;
 * - `DELETE`: pods gracefully deleted (a `deletionTimestamp` appeared);
 * - `REMOVE`: pods gone from the source;
 * - `UPDATE`: pods whose spec, labels or annotations changed;
 * - `RECONCILE`: pods whose status alone differs from the kubelet's.
 */
export type PodOperation = "SET" | "ADD" | "DELETE" | "REMOVE" | "UPDATE" | "RECONCILE";

/** Updates from manifest files. */
export const FileSource = "file";
/** Updates from an HTTP endpoint (not implemented by probelet; kept for kubelet's source list). */
export const HTTPSource = "http";
/** Updates from the Kubernetes API server. */
export const ApiserverSource = "api";
/** Updates from all sources (what `PodConfig.sync()` sends). */
export const AllSource = "*";

/**
 * One operation on a set of pods from one source.
 *
 * @example
 * ```ts
 * const update: PodUpdate = { op: "SET", source: ApiserverSource, pods: [] };
 * ```
 */
export interface PodUpdate {
  pods: Pod[];
  op: PodOperation;
  source: string;
}

/**
 * The sources named by `--pod-source`-like lists: `*` means all of them; unknown names are an
 * error.
 *
 * @example
 * ```ts
 * getValidatedSources(["*"]); // ["file", "http", "api"]
 * ```
 */
export function getValidatedSources(sources: string[]): string[] {
  const validated: string[] = [];
  for (const source of sources) {
    switch (source) {
      case AllSource:
        return [FileSource, HTTPSource, ApiserverSource];
      case FileSource:
      case HTTPSource:
      case ApiserverSource:
        validated.push(source);
        break;
      case "":
        break;
      default:
        throw new Error(`unknown pod source "${source}"`);
    }
  }
  return validated;
}

/**
 * The pod's source from its `kubernetes.io/config.source` annotation; throws when it has none.
 *
 * @example
 * ```ts
 * getPodSource({ metadata: { annotations: { "kubernetes.io/config.source": "file" } }, spec: { containers: [] } }); // "file"
 * ```
 */
export function getPodSource(pod: Pod): string {
  const source = pod.metadata?.annotations?.[ConfigSourceAnnotationKey];
  if (source === undefined) {
    throw new Error(`cannot get source of pod "${pod.metadata?.uid ?? ""}"`);
  }
  return source;
}

/**
 * Whether the pod came from a source other than the API server (a static pod).
 *
 * @example
 * ```ts
 * isStaticPod({ metadata: { annotations: { "kubernetes.io/config.source": "file" } }, spec: { containers: [] } }); // true
 * ```
 */
export function isStaticPod(pod: Pod): boolean {
  const source = pod.metadata?.annotations?.[ConfigSourceAnnotationKey];
  return source !== undefined && source !== ApiserverSource;
}

/**
 * Whether the pod is a mirror pod: the API server's copy of a static pod, which the kubelet never
 * runs.
 *
 * @example
 * ```ts
 * isMirrorPod({ metadata: { annotations: { "kubernetes.io/config.mirror": "abc" } }, spec: { containers: [] } }); // true
 * ```
 */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata?.annotations?.[ConfigMirrorAnnotationKey] !== undefined;
}

/** Pod condition types the kubelet owns (it replaces them in the API status). */
export const PodConditionsByKubelet: readonly string[] = [
  "PodScheduled",
  "Ready",
  "Initialized",
  "ContainersReady",
  "PodReadyToStartContainers",
];

/**
 * Whether the kubelet owns the condition type (its value replaces the API server's).
 *
 * @example
 * ```ts
 * podConditionByKubelet("Ready"); // true
 * podConditionByKubelet("example.com/gate"); // false
 * ```
 */
export function podConditionByKubelet(conditionType: string): boolean {
  return PodConditionsByKubelet.includes(conditionType);
}

/**
 * Whether the condition type is shared between the kubelet and the control plane
 * (`DisruptionTarget`): the kubelet may set it but keeps the API's value otherwise.
 *
 * @example
 * ```ts
 * podConditionSharedByKubelet("DisruptionTarget"); // true
 * ```
 */
export function podConditionSharedByKubelet(conditionType: string): boolean {
  return conditionType === "DisruptionTarget";
}

/**
 * A pod's full name as kubelet keys pods by it: `<name>_<namespace>`.
 *
 * @example
 * ```ts
 * getPodFullName({ metadata: { name: "web", namespace: "default" }, spec: { containers: [] } }); // "web_default"
 * ```
 */
export function getPodFullName(pod: Pod): string {
  return buildPodFullName(pod.metadata?.name ?? "", pod.metadata?.namespace ?? "");
}

/**
 * `<name>_<namespace>` (kubecontainer.BuildPodFullName).
 *
 * @example
 * ```ts
 * buildPodFullName("web", "default"); // "web_default"
 * ```
 */
export function buildPodFullName(name: string, namespace: string): string {
  return `${name}_${namespace}`;
}

/**
 * Splits `<name>_<namespace>` (kubecontainer.ParsePodFullName); throws on anything else.
 *
 * @example
 * ```ts
 * parsePodFullName("web_default"); // { name: "web", namespace: "default" }
 * ```
 */
export function parsePodFullName(fullName: string): { name: string; namespace: string } {
  const parts = fullName.split("_");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") {
    throw new Error(`failed to parse the pod full name "${fullName}"`);
  }
  return { name: parts[0], namespace: parts[1] };
}
