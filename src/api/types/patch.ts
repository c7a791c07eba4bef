/**
 * The patch formats a PATCH request names in its content type.
 * Mirrors k8s.io/apimachinery/pkg/types/patch.go.
 * @module
 */

/** The patch formats the API server accepts for the resources probelet writes. */
export type PatchType =
  | "application/strategic-merge-patch+json"
  | "application/merge-patch+json"
  | "application/json-patch+json";

/**
 * The patch types by client-go's names (`types.StrategicMergePatchType`, ...).
 *
 * @example
 * ```ts
 * PatchType.StrategicMergePatch; // "application/strategic-merge-patch+json"
 * ```
 */
export const PatchType = {
  StrategicMergePatch: "application/strategic-merge-patch+json",
  MergePatch: "application/merge-patch+json",
  JSONPatch: "application/json-patch+json",
} as const satisfies Record<string, PatchType>;
