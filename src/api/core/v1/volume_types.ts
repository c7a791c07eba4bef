/**
 * core/v1 types of the volume sources (the ones admission walks field by field are in types.ts) probelet mounts (configMap, secret, downwardAPI, projected,
 * emptyDir, hostPath), the objects they read (ConfigMap, Secret) and authentication/v1's
 * TokenRequest. Field names as the API's JSON.
 * @module
 */
import type { ObjectMeta } from "../../meta/v1/types.ts";

/** A key of a config map or secret projected to a relative path, with an optional mode. */
export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

/** `volumes[].configMap` and a projected `configMap` source. */
export interface ConfigMapVolumeSource {
  name?: string;
  items?: KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
}

/** `volumes[].secret` (its name field is `secretName`). */
export interface SecretVolumeSource {
  secretName?: string;
  items?: KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
}

/** A projected `secret` source (named by `name`, like a config map). */
export interface SecretProjection {
  name?: string;
  items?: KeyToPath[];
  optional?: boolean;
}

/** A field of the pod (`metadata.name`, `metadata.labels['app']`, ...). */
export interface ObjectFieldSelector {
  apiVersion?: string;
  fieldPath: string;
}

/** A container's resource (`limits.cpu`, `requests.memory`, ...), scaled by `divisor`. */
export interface ResourceFieldSelector {
  containerName?: string;
  resource: string;
  divisor?: string | number;
}

/** One file of a downward API volume. */
export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  mode?: number;
}

/** `volumes[].downwardAPI`. */
export interface DownwardAPIVolumeSource {
  items?: DownwardAPIVolumeFile[];
  defaultMode?: number;
}

/** A projected service-account token. */
export interface ServiceAccountTokenProjection {
  audience?: string;
  expirationSeconds?: number;
  path: string;
}

/** `volumes[].hostPath`. */
export interface HostPathVolumeSource {
  path: string;
  type?: string;
}

/** A config map. */
export interface ConfigMap {
  metadata: ObjectMeta;
  data?: Record<string, string>;
  /** Values are base64 in JSON. */
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

/** A secret. */
export interface Secret {
  metadata: ObjectMeta;
  /** Values are base64 in JSON. */
  data?: Record<string, string>;
  /** Write-only plain values (a manifest's); the API server merges them into `data`. */
  stringData?: Record<string, string>;
  type?: string;
  immutable?: boolean;
}

/** authentication/v1 TokenRequest, as kubelet sends it for a pod's token. */
export interface TokenRequest {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec: {
    audiences?: string[];
    expirationSeconds?: number;
    boundObjectRef?: { apiVersion?: string; kind?: string; name?: string; uid?: string };
  };
  status?: { token: string; expirationTimestamp: string };
}
