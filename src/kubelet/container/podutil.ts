/**
 * Small pod helpers kubelet takes from pkg/api/v1/pod/util.go and pkg/kubelet/container/helpers.go:
 * restartable init containers, status lookups by name, and container restart rules.
 * @module
 */
import type {
  Container,
  ContainerStatus,
  Pod,
  PodCondition,
  PodSpec,
  PodStatus,
} from "../../api/core/v1/mod.ts";

/**
 * True for an init container with `restartPolicy: Always` (a sidecar), as `podutil.IsRestartableInitContainer`.
 *
 * @example
 * ```ts
 * isRestartableInitContainer({ name: "proxy", restartPolicy: "Always" }); // true
 * ```
 */
export function isRestartableInitContainer(container: Container | undefined): boolean {
  return container?.restartPolicy === "Always";
}

/**
 * The status with the given container name, as `podutil.GetContainerStatus`.
 *
 * @example
 * ```ts
 * getContainerStatus([{ name: "app", ready: true, restartCount: 0 }], "app")?.ready; // true
 * ```
 */
export function getContainerStatus(
  statuses: ContainerStatus[] | undefined,
  name: string,
): ContainerStatus | undefined {
  return statuses?.find((s) => s.name === name);
}

/**
 * The condition of the given type, as `podutil.GetPodConditionFromList`.
 *
 * @example
 * ```ts
 * getPodCondition([{ type: "Ready", status: "True" }], "Ready")?.status; // "True"
 * ```
 */
export function getPodCondition(
  conditions: PodCondition[] | undefined,
  type: string,
): PodCondition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** A container restart rule (KEP-5307), read when the ContainerRestartRules gate is on. */
export interface ContainerRestartRule {
  /** What to do when the rule matches. */
  action: "Restart" | "RestartAllContainers" | string;
  /** Which exit codes match (`In` or `NotIn` the values). */
  exitCodes?: { operator: "In" | "NotIn" | string; values?: number[] };
}

// Container fields newer than the shared API types: restart rules and every container-level policy.
type ContainerWithRules = Omit<Container, "restartPolicy"> & {
  restartPolicy?: string;
  restartPolicyRules?: ContainerRestartRule[];
};

/**
 * The first restart rule of the container that matches the exit code, as
 * `findMatchingContainerRestartRule`.
 *
 * @example
 * ```ts
 * import type { Container } from "../../api/core/v1/mod.ts";
 *
 * declare const container: Container;
 *
 * findMatchingContainerRestartRule(container, 42); // the rule, or undefined
 * ```
 */
export function findMatchingContainerRestartRule(
  container: Container,
  exitCode: number,
): ContainerRestartRule | undefined {
  for (const rule of (container as ContainerWithRules).restartPolicyRules ?? []) {
    if (!rule.exitCodes) continue;
    const matched = (rule.exitCodes.values ?? []).includes(exitCode);
    if (rule.exitCodes.operator === "In" && matched) return rule;
    if (rule.exitCodes.operator === "NotIn" && !matched) return rule;
  }
  return undefined;
}

/**
 * Whether a container that exited with `exitCode` is restarted: its matching restart rules first,
 * then its own restart policy, then the pod's (`podutil.ContainerShouldRestart`).
 *
 * @example
 * ```ts
 * containerShouldRestart({ name: "app" }, { containers: [], restartPolicy: "OnFailure" }, 0); // false
 * ```
 */
export function containerShouldRestart(
  container: Container,
  podSpec: PodSpec,
  exitCode: number,
): boolean {
  const policy = (container as ContainerWithRules).restartPolicy;
  if (policy !== undefined) {
    if (findMatchingContainerRestartRule(container, exitCode)?.action === "Restart") return true;
    switch (policy) {
      case "Always":
        return true;
      case "OnFailure":
        return exitCode !== 0;
      case "Never":
        return false;
    }
  }
  switch (podSpec.restartPolicy) {
    case "OnFailure":
      return exitCode !== 0;
    case "Never":
      return false;
    default: // Always, and the API default when unset.
      return true;
  }
}

/**
 * Whether the whole pod is restarting its containers because one exited under a
 * `RestartAllContainers` rule (kubecontainer.ShouldAllContainersRestart, judged from the API status
 * only, as the worker calls it).
 *
 * @example
 * ```ts
 * import type { Pod, PodStatus } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 * declare const status: PodStatus;
 *
 * shouldAllContainersRestart(pod, status); // false unless a rule says RestartAllContainers
 * ```
 */
export function shouldAllContainersRestart(pod: Pod, status: PodStatus | undefined): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  const restarting = getPodCondition(status?.conditions, "AllContainersRestarting");
  if (restarting?.status === "True") return true;
  const statuses = [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const terminated = getContainerStatus(statuses, c.name)?.state?.terminated;
    if (!terminated) continue;
    const rule = findMatchingContainerRestartRule(c, terminated.exitCode);
    if (rule?.action === "RestartAllContainers") return true;
  }
  return false;
}
