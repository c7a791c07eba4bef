/**
 * The volume manager: the volumes each pod bound here needs (desired state), the ones set up on
 * disk (actual state), `waitForAttachAndMount` before a pod's containers start, and teardown
 * when a pod goes. A volume that cannot be set up raises kubelet's `FailedMount` event
 * (`MountVolume.SetUp failed for volume "cfg" : configmaps "cfg" not found`) and keeps the pod
 * from starting; the next sync retries. Volumes whose content follows the API (configMap, secret,
 * downwardAPI, projected) are set up again at every sync, as kubelet remounts them, so an update
 * reaches the files through the atomic writer's `..data` swap and tokens are renewed.
 *
 * Mirrors kubelet's pkg/kubelet/volumemanager/volume_manager.go (WaitForAttachAndMount,
 * GetMountedVolumesForPod, getUnmountedVolumes) with cache/desired_state_of_world.go and
 * actual_state_of_world.go folded in; the reconciler's loop runs inline in the pod's sync instead
 * of on its own 100 ms period.
 * @module
 */
import type { Pod, Volume } from "../../api/core/v1/mod.ts";
import * as log from "../../util/log.ts";
import { joinInside } from "../../util/path.ts";
import { configMapPlugin } from "../../volume/configmap/configmap.ts";
import { downwardAPIPlugin } from "../../volume/downwardapi/downwardapi.ts";
import { emptyDirPlugin, tearDownEmptyDir } from "../../volume/emptydir/empty_dir.ts";
import { hostPathPlugin } from "../../volume/hostpath/host_path.ts";
import { projectedPlugin } from "../../volume/projected/projected.ts";
import { secretPlugin } from "../../volume/secret/secret.ts";
import {
  listMountPoints,
  runMount,
  type VolumeHost,
  type VolumePlugin,
} from "../../volume/volume.ts";
import type { EventRecorder } from "../events/mod.ts";
import { getPodReference } from "../container/ref.ts";

/** kubelet's event reason of a volume that could not be set up (`FailedMountVolume`). */
export const FailedMountVolume = "FailedMount";

/** The plugins this node has, in kubelet's probe order. */
export const probeVolumePlugins: readonly VolumePlugin[] = [
  emptyDirPlugin,
  hostPathPlugin,
  secretPlugin,
  configMapPlugin,
  downwardAPIPlugin,
  projectedPlugin,
];

/** A volume set up for a pod: where it is on the node (kubelet's `MountedVolume`). */
export interface MountedVolume {
  /** The node path bind-mounted into containers. */
  path: string;
  pluginName: string;
}

/** Options of {@linkcode VolumeManager}. */
export interface VolumeManagerOptions {
  host: VolumeHost;
  recorder: EventRecorder;
  /** Default: {@linkcode probeVolumePlugins}. */
  plugins?: readonly VolumePlugin[];
}

/**
 * Sets up and tears down the volumes of the pods bound here (kubelet's `VolumeManager`).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { EventRecorder } from "../events/event.ts";
 * import type { VolumeHost } from "../../volume/volume.ts";
 *
 * declare const host: VolumeHost;
 * declare const recorder: EventRecorder;
 * declare const pod: Pod;
 *
 * const vm = new VolumeManager({ host, recorder });
 * await vm.waitForAttachAndMount(pod); // throws when a volume cannot be set up
 * vm.getMountedVolumesForPod(pod.metadata.uid!).get("cfg")!.path;
 * await vm.unmountPodVolumes(pod.metadata.uid!);
 * ```
 */
export class VolumeManager {
  readonly #host: VolumeHost;
  readonly #recorder: EventRecorder;
  readonly #plugins: readonly VolumePlugin[];
  /** Actual state of the world: per pod UID, the volumes set up, by name. */
  readonly #mounted = new Map<string, Map<string, MountedVolume>>();

  /** A manager with nothing mounted yet. */
  constructor(options: VolumeManagerOptions) {
    this.#host = options.host;
    this.#recorder = options.recorder;
    this.#plugins = options.plugins ?? probeVolumePlugins;
  }

