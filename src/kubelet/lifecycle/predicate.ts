/**
 * Node-side admission: before running a pod the API server bound here, check what the scheduler
 * should have checked (node name, node selector and required node affinity, host ports, pod count
 * and cpu/memory requests) and the node's `NoExecute` taints, as kubelet's predicate admit handler
 * does. Probelet adds one rule of its own for the embedded runtime, where a container is a host
 * process: only pods that tolerate the `probelet.io/agent` taint by key are admitted.
 * Mirrors kubelet's pkg/kubelet/lifecycle/predicate.go (generalFilter, Admit) and the scheduler
 * checks it calls (noderesources.Fits, nodeaffinity, nodename, nodeports, FindMatchingUntoleratedTaint).
 * @module
 */
import type { Container, Node, Pod, Taint, Toleration } from "../../api/core/v1/mod.ts";
import { parseQuantity } from "../../api/resource/quantity.ts";
import { isStaticPod } from "../types/pod_update.ts";

/** One requirement of a node selector term (`key`, `operator`, `values`). */
export interface NodeSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" | string;
  values?: string[];
}

/** One term of a node selector: its expressions (labels) and fields (`metadata.name`), ANDed. */
export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** The slice of `spec.affinity` admission reads. */
interface RequiredNodeAffinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] };
  };
}

/** Reason of a pod refused for its pod count (`OutOfpods`). */
export const OutOfPods = "OutOfpods";
/** Reason of a pod refused for its cpu requests. */
export const OutOfCPU = "OutOfcpu";
/** Reason of a pod refused for its memory requests. */
export const OutOfMemory = "OutOfmemory";
/** Reason when the Node object is not known yet. */
export const InvalidNodeInfo = "InvalidNodeInfo";
/** Reason of a pod whose `kubernetes.io/os` label does not match the node's OS. */
export const PodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch";

/** The taint key a pod must tolerate explicitly to run on probelet's embedded runtime. */
export const agentTaintKey = "probelet.io/agent";
/** Reason of a pod refused by the embedded-runtime rule. */
export const AgentTaintNotTolerated = "AgentTaintNotTolerated";

/** Scheduler plugin names and reasons as kubelet reports them. */
const NodeAffinity = {
  name: "NodeAffinity",
  reason: "node(s) didn't match Pod's node affinity/selector",
};
const NodeName = { name: "NodeName", reason: "node(s) didn't match the requested node name" };
const NodePorts = {
  name: "NodePorts",
  reason: "node(s) didn't have free ports for the requested pod ports",
};
const TaintToleration = {
  name: "TaintToleration",
  reason: "node(s) had taints that the pod didn't tolerate",
};

/** The outcome of an admission check (kubelet's `PodAdmitResult`). */
export interface PodAdmitResult {
  admit: boolean;
  /** CamelCase reason of a refusal (the event reason and the pod's `status.reason`). */
  reason?: string;
  /** Why, in words (the pod's message is `Pod was rejected: <message>`). */
  message?: string;
}

/** A failed predicate: a scheduler check's name and its reason. */
export interface PredicateFailureError {
  kind: "predicate";
  predicateName: string;
  predicateDesc: string;
}

/** A resource the node has too little of. */
export interface InsufficientResourceError {
  kind: "resource";
  resourceName: string;
  requested: number;
  used: number;
  capacity: number;
}

/** One reason a pod does not fit. */
export type PredicateFailureReason = PredicateFailureError | InsufficientResourceError;

/**
 * The message of a failure reason, as Go's `Error()` methods word it.
 *
 * @example
 * ```ts
 * failureMessage({ kind: "predicate", predicateName: "NodeName", predicateDesc: "node(s) didn't match the requested node name" });
 * // "Predicate NodeName failed: node(s) didn't match the requested node name"
 * ```
 */
export function failureMessage(r: PredicateFailureReason): string {
  if (r.kind === "predicate") return `Predicate ${r.predicateName} failed: ${r.predicateDesc}`;
  return `Node didn't have enough resource: ${r.resourceName}, requested: ${r.requested}, used: ${r.used}, capacity: ${r.capacity}`;
}

