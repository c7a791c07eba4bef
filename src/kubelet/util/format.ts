/**
 * How kubelet names a pod in messages and logs.
 * Mirrors kubelet's pkg/kubelet/util/format/pod.go.
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";

/**
 * kubelet's `format.Pod`: `<name>_<namespace>(<uid>)`.
 *
 * @example
 * ```ts
 * formatPod({ metadata: { name: "web", namespace: "default", uid: "1234" }, spec: { containers: [] } });
 * // "web_default(1234)"
 * ```
 */
export function formatPod(pod: Pod): string {
  const m = pod.metadata ?? {};
  return `${m.name ?? ""}_${m.namespace ?? ""}(${m.uid ?? ""})`;
}
