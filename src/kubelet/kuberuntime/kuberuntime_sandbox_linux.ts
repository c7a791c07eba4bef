/**
 * A sandbox's resources: the pod's summed requests and limits (overhead excluded) and its
 * overhead, as CRI `LinuxContainerResources` on the sandbox config.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/kuberuntime_sandbox_linux.go (applySandboxResources,
 * calculateSandboxResources, convertOverheadToLinuxResources).
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";
import { podLimits, podRequests } from "../../api/resource/helpers.ts";
import { quantityMilliValue, quantityValue } from "../../api/resource/quantity.ts";
import type { LinuxContainerResources, PodSandboxConfig } from "../../cri_client/api.ts";
import { calculateLinuxResources } from "./kuberuntime_container_linux.ts";

/**
 * `convertOverheadToLinuxResources`: the pod's overhead as resources, requests equal to limits
 * (kubelet treats overhead as guaranteed); empty without an overhead.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * convertOverheadToLinuxResources(pod, { cpuCFSQuota: true });
 * // { cpuShares: 256, cpuQuota: 25000, cpuPeriod: 100000, memoryLimitInBytes: 33554432 } for 250m / 32Mi
 * ```
 */
export function convertOverheadToLinuxResources(
  pod: Pod,
  options: { cpuCFSQuota: boolean },
): LinuxContainerResources {
  const overhead = pod.spec.overhead;
  if (!overhead) return {};
  const cpu = overhead.cpu === undefined ? 0 : quantityMilliValue(overhead.cpu);
  const memory = overhead.memory === undefined ? 0 : quantityValue(overhead.memory);
  return calculateLinuxResources({ cpuRequest: cpu, cpuLimit: cpu, memoryLimit: memory }, {
    // kubelet passes its cpuCFSQuota setting here too.
    cpuCFSQuota: options.cpuCFSQuota,
  });
}

/**
 * `calculateSandboxResources`: the pod's summed requests and limits, overhead excluded.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * calculateSandboxResources(pod, { cpuCFSQuota: true }).memoryLimitInBytes; // the summed memory limits
 * ```
 */
export function calculateSandboxResources(
  pod: Pod,
  options: { cpuCFSQuota: boolean },
): LinuxContainerResources {
  const req = podRequests(pod, { excludeOverhead: true });
  const lim = podLimits(pod, { excludeOverhead: true });
  return calculateLinuxResources({
    cpuRequest: req.cpu,
    cpuLimit: lim.cpu ?? 0,
    memoryLimit: lim.memory === undefined ? 0 : Math.ceil(lim.memory / 1000),
  }, options);
}

/**
 * `applySandboxResources`: sets the sandbox config's `linux.resources` and `linux.overhead`.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 * declare const config: Parameters<typeof applySandboxResources>[1];
 *
 * applySandboxResources(pod, config, { cpuCFSQuota: true });
 * config.linux?.resources?.cpuShares;
 * ```
 */
export function applySandboxResources(
  pod: Pod,
  config: PodSandboxConfig,
  options: { cpuCFSQuota: boolean },
): void {
  if (!config.linux) return;
  config.linux.resources = calculateSandboxResources(pod, options);
  config.linux.overhead = convertOverheadToLinuxResources(pod, options);
}