/** What admission looks at besides the pod: the node and the pods already admitted. */
export interface PodAdmitAttributes {
  pod: Pod;
  /** Active pods already admitted on this node. */
  otherPods: Pod[];
}

/** Options of {@linkcode PredicateAdmitHandler}. */
export interface PredicateAdmitOptions {
  /** The node as last seen (the registered Node object); undefined until known. */
  getNode: () => Node | undefined;
  /**
   * Containers are host processes (probelet's embedded runtime): only pods that tolerate
   * {@linkcode agentTaintKey} by key are admitted (static pods excepted).
   */
  requireAgentToleration?: boolean;
  /** The node's operating system (default: `Deno.build.os`). */
  os?: string;
}

/**
 * Kubelet's predicate admit handler.
 *
 * @example
 * ```ts
 * import type { Node, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const node: Node;
 * declare const pod: Pod;
 *
 * const handler = new PredicateAdmitHandler({ getNode: () => node, requireAgentToleration: true });
 * const result = handler.admit({ pod, otherPods: [] });
 * if (!result.admit) console.log(result.reason, result.message);
 * ```
 */
export class PredicateAdmitHandler {
  #options: PredicateAdmitOptions;

  /** Creates the handler; the node is read on every call. */
  constructor(options: PredicateAdmitOptions) {
    this.#options = options;
  }

  /** Decides whether `attrs.pod` may run here; only the first failure is reported, as kubelet does. */
  admit(attrs: PodAdmitAttributes): PodAdmitResult {
    const node = this.#options.getNode();
    if (!node) {
      return { admit: false, reason: InvalidNodeInfo, message: "Kubelet cannot get node info." };
    }
    const pod = attrs.pod;
    if (rejectPodAdmissionBasedOnOSSelector(pod, node, this.#options.os ?? Deno.build.os)) {
      return {
        admit: false,
        reason: PodOSSelectorNodeLabelDoesNotMatch,
        message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
      };
    }
    if (this.#options.requireAgentToleration && !isStaticPod(pod) && !toleratesAgentTaint(pod)) {
      return {
        admit: false,
        reason: AgentTaintNotTolerated,
        message: `pod does not tolerate the taint key "${agentTaintKey}" explicitly; ` +
          "on probelet's embedded runtime containers are host processes, so only pods that " +
          `name this key in a toleration run here`,
      };
    }
    const reasons = generalFilter(pod, { node, pods: attrs.otherPods });
    if (reasons.length === 0) return { admit: true };
    const r = reasons[0];
    if (r.kind === "predicate") {
      return { admit: false, reason: r.predicateName, message: failureMessage(r) };
    }
    const reason = r.resourceName === "cpu"
      ? OutOfCPU
      : r.resourceName === "memory"
      ? OutOfMemory
      : r.resourceName === "pods"
      ? OutOfPods
      : `OutOf${r.resourceName}`;
    return { admit: false, reason, message: failureMessage(r) };
  }
}

/**
 * Whether one of the pod's tolerations names {@linkcode agentTaintKey} as its key. A toleration
 * without a key (`operator: Exists` tolerates every taint) does not count: DaemonSets carry one,
 * and on the embedded runtime their commands would run on the host.
 *
 * @example
 * ```ts
 * toleratesAgentTaint({ metadata: {}, spec: { containers: [], tolerations: [{ operator: "Exists" }] } }); // false
 * ```
 */
export function toleratesAgentTaint(pod: Pod): boolean {
  return (pod.spec.tolerations ?? []).some((t) => t.key === agentTaintKey);
}

/** The node and the pods already on it (the scheduler's NodeInfo, reduced). */
export interface NodeInfo {
  node: Node;
  pods: Pod[];
}

/**
 * The checks kubelet repeats from the scheduler, in its order: resources, node affinity and
 * selector, node name, host ports, then (except for static pods) untolerated `NoExecute` taints.
 *
 * @example
 * ```ts
 * import type { Node, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 * declare const node: Node;
 *
 * generalFilter(pod, { node, pods: [] }); // [] when the pod fits
 * ```
 */
export function generalFilter(pod: Pod, nodeInfo: NodeInfo): PredicateFailureReason[] {
  const reasons: PredicateFailureReason[] = [...fits(pod, nodeInfo)];
  if (!requiredNodeAffinityMatches(pod, nodeInfo.node)) {
    reasons.push(predicate(NodeAffinity));
  }
  const nodeName = pod.spec.nodeName ?? "";
  if (nodeName !== "" && nodeName !== nodeInfo.node.metadata.name) {
    reasons.push(predicate(NodeName));
  }
  if (!nodePortsFit(pod, nodeInfo.pods)) reasons.push(predicate(NodePorts));
  if (!isStaticPod(pod)) {
    const untolerated = findMatchingUntoleratedTaint(
      nodeInfo.node.spec?.taints ?? [],
      pod.spec.tolerations ?? [],
      (t) => t.effect === "NoExecute",
    );
    if (untolerated) reasons.push(predicate(TaintToleration));
  }
  return reasons;
}

function predicate(p: { name: string; reason: string }): PredicateFailureError {
  return { kind: "predicate", predicateName: p.name, predicateDesc: p.reason };
}

/**
 * The first taint passing `filter` that no toleration tolerates.
 *
 * @example
 * ```ts
 * findMatchingUntoleratedTaint([{ key: "a", effect: "NoExecute" }], [], () => true); // the taint
 * ```
 */
export function findMatchingUntoleratedTaint(
  taints: Taint[],
  tolerations: Toleration[],
  filter: (t: Taint) => boolean,
): Taint | undefined {
  return taints.find((taint) =>
    filter(taint) && !tolerations.some((t) => toleratesTaint(t, taint))
  );
}

/**
 * core/v1 `Toleration.ToleratesTaint`: an empty effect or key matches any; `Exists` ignores the
 * value, `Equal` (the default) compares it.
 *
 * @example
 * ```ts
 * toleratesTaint({ key: "a", operator: "Exists" }, { key: "a", value: "x", effect: "NoExecute" }); // true
 * ```
 */
export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? "") {
    case "":
    case "Equal":
      return (toleration.value ?? "") === (taint.value ?? "");
    case "Exists":
      return true;
    default:
      return false;
  }
}

