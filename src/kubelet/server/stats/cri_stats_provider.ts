/**
 * Pod and container stats from the CRI runtime: `ListPodSandbox`, `ListContainers` and
 * `ListContainerStats` joined as kubelet does (running containers of the latest sandbox of each
 * pod), CPU rates from the previous sample (kubelet's `cpuUsageCache`), the pod's CPU and memory as
 * the sum of its containers', its network from the sandbox's network namespace
 * (`/proc/<sandbox pid>/net/dev`), container logs, volumes and the pod's ephemeral storage from
 * walks of their folders.
 * Mirrors kubelet's pkg/kubelet/stats/cri_stats_provider.go (`listPodStatsPartiallyFromCRI`,
 * `ListPodCPUAndMemoryStats`, `makeContainerStats`, `getAndUpdateContainerUsageNanoCores`,
 * `removeTerminatedPods`, `removeTerminatedContainers`) and helper.go (`makePodStorageStats`,
 * `calcEphemeralStorage`).
 * @module
 */
import { join } from "node:path";
import type { Container, PodSandbox } from "../../../cri_client/api.ts";
import type {
  ContainerStats as CRIContainerStats,
  RuntimeService,
} from "../../../cri_client/runtime_service.ts";
import { podLogsDirectoryName } from "../../kuberuntime/helpers.ts";
import * as log from "../../../util/log.ts";
import {
  type DirUsage,
  dirUsage as defaultDirUsage,
  type FsInfo,
  fsInfo as defaultFsInfo,
  parseNetDev,
  toNetworkStats,
} from "./host_stats.ts";
import {
  type ContainerStats,
  type FsStats,
  metaTime,
  type NetworkStats,
  type PodStats,
  type VolumeStats,
} from "./types.ts";
import { errorText } from "../../../util/errors.ts";

/**
 * Pods read at once: their folders are walked with blocking file-system calls, each taking a
 * thread of the runtime's pool while it runs.
 */
const podsAtOnce = 4;

/** kubelet drops a container's cached CPU sample this long after it was taken (`defaultCachePeriod`). */
export const defaultCachePeriodMs = 10 * 60 * 1000;

/** The runtime calls the provider makes. */
export type StatsRuntime =
  & Pick<RuntimeService, "listPodSandbox" | "listContainers" | "podSandboxStatus">
  & Partial<Pick<RuntimeService, "listContainerStats">>;

/** Options of {@linkcode CRIStatsProvider}. */
export interface CRIStatsProviderOptions {
  /** Where pod logs are: `<podLogsDir>/<ns>_<name>_<uid>/<container>/`. */
  podLogsDir: string;
  /** Where pod volumes are: `<podsDir>/<uid>/volumes/<plugin>/<name>`. */
  podsDir: string;
  /** Where a pod's managed /etc/hosts is (counted in its ephemeral storage), by pod UID. */
  podEtcHostsPath?: (podUID: string) => string;
  /** A folder on the node's root file system (the agent's root folder). */
  rootFsPath: string;
  /** The /proc to read sandboxes' network namespaces from (default `/proc`). */
  procDir?: string;
  /** Milliseconds since the epoch (default `Date.now`). */
  now?: () => number;
  /** statfs (default: node:fs's). */
  fsInfo?: (path: string) => Promise<FsInfo>;
  /** A folder's use (default: a walk, {@linkcode defaultDirUsage}). */
  dirUsage?: (path: string) => Promise<DirUsage>;
}

interface CPUUsageRecord {
  timestampNs: bigint;
  usageCoreNanoSeconds: bigint;
  usageNanoCores?: number;
}

/**
 * kubelet's `criStatsProvider`, the pod part.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const provider = new CRIStatsProvider(runtime, {
 *   podLogsDir: "/var/log/pods",
 *   podsDir: "/var/lib/probelet/pods",
 *   rootFsPath: "/var/lib/probelet",
 * });
 * const pods = await provider.listPodStatsAndUpdateCPUNanoCoreUsage();
 * ```
 */
