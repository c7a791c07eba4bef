/**
 * The Summary API's provider: the node's CPU, memory, network, root file system and process limit,
 * the agent's own figures as the `kubelet` system container, and the pods from the CRI stats
 * provider; `getCPUAndMemoryStats` for `?only_cpu_and_memory=true`.
 * Mirrors kubelet's pkg/kubelet/server/stats/summary.go and summary_sys_containers.go (the node's
 * root-cgroup figures come from /proc rather than cAdvisor: see host_stats.ts).
 * @module
 */
import { join } from "node:path";
import {
  fsStatsOf,
  parseNetDev,
  readNodeCPUMemory,
  readProcessCPUMemory,
  rlimitStats,
  toNetworkStats,
} from "./host_stats.ts";
import type { CRIStatsProvider } from "./cri_stats_provider.ts";
import {
  type ContainerStats,
  type CPUStats,
  metaTime,
  type NodeStats,
  type Summary,
  systemContainerKubelet,
} from "./types.ts";
import { errorText } from "../../../util/errors.ts";

/** What the summary provider reads. */
export interface SummaryProviderOptions {
  nodeName: string;
  /** The /proc to read (default `/proc`). */
  procDir?: string;
  /** Milliseconds since the epoch (default `Date.now`). */
  now?: () => number;
  /** When the agent started (the `kubelet` system container's start time); default: now. */
  kubeletCreationTimeMs?: number;
}

interface CPUSample {
  atMs: number;
  usageCoreNanoSeconds: number;
  usageNanoCores?: number;
}

/**
 * kubelet's `summaryProviderImpl`.
 *
 * @example
 * ```ts
 * declare const criStats: ConstructorParameters<typeof SummaryProvider>[0];
 * const summary = new SummaryProvider(criStats, { nodeName: "node-1" });
 * const { node, pods } = await summary.get(true);
 * ```
 */
export class SummaryProvider {
  readonly #provider: CRIStatsProvider;
  readonly #options: SummaryProviderOptions;
  readonly #now: () => number;
  readonly #procDir: string;
  readonly #kubeletCreationTime: string;
  #systemBootTime?: string;
  // The previous samples of the node's and the agent's CPU, for their rates.
  readonly #cpuSamples = new Map<string, CPUSample>();

  constructor(provider: CRIStatsProvider, options: SummaryProviderOptions) {
    this.#provider = provider;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#procDir = options.procDir ?? "/proc";
    this.#kubeletCreationTime = metaTime(options.kubeletCreationTimeMs ?? this.#now());
  }

  /**
   * The whole summary. `updateStats` updates the containers' CPU rates from their previous
   * samples (kubelet's `ListPodStatsAndUpdateCPUNanoCoreUsage`).
   */
  async get(updateStats: boolean): Promise<Summary> {
    const nowMs = this.#now();
    const time = metaTime(nowMs);
    const root = await this.#rootStats(nowMs).catch((e) => {
      throw new Error(`failed to get root cgroup stats: ${errorText(e)}`, { cause: e });
    });
    const network = await Deno.readTextFile(join(this.#procDir, "net", "dev"))
      .then((text) => toNetworkStats(time, parseNetDev(text)))
      .catch(() => undefined);
    const rootFs = await this.#provider.rootFsInfo().catch((e) => {
      throw new Error(`failed to get rootFs stats: ${errorText(e)}`, { cause: e });
    });
    const pods =
      await (updateStats
        ? this.#provider.listPodStatsAndUpdateCPUNanoCoreUsage()
        : this.#provider.listPodStats()).catch((e) => {
          throw new Error(`failed to list pod stats: ${errorText(e)}`, { cause: e });
        });
    const rlimit = await rlimitStats(time, this.#procDir).catch((e) => {
      throw new Error(`failed to get rlimit stats: ${errorText(e)}`, { cause: e });
    });
    const node: NodeStats = {
      nodeName: this.#options.nodeName,
      systemContainers: await this.#systemContainers(nowMs),
      startTime: await this.#bootTime(),
      cpu: root.cpu,
      memory: root.memory,
      network,
      fs: fsStatsOf(time, rootFs),
      rlimit,
      swap: root.swap,
    };
    return { node, pods };
  }

  /** The node's and the pods' CPU and memory only. */
  async getCPUAndMemoryStats(): Promise<Summary> {
    const nowMs = this.#now();
    const root = await this.#rootStats(nowMs).catch((e) => {
      throw new Error(`failed to get root cgroup stats: ${errorText(e)}`, { cause: e });
    });
    const pods = await this.#provider.listPodCPUAndMemoryStats().catch((e) => {
      throw new Error(`failed to list pod stats: ${errorText(e)}`, { cause: e });
    });
    const node: NodeStats = {
      nodeName: this.#options.nodeName,
      systemContainers: await this.#systemContainers(nowMs),
      startTime: await this.#bootTime(),
      cpu: root.cpu,
      memory: root.memory,
      swap: root.swap,
    };
    return { node, pods };
  }

  async #rootStats(nowMs: number): Promise<Pick<ContainerStats, "cpu" | "memory" | "swap">> {
    const { usageCoreNanoSeconds, memory, swap } = await readNodeCPUMemory(this.#procDir);
    const time = metaTime(nowMs);
    return {
      cpu: this.#cpu("/", nowMs, usageCoreNanoSeconds),
      memory: { time, ...memory },
      swap: { time, ...swap },
    };
  }

  // The `kubelet` system container: the agent's own process.
  async #systemContainers(nowMs: number): Promise<ContainerStats[]> {
    try {
      const self = await readProcessCPUMemory("self", this.#procDir);
      return [{
        name: systemContainerKubelet,
        startTime: this.#kubeletCreationTime,
        cpu: this.#cpu(systemContainerKubelet, nowMs, self.usageCoreNanoSeconds),
        memory: { time: metaTime(nowMs), ...self.memory },
      }];
    } catch {
      return [];
    }
  }

  // A cumulative CPU figure with its rate since the previous sample of the same name.
  #cpu(name: string, nowMs: number, usageCoreNanoSeconds: number): CPUStats {
    const previous = this.#cpuSamples.get(name);
    const sample: CPUSample = { atMs: nowMs, usageCoreNanoSeconds };
    if (
      previous && nowMs > previous.atMs && usageCoreNanoSeconds >= previous.usageCoreNanoSeconds
    ) {
      sample.usageNanoCores = Math.floor(
        (usageCoreNanoSeconds - previous.usageCoreNanoSeconds) / ((nowMs - previous.atMs) * 1e6) *
          1e9,
      );
    } else if (previous && nowMs === previous.atMs) {
      sample.usageNanoCores = previous.usageNanoCores;
    }
    this.#cpuSamples.set(name, sample);
    return {
      time: metaTime(nowMs),
      usageNanoCores: sample.usageNanoCores,
      usageCoreNanoSeconds,
    };
  }

  // The node's start time: boot time from /proc/stat's btime.
  async #bootTime(): Promise<string> {
    if (this.#systemBootTime) return this.#systemBootTime;
    const stat = await Deno.readTextFile(join(this.#procDir, "stat")).catch(() => "");
    const btime = Number(stat.match(/^btime (\d+)$/m)?.[1] ?? 0);
    return this.#systemBootTime = metaTime(btime * 1000);
  }
}