/**
 * `spec.nodeSelector` (every label equal) and the required node affinity terms (any term whose
 * expressions and fields all match), as the scheduler's `GetRequiredNodeAffinity(pod).Match`.
 *
 * @example
 * ```ts
 * requiredNodeAffinityMatches({ metadata: {}, spec: { containers: [], nodeSelector: { disk: "ssd" } } },
 *   { metadata: { name: "n", labels: { disk: "ssd" } } }); // true
 * ```
 */
export function requiredNodeAffinityMatches(pod: Pod, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (labels[k] !== v) return false;
  }
  const affinity = pod.spec.affinity as RequiredNodeAffinity | undefined;
  const required = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  // Terms are ORed; an empty term matches nothing.
  return (required.nodeSelectorTerms ?? []).some((term) => {
    const exprs = term.matchExpressions ?? [];
    const fields = term.matchFields ?? [];
    if (exprs.length === 0 && fields.length === 0) return false;
    return exprs.every((r) => requirementMatches(r, labels)) &&
      fields.every((r) =>
        r.key === "metadata.name" &&
        requirementMatches(r, { "metadata.name": node.metadata.name ?? "" })
      );
  });
}

function requirementMatches(r: NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return has && values.includes(value);
    case "NotIn":
      return !has || !values.includes(value);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt": {
      if (!has || values.length !== 1) return false;
      const left = Number.parseInt(value, 10);
      const right = Number.parseInt(values[0], 10);
      if (!/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0])) return false;
      return r.operator === "Gt" ? left > right : left < right;
    }
    default:
      return false;
  }
}

