/**
 * CPU and memory of the embedded runtime's containers, what CRI `ListContainerStats` reports for
 * runc's: CPU is the cgroup's `cpu.stat` `usage_usec` (kept by the kernel for every cgroup v2, with
 * or without controllers); memory is cAdvisor's working set (`memory.current` − `inactive_file`)
 * where the memory controller is on, else the resident memory of the cgroup's processes. A
 * container without a cgroup is its main process (its own and its reaped children's CPU, its
 * resident memory).
 * No Go counterpart in kubelet: this is the part of containerd's CRI stats the embedded runtime
 * needs (containerd's pkg/cri/server/container_stats_list_linux.go reads the same cgroup files).
 * @module
 */
import { join } from "node:path";
import { cgroupPids } from "./cgroup.ts";

/** USER_HZ: /proc/<pid>/stat counts in hundredths of a second on Linux. */
const userHz = 100;

/** One container's figures. */
export interface ContainerUsage {
  usageCoreNanoSeconds: bigint;
  workingSetBytes: bigint;
  usageBytes: bigint;
  rssBytes: bigint;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}

function field(text: string | undefined, key: string): bigint | undefined {
  const m = text?.match(new RegExp(`^${key} (\\d+)$`, "m"));
  return m ? BigInt(m[1]) : undefined;
}

async function residentBytes(pid: number, procDir: string): Promise<bigint> {
  const status = await readText(join(procDir, String(pid), "status"));
  const kb = status?.match(/^VmRSS:\s+(\d+) kB/m)?.[1];
  return kb ? BigInt(kb) * 1024n : 0n;
}

/**
 * The container's usage from its cgroup, or from its main process; undefined when neither can be
 * read (the container is gone).
 *
 * @example
 * ```ts
 * const usage = await readContainerUsage({ cgroup: "/sys/fs/cgroup/probelet/x/c1", pid: 1234 });
 * ```
 */
export async function readContainerUsage(
  target: { cgroup?: string; pid?: number },
  procDir = "/proc",
): Promise<ContainerUsage | undefined> {
  if (target.cgroup) {
    const cpuStat = await readText(join(target.cgroup, "cpu.stat"));
    const usageUsec = field(cpuStat, "usage_usec");
    if (usageUsec !== undefined) {
      const current = await readText(join(target.cgroup, "memory.current"));
      if (current !== undefined) {
        const memStat = await readText(join(target.cgroup, "memory.stat"));
        const usage = BigInt(current.trim());
        const inactiveFile = field(memStat, "inactive_file") ?? 0n;
        return {
          usageCoreNanoSeconds: usageUsec * 1000n,
          workingSetBytes: usage > inactiveFile ? usage - inactiveFile : 0n,
          usageBytes: usage,
          rssBytes: field(memStat, "anon") ?? 0n,
        };
      }
      let rss = 0n;
      for (const pid of cgroupPids(target.cgroup)) rss += await residentBytes(pid, procDir);
      return {
        usageCoreNanoSeconds: usageUsec * 1000n,
        workingSetBytes: rss,
        usageBytes: rss,
        rssBytes: rss,
      };
    }
  }
  if (!target.pid) return undefined;
  const stat = await readText(join(procDir, String(target.pid), "stat"));
  if (stat === undefined) return undefined;
  // After the command (which may hold spaces): utime stime cutime cstime are fields 14-17.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = BigInt(Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]));
  const rss = await residentBytes(target.pid, procDir);
  return {
    usageCoreNanoSeconds: ticks * BigInt(1e9 / userHz),
    workingSetBytes: rss,
    usageBytes: rss,
    rssBytes: rss,
  };
}
