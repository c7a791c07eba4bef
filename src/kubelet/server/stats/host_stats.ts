/**
 * The node-side readers behind the Summary API, where kubelet asks cAdvisor: the node's CPU and
 * memory (/proc/stat, /proc/meminfo, /proc/vmstat), network interfaces (`<proc>/<pid>/net/dev`),
 * a file system's capacity (statfs), a folder's use (a walk of it, as cAdvisor's `du`), and the
 * process limit (/proc/sys/kernel/pid_max, threads-max, /proc/loadavg).
 * Mirrors kubelet's pkg/kubelet/stats/host_stats_provider.go and pidlimit/pidlimit_linux.go, and
 * the parts of cAdvisor they read.
 * @module
 */
import { statfs } from "node:fs/promises";
import { join } from "node:path";
import type { FsStats, InterfaceStats, MemoryStats, RlimitStats } from "./types.ts";

/** USER_HZ: /proc/stat counts in hundredths of a second on Linux. */
const userHz = 100;

/** The node's cumulative CPU and its memory, as cAdvisor reports the root cgroup. */
export interface NodeCPUMemory {
  /** Cumulative busy CPU time, core-nanoseconds. */
  usageCoreNanoSeconds: number;
  memory: Omit<MemoryStats, "time">;
  /** Swap in use (SwapTotal − SwapFree) and left (SwapFree). */
  swap: { swapAvailableBytes: number; swapUsageBytes: number };
}

/**
 * Reads the node's CPU (busy jiffies of /proc/stat: all but idle and iowait) and memory
 * (usage = MemTotal − MemFree; working set = usage − Inactive(file); available = MemTotal − working
 * set; RSS = AnonPages; page faults from /proc/vmstat) and swap.
 *
 * @example
 * ```ts
 * const { usageCoreNanoSeconds, memory } = await readNodeCPUMemory();
 * ```
 */
export async function readNodeCPUMemory(procDir = "/proc"): Promise<NodeCPUMemory> {
  const stat = await Deno.readTextFile(join(procDir, "stat"));
  const cpu = stat.split("\n").find((l) => l.startsWith("cpu "));
  if (!cpu) throw new Error(`${join(procDir, "stat")}: no cpu line`);
  const f = cpu.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  const busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0);
  const meminfo = await Deno.readTextFile(join(procDir, "meminfo"));
  const kb = (key: string) => {
    const m = meminfo.match(new RegExp(`^${key.replace(/[()]/g, "\\$&")}:\\s+(\\d+) kB`, "m"));
    return m ? Number(m[1]) * 1024 : 0;
  };
  const total = kb("MemTotal");
  const usage = Math.max(0, total - kb("MemFree"));
  const workingSet = Math.max(0, usage - kb("Inactive(file)"));
  const vmstat = await Deno.readTextFile(join(procDir, "vmstat")).catch(() => "");
  const counter = (key: string) => {
    const m = vmstat.match(new RegExp(`^${key} (\\d+)$`, "m"));
    return m ? Number(m[1]) : undefined;
  };
  return {
    usageCoreNanoSeconds: busy * (1e9 / userHz),
    memory: {
      availableBytes: Math.max(0, total - workingSet),
      usageBytes: usage,
      workingSetBytes: workingSet,
      rssBytes: kb("AnonPages"),
      pageFaults: counter("pgfault"),
      majorPageFaults: counter("pgmajfault"),
    },
    swap: {
      swapAvailableBytes: kb("SwapFree"),
      swapUsageBytes: Math.max(0, kb("SwapTotal") - kb("SwapFree")),
    },
  };
}

/**
 * A process's CPU and memory from `<proc>/<pid>/stat` and `status`: CPU = utime + stime, working
 * set and usage = VmRSS (the agent's own figures, the `kubelet` system container).
 *
 * @example
 * ```ts
 * const self = await readProcessCPUMemory("self");
 * ```
 */
export async function readProcessCPUMemory(
  pid: number | "self",
  procDir = "/proc",
): Promise<{ usageCoreNanoSeconds: number; memory: Omit<MemoryStats, "time"> }> {
  const stat = await Deno.readTextFile(join(procDir, String(pid), "stat"));
  // Fields after the command (which may hold spaces), from field 3 on.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const minflt = Number(fields[7]);
  const majflt = Number(fields[9]);
  const status = await Deno.readTextFile(join(procDir, String(pid), "status"));
  const rss = Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1] ?? 0) * 1024;
  return {
    usageCoreNanoSeconds: (utime + stime) * (1e9 / userHz),
    memory: {
      usageBytes: rss,
      workingSetBytes: rss,
      rssBytes: rss,
      pageFaults: minflt,
      majorPageFaults: majflt,
    },
  };
}

/**
 * The interfaces of a `net/dev` file (`/proc/net/dev` for the node, `/proc/<pid>/net/dev` for a
 * process's network namespace), loopback left out as cAdvisor does.
 *
 * @example
 * ```ts
 * const ifaces = parseNetDev(await Deno.readTextFile("/proc/net/dev"));
 * ```
 */
