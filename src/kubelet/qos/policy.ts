/**
 * The OOM score adjustment of a container's processes by its pod's QoS class: Guaranteed ones are
 * killed last (-998), BestEffort ones first (1000), Burstable ones in between by the share of the
 * node's memory they request.
 * Mirrors kubelet's pkg/kubelet/qos/policy.go (GetContainerOOMScoreAdjust).
 * @module
 */
import type { Container, Pod } from "../../api/core/v1/mod.ts";
import { quantityValue } from "../../api/resource/quantity.ts";
import { getPodQOS } from "./qos.ts";

/** kubelet's own oom_score_adj. */
export const KubeletOOMScoreAdj = -999;
/** kube-proxy's oom_score_adj. */
export const KubeProxyOOMScoreAdj = -999;
const guaranteedOOMScoreAdj = -998;
const besteffortOOMScoreAdj = 1000;

/**
 * `GetContainerOOMScoreAdjust`: -998 for Guaranteed pods, 1000 for BestEffort ones; for Burstable
 * ones `1000 - 1000 * memoryRequest / memoryCapacity`, kept within 2..999 so they always rank
 * between the two (integer division, as Go's).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * // A Burstable container requesting 10% of the node's memory:
 * getContainerOOMScoreAdjust(pod, pod.spec.containers[0], 10 * 2 ** 30); // 900
 * ```
 */
export function getContainerOOMScoreAdjust(
  pod: Pod,
  container: Container,
  memoryCapacity: number,
): number {
  switch (getPodQOS(pod)) {
    case "Guaranteed":
      return guaranteedOOMScoreAdj;
    case "BestEffort":
      return besteffortOOMScoreAdj;
  }
  const request = container.resources?.requests?.memory;
  const memoryRequest = request === undefined ? 0 : quantityValue(request);
  const oomScoreAdjust = 1000 - Math.trunc((1000 * memoryRequest) / memoryCapacity);
  // A Guaranteed pod using all the memory scores 10; Burstable ones must rank above it.
  if (oomScoreAdjust < 1000 + guaranteedOOMScoreAdj) return 1000 + guaranteedOOMScoreAdj;
  // ... and below BestEffort ones.
  if (oomScoreAdjust === besteffortOOMScoreAdj) return oomScoreAdjust - 1;
  return oomScoreAdjust;
}
