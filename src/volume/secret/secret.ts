/**
 * The secret plugin: the keys of a secret (all, or `items` to chosen paths) as files with
 * `defaultMode`/`mode`, written by the atomic writer into a tmpfs so secrets never reach the
 * node's disk; a missing secret or key fails the mount unless `optional`.
 * Mirrors kubelet's pkg/volume/secret/secret.go (secretVolumeMounter.SetUpAt, MakePayload,
 * totalSecretBytes).
 * @module
 */
import type { KeyToPath, Pod, Secret, SecretVolumeSource, Volume } from "../../api/core/v1/mod.ts";
import { isNotFound } from "../../client/errors.ts";
import { decodeBase64 } from "../../util/base64.ts";
import * as log from "../../util/log.ts";
import { WrappedVolumeMounter } from "../emptydir/empty_dir.ts";
import type { FileProjection } from "../util/atomic_writer.ts";
import type { Mounter, VolumeHost, VolumePlugin } from "../volume.ts";

/** The plugin's name. */
export const secretPluginName = "kubernetes.io/secret";
/** The API's default of `defaultMode` (`SecretVolumeSourceDefaultMode`). */
export const secretVolumeSourceDefaultMode = 0o644;

/**
 * The files of a secret volume: every key with `defaultMode`, or each of `mappings` at its path
 * with its own mode; a key the secret lacks throws
 * `secret references non-existent secret key: <key>` unless `optional`.
 *
 * @example
 * ```ts
 * makePayload([], { metadata: {}, data: { foo: "Zm9v" } }, 0o644, false);
 * // { foo: { data: <"foo">, mode: 0o644 } }
 * ```
 */
export function makePayload(
  mappings: KeyToPath[] | undefined,
  secret: Secret,
  defaultMode: number | undefined,
  optional: boolean,
): Record<string, FileProjection> {
  if (defaultMode === undefined) {
    throw new Error("no defaultMode used, not even the default value for it");
  }
  const payload: Record<string, FileProjection> = {};
  const data = secret.data ?? {};
  if (!mappings || mappings.length === 0) {
    for (const [name, value] of Object.entries(data)) {
      payload[name] = { data: decodeBase64(value), mode: defaultMode };
    }
    return payload;
  }
  for (const ktp of mappings) {
    if (!Object.hasOwn(data, ktp.key)) {
      if (optional) continue;
      throw new Error(`secret references non-existent secret key: ${ktp.key}`);
    }
    payload[ktp.path] = { data: decodeBase64(data[ktp.key]), mode: ktp.mode ?? defaultMode };
  }
  return payload;
}

/** The bytes of a secret's data (kubelet's `totalSecretBytes`, for its log line). */
export function totalSecretBytes(secret: Secret): number {
  return Object.values(secret.data ?? {}).reduce((n, v) => n + decodeBase64(v).length, 0);
}

class SecretVolumeMounter extends WrappedVolumeMounter<SecretVolumeSource> {
  async setUp(): Promise<void> {
    const namespace = this.pod.metadata.namespace ?? "default";
    const name = this.source.secretName ?? "";
    const optional = this.source.optional === true;
    let secret: Secret;
    try {
      secret = await this.host.getSecret(namespace, name);
    } catch (e) {
      if (!(isNotFound(e) && optional)) {
        log.error(e, "Couldn't get secret", { secret: `${namespace}/${name}` });
        throw e;
      }
      secret = { metadata: { namespace, name } };
    }
    log.V(3).info("Received secret", {
      secret: `${namespace}/${name}`,
      pieces: Object.keys(secret.data ?? {}).length,
      totalBytes: totalSecretBytes(secret),
    });
    const payload = makePayload(
      this.source.items,
      secret,
      this.source.defaultMode ?? secretVolumeSourceDefaultMode,
      optional,
    );
    // kubelet wraps an emptyDir of medium Memory: a tmpfs.
    await this.writePayload("Memory", payload);
  }
}

/**
 * The secret plugin.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { VolumeHost } from "../volume.ts";
 *
 * declare const pod: Pod;
 * declare const host: VolumeHost;
 *
 * await secretPlugin.newMounter({ name: "creds", secret: { secretName: "db" } }, pod, host).setUp();
 * ```
 */
export const secretPlugin: VolumePlugin = {
  name: secretPluginName,
  sourceField: "secret",
  requiresRemount: true,
  newMounter(volume: Volume, pod: Pod, host: VolumeHost): Mounter {
    const source = volume.secret as SecretVolumeSource;
    return new SecretVolumeMounter({ pluginName: secretPluginName, source, volume, pod, host });
  },
};