export function parseNetDev(text: string): InterfaceStats[] {
  const out: InterfaceStats[] = [];
  for (const line of text.split("\n").slice(2)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    if (name === "lo") continue;
    const f = line.slice(colon + 1).trim().split(/\s+/).map(Number);
    // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs ...
    out.push({ name, rxBytes: f[0], rxErrors: f[2], txBytes: f[8], txErrors: f[10] });
  }
  return out;
}

/** kubelet's default network interface, the one the summary's network figures name inline. */
export const defaultNetworkInterfaceName = "eth0";

/**
 * NetworkStats from the interfaces: every one listed, and `eth0`'s counters inline, as kubelet's
 * `cadvisorInfoToNetworkStats`.
 *
 * @example
 * ```ts
 * toNetworkStats("2026-01-01T00:00:00Z", [{ name: "eth0", rxBytes: 1 }]).rxBytes; // 1
 * ```
 */
export function toNetworkStats(time: string, interfaces: InterfaceStats[]) {
  const inline = interfaces.find((i) => i.name === defaultNetworkInterfaceName);
  return { time, ...(inline ?? {}), interfaces };
}

/** A file system's figures (cAdvisor's FsInfo). */
export interface FsInfo {
  capacity: number;
  /** Bytes in use: (blocks − free blocks) × block size. */
  usage: number;
  available: number;
  inodes: number;
  inodesFree: number;
}

/**
 * statfs of the file system holding `path`.
 *
 * @example
 * ```ts
 * const { capacity } = await fsInfo("/var/lib/probelet");
 * ```
 */
export async function fsInfo(path: string): Promise<FsInfo> {
  const s = await statfs(path);
  return {
    capacity: Number(s.blocks) * Number(s.bsize),
    usage: (Number(s.blocks) - Number(s.bfree)) * Number(s.bsize),
    available: Number(s.bavail) * Number(s.bsize),
    inodes: Number(s.files),
    inodesFree: Number(s.ffree),
  };
}

/**
 * FsStats of a whole file system (kubelet's `RootFsStats`).
 *
 * @example
 * ```ts
 * fsStatsOf("2026-01-01T00:00:00Z", await fsInfo("/")).capacityBytes;
 * ```
 */
export function fsStatsOf(time: string, info: FsInfo): FsStats {
  return {
    time,
    availableBytes: info.available,
    capacityBytes: info.capacity,
    usedBytes: info.usage,
    inodesFree: info.inodesFree,
    inodes: info.inodes,
    inodesUsed: Math.max(0, info.inodes - info.inodesFree),
  };
}

/** What a walk of a folder found: bytes of allocated blocks and inodes (cAdvisor's `du`). */
export interface DirUsage {
  bytes: number;
  inodes: number;
}

/**
 * The disk use of a folder: allocated blocks (512 bytes each) and inodes of everything under it,
 * on the same device, each hard-linked inode once. A missing folder rejects with NotFound.
 *
 * @example
 * ```ts
 * const { bytes, inodes } = await dirUsage("/var/lib/probelet/pods/uid/volumes");
 * ```
 */
export async function dirUsage(path: string): Promise<DirUsage> {
  const root = await Deno.lstat(path);
  const seen = new Set<number>();
  let bytes = 0;
  let inodes = 0;
  const count = (s: Deno.FileInfo) => {
    if (s.ino !== null && s.nlink !== null && s.nlink > 1) {
      if (seen.has(s.ino)) return;
      seen.add(s.ino);
    }
    bytes += (s.blocks ?? 0) * 512;
    inodes++;
  };
  count(root);
  if (!root.isDirectory) return { bytes, inodes };
  const stack = [path];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(dir));
    } catch (e) {
      // Removed while walking: counted as empty.
      if (e instanceof Deno.errors.NotFound) continue;
      throw e;
    }
    for (const entry of entries) {
      const p = join(dir, entry.name);
      let s: Deno.FileInfo;
      try {
        s = await Deno.lstat(p);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) continue;
        throw e;
      }
      if (s.dev !== root.dev) continue;
      count(s);
      if (s.isDirectory) stack.push(p);
    }
  }
  return { bytes, inodes };
}

/**
 * The node's process limit and count: the lower of pid_max and threads-max, and the running
 * tasks of /proc/loadavg (kubelet's pidlimit.Stats).
 *
 * @example
 * ```ts
 * const { maxpid, curproc } = await rlimitStats("2026-01-01T00:00:00Z");
 * ```
 */
export async function rlimitStats(time: string, procDir = "/proc"): Promise<RlimitStats> {
  const out: RlimitStats = { time };
  for (const file of ["sys/kernel/pid_max", "sys/kernel/threads-max"]) {
    const text = await Deno.readTextFile(join(procDir, file)).catch(() => undefined);
    const limit = text === undefined ? NaN : Number(text.trim());
    if (Number.isInteger(limit) && (out.maxpid === undefined || limit < out.maxpid)) {
      out.maxpid = limit;
    }
  }
  const loadavg = await Deno.readTextFile(join(procDir, "loadavg")).catch(() => "");
  const tasks = loadavg.trim().split(/\s+/)[3]?.split("/")[1];
  if (tasks !== undefined && /^\d+$/.test(tasks)) out.curproc = Number(tasks);
  return out;
}