  /** The plugin serving `volume`, if this node has one (kubelet's `FindPluginBySpec`). */
  findPluginBySpec(volume: Volume): VolumePlugin | undefined {
    return this.#plugins.find((p) =>
      volume[p.sourceField] !== undefined && volume[p.sourceField] !== null
    );
  }

  /**
   * Sets up every volume of `pod` that is not set up yet, and again those whose content follows
   * the API. Each failure raises a `FailedMount` event with kubelet's message; when any failed,
   * throws `unmounted volumes=[a b], unattached volumes=[], failed to process volumes=[]: <why>`.
   */
  async waitForAttachAndMount(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid ?? "";
    const mounted = this.#mounted.get(uid) ?? new Map<string, MountedVolume>();
    this.#mounted.set(uid, mounted);
    const unmounted: string[] = [];
    let firstError: Error | undefined;
    for (const volume of pod.spec.volumes ?? []) {
      const plugin = this.findPluginBySpec(volume);
      if (!plugin) {
        unmounted.push(volume.name);
        firstError ??= new Error(`no volume plugin matched volume "${volume.name}"`);
        continue;
      }
      if (mounted.has(volume.name) && !plugin.requiresRemount) continue;
      const mounter = plugin.newMounter(volume, pod, this.#host);
      try {
        await mounter.setUp();
      } catch (e) {
        const message = `MountVolume.SetUp failed for volume "${volume.name}" : ${
          (e as Error).message
        }`;
        log.error(e, "MountVolume.SetUp failed", { pod: podKey(pod), volumeName: volume.name });
        this.#recorder.event(getPodReference(pod), {
          type: "Warning",
          reason: FailedMountVolume,
          message,
        });
        // A volume already mounted stays usable: its remount failing is reported, but the pod's
        // containers are not held back (kubelet's WaitForAttachAndMount only waits for volumes
        // not yet in the actual state).
        if (!mounted.has(volume.name)) {
          unmounted.push(volume.name);
          firstError ??= e as Error;
        }
        continue;
      }
      if (!mounted.has(volume.name)) {
        log.V(3).info("MountVolume.SetUp succeeded", { pod: podKey(pod), volumeName: volume.name });
      }
      mounted.set(volume.name, { path: mounter.getPath(), pluginName: plugin.name });
    }
    if (unmounted.length > 0) {
      throw new Error(
        `unmounted volumes=[${unmounted.join(" ")}], unattached volumes=[], failed to process ` +
          `volumes=[]: ${firstError?.message}`,
      );
    }
  }

  /** The volumes set up for the pod with this UID, by volume name. */
  getMountedVolumesForPod(podUID: string): ReadonlyMap<string, MountedVolume> {
    return this.#mounted.get(podUID) ?? new Map();
  }

  /**
   * Tears down every volume of the pod (a tmpfs unmounted, the folder removed; a hostPath left
   * alone), then removes the pod's folder `<pods>/<uid>`. Kubelet's reconciler unmount plus
   * `cleanupOrphanedPodDirs` for a pod it knew.
   */
  async unmountPodVolumes(podUID: string): Promise<void> {
    const mounted = this.#mounted.get(podUID);
    for (const [name, v] of mounted ?? []) {
      if (v.pluginName === hostPathPlugin.name) {
        mounted!.delete(name);
        continue;
      }
      await tearDownEmptyDir(v.path);
      mounted!.delete(name);
      log.V(3).info("UnmountVolume.TearDown succeeded", { podUID, volumeName: name });
    }
    this.#mounted.delete(podUID);
    await removePodDir(this.#host.podsDir, podUID);
  }
}

/**
 * Removes `<pods>/<uid>` after unmounting whatever is still mounted under it, deepest first.
 * Kubelet's reconstruction unmounts volumes of pods it no longer knows before
 * `cleanupOrphanedPodDirs` removes the folder; this does both.
 */
export async function removePodDir(podsDir: string, podUID: string): Promise<void> {
  const dir = joinInside(podsDir, podUID);
  const inside = (await listMountPoints()).filter((m) => m.startsWith(dir + "/"))
    .sort((a, b) => b.length - a.length);
  for (const m of inside) await runMount("umount", [m]);
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

function podKey(pod: Pod): string {
  return `${pod.metadata.namespace ?? "default"}/${pod.metadata.name ?? ""}`;
}
