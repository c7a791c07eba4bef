/**
 * The emptyDir plugin: a folder on the node's disk (`medium: ""`) or a tmpfs (`medium: Memory`,
 * sized by `sizeLimit`), mode 0777, living as long as the pod. Also what secret volumes are built
 * on (a tmpfs, so secrets never touch the disk).
 * Mirrors kubelet's pkg/volume/emptydir/empty_dir.go (emptyDir.SetUpAt, setupDir, setupTmpfs).
 * @module
 */
import type { EmptyDirVolumeSource, Pod, Volume } from "../../api/core/v1/mod.ts";
import { parseQuantity } from "../../api/resource/quantity.ts";
import * as log from "../../util/log.ts";
import { AtomicWriter, type FileProjection } from "../util/atomic_writer.ts";
import {
  isLikelyNotMountPoint,
  type Mounter,
  podVolumeDir,
  runMount,
  type VolumeHost,
  type VolumePlugin,
} from "../volume.ts";

/** The plugin's name. */
export const emptyDirPluginName = "kubernetes.io/empty-dir";
/** kubelet's mode of an emptyDir folder: every container user may write it. */
export const perm = 0o777;

/** `medium` values (kubelet's `StorageMedium`). */
export type StorageMedium = "" | "Memory";

/**
 * Makes `dir` an emptyDir of `medium`: the folder (mode 0777 whatever the umask) and, for
 * `Memory`, a tmpfs mounted on it with `size=<sizeLimit>` when one is given. A tmpfs already
 * mounted there is kept.
 */
export async function setUpEmptyDir(
  dir: string,
  medium: StorageMedium,
  options: { sizeLimitBytes?: number } = {},
): Promise<void> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o750 });
  if (medium === "Memory" && (await isLikelyNotMountPoint(dir))) {
    const opts = options.sizeLimitBytes !== undefined && options.sizeLimitBytes > 0
      ? ["-o", `size=${Math.floor(options.sizeLimitBytes)}`]
      : [];
    log.V(3).info("pod: mounting tmpfs for volume", { dir });
    await runMount("mount", ["-t", "tmpfs", ...opts, "tmpfs", dir]);
  }
  // kubelet's setupDir: the mode past the umask.
  await Deno.chmod(dir, perm);
}

/**
 * The set-up of a volume kubelet wraps in an emptyDir (configMap, secret, downwardAPI, projected):
 * the emptyDir (a tmpfs for `Memory`), then `payload` written through the atomic writer, whose
 * log lines name `pod <ns>/<name> volume <volume>`.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const dir: string;
 * declare const pod: Pod;
 *
 * const payload = { token: { data: new TextEncoder().encode("secret"), mode: 0o644 } };
 * await setUpWrappedEmptyDir(dir, "Memory", { pod, volumeName: "creds" }, payload);
 * ```
 */
export async function setUpWrappedEmptyDir(
  dir: string,
  medium: StorageMedium,
  owner: { pod: Pod; volumeName: string },
  payload: Record<string, FileProjection>,
): Promise<void> {
  await setUpEmptyDir(dir, medium);
  const { metadata } = owner.pod;
  const context = `pod ${
    metadata.namespace ?? "default"
  }/${metadata.name} volume ${owner.volumeName}`;
  await new AtomicWriter(dir, context).write(payload);
}

/**
 * The mounter of a volume kubelet wraps in an emptyDir (configMap, secret, projected,
 * downwardAPI): its folder, the pod and host it reads, and {@link setUpWrappedEmptyDir} for the
 * files. Each plugin's mounter (Go: `<plugin>VolumeMounter`, wrapping an emptyDir through its
 * host's `NewWrapperMounter`) gives the plugin's source and `setUp`.
 *
 * @example
 * ```ts
 * import type { SecretVolumeSource } from "../../api/core/v1/mod.ts";
 *
 * class TokenMounter extends WrappedVolumeMounter<SecretVolumeSource> {
 *   setUp(): Promise<void> {
 *     return this.writePayload("Memory", { token: { data: new Uint8Array(), mode: 0o600 } });
 *   }
 * }
 * ```
 */
export abstract class WrappedVolumeMounter<S> implements Mounter {
  /** The plugin's part of the volume (`volume.configMap`, `volume.secret`, ...). */
  protected readonly source: S;
  /** The volume's name in the pod. */
  protected readonly volumeName: string;
  /** The pod the volume belongs to. */
  protected readonly pod: Pod;
  /** Where the plugin reads API objects. */
  protected readonly host: VolumeHost;
  readonly #dir: string;

  /** The mounter of `volume` of `pod` for the plugin named `pluginName`. */
  constructor(
    options: { pluginName: string; source: S; volume: Volume; pod: Pod; host: VolumeHost },
  ) {
    const { pluginName, source, volume, pod, host } = options;
    this.#dir = podVolumeDir(host, { pod, pluginName, volumeName: volume.name });
    this.source = source;
    this.volumeName = volume.name;
    this.pod = pod;
    this.host = host;
  }

  /** The volume's folder. */
  getPath(): string {
    return this.#dir;
  }

  /** Sets the volume up: fetches what it projects and calls {@link writePayload}. */
  abstract setUp(): Promise<void>;

  /** Sets up the emptyDir of `medium` at the path and writes `payload` into it. */
  protected writePayload(
    medium: StorageMedium,
    payload: Record<string, FileProjection>,
  ): Promise<void> {
    return setUpWrappedEmptyDir(this.#dir, medium, {
      pod: this.pod,
      volumeName: this.volumeName,
    }, payload);
  }
}

/** Unmounts a tmpfs at `dir` if there is one, then removes the folder (kubelet's TearDownAt). */
export async function tearDownEmptyDir(dir: string): Promise<void> {
  if (!(await isLikelyNotMountPoint(dir))) await runMount("umount", [dir]);
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

class EmptyDirMounter {
  readonly #dir: string;
  readonly #source: EmptyDirVolumeSource;

  constructor(dir: string, source: EmptyDirVolumeSource) {
    this.#dir = dir;
    this.#source = source;
  }

  getPath(): string {
    return this.#dir;
  }

  async setUp(): Promise<void> {
    const medium = (this.#source.medium ?? "") as StorageMedium;
    if (medium !== "" && medium !== "Memory") {
      throw new Error(`unknown storage medium "${medium}"`);
    }
    const limit = this.#source.sizeLimit;
    await setUpEmptyDir(this.#dir, medium, {
      sizeLimitBytes: limit === undefined ? undefined : parseQuantity(String(limit)),
    });
  }
}

/**
 * The emptyDir plugin.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { VolumeHost } from "../volume.ts";
 *
 * declare const pod: Pod;
 * declare const host: VolumeHost;
 *
 * const m = emptyDirPlugin.newMounter({ name: "cache", emptyDir: {} }, pod, host);
 * await m.setUp(); // <pods>/<uid>/volumes/kubernetes.io~empty-dir/cache, mode 0777
 * ```
 */
export const emptyDirPlugin: VolumePlugin = {
  name: emptyDirPluginName,
  sourceField: "emptyDir",
  requiresRemount: false,
  newMounter(volume: Volume, pod: Pod, host: VolumeHost): Mounter {
    const dir = podVolumeDir(host, {
      pod,
      pluginName: emptyDirPluginName,
      volumeName: volume.name,
    });
    return new EmptyDirMounter(dir, (volume.emptyDir ?? {}) as EmptyDirVolumeSource);
  },
};
