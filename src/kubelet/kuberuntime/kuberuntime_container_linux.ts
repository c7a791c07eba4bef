/**
 * The Linux part of a container's CRI config: its security context and its cgroup resources —
 * cpu shares from the request, a CFS quota from the cpu limit, the memory limit, and the OOM score
 * adjustment of its QoS class.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/kuberuntime_container_linux.go
 * (applyPlatformSpecificContainerConfig, generateLinuxContainerConfig,
 * generateLinuxContainerResources, calculateLinuxResources). Left out, as they do not apply on
 * this node: memory QoS and `memory.oom.group` (cgroup v2 only), swap (kubelet's default is
 * NoSwap, which on cgroup v1 sets nothing), huge pages, pod-level resources (refused), exclusive
 * CPUs (no CPU manager).
 * @module
 */
import type { Container, Pod } from "../../api/core/v1/mod.ts";
import { quantityMilliValue, quantityValue } from "../../api/resource/quantity.ts";
import type {
  ContainerConfig,
  LinuxContainerConfig,
  LinuxContainerResources,
} from "../../cri_client/api.ts";
import { milliCPUToShares } from "../cm/helpers_linux.ts";
import { getContainerOOMScoreAdjust } from "../qos/policy.ts";
import { milliCPUToQuota, quotaPeriod } from "./helpers_linux.ts";
import { determineEffectiveSecurityContext, type SeccompOptions } from "./security_context.ts";

/** The node settings a container's Linux config depends on (kubelet's manager fields). */
export interface LinuxConfigOptions extends SeccompOptions {
  /** kubelet's `--cpu-cfs-quota` (default true): enforce cpu limits with a CFS quota. */
  cpuCFSQuota: boolean;
  /** The node's memory in bytes (cAdvisor's MemoryCapacity), for Burstable OOM scores. */
  memoryCapacity: number;
}

/** kubelet's defaults for {@linkcode LinuxConfigOptions} besides the node's memory. */
export const defaultLinuxConfigOptions = {
  cpuCFSQuota: true,
  seccompDefault: false,
} as const;

/**
 * `applyPlatformSpecificContainerConfig`: sets `config.linux`. `image` is the image's user.
 *
 * @example
 * ```ts
 * import type { Container, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const config: Parameters<typeof applyPlatformSpecificContainerConfig>[0];
 * declare const options: Parameters<typeof applyPlatformSpecificContainerConfig>[4];
 * declare const container: Container;
 * declare const pod: Pod;
 *
 * applyPlatformSpecificContainerConfig(config, container, pod, { uid: 0, username: "" }, options);
 * config.linux?.resources?.cpuShares; // 2 without a cpu request
 * ```
 */
export function applyPlatformSpecificContainerConfig(
  config: ContainerConfig,
  container: Container,
  pod: Pod,
  image: { uid: number | undefined; username: string },
  options: LinuxConfigOptions,
): void {
  config.linux = generateLinuxContainerConfig(container, pod, image, options);
}

/**
 * `generateLinuxContainerConfig`: the container's resources and security context.
 *
 * @example
 * ```ts
 * import type { Container, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const container: Container;
 * declare const pod: Pod;
 *
 * declare const options: Parameters<typeof generateLinuxContainerConfig>[3];
 * generateLinuxContainerConfig(container, pod, { uid: 1000, username: "" }, options).securityContext
 *   ?.runAsUser; // { value: 1000 } unless the pod sets runAsUser
 * ```
 */
export function generateLinuxContainerConfig(
  container: Container,
  pod: Pod,
  image: { uid: number | undefined; username: string },
  options: LinuxConfigOptions,
): LinuxContainerConfig {
  return {
    resources: generateLinuxContainerResources(pod, container, options),
    securityContext: determineEffectiveSecurityContext(pod, container, { ...image, ...options }),
  };
}

/**
 * `generateLinuxContainerResources`: shares, quota, period and memory limit from the container's
 * requests and limits, and the OOM score adjustment of the pod's QoS class.
 *
 * @example
 * ```ts
 * import type { Container, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 * declare const container: Container;
 *
 * declare const options: Parameters<typeof generateLinuxContainerResources>[2];
 * generateLinuxContainerResources(pod, container, options);
 * // { cpuShares: 256, cpuQuota: 50000, cpuPeriod: 100000, memoryLimitInBytes: 67108864, oomScoreAdj: 937 }
 * ```
 */
export function generateLinuxContainerResources(
  pod: Pod,
  container: Container,
  options: LinuxConfigOptions,
): LinuxContainerResources {
  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  const cpuRequest = "cpu" in requests ? quantityMilliValue(requests.cpu) : undefined;
  const lcr = calculateLinuxResources(
    {
      cpuRequest,
      cpuLimit: limits.cpu === undefined ? undefined : quantityMilliValue(limits.cpu),
      memoryLimit: limits.memory === undefined ? undefined : quantityValue(limits.memory),
    },
    options,
  );
  lcr.oomScoreAdj = getContainerOOMScoreAdjust(pod, container, options.memoryCapacity);
  return lcr;
}

/**
 * `calculateLinuxResources`: cpu shares (from the request, else the limit, else the minimum), the
 * memory limit when set, and with `--cpu-cfs-quota` the quota and period. CPU amounts are
 * milli-CPUs, memory bytes. The period is always 100 ms: kubelet honours `--cpu-cfs-quota-period`
 * only with the alpha `CPUCFSQuotaPeriod` feature gate, off by default.
 *
 * @example
 * ```ts
 * calculateLinuxResources({ cpuLimit: 500 }, { cpuCFSQuota: true });
 * // { cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000 }
 * ```
 */
export function calculateLinuxResources(
  amounts: { cpuRequest?: number; cpuLimit?: number; memoryLimit?: number },
  options: { cpuCFSQuota: boolean },
): LinuxContainerResources {
  const resources: LinuxContainerResources = {};
  // A limit without a request: the request defaults to the limit, as the API server does.
  resources.cpuShares = amounts.cpuRequest === undefined && amounts.cpuLimit !== undefined
    ? milliCPUToShares(amounts.cpuLimit)
    : milliCPUToShares(amounts.cpuRequest ?? 0);
  const memLimit = amounts.memoryLimit ?? 0;
  if (memLimit !== 0) resources.memoryLimitInBytes = memLimit;
  if (options.cpuCFSQuota) {
    const cpuPeriod = quotaPeriod;
    resources.cpuQuota = milliCPUToQuota(amounts.cpuLimit ?? 0, cpuPeriod);
    resources.cpuPeriod = cpuPeriod;
  }
  return resources;
}
