/**
 * The downwardAPI plugin: pod fields (`metadata.name`, `metadata.labels`, ...) and container
 * resources as files, written by the atomic writer into an emptyDir on disk.
 * Mirrors kubelet's pkg/volume/downwardapi/downwardapi.go (downwardAPIVolumeMounter.SetUpAt,
 * CollectData).
 * @module
 */
import { normalize } from "node:path";
import type {
  DownwardAPIVolumeFile,
  DownwardAPIVolumeSource,
  Pod,
  Volume,
} from "../../api/core/v1/mod.ts";
import {
  extractFieldPathAsString,
  extractResourceValueByContainerName,
} from "../../util/fieldpath.ts";
import * as log from "../../util/log.ts";
import { WrappedVolumeMounter } from "../emptydir/empty_dir.ts";
import type { FileProjection } from "../util/atomic_writer.ts";
import type { Mounter, VolumeHost, VolumePlugin } from "../volume.ts";

/** The plugin's name. */
export const downwardAPIPluginName = "kubernetes.io/downward-api";
/** The API's default of `defaultMode` (`DownwardAPIVolumeSourceDefaultMode`). */
export const downwardAPIVolumeSourceDefaultMode = 0o644;

const enc = new TextEncoder();

/**
 * The files of downward API `items`: each field's value (or resource, scaled by its divisor) at
 * its cleaned path, with its mode or `defaultMode`. Every failing item is collected; the error
 * thrown joins their messages (Go's aggregate: `[a, b]` for more than one).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { VolumeHost } from "../volume.ts";
 *
 * declare const pod: Pod;
 * declare const host: VolumeHost;
 *
 * collectData([{ path: "name", fieldRef: { fieldPath: "metadata.name" } }], pod, host, 0o644);
 * ```
 */
export function collectData(
  items: DownwardAPIVolumeFile[] | undefined,
  pod: Pod,
  host: Pick<VolumeHost, "getNodeAllocatable">,
  defaultMode: number | undefined,
): Record<string, FileProjection> {
  if (defaultMode === undefined) {
    throw new Error("no defaultMode used, not even the default value for it");
  }
  const errors: Error[] = [];
  const data: Record<string, FileProjection> = {};
  for (const item of items ?? []) {
    const file: FileProjection = { data: new Uint8Array(), mode: item.mode ?? defaultMode };
    try {
      if (item.fieldRef) {
        file.data = enc.encode(extractFieldPathAsString(pod, item.fieldRef.fieldPath));
      } else if (item.resourceFieldRef) {
        const ref = item.resourceFieldRef;
        file.data = enc.encode(
          extractResourceValueByContainerName(
            ref,
            pod,
            ref.containerName ?? "",
            host.getNodeAllocatable(),
          ),
        );
      }
    } catch (e) {
      log.error(e, "Unable to extract field", { path: item.path });
      errors.push(e as Error);
    }
    data[normalize(item.path)] = file;
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new Error(`[${errors.map((e) => e.message).join(", ")}]`);
  return data;
}

class DownwardAPIVolumeMounter extends WrappedVolumeMounter<DownwardAPIVolumeSource> {
  async setUp(): Promise<void> {
    const payload = collectData(
      this.source.items,
      this.pod,
      this.host,
      this.source.defaultMode ?? downwardAPIVolumeSourceDefaultMode,
    );
    await this.writePayload("", payload);
  }
}

/**
 * The downwardAPI plugin.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { VolumeHost } from "../volume.ts";
 *
 * declare const pod: Pod;
 * declare const host: VolumeHost;
 *
 * await downwardAPIPlugin.newMounter({
 *   name: "info",
 *   downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] },
 * }, pod, host).setUp();
 * ```
 */
export const downwardAPIPlugin: VolumePlugin = {
  name: downwardAPIPluginName,
  sourceField: "downwardAPI",
  requiresRemount: true,
  newMounter(volume: Volume, pod: Pod, host: VolumeHost): Mounter {
    const source = volume.downwardAPI as DownwardAPIVolumeSource;
    return new DownwardAPIVolumeMounter({
      pluginName: downwardAPIPluginName,
      source,
      volume,
      pod,
      host,
    });
  },
};