export class CRIStatsProvider {
  readonly #runtime: StatsRuntime;
  readonly #options: CRIStatsProviderOptions;
  readonly #now: () => number;
  readonly #fsInfo: (path: string) => Promise<FsInfo>;
  readonly #dirUsage: (path: string) => Promise<DirUsage>;
  readonly #cpuUsageCache = new Map<string, CPUUsageRecord>();

  constructor(runtime: StatsRuntime, options: CRIStatsProviderOptions) {
    this.#runtime = runtime;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#fsInfo = options.fsInfo ?? defaultFsInfo;
    this.#dirUsage = options.dirUsage ?? defaultDirUsage;
  }

  /** The root file system's figures (kubelet's `RootFsStats` reads the same through cAdvisor). */
  rootFsInfo(): Promise<FsInfo> {
    return this.#fsInfo(this.#options.rootFsPath);
  }

  /** Every pod's stats, CPU rates read from the cache without updating it. */
  listPodStats(): Promise<PodStats[]> {
    return this.#listPodStats(false);
  }

  /** Every pod's stats, updating each container's CPU rate from its previous sample. */
  listPodStatsAndUpdateCPUNanoCoreUsage(): Promise<PodStats[]> {
    return this.#listPodStats(true);
  }

  /** Every pod's CPU and memory only (`?only_cpu_and_memory=true`). */
  async listPodCPUAndMemoryStats(): Promise<PodStats[]> {
    const { containers, sandboxes } = await this.#podAndContainerMaps();
    const stats = await this.#listContainerStats();
    const byID = new Map<string, PodStats>();
    for (const s of stats) {
      const container = containers.get(s.id);
      if (!container) continue;
      const sandbox = sandboxes.get(container.podSandboxId);
      if (!sandbox) continue;
      let ps = byID.get(sandbox.id);
      if (!ps) byID.set(sandbox.id, ps = buildPodStats(sandbox));
      const cs = this.#makeContainerCPUAndMemoryStats(s, container);
      addPodCPUMemoryStats(ps, cs);
      ps.containers.push(cs);
    }
    this.#cleanupOutdatedCaches();
    return [...byID.values()];
  }

  async #listContainerStats(): Promise<CRIContainerStats[]> {
    if (!this.#runtime.listContainerStats) return [];
    try {
      return await this.#runtime.listContainerStats();
    } catch (e) {
      throw new Error(`failed to list all container stats: ${errorText(e)}`, { cause: e });
    }
  }

