/**
 * The Summary API's types (`/stats/summary`): the node's and its pods' CPU, memory, network,
 * file systems and volumes, with the JSON field names kubelet writes. uint64 figures are numbers
 * (exact up to 2^53: 104 core-days of CPU nanoseconds per container). Times are RFC 3339 strings,
 * seconds only, as metav1.Time marshals.
 * Mirrors k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go.
 * @module
 */

/** The whole summary: the node and its pods. */
export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

/** The node's figures. */
export interface NodeStats {
  nodeName: string;
  /** Stats of the node's system containers (`kubelet`, `runtime`, `misc`, `pods`). */
  systemContainers?: ContainerStats[];
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: RuntimeStats;
  rlimit?: RlimitStats;
  swap?: SwapStats;
}

/** The node's process limits. */
export interface RlimitStats {
  time: string;
  /** The most processes (threads) the kernel allows: min(pid_max, threads-max). */
  maxpid?: number;
  /** Processes (threads) on the node now. */
  curproc?: number;
}

/** The runtime's file systems. */
export interface RuntimeStats {
  imageFs?: FsStats;
  containerFs?: FsStats;
}

/** kubelet's system container names. */
export const systemContainerKubelet = "kubelet";

/** One pod's figures. */
export interface PodStats {
  podRef: PodReference;
  /** When the pod's sandbox was created. */
  startTime: string;
  containers: ContainerStats[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  "ephemeral-storage"?: FsStats;
  process_stats?: ProcessStats;
  swap?: SwapStats;
}

/** Processes in a pod. */
export interface ProcessStats {
  process_count?: number;
}

/** One container's figures. */
export interface ContainerStats {
  name: string;
  /** When the container was created. */
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
  swap?: SwapStats;
}

/** Which pod. */
export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

/** One network interface's counters. */
export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** Network counters: the default interface (`eth0`) inline, and every interface. */
export interface NetworkStats extends Partial<InterfaceStats> {
  time: string;
  interfaces?: InterfaceStats[];
}

/** CPU use. */
export interface CPUStats {
  time: string;
  /** Cores in use, in billionths, over the last sampling interval. */
  usageNanoCores?: number;
  /** Cumulative CPU time in core-nanoseconds. */
  usageCoreNanoSeconds?: number;
}

/** Memory use. */
export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** Swap use. */
export interface SwapStats {
  time: string;
  swapAvailableBytes?: number;
  swapUsageBytes?: number;
}

/** One volume's use (FsStats inline). */
export interface VolumeStats extends FsStats {
  name?: string;
}

/** A file system's or a folder's use. */
export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

/**
 * A time as metav1.Time marshals it: RFC 3339 in UTC, whole seconds.
 *
 * @example
 * ```ts
 * metaTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678)); // "2026-01-02T03:04:05Z"
 * ```
 */
export function metaTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

// Every field of the types above in one order that agrees with each Go struct's field order
// (encoding/json writes fields in declaration order).
const fieldOrder = [
  "time",
  "availableBytes",
  "capacityBytes",
  "usageNanoCores",
  "usageCoreNanoSeconds",
  "usageBytes",
  "workingSetBytes",
  "rssBytes",
  "pageFaults",
  "majorPageFaults",
  "usedBytes",
  "inodesFree",
  "inodes",
  "inodesUsed",
  "maxpid",
  "curproc",
  "swapAvailableBytes",
  "swapUsageBytes",
  "nodeName",
  "podRef",
  "name",
  "namespace",
  "uid",
  "systemContainers",
  "startTime",
  "containers",
  "rxBytes",
  "rxErrors",
  "txBytes",
  "txErrors",
  "interfaces",
  "cpu",
  "memory",
  "network",
  "fs",
  "runtime",
  "imageFs",
  "containerFs",
  "rlimit",
  "rootfs",
  "logs",
  "volume",
  "ephemeral-storage",
  "process_stats",
  "process_count",
  "swap",
  "node",
  "pods",
];
const fieldRank = new Map(fieldOrder.map((name, i) => [name, i]));

/**
 * The summary as kubelet writes it: fields in the Go structs' order, indented by one space
 * (go-restful's pretty printing), fields left undefined omitted.
 *
 * @example
 * ```ts
 * summaryJSON({ node: { startTime: "...", nodeName: "n" }, pods: [] }); // '{\n "node": {\n  "nodeName": "n", ...'
 * ```
 */
export function summaryJSON(summary: Summary): string {
  return JSON.stringify(summary, (_key, value) => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
    const keys = Object.keys(value).sort((a, b) =>
      (fieldRank.get(a) ?? fieldOrder.length) - (fieldRank.get(b) ?? fieldOrder.length)
    );
    return Object.fromEntries(keys.map((k) => [k, value[k]]));
  }, 1);
}
