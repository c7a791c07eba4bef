/**
 * Where a pod's container logs go: `<podLogsDir>/<namespace>_<name>_<uid>/<container>/<n>.log`.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/helpers.go (`BuildPodLogsDirectory`,
 * `BuildContainerLogsDirectory`), with every name checked to stay one path segment.
 * @module
 */
import { joinInside } from "../../util/path.ts";

/**
 * The name of a pod's log folder, `<namespace>_<name>_<uid>` (validation checks it fits a file
 * name before the pod is accepted).
 *
 * @example
 * ```ts
 * podLogsDirectoryName("default", "web-node", "1234"); // "default_web-node_1234"
 * ```
 */
export function podLogsDirectoryName(namespace: string, name: string, uid: string): string {
  return [namespace, name, uid].join("_");
}

/**
 * kubelet's `BuildPodLogsDirectory`: the pod's log folder under `podLogsDir`; throws when a name
 * would leave it.
 *
 * @example
 * ```ts
 * buildPodLogsDirectory("/root/pods", { namespace: "default", name: "web", uid: "1234" });
 * // "/root/pods/default_web_1234"
 * ```
 */
export function buildPodLogsDirectory(
  podLogsDir: string,
  pod: { namespace: string; name: string; uid: string },
): string {
  return joinInside(podLogsDir, podLogsDirectoryName(pod.namespace, pod.name, pod.uid));
}

/**
 * kubelet's `BuildContainerLogsDirectory` (the folder part): `<pod log folder>/<container>`.
 *
 * @example
 * ```ts
 * buildContainerLogsDirectory("/root/pods/default_web_1234", "app"); // "/root/pods/default_web_1234/app"
 * ```
 */
export function buildContainerLogsDirectory(
  podLogsDirectory: string,
  containerName: string,
): string {
  return joinInside(podLogsDirectory, containerName);
}
