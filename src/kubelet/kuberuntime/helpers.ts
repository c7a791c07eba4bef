/**
 * Where a pod's container logs go: `<podLogsDir>/<namespace>_<name>_<uid>/<container>/<n>.log`;
 * which seccomp profile a container gets; the user an image runs as.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/helpers.go (`BuildPodLogsDirectory`,
 * `BuildContainerLogsDirectory`, `getSeccompProfile`, `fieldSeccompProfile`, `getImageUser`), with every name
 * checked to stay one path segment.
 * @module
 */
import type { PodSecurityContext, SeccompProfile, SecurityContext } from "../../api/core/v1/mod.ts";
import type { SecurityProfile } from "../../cri_client/api.ts";
import type { ImageManagerService } from "../../cri_client/runtime_service.ts";
import { join } from "node:path";
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

/**
 * kubelet's `getSeccompProfile`: the container's profile, else the pod's, else RuntimeDefault with
 * `--seccomp-default` and Unconfined without.
 *
 * @example
 * ```ts
 * getSeccompProfile(undefined, { seccompProfile: { type: "RuntimeDefault" } }, {
 *   seccompProfileRoot: "/var/lib/kubelet/seccomp", seccompDefault: false,
 * }); // { profileType: "RuntimeDefault" }
 * ```
 */
export function getSeccompProfile(
  podSecContext: PodSecurityContext | undefined,
  containerSecContext: SecurityContext | undefined,
  options: { seccompProfileRoot: string; seccompDefault: boolean },
): SecurityProfile {
  if (containerSecContext?.seccompProfile) {
    return fieldSeccompProfile(containerSecContext.seccompProfile, options);
  }
  if (podSecContext?.seccompProfile) {
    return fieldSeccompProfile(podSecContext.seccompProfile, options);
  }
  return { profileType: options.seccompDefault ? "RuntimeDefault" : "Unconfined" };
}

/**
 * kubelet's `fieldSeccompProfile`: a `seccompProfile` field as a CRI profile; a `Localhost`
 * profile is a file under the seccomp root and must be named (an error otherwise).
 *
 * @example
 * ```ts
 * fieldSeccompProfile({ type: "Localhost", localhostProfile: "audit.json" }, {
 *   seccompProfileRoot: "/var/lib/kubelet/seccomp", seccompDefault: false,
 * }); // { profileType: "Localhost", localhostRef: "/var/lib/kubelet/seccomp/audit.json" }
 * ```
 */
export function fieldSeccompProfile(
  scmp: SeccompProfile | undefined,
  options: { seccompProfileRoot: string; seccompDefault: boolean },
): SecurityProfile {
  if (!scmp) return { profileType: options.seccompDefault ? "RuntimeDefault" : "Unconfined" };
  if (scmp.type === "RuntimeDefault") return { profileType: "RuntimeDefault" };
  if (scmp.type === "Localhost") {
    if (scmp.localhostProfile) {
      return {
        profileType: "Localhost",
        localhostRef: join(options.seccompProfileRoot, scmp.localhostProfile),
      };
    }
    throw new Error("localhostProfile must be set if seccompProfile type is Localhost.");
  }
  return { profileType: "Unconfined" };
}

/**
 * kubelet's `getImageUser`: the image's uid, or its user name when not numeric; an image without
 * either (or one the runtime does not have) runs as root, uid 0.
 *
 * @example
 * ```ts
 * import type { ImageManagerService } from "../../cri_client/runtime_service.ts";
 *
 * declare const imageService: ImageManagerService;
 *
 * await getImageUser(imageService, "probelet.local/busybox:1"); // { uid: 0, username: "" }
 * ```
 */
export async function getImageUser(
  imageService: Pick<ImageManagerService, "imageStatus">,
  image: string,
): Promise<{ uid: number | undefined; username: string }> {
  const { image: status } = await imageService.imageStatus({ image });
  if (status) {
    if (status.uid !== undefined) return { uid: Number(status.uid.value), username: "" };
    if (status.username !== "") return { uid: undefined, username: status.username };
  }
  return { uid: 0, username: "" };
}
