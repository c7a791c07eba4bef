/**
 * A container's `volumeMounts` as CRI mounts: each names a volume set up for the pod; `subPath`
 * picks a path inside it (created when missing, and refused when it leads outside the volume),
 * `readOnly` and `mountPropagation` carry over.
 * Mirrors makeMounts and translateMountPropagation in kubelet's pkg/kubelet/kubelet_pods.go (kept
 * in its own file here so that the status half of kubelet_pods.ts and this half change apart).
 * @module
 */
import { join, normalize } from "node:path";
import type { Container, EnvVar, Pod, VolumeMount } from "../api/core/v1/mod.ts";
import type { Mount, MountPropagation } from "../cri_client/api.ts";
import { expand } from "./container/expansion.ts";
import type { MountedVolume } from "./volumemanager/volume_manager.ts";

/**
 * `subPathExpr` with `$(VAR)` expanded from the container's environment; throws kubelet's
 * `missing value for A, B` when a variable is unset or empty (kubelet's
 * `ExpandContainerVolumeMounts` in pkg/kubelet/container/helpers.go).
 *
 * @example
 * ```ts
 * expandContainerVolumeMounts({ name: "v", mountPath: "/x", subPathExpr: "logs/$(POD)" }, [{ name: "POD", value: "web" }]);
 * // "logs/web"
 * ```
 */
export function expandContainerVolumeMounts(mount: VolumeMount, envs: EnvVar[]): string {
  const env = new Map<string, string>();
  for (const e of envs) env.set(e.name, e.value ?? "");
  const missing = new Set<string>();
  const expanded = expand(mount.subPathExpr ?? "", (key) => {
    const value = env.get(key);
    if (!value) missing.add(key);
    return value ?? "";
  });
  if (missing.size > 0) throw new Error(`missing value for ${[...missing].sort().join(", ")}`);
  return expanded;
}

/**
 * The CRI propagation of a `mountPropagation` (kubelet's `translateMountPropagation`); throws for
 * `Bidirectional` on a container that is not privileged, and for unknown values.
 */
export function translateMountPropagation(
  propagation: string | undefined,
  privileged: boolean,
): MountPropagation {
  switch (propagation ?? "None") {
    case "None":
      return "PROPAGATION_PRIVATE";
    case "HostToContainer":
      return "PROPAGATION_HOST_TO_CONTAINER";
    case "Bidirectional":
      if (!privileged) {
        throw new Error(
          "Bidirectional mount propagation is available only to privileged containers",
        );
      }
      return "PROPAGATION_BIDIRECTIONAL";
    default:
      throw new Error(`invalid MountPropagation mode: ${propagation}`);
  }
}

/**
 * The CRI mounts of `container` (kubelet's `makeMounts`), from the volumes set up for `pod`.
 * Throws kubelet's `cannot find volume "x" to mount into container "y"` for a volume that is not
 * set up, and refuses a `subPath` that is absolute, holds `..`, or resolves (through symlinks)
 * outside its volume.
 *
 * @example
 * ```ts
 * import type { Container, Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 * declare const container: Container;
 * declare const uid: string;
 *
 * import type { VolumeManager } from "./volumemanager/volume_manager.ts";
 *
 * declare const volumeManager: VolumeManager;
 * await makeMounts(pod, container, volumeManager.getMountedVolumesForPod(uid));
 * // [{ containerPath: "/etc/config", hostPath: ".../kubernetes.io~configmap/cfg", readonly: true, propagation: "PROPAGATION_PRIVATE" }]
 * ```
 */
export async function makeMounts(
  _pod: Pod,
  container: Container,
  podVolumes: ReadonlyMap<string, MountedVolume>,
): Promise<Mount[]> {
  const mounts: Mount[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const vol = podVolumes.get(mount.name ?? "");
    if (!vol) {
      throw new Error(
        `cannot find volume "${mount.name}" to mount into container "${container.name}"`,
      );
    }
    let hostPath = vol.path;
    // The environment is the container's `env` values: `valueFrom` is refused at admission until
    // the environment is built (issue 16 item 4).
    const subPath = mount.subPathExpr
      ? expandContainerVolumeMounts(mount, container.env ?? [])
      : mount.subPath;
    if (subPath) {
      const sub = subPath;
      if (sub.startsWith("/")) {
        throw new Error(`error SubPath \`${sub}\` must not be an absolute path`);
      }
      if (normalize(sub).split("/").includes("..")) {
        throw new Error(`unable to provision SubPath \`${sub}\`: must not contain '..'`);
      }
      hostPath = join(vol.path, sub);
      try {
        await Deno.lstat(hostPath);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
        const perm = (await Deno.stat(vol.path)).mode! & 0o7777;
        await Deno.mkdir(hostPath, { recursive: true, mode: perm });
      }
      const [real, base] = [await Deno.realPath(hostPath), await Deno.realPath(vol.path)];
      if (real !== base && !real.startsWith(base + "/")) {
        throw new Error(`subpath "${hostPath}" not within volume path "${vol.path}"`);
      }
      hostPath = real;
    }
    const privileged = container.securityContext?.privileged === true;
    mounts.push({
      containerPath: mount.mountPath ?? "",
      hostPath,
      readonly: mount.readOnly === true,
      selinuxRelabel: false,
      propagation: translateMountPropagation(mount.mountPropagation, privileged),
    });
  }
  return mounts;
}
