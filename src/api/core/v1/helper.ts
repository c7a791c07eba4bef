/**
 * Helpers over core/v1 objects.
 * Mirrors k8s.io/kubernetes/pkg/apis/core/v1/helper/helpers.go (IsServiceIPSet).
 * @module
 */
import type { Service } from "./service_types.ts";

/**
 * Whether the service has a cluster IP (not `None`, not empty).
 *
 * @example
 * ```ts
 * isServiceIPSet({ metadata: {}, spec: { clusterIP: "None" } }); // false
 * ```
 */
export function isServiceIPSet(service: Service): boolean {
  const ip = service.spec?.clusterIP ?? "";
  return ip !== "None" && ip !== "";
}
