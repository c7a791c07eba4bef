/**
 * The hostPath plugin: a path of the node given to the pod as is, after the `type` check
 * (`DirectoryOrCreate` and `FileOrCreate` create what is missing with kubelet's modes).
 * Mirrors kubelet's pkg/volume/hostpath/host_path.go (hostPathMounter.SetUp, checkType,
 * checkTypeInternal, makeDir, makeFile).
 * @module
 */
import type { HostPathVolumeSource, Pod, Volume } from "../../api/core/v1/mod.ts";
import type { Mounter, VolumeHost, VolumePlugin } from "../volume.ts";

/** The plugin's name. */
export const hostPathPluginName = "kubernetes.io/host-path";

/** `hostPath.type` values (kubelet's `HostPathType`). */
export type HostPathType =
  | ""
  | "DirectoryOrCreate"
  | "Directory"
  | "FileOrCreate"
  | "File"
  | "Socket"
  | "CharDevice"
  | "BlockDevice";

// What a path is, as kubelet's fileTypeChecker asks (after following symlinks).
async function statOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/**
 * Checks (or, for the `OrCreate` types, creates) `path` as `type` asks; throws kubelet's
 * `hostPath type check failed: <path> is not a directory` and friends.
 *
 * @example
 * ```ts
 * await checkType("/var/log", "Directory"); // ok
 * await checkType("/etc/hostname", "Directory"); // throws "hostPath type check failed: /etc/hostname is not a directory"
 * ```
 */
export async function checkType(path: string, type: string): Promise<void> {
  if (type === "") return;
  const info = await statOrUndefined(path);
  switch (type) {
    case "DirectoryOrCreate":
      if (!info) return await Deno.mkdir(path, { recursive: true, mode: 0o755 });
      // falls through
    case "Directory":
      if (!info?.isDirectory) {
        throw new Error(`hostPath type check failed: ${path} is not a directory`);
      }
      return;
    case "FileOrCreate":
      if (!info) {
        const f = await Deno.open(path, { create: true, write: true, mode: 0o644 });
        f.close();
        return;
      }
      // falls through
    case "File":
      if (!info?.isFile) throw new Error(`hostPath type check failed: ${path} is not a file`);
      return;
    case "Socket":
      if (!info?.isSocket) {
        throw new Error(`hostPath type check failed: ${path} is not a socket file`);
      }
      return;
    case "CharDevice":
      if (!info?.isCharDevice) {
        throw new Error(`hostPath type check failed: ${path} is not a character device`);
      }
      return;
    case "BlockDevice":
      if (!info?.isBlockDevice) {
        throw new Error(`hostPath type check failed: ${path} is not a block device`);
      }
      return;
    default:
      throw new Error(`${type} is an invalid volume type`);
  }
}

class HostPathMounter {
  readonly #source: HostPathVolumeSource;

  constructor(source: HostPathVolumeSource) {
    this.#source = source;
  }

  getPath(): string {
    return this.#source.path;
  }

  async setUp(): Promise<void> {
    await checkType(this.#source.path, this.#source.type ?? "");
  }
}

/**
 * The hostPath plugin.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { VolumeHost } from "../volume.ts";
 *
 * declare const pod: Pod;
 * declare const host: VolumeHost;
 *
 * const m = hostPathPlugin.newMounter({ name: "logs", hostPath: { path: "/var/log", type: "Directory" } }, pod, host);
 * await m.setUp();
 * m.getPath(); // "/var/log"
 * ```
 */
export const hostPathPlugin: VolumePlugin = {
  name: hostPathPluginName,
  sourceField: "hostPath",
  requiresRemount: false,
  newMounter(volume: Volume, _pod: Pod, _host: VolumeHost): Mounter {
    return new HostPathMounter(volume.hostPath as HostPathVolumeSource);
  },
};
