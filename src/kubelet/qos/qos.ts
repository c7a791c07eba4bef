/**
 * A pod's quality-of-service class from its containers' cpu and memory requests and limits. The
 * API server sets `status.qosClass` when a pod is created and the kubelet reports it again with
 * every status, so both must compute the same class.
 * Mirrors kubernetes' pkg/apis/core/v1/helper/qos/qos.go (ComputePodQOS).
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";
import { parseQuantity } from "../../api/resource/quantity.ts";

/** `Guaranteed`, `Burstable` or `BestEffort`. */
export type PodQOSClass = "Guaranteed" | "Burstable" | "BestEffort";

const qosResources = ["cpu", "memory"];

/**
 * The pod's QoS class: BestEffort without any cpu/memory request or limit, Guaranteed when every
 * container limits both and requests equal limits, else Burstable.
 *
 * @example
 * ```ts
 * getPodQOS({ metadata: {}, spec: { containers: [{ name: "c" }] } }); // "BestEffort"
 * ```
 */
export function getPodQOS(pod: Pod): PodQOSClass {
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let isGuaranteed = true;
  for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) {
    for (const [name, q] of Object.entries(c.resources?.requests ?? {})) {
      if (!qosResources.includes(name)) continue;
      const v = parseQuantity(q);
      if (v > 0) requests.set(name, (requests.get(name) ?? 0) + v);
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(c.resources?.limits ?? {})) {
      if (!qosResources.includes(name)) continue;
      const v = parseQuantity(q);
      if (v > 0) {
        found.add(name);
        limits.set(name, (limits.get(name) ?? 0) + v);
      }
    }
    if (!qosResources.every((r) => found.has(r))) isGuaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return "BestEffort";
  if (isGuaranteed) {
    for (const [name, req] of requests) {
      if (limits.get(name) !== req) {
        isGuaranteed = false;
        break;
      }
    }
  }
  return isGuaranteed && requests.size === limits.size ? "Guaranteed" : "Burstable";
}
