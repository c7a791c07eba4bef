/**
 * CFS quota from a cpu limit, and the way back from cgroup values to milli-CPUs (for the
 * resources a runtime reports).
 * Mirrors kubelet's pkg/kubelet/kuberuntime/helpers_linux.go (milliCPUToQuota, sharesToMilliCPU,
 * quotaToMilliCPU).
 * @module
 */
import { MinShares, SharesPerCPU } from "../cm/helpers_linux.ts";

const milliCPUToCPU = 1000;
/** The default CFS period: 100 ms, in microseconds. */
export const quotaPeriod = 100000;
/** The smallest CFS quota: 1 ms, in microseconds. */
export const minQuotaPeriod = 1000;

/**
 * `milliCPUToQuota`: a cpu limit as a CFS quota over `period` microseconds; 0 without a limit,
 * at least 1 ms otherwise.
 *
 * @example
 * ```ts
 * milliCPUToQuota(250, 100000); // 25000
 * ```
 */
export function milliCPUToQuota(milliCPU: number, period: number): number {
  if (milliCPU === 0) return 0;
  const quota = Math.trunc((milliCPU * period) / milliCPUToCPU);
  return quota < minQuotaPeriod ? minQuotaPeriod : quota;
}

/**
 * `sharesToMilliCPU`: `cpu.shares` back to milli-CPUs (rounded up; 0 below the kernel minimum).
 *
 * @example
 * ```ts
 * sharesToMilliCPU(256); // 250
 * ```
 */
export function sharesToMilliCPU(shares: number): number {
  if (shares < MinShares) return 0;
  return Math.ceil((shares * milliCPUToCPU) / SharesPerCPU);
}

/**
 * `quotaToMilliCPU`: a CFS quota over its period back to milli-CPUs (0 for unlimited, -1).
 *
 * @example
 * ```ts
 * quotaToMilliCPU(25000, 100000); // 250
 * ```
 */
export function quotaToMilliCPU(quota: number, period: number): number {
  if (quota === -1) return 0;
  return Math.trunc((quota * milliCPUToCPU) / period);
}