  async #podAndContainerMaps(): Promise<{
    containers: Map<string, Container>;
    sandboxes: Map<string, PodSandbox>;
  }> {
    let sandboxes: PodSandbox[];
    let containers: Container[];
    try {
      [sandboxes, containers] = await Promise.all([
        this.#runtime.listPodSandbox(),
        this.#runtime.listContainers(),
      ]);
    } catch (e) {
      throw new Error(`failed to list pod and containers: ${errorText(e)}`, { cause: e });
    }
    return {
      sandboxes: new Map(removeTerminatedPods(sandboxes).map((s) => [s.id, s])),
      containers: new Map(removeTerminatedContainers(containers).map((c) => [c.id, c])),
    };
  }

  async #listPodStats(updateCPUNanoCoreUsage: boolean): Promise<PodStats[]> {
    const rootFsInfo = await this.rootFsInfo().catch((e) => {
      throw new Error(`failed to get rootFs info: ${errorText(e)}`, { cause: e });
    });
    const { containers, sandboxes } = await this.#podAndContainerMaps();
    const stats = await this.#listContainerStats();
    // Grouped by sandbox in the stats' order; then the pods are read a few at once (their files
    // and network namespaces).
    const groups = new Map<
      string,
      { sandbox: PodSandbox; entries: [CRIContainerStats, Container][] }
    >();
    for (const s of stats) {
      const container = containers.get(s.id);
      if (!container) continue;
      const sandbox = sandboxes.get(container.podSandboxId);
      if (!sandbox) continue;
      const group = groups.get(sandbox.id) ??
        groups.set(sandbox.id, { sandbox, entries: [] }).get(sandbox.id)!;
      group.entries.push([s, container]);
    }
    const fsInfoByMountpoint = new Map<string, Promise<FsInfo | undefined>>();
    const out = await mapLimit([...groups.values()], podsAtOnce, async ({ sandbox, entries }) => {
      const ps = buildPodStats(sandbox);
      const network = this.#podNetworkStats(sandbox);
      const made = entries.map(([s, container]) =>
        this.#makeContainerStats(
          s,
          container,
          sandbox,
          rootFsInfo,
          fsInfoByMountpoint,
          updateCPUNanoCoreUsage,
        )
      );
      for (const cs of await Promise.all(made)) {
        addPodCPUMemoryStats(ps, cs);
        ps.containers.push(cs);
      }
      ps.network = await network;
      await this.#makePodStorageStats(ps, rootFsInfo);
      return ps;
    });
    this.#cleanupOutdatedCaches();
    return out;
  }

  // The sandbox's network namespace is its process's: /proc/<pid>/net/dev (what cAdvisor reads).
  async #podNetworkStats(sandbox: PodSandbox): Promise<NetworkStats | undefined> {
    try {
      const { info } = await this.#runtime.podSandboxStatus(sandbox.id, { verbose: true });
      const pid = Number(JSON.parse(info?.info ?? "{}").pid ?? 0);
      if (!Number.isInteger(pid) || pid <= 0) return undefined;
      const procDir = this.#options.procDir ?? "/proc";
      const text = await Deno.readTextFile(join(procDir, String(pid), "net", "dev"));
      return toNetworkStats(metaTime(this.#now()), parseNetDev(text));
    } catch (e) {
      log.V(4).info("Unable to find network stats for sandbox", {
        sandboxID: sandbox.id,
        err: errorText(e),
      });
      return undefined;
    }
  }

  async #makeContainerStats(
    stats: CRIContainerStats,
    container: Container,
    sandbox: PodSandbox,
    rootFsInfo: FsInfo,
    fsInfoByMountpoint: Map<string, Promise<FsInfo | undefined>>,
    updateCPUNanoCoreUsage: boolean,
  ): Promise<ContainerStats> {
    const result = this.#makeContainerCPUAndMemoryStats(stats, container, updateCPUNanoCoreUsage);
    const rootfs: FsStats = { time: metaTime(this.#now()) };
    const layer = stats.writableLayer;
    if (layer) {
      rootfs.time = metaTime(nsToMs(layer.timestampNs));
      rootfs.usedBytes = num(layer.usedBytes);
      rootfs.inodesUsed = num(layer.inodesUsed);
      if (layer.mountpoint) {
        if (!fsInfoByMountpoint.has(layer.mountpoint)) {
          fsInfoByMountpoint.set(
            layer.mountpoint,
            this.#fsInfo(layer.mountpoint).catch(() => undefined),
          );
        }
        const info = await fsInfoByMountpoint.get(layer.mountpoint);
        if (info) {
          rootfs.availableBytes = info.available;
          rootfs.capacityBytes = info.capacity;
          rootfs.inodesFree = info.inodesFree;
          rootfs.inodes = info.inodes;
        }
      }
    }
    result.rootfs = rootfs;
    const { namespace, name, uid } = sandbox.metadata;
    const dir = join(
      this.#options.podLogsDir,
      podLogsDirectoryName(namespace, name, uid),
      container.metadata.name,
    );
    try {
      result.logs = await this.#filesStats(dir, rootFsInfo);
    } catch (e) {
      log.error(e, "Unable to fetch container log stats", {
        containerName: container.metadata.name,
      });
    }
    return result;
  }

  #makeContainerCPUAndMemoryStats(
    stats: CRIContainerStats,
    container: Container,
    updateCPUNanoCoreUsage = false,
  ): ContainerStats {
    const now = metaTime(this.#now());
    const result: ContainerStats = {
      name: stats.name || container.metadata.name,
      startTime: metaTime(nsToMs(container.createdAt)),
    };
    if (stats.cpu) {
      result.cpu = {
        time: metaTime(nsToMs(stats.cpu.timestampNs)),
        usageNanoCores: updateCPUNanoCoreUsage
          ? this.#getAndUpdateContainerUsageNanoCores(stats)
          : this.#getContainerUsageNanoCores(stats),
        usageCoreNanoSeconds: Number(stats.cpu.usageCoreNanoSeconds),
      };
    } else {
      result.cpu = { time: now, usageNanoCores: 0, usageCoreNanoSeconds: 0 };
    }
    const m = stats.memory;
    if (m) {
      result.memory = {
        time: metaTime(nsToMs(m.timestampNs)),
        availableBytes: num(m.availableBytes),
        usageBytes: num(m.usageBytes),
        workingSetBytes: Number(m.workingSetBytes),
        rssBytes: num(m.rssBytes),
        pageFaults: num(m.pageFaults),
        majorPageFaults: num(m.majorPageFaults),
      };
    } else {
      result.memory = { time: now, usageBytes: 0, workingSetBytes: 0, rssBytes: 0 };
    }
    result.swap = { time: now, swapAvailableBytes: 0, swapUsageBytes: 0 };
    return result;
  }

  #getContainerUsageNanoCores(stats: CRIContainerStats): number | undefined {
    if (stats.cpu?.usageNanoCores !== undefined) return Number(stats.cpu.usageNanoCores);
    return this.#cpuUsageCache.get(stats.id)?.usageNanoCores;
  }

  // The rate between this sample and the cached one; the first sample only fills the cache.
  #getAndUpdateContainerUsageNanoCores(stats: CRIContainerStats): number | undefined {
    const cpu = stats.cpu;
    if (!cpu) return undefined;
    if (cpu.usageNanoCores !== undefined) return Number(cpu.usageNanoCores);
    const cached = this.#cpuUsageCache.get(stats.id);
    const record: CPUUsageRecord = {
      timestampNs: cpu.timestampNs,
      usageCoreNanoSeconds: cpu.usageCoreNanoSeconds,
    };
    if (!cached || cpu.usageCoreNanoSeconds < cached.usageCoreNanoSeconds) {
      this.#cpuUsageCache.set(stats.id, record);
      return undefined;
    }
    const nanoSeconds = cpu.timestampNs - cached.timestampNs;
    // The same sample again (the runtime caches its stats; this agent updates on each request,
    // where kubelet's eviction manager does every 10 s): the rate already computed.
    if (nanoSeconds === 0n) return cached.usageNanoCores;
    if (nanoSeconds < 0n) {
      const why = `zero or negative interval (${cpu.timestampNs} - ${cached.timestampNs})`;
      log.error(new Error(why), "Failed updating cpu usage nano core");
      return undefined;
    }
    const used = Number(cpu.usageCoreNanoSeconds - cached.usageCoreNanoSeconds);
    record.usageNanoCores = Math.floor(used / Number(nanoSeconds) * 1e9);
    this.#cpuUsageCache.set(stats.id, record);
    return record.usageNanoCores;
  }

  #cleanupOutdatedCaches(): void {
    const now = this.#now();
    for (const [id, record] of this.#cpuUsageCache) {
      if (now - nsToMs(record.timestampNs) > defaultCachePeriodMs) this.#cpuUsageCache.delete(id);
    }
  }

  // kubelet's metricsByPathToFsStats over the files (not folders) directly in `dir`.
  async #filesStats(dir: string, rootFsInfo: FsInfo): Promise<FsStats> {
    const result = rootFsInfoToFsStats(metaTime(this.#now()), rootFsInfo);
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) continue;
      const usage = await this.#dirUsage(join(dir, entry.name));
      result.usedBytes = (result.usedBytes ?? 0) + usage.bytes;
      result.inodesUsed = (result.inodesUsed ?? 0) + usage.inodes;
    }
    return result;
  }

  // kubelet's makePodStorageStats: volumes, then ephemeral storage = containers' rootfs and logs +
  // volumes + the pod's own log files + its /etc/hosts.
  async #makePodStorageStats(ps: PodStats, rootFsInfo: FsInfo): Promise<void> {
    const volumes = await this.#podVolumeStats(ps.podRef.uid, rootFsInfo);
    if (volumes.length > 0) ps.volume = volumes;
    const { namespace, name, uid } = ps.podRef;
    const podLogDir = join(this.#options.podLogsDir, podLogsDirectoryName(namespace, name, uid));
    const podLogStats = await this.#filesStats(podLogDir, rootFsInfo).catch(() => undefined);
    const etcHostsPath = this.#options.podEtcHostsPath?.(uid);
    const etcHosts = etcHostsPath
      ? await this.#dirUsage(etcHostsPath).catch(() => undefined)
      : undefined;
    ps["ephemeral-storage"] = calcEphemeralStorage(
      ps.containers,
      volumes,
      rootFsInfo,
      [
        podLogStats,
        etcHosts && { time: "", usedBytes: etcHosts.bytes, inodesUsed: etcHosts.inodes },
      ],
      metaTime(this.#now()),
    );
  }

  // The pod's volumes, `<podsDir>/<uid>/volumes/<plugin>/<name>`: du of each, on the root fs.
  async #podVolumeStats(uid: string, rootFsInfo: FsInfo): Promise<VolumeStats[]> {
    const root = join(this.#options.podsDir, uid, "volumes");
    const out: VolumeStats[] = [];
    let plugins: Deno.DirEntry[];
    try {
      plugins = await Array.fromAsync(Deno.readDir(root));
    } catch {
      return out;
    }
    for (const plugin of plugins) {
      if (!plugin.isDirectory) continue;
      let volumes: Deno.DirEntry[];
      try {
        volumes = await Array.fromAsync(Deno.readDir(join(root, plugin.name)));
      } catch {
        continue;
      }
      for (const volume of volumes) {
        try {
          const usage = await this.#dirUsage(join(root, plugin.name, volume.name));
          out.push({
            ...rootFsInfoToFsStats(metaTime(this.#now()), rootFsInfo),
            usedBytes: usage.bytes,
            inodesUsed: usage.inodes,
            name: volume.name,
          });
        } catch (e) {
          log.V(4).info("Unable to fetch volume stats", { volume: volume.name, err: errorText(e) });
        }
      }
    }
    return out.sort((a, b) => (a.name ?? "").localeCompare(b.name ?? ""));
  }
}

/**
 * A pod's stats with its reference and start time (the sandbox's creation), as kubelet's
 * `buildPodStats`.
 */
export function buildPodStats(sandbox: PodSandbox): PodStats {
  return {
    podRef: {
      name: sandbox.metadata.name,
      namespace: sandbox.metadata.namespace,
      uid: sandbox.metadata.uid,
    },
    startTime: metaTime(nsToMs(sandbox.createdAt)),
    containers: [],
  };
}

/**
 * Adds a container's CPU, memory and swap to its pod's (kubelet's `addPodCPUMemoryStats` and
 * `addSwapStats` without a pod cgroup from cAdvisor: the sum of the containers).
 */
export function addPodCPUMemoryStats(ps: PodStats, cs: ContainerStats): void {
  if (cs.cpu) {
    ps.cpu = {
      time: cs.cpu.time,
      usageNanoCores: (cs.cpu.usageNanoCores ?? 0) + (ps.cpu?.usageNanoCores ?? 0),
      usageCoreNanoSeconds: (cs.cpu.usageCoreNanoSeconds ?? 0) +
        (ps.cpu?.usageCoreNanoSeconds ?? 0),
    };
  }
  if (cs.swap) {
    ps.swap = {
      time: ps.swap?.time ?? cs.swap.time,
      swapAvailableBytes: (cs.swap.swapAvailableBytes ?? 0) + (ps.swap?.swapAvailableBytes ?? 0),
      swapUsageBytes: (cs.swap.swapUsageBytes ?? 0) + (ps.swap?.swapUsageBytes ?? 0),
    };
  }
  if (cs.memory) {
    const sum = (
      k:
        | "availableBytes"
        | "usageBytes"
        | "workingSetBytes"
        | "rssBytes"
        | "pageFaults"
        | "majorPageFaults",
    ) => (cs.memory?.[k] ?? 0) + (ps.memory?.[k] ?? 0);
    ps.memory = {
      time: cs.memory.time,
      availableBytes: sum("availableBytes"),
      usageBytes: sum("usageBytes"),
      workingSetBytes: sum("workingSetBytes"),
      rssBytes: sum("rssBytes"),
      pageFaults: sum("pageFaults"),
      majorPageFaults: sum("majorPageFaults"),
    };
  }
}

/**
 * kubelet's `removeTerminatedPods`: of the sandboxes sharing a pod's name and namespace, the ready
 * ones, else the newest.
 */
export function removeTerminatedPods(pods: PodSandbox[]): PodSandbox[] {
  const byRef = new Map<string, PodSandbox[]>();
  for (const pod of [...pods].sort((a, b) => cmpBig(a.createdAt, b.createdAt))) {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    (byRef.get(key) ?? byRef.set(key, []).get(key)!).push(pod);
  }
  const out: PodSandbox[] = [];
  for (const refs of byRef.values()) {
    if (refs.length === 1) {
      out.push(refs[0]);
      continue;
    }
    const ready = refs.filter((r) => r.state === "SANDBOX_READY");
    out.push(...(ready.length > 0 ? ready : [refs[refs.length - 1]]));
  }
  return out;
}

/** kubelet's `removeTerminatedContainers`: running containers only. */
export function removeTerminatedContainers(containers: Container[]): Container[] {
  return [...containers].sort((a, b) => cmpBig(a.createdAt, b.createdAt))
    .filter((c) => c.state === "CONTAINER_RUNNING");
}

/**
 * kubelet's `calcEphemeralStorage`: the root file system's figures with the containers' rootfs
 * and logs, the volumes, and the pod's own files (its log files, its /etc/hosts) added up.
 */
export function calcEphemeralStorage(
  containers: ContainerStats[],
  volumes: VolumeStats[],
  rootFsInfo: FsInfo,
  podFiles: (FsStats | undefined)[],
  time: string,
): FsStats {
  const result = rootFsInfoToFsStats(time, rootFsInfo);
  const add = (used?: number, inodes?: number, t?: string) => {
    if (used !== undefined) result.usedBytes = (result.usedBytes ?? 0) + used;
    if (inodes !== undefined) result.inodesUsed = (result.inodesUsed ?? 0) + inodes;
    if (t && t > result.time) result.time = t;
  };
  for (const c of containers) {
    if (!c.rootfs) continue;
    add(c.rootfs.usedBytes, c.rootfs.inodesUsed, c.rootfs.time);
    // The CRI provider counts log inodes too (its figures are exact).
    if (c.logs) add(c.logs.usedBytes, c.logs.inodesUsed, c.logs.time);
  }
  for (const v of volumes) add(v.usedBytes, v.inodesUsed, v.time);
  for (const f of podFiles) if (f) add(f.usedBytes, f.inodesUsed, f.time);
  return result;
}

function rootFsInfoToFsStats(time: string, info: FsInfo): FsStats {
  return {
    time,
    availableBytes: info.available,
    capacityBytes: info.capacity,
    inodesFree: info.inodesFree,
    inodes: info.inodes,
  };
}

// fn over the items, at most `limit` at once, results in the items' order.
async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

function cmpBig(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function nsToMs(ns: bigint): number {
  return Number(ns / 1_000_000n);
}

function num(v: bigint | undefined): number | undefined {
  return v === undefined ? undefined : Number(v);
}
