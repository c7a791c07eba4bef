/**
 * What a volume plugin is and what it needs from the node: a plugin makes a `Mounter` for one
 * volume of one pod; the mounter sets the volume up at its folder under the pod's folder
 * (`<root-dir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>`) and tears it down.
 * Mirrors kubelet's pkg/volume/plugins.go (VolumePlugin, VolumeHost) and volume.go (Mounter,
 * Unmounter), reduced to the in-tree plugins probelet has.
 * @module
 */
import type { Pod, Volume } from "../api/core/v1/mod.ts";
import type { ConfigMap, Secret, TokenRequest } from "../api/core/v1/mod.ts";
import { joinInside } from "../util/path.ts";

/** What plugins read from the node and the API server (kubelet's `VolumeHost`). */
export interface VolumeHost {
  /** `<root-dir>/pods`. */
  podsDir: string;
  /** A config map of a pod bound here (kubelet's configmap manager). */
  getConfigMap(namespace: string, name: string): Promise<ConfigMap>;
  /** A secret of a pod bound here (kubelet's secret manager). */
  getSecret(namespace: string, name: string): Promise<Secret>;
  /** A token for a service account, bound to a pod (kubelet's token manager). */
  getServiceAccountToken(namespace: string, name: string, tr: TokenRequest): Promise<TokenRequest>;
  /** The node's allocatable resources (`cpu`, `memory`, ...), for resourceFieldRef defaults. */
  getNodeAllocatable(): Record<string, string>;
}

/** Sets up and tears down one volume of one pod (kubelet's `Mounter` and `Unmounter`). */
export interface Mounter {
  /** The folder the volume lives in, bind-mounted into containers. */
  getPath(): string;
  /** Sets the volume up at its path; safe to call again (an update of its content). */
  setUp(): Promise<void>;
}

/** An in-tree volume plugin (kubelet's `VolumePlugin`). */
export interface VolumePlugin {
  /** `kubernetes.io/configmap`, ... */
  readonly name: string;
  /** The source field of a pod's volume this plugin serves (`configMap`). */
  readonly sourceField: Exclude<keyof Volume, "name">;
  /**
   * Whether the volume's content follows the API and is set up again at every pod sync
   * (kubelet's `RequiresRemount`).
   */
  readonly requiresRemount: boolean;
  /** A mounter for `volume` of `pod`. */
  newMounter(volume: Volume, pod: Pod, host: VolumeHost): Mounter;
}

/** `kubernetes.io/configmap` → `kubernetes.io~configmap` (kubelet's `EscapeQualifiedName`). */
export function escapeQualifiedName(name: string): string {
  return name.replaceAll("/", "~");
}

/**
 * The folder of a pod's volume: `<pods>/<uid>/volumes/<escaped plugin>/<volume>` (kubelet's
 * `getPodVolumeDir`). Names from the pod stay one path segment each.
 *
 * @example
 * ```ts
 * getPodVolumeDir("/var/lib/probelet/pods", "1234", "kubernetes.io/configmap", "cfg");
 * // "/var/lib/probelet/pods/1234/volumes/kubernetes.io~configmap/cfg"
 * ```
 */
export function getPodVolumeDir(
  podsDir: string,
  podUID: string,
  pluginName: string,
  volumeName: string,
): string {
  return joinInside(podsDir, podUID, "volumes", escapeQualifiedName(pluginName), volumeName);
}

/**
 * The folder a plugin sets up `pod`'s volume in: {@link getPodVolumeDir} under the host's pods
 * folder and the pod's UID (each kubelet plugin's `getPath`, which asks its host's
 * `GetPodVolumeDir`).
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const host: VolumeHost;
 * declare const pod: Pod;
 *
 * podVolumeDir(host, { pod, pluginName: "kubernetes.io/secret", volumeName: "creds" });
 * ```
 */
export function podVolumeDir(
  host: VolumeHost,
  options: { pod: Pod; pluginName: string; volumeName: string },
): string {
  const { pod, pluginName, volumeName } = options;
  return getPodVolumeDir(host.podsDir, pod.metadata.uid ?? "", pluginName, volumeName);
}

/** Whether `dir` is not a mount point of this mount namespace (per /proc/self/mountinfo). */
export async function isLikelyNotMountPoint(dir: string): Promise<boolean> {
  const mounts = await listMountPoints();
  return !mounts.includes(dir);
}

/** Every mount point of this process's mount namespace, unescaped. */
export async function listMountPoints(): Promise<string[]> {
  const text = await Deno.readTextFile("/proc/self/mountinfo");
  return text.split("\n").filter((l) => l !== "").map((l) =>
    l.split(" ")[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)))
  );
}

/** Runs `mount`/`umount` with `args`; throws kubelet's mount error text on failure. */
export async function runMount(command: "mount" | "umount", args: string[]): Promise<void> {
  const out = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).trim();
    throw new Error(
      `${command} failed: exit status ${out.code}\n${
        command === "mount" ? "Mounting" : "Unmounting"
      } ` +
        `arguments: ${args.join(" ")}\nOutput: ${text}`,
    );
  }
}
