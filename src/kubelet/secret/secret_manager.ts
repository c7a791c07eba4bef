/**
 * How kubelet reads the secrets its pods use: a GET through the API server at every use (the node
 * authorizer lets a node read only secrets of pods bound to it). Shared by volumes and, later,
 * environment variables.
 * Mirrors kubelet's pkg/kubelet/secret/secret_manager.go (Manager, simpleSecretManager,
 * NewSimpleSecretManager); the watch- and TTL-cache-based managers are not ported.
 * @module
 */
import type { Secret } from "../../api/core/v1/mod.ts";
import type { JSONRequester } from "../configmap/configmap_manager.ts";

/** Reads secrets of pods bound here (kubelet's secret `Manager`). */
export interface SecretManager {
  /** The secret `namespace/name`; throws the API's error (404: `secrets "x" not found`). */
  getSecret(namespace: string, name: string): Promise<Secret>;
}

/**
 * A manager reading each secret from the API server when asked (kubelet's `simpleSecretManager`).
 *
 * @example
 * ```ts
 * import type { HTTPClientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const clientset: HTTPClientset;
 *
 * const manager = newSimpleSecretManager(clientset.rest);
 * await manager.getSecret("default", "db-credentials");
 * ```
 */
export function newSimpleSecretManager(client: JSONRequester): SecretManager {
  return {
    getSecret: (namespace, name) =>
      client.json<Secret>({
        method: "GET",
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${
          encodeURIComponent(name)
        }`,
      }),
  };
}
