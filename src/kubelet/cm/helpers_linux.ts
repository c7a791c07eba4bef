/**
 * CPU and memory amounts as cgroup values: cpu requests as `cpu.shares`, cpu limits as a CFS quota
 * over a period, and a pod's whole cgroup configuration by its QoS class.
 * Mirrors kubelet's pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota,
 * ResourceConfigForPod), without huge pages and memory QoS (cgroup v2 only).
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";
import { podLimits, podRequests } from "../../api/resource/helpers.ts";
import { quantityMilliValue } from "../../api/resource/quantity.ts";
import { getPodQOS } from "../qos/qos.ts";

/** The kernel's smallest `cpu.shares`. */
export const MinShares = 2;
/** The kernel's largest `cpu.shares`. */
export const MaxShares = 262144;
/** Shares of one whole CPU. */
export const SharesPerCPU = 1024;
/** Milli-CPUs in a CPU. */
export const MilliCPUToCPU = 1000;
/** The default CFS period: 100 ms, in microseconds. */
export const QuotaPeriod = 100000;
/** The smallest CFS quota the kernel takes: 1 ms, in microseconds. */
export const MinQuotaPeriod = 1000;
/** The smallest cpu limit that maps to a quota above the minimum (`MinQuotaPeriod` back). */
export const MinMilliCPULimit = 10;

/**
 * `MilliCPUToShares`: a cpu request as `cpu.shares`, clamped to the kernel's range (no request:
 * the minimum, 2).
 *
 * @example
 * ```ts
 * milliCPUToShares(250); // 256
 * milliCPUToShares(0); // 2
 * ```
 */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return MinShares;
  const shares = Math.trunc((milliCPU * SharesPerCPU) / MilliCPUToCPU);
  if (shares < MinShares) return MinShares;
  if (shares > MaxShares) return MaxShares;
  return shares;
}

/**
 * `MilliCPUToQuota`: a cpu limit as a CFS quota over `period` microseconds (0 without a limit; at
 * least 1 ms). kubelet replaces the period by the default unless the `CPUCFSQuotaPeriod` feature
 * gate is on (it is off by default), and so does this.
 *
 * @example
 * ```ts
 * milliCPUToQuota(500, 100000); // 50000
 * milliCPUToQuota(5, 100000); // 1000
 * ```
 */
export function milliCPUToQuota(milliCPU: number, period: number): number {
  if (milliCPU === 0) return 0;
  const effectivePeriod = cpuCFSQuotaPeriodGate ? period : QuotaPeriod;
  const quota = Math.trunc((milliCPU * effectivePeriod) / MilliCPUToCPU);
  return quota < MinQuotaPeriod ? MinQuotaPeriod : quota;
}

/** kubelet's `CPUCFSQuotaPeriod` feature gate (alpha, off by default in v1.36). */
const cpuCFSQuotaPeriodGate = false;

/** A pod cgroup's settings (kubelet's `ResourceConfig`); unset fields stay as the kernel has them. */
export interface ResourceConfig {
  /** Bytes. */
  memory?: number;
  cpuShares?: number;
  /** Microseconds; -1 = unlimited. */
  cpuQuota?: number;
  /** Microseconds. */
  cpuPeriod?: number;
}

/**
 * `ResourceConfigForPod`: the pod cgroup's settings from its summed requests and limits (overhead
 * included). Guaranteed pods get shares, quota and memory; Burstable ones shares, and quota or
 * memory only when every container limits that resource; BestEffort ones the minimum shares.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * resourceConfigForPod(pod, { enforceCPULimits: true, cpuPeriod: 100000 });
 * // { cpuShares: 102, cpuQuota: 10000, cpuPeriod: 100000, memory: 67108864 } for 100m / 64Mi
 * ```
 */
export function resourceConfigForPod(
  pod: Pod,
  options: { enforceCPULimits: boolean; cpuPeriod: number },
): ResourceConfig {
  const reqs = podRequests(pod);
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  const limits = podLimits(pod, {
    containerFn: (res) => {
      if (isZero(res.cpu)) cpuLimitsDeclared = false;
      if (isZero(res.memory)) memoryLimitsDeclared = false;
    },
  });
  const cpuRequests = reqs.cpu ?? 0;
  const cpuLimits = limits.cpu ?? 0;
  const memoryLimits = limits.memory === undefined ? 0 : Math.ceil(limits.memory / 1000);
  const cpuShares = milliCPUToShares(cpuRequests);
  let cpuQuota = milliCPUToQuota(cpuLimits, options.cpuPeriod);
  if (!options.enforceCPULimits) cpuQuota = -1;
  switch (getPodQOS(pod)) {
    case "Guaranteed":
      return { cpuShares, cpuQuota, cpuPeriod: options.cpuPeriod, memory: memoryLimits };
    case "Burstable": {
      const result: ResourceConfig = { cpuShares };
      if (cpuLimitsDeclared) {
        result.cpuQuota = cpuQuota;
        result.cpuPeriod = options.cpuPeriod;
      }
      if (memoryLimitsDeclared) result.memory = memoryLimits;
      return result;
    }
    default:
      return { cpuShares: MinShares };
  }
}

function isZero(q: string | undefined): boolean {
  return q === undefined || quantityMilliValue(q) === 0;
}