/** Host ports of the pod's containers (and restartable init containers) as protocol/ip/port. */
function hostPorts(pod: Pod): { protocol: string; ip: string; port: number }[] {
  const containers: Container[] = [
    ...(pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === "Always"),
    ...pod.spec.containers,
  ];
  const out: { protocol: string; ip: string; port: number }[] = [];
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort || p.hostPort <= 0) continue;
      out.push({ protocol: p.protocol ?? "TCP", ip: p.hostIP || "0.0.0.0", port: p.hostPort });
    }
  }
  return out;
}

// nodeports.Fits: a wanted host port conflicts with a used one on the same protocol when either
// side listens on 0.0.0.0 or both on the same IP.
function nodePortsFit(pod: Pod, others: Pod[]): boolean {
  const wanted = hostPorts(pod);
  if (wanted.length === 0) return true;
  const used = others.flatMap(hostPorts);
  return !wanted.some((w) =>
    used.some((u) =>
      u.protocol === w.protocol && u.port === w.port &&
      (u.ip === "0.0.0.0" || w.ip === "0.0.0.0" || u.ip === w.ip)
    )
  );
}

// noderesources.Fits for the pod count, cpu and memory (probelet has no extended resources).
function fits(pod: Pod, nodeInfo: NodeInfo): InsufficientResourceError[] {
  const out: InsufficientResourceError[] = [];
  const allocatable = nodeInfo.node.status?.allocatable ?? {};
  const allowedPods = allocatable.pods !== undefined ? parseQuantity(allocatable.pods) : NaN;
  if (!Number.isNaN(allowedPods) && nodeInfo.pods.length + 1 > allowedPods) {
    out.push({
      kind: "resource",
      resourceName: "pods",
      requested: 1,
      used: nodeInfo.pods.length,
      capacity: allowedPods,
    });
  }
  for (const [resource, scale] of [["cpu", 1000], ["memory", 1]] as const) {
    const request = podRequest(pod, resource, scale);
    const allocated = parseQuantity(allocatable[resource] ?? "");
    if (request === 0 || Number.isNaN(allocated)) continue;
    const capacity = Math.ceil(allocated * scale);
    const used = nodeInfo.pods.reduce((sum, p) => sum + podRequest(p, resource, scale), 0);
    if (request > capacity - used) {
      out.push({ kind: "resource", resourceName: resource, requested: request, used, capacity });
    }
  }
  return out;
}

// The larger of the sum of regular (and sidecar) containers and the largest init container.
function podRequest(pod: Pod, resource: string, scale: number): number {
  const request = (c: Container) => {
    // An unreadable quantity counts as none (the API server refuses those).
    const q = parseQuantity(c.resources?.requests?.[resource] ?? "");
    return Number.isNaN(q) ? 0 : Math.ceil(q * scale);
  };
  let sum = pod.spec.containers.reduce((s, c) => s + request(c), 0);
  let initMax = 0;
  for (const c of pod.spec.initContainers ?? []) {
    if (c.restartPolicy === "Always") sum += request(c);
    else initMax = Math.max(initMax, request(c));
  }
  return Math.max(sum, initMax);
}

/**
 * Kubelet rejects a pod whose `kubernetes.io/os` label names another OS than the node's.
 *
 * @example
 * ```ts
 * import type { Node, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const podWithLabel: (os: string) => Pod;
 * declare const node: Node;
 *
 * rejectPodAdmissionBasedOnOSSelector(podWithLabel("windows"), node, "linux"); // true
 * ```
 */
export function rejectPodAdmissionBasedOnOSSelector(pod: Pod, node: Node, os: string): boolean {
  const wanted = pod.metadata.labels?.["kubernetes.io/os"];
  if (wanted === undefined) return false;
  const nodeOS = node.metadata.labels?.["kubernetes.io/os"];
  return wanted !== (nodeOS === os ? nodeOS : os);
}
