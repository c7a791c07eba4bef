/**
 * The configMap plugin: the keys of a config map (all of them, or `items` to chosen paths) as
 * files with `defaultMode`/`mode`, written by the atomic writer into an emptyDir on disk; a missing
 * config map or key fails the mount unless `optional`.
 * Mirrors kubelet's pkg/volume/configmap/configmap.go (configMapVolumeMounter.SetUpAt,
 * MakePayload, totalBytes).
 * @module
 */
import { decodeBase64 } from "../../util/base64.ts";
import type {
  ConfigMap,
  ConfigMapVolumeSource,
  KeyToPath,
  Pod,
  Volume,
} from "../../api/core/v1/mod.ts";
import { isNotFound } from "../../client/errors.ts";
import * as log from "../../util/log.ts";
import { WrappedVolumeMounter } from "../emptydir/empty_dir.ts";
import type { FileProjection } from "../util/atomic_writer.ts";
import type { Mounter, VolumeHost, VolumePlugin } from "../volume.ts";

/** The plugin's name. */
export const configMapPluginName = "kubernetes.io/configmap";
/** The API's default of `defaultMode` (`ConfigMapVolumeSourceDefaultMode`). */
export const configMapVolumeSourceDefaultMode = 0o644;

const enc = new TextEncoder();

/**
 * The files of a config map volume: every key of `data` and `binaryData` with `defaultMode`, or
 * each of `mappings` at its path with its own mode; a key the config map lacks throws
 * `configmap references non-existent config key: <key>` unless `optional`.
 *
 * @example
 * ```ts
 * makePayload([], { metadata: {}, data: { foo: "foo" } }, 0o644, false);
 * // { foo: { data: <"foo">, mode: 0o644 } }
 * ```
 */
export function makePayload(
  mappings: KeyToPath[] | undefined,
  configMap: ConfigMap,
  defaultMode: number | undefined,
  optional: boolean,
): Record<string, FileProjection> {
  if (defaultMode === undefined) {
    throw new Error("no defaultMode used, not even the default value for it");
  }
  const payload: Record<string, FileProjection> = {};
  const data = configMap.data ?? {};
  const binary = configMap.binaryData ?? {};
  if (!mappings || mappings.length === 0) {
    for (const [name, value] of Object.entries(data)) {
      payload[name] = { data: enc.encode(value), mode: defaultMode };
    }
    for (const [name, value] of Object.entries(binary)) {
      payload[name] = { data: decodeBase64(value), mode: defaultMode };
    }
    return payload;
  }
  for (const ktp of mappings) {
    let bytes: Uint8Array;
    if (Object.hasOwn(data, ktp.key)) bytes = enc.encode(data[ktp.key]);
    else if (Object.hasOwn(binary, ktp.key)) bytes = decodeBase64(binary[ktp.key]);
    else {
      if (optional) continue;
      throw new Error(`configmap references non-existent config key: ${ktp.key}`);
    }
    payload[ktp.path] = { data: bytes, mode: ktp.mode ?? defaultMode };
  }
  return payload;
}

/** The bytes of a config map's data and binary data (kubelet's `totalBytes`, for its log line). */
export function totalBytes(configMap: ConfigMap): number {
  let n = 0;
  for (const v of Object.values(configMap.data ?? {})) n += enc.encode(v).length;
  for (const v of Object.values(configMap.binaryData ?? {})) n += decodeBase64(v).length;
  return n;
}

class ConfigMapVolumeMounter extends WrappedVolumeMounter<ConfigMapVolumeSource> {
  async setUp(): Promise<void> {
    const namespace = this.pod.metadata.namespace ?? "default";
    const name = this.source.name ?? "";
    const optional = this.source.optional === true;
    let configMap: ConfigMap;
    try {
      configMap = await this.host.getConfigMap(namespace, name);
    } catch (e) {
      if (!(isNotFound(e) && optional)) {
        log.error(e, "Couldn't get configMap", { configMap: `${namespace}/${name}` });
        throw e;
      }
      configMap = { metadata: { namespace, name } };
    }
    log.V(3).info("Received configMap", {
      configMap: `${namespace}/${name}`,
      pieces: Object.keys(configMap.data ?? {}).length +
        Object.keys(configMap.binaryData ?? {}).length,
      totalBytes: totalBytes(configMap),
    });
    const payload = makePayload(
      this.source.items,
      configMap,
      this.source.defaultMode ?? configMapVolumeSourceDefaultMode,
      optional,
    );
    await this.writePayload("", payload);
  }
}

/**
 * The configMap plugin.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { VolumeHost } from "../volume.ts";
 *
 * declare const pod: Pod;
 * declare const host: VolumeHost;
 *
 * await configMapPlugin.newMounter({ name: "cfg", configMap: { name: "app" } }, pod, host).setUp();
 * ```
 */
export const configMapPlugin: VolumePlugin = {
  name: configMapPluginName,
  sourceField: "configMap",
  requiresRemount: true,
  newMounter(volume: Volume, pod: Pod, host: VolumeHost): Mounter {
    const source = volume.configMap as ConfigMapVolumeSource;
    return new ConfigMapVolumeMounter({
      pluginName: configMapPluginName,
      source,
      volume,
      pod,
      host,
    });
  },
};
