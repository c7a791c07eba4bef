/**
 * What the node holds back from allocatable: `--system-reserved`, `--kube-reserved` and the hard
 * eviction thresholds (memory against the memory capacity, `nodefs.available` against the
 * ephemeral-storage capacity).
 * Mirrors kubelet's pkg/kubelet/cm/node_container_manager_linux.go
 * (GetNodeAllocatableReservation) and cm/helpers.go (hardEvictionReservation).
 * @module
 */
import type { ResourceList } from "../../api/core/v1/mod.ts";
import { parseQuantity } from "../../api/resource/quantity.ts";
import { formatQuantity } from "../nodestatus/setters.ts";
import { getThresholdQuantity, type Threshold } from "../eviction/helpers.ts";

/**
 * The quantities the hard eviction thresholds reserve, by resource (`memory`,
 * `ephemeral-storage`), as numbers (bytes).
 *
 * @example
 * ```ts
 * import { parseThresholdStatements } from "../eviction/helpers.ts";
 *
 * hardEvictionReservation(parseThresholdStatements({ "memory.available": "1Mi" }), { memory: "8Gi" });
 * // { memory: 1048576 }
 * ```
 */
export function hardEvictionReservation(
  thresholds: readonly Threshold[],
  capacity: ResourceList,
): Record<string, number> {
  const reserved: Record<string, number> = {};
  for (const threshold of thresholds) {
    if (threshold.operator !== "LessThan") continue;
    switch (threshold.signal) {
      case "memory.available":
        reserved.memory = getThresholdQuantity(
          threshold.value,
          parseQuantity(capacity.memory ?? "0"),
        );
        break;
      case "nodefs.available":
        reserved["ephemeral-storage"] = getThresholdQuantity(
          threshold.value,
          parseQuantity(capacity["ephemeral-storage"] ?? "0"),
        );
        break;
    }
  }
  return reserved;
}

/** Options of {@linkcode getNodeAllocatableReservation}. */
export interface NodeAllocatableOptions {
  /** Hard eviction thresholds (`--eviction-hard`). */
  hardEvictionThresholds: readonly Threshold[];
  /** `--system-reserved`. */
  systemReserved?: ResourceList;
  /** `--kube-reserved`. */
  kubeReserved?: ResourceList;
}

/**
 * The reservation of every capacity resource that has one: system-reserved plus kube-reserved
 * plus the hard eviction thresholds; zero reservations are left out.
 *
 * @example
 * ```ts
 * import { parseThresholdStatements } from "../eviction/helpers.ts";
 *
 * getNodeAllocatableReservation({ memory: "24684092Ki", "ephemeral-storage": "264212084Ki" }, {
 *   hardEvictionThresholds: parseThresholdStatements({ "memory.available": "1Mi", "nodefs.available": "1%" }),
 * });
 * // { memory: "1Mi", "ephemeral-storage": "2705531679" }
 * ```
 */
export function getNodeAllocatableReservation(
  capacity: ResourceList,
  options: NodeAllocatableOptions,
): ResourceList {
  const eviction = hardEvictionReservation(options.hardEvictionThresholds, capacity);
  const result: ResourceList = {};
  for (const name of Object.keys(capacity)) {
    let value = 0;
    for (const list of [options.systemReserved, options.kubeReserved]) {
      if (list?.[name] !== undefined) value += parseQuantity(list[name]);
    }
    value += eviction[name] ?? 0;
    if (value !== 0) result[name] = formatQuantity(name, value);
  }
  return result;
}
