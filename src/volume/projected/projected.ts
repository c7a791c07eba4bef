/**
 * The projected plugin: configMap, secret, downwardAPI and serviceAccountToken sources merged into
 * one volume, written by the atomic writer into a tmpfs. The token comes from the TokenRequest API,
 * bound to the pod, with the source's audience and expiry (kubelet's token manager caches and
 * rotates it). `clusterTrustBundle` and `podCertificate` sources are refused at admission.
 * Mirrors kubelet's pkg/volume/projected/projected.go (projectedVolumeMounter.SetUpAt,
 * collectData).
 * @module
 */
import type {
  ConfigMap,
  Pod,
  ProjectedVolumeSource,
  Secret,
  Volume,
} from "../../api/core/v1/mod.ts";
import { isNotFound } from "../../client/errors.ts";
import * as log from "../../util/log.ts";
import { makePayload as makeConfigMapPayload } from "../configmap/configmap.ts";
import { collectData as collectDownwardAPIData } from "../downwardapi/downwardapi.ts";
import { WrappedVolumeMounter } from "../emptydir/empty_dir.ts";
import { makePayload as makeSecretPayload } from "../secret/secret.ts";
import type { FileProjection } from "../util/atomic_writer.ts";
import type { Mounter, VolumeHost, VolumePlugin } from "../volume.ts";

/** The plugin's name. */
export const projectedPluginName = "kubernetes.io/projected";
/** The API's default of `defaultMode` (`ProjectedVolumeSourceDefaultMode`). */
export const projectedVolumeSourceDefaultMode = 0o644;

/**
 * The files of a projected volume, source by source; a source that fails is collected and the
 * others still read, then the errors are thrown together (Go's aggregate).
 */
export async function collectData(
  source: ProjectedVolumeSource,
  pod: Pod,
  host: VolumeHost,
): Promise<Record<string, FileProjection>> {
  const defaultMode = source.defaultMode ?? projectedVolumeSourceDefaultMode;
  const namespace = pod.metadata.namespace ?? "default";
  const errors: Error[] = [];
  const payload: Record<string, FileProjection> = {};
  for (const s of source.sources ?? []) {
    try {
      if (s.secret) {
        const name = s.secret.name ?? "";
        const optional = s.secret.optional === true;
        let secret: Secret;
        try {
          secret = await host.getSecret(namespace, name);
        } catch (e) {
          if (!(isNotFound(e) && optional)) {
            throw new Error(`Couldn't get secret ${namespace}/${name}: ${(e as Error).message}`);
          }
          secret = { metadata: { namespace, name } };
        }
        Object.assign(payload, makeSecretPayload(s.secret.items, secret, defaultMode, optional));
      } else if (s.configMap) {
        const name = s.configMap.name ?? "";
        const optional = s.configMap.optional === true;
        let configMap: ConfigMap;
        try {
          configMap = await host.getConfigMap(namespace, name);
        } catch (e) {
          if (!(isNotFound(e) && optional)) {
            throw new Error(
              `Couldn't get configMap ${namespace}/${name}: ${(e as Error).message}`,
            );
          }
          configMap = { metadata: { namespace, name } };
        }
        Object.assign(
          payload,
          makeConfigMapPayload(s.configMap.items, configMap, defaultMode, optional),
        );
      } else if (s.downwardAPI) {
        Object.assign(payload, collectDownwardAPIData(s.downwardAPI.items, pod, host, defaultMode));
      } else if (s.serviceAccountToken) {
        const tp = s.serviceAccountToken;
        const tr = await host.getServiceAccountToken(namespace, serviceAccountName(pod), {
          spec: {
            audiences: tp.audience ? [tp.audience] : undefined,
            expirationSeconds: tp.expirationSeconds ?? 3600,
            boundObjectRef: {
              apiVersion: "v1",
              kind: "Pod",
              name: pod.metadata.name,
              uid: pod.metadata.uid,
            },
          },
        });
        payload[tp.path] = {
          data: new TextEncoder().encode(tr.status?.token ?? ""),
          mode: defaultMode,
        };
      } else if (s.clusterTrustBundle || s.podCertificate) {
        throw new Error(
          "clusterTrustBundle and podCertificate sources are not supported by this node",
        );
      }
    } catch (e) {
      errors.push(e as Error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new Error(`[${errors.map((e) => e.message).join(", ")}]`);
  return payload;
}

/** The pod's service account (`default` when unset, as the API server defaults it). */
export function serviceAccountName(pod: Pod): string {
  return pod.spec.serviceAccountName || pod.spec.serviceAccount || "default";
}

class ProjectedVolumeMounter extends WrappedVolumeMounter<ProjectedVolumeSource> {
  async setUp(): Promise<void> {
    const ns = this.pod.metadata.namespace ?? "default";
    let payload: Record<string, FileProjection>;
    try {
      payload = await collectData(this.source, this.pod, this.host);
    } catch (e) {
      log.error(e, "Error preparing data for projected volume", {
        volumeName: this.volumeName,
        pod: `${ns}/${this.pod.metadata.name}`,
      });
      throw e;
    }
    await this.writePayload("Memory", payload);
  }
}

/**
 * The projected plugin.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 * import type { VolumeHost } from "../volume.ts";
 *
 * declare const pod: Pod;
 * declare const host: VolumeHost;
 *
 * await projectedPlugin.newMounter(pod.spec.volumes![0], pod, host).setUp(); // kube-api-access-*
 * ```
 */
export const projectedPlugin: VolumePlugin = {
  name: projectedPluginName,
  sourceField: "projected",
  requiresRemount: true,
  newMounter(volume: Volume, pod: Pod, host: VolumeHost): Mounter {
    const source = volume.projected as ProjectedVolumeSource;
    return new ProjectedVolumeMounter({
      pluginName: projectedPluginName,
      source,
      volume,
      pod,
      host,
    });
  },
};
