/**
 * How kubelet reads the config maps its pods use: a GET through the API server at every use (the
 * node authorizer lets a node read only config maps of pods bound to it). Shared by volumes and,
 * later, environment variables.
 * Mirrors kubelet's pkg/kubelet/configmap/configmap_manager.go (Manager, simpleConfigMapManager,
 * NewSimpleConfigMapManager); the watch- and TTL-cache-based managers are not ported.
 * @module
 */
import type { ConfigMap } from "../../api/core/v1/mod.ts";
import type { RestRequest } from "../../client/rest.ts";

/** What the managers need of the REST client (`RESTClient.json`). */
export interface JSONRequester {
  json<T>(req: RestRequest): Promise<T>;
}

/** Reads config maps of pods bound here (kubelet's configmap `Manager`). */
export interface ConfigMapManager {
  /** The config map `namespace/name`; throws the API's error (404: `configmaps "x" not found`). */
  getConfigMap(namespace: string, name: string): Promise<ConfigMap>;
}

/**
 * A manager reading each config map from the API server when asked (kubelet's
 * `simpleConfigMapManager`).
 *
 * @example
 * ```ts
 * import type { HTTPClientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const clientset: HTTPClientset;
 *
 * const manager = newSimpleConfigMapManager(clientset.rest);
 * await manager.getConfigMap("default", "app-config");
 * ```
 */
export function newSimpleConfigMapManager(client: JSONRequester): ConfigMapManager {
  return {
    getConfigMap: (namespace, name) =>
      client.json<ConfigMap>({
        method: "GET",
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${
          encodeURIComponent(name)
        }`,
      }),
  };
}
