/**
 * What kubelet learns about its machine from cAdvisor, read directly from /proc, /sys and /etc:
 * logical CPUs, memory, huge pages, machine/system/boot IDs, kernel and OS image, and the capacity
 * of the file system holding the agent's root folder (`ephemeral-storage`).
 * Mirrors the parts of kubelet's pkg/kubelet/cadvisor (cadvisor_linux.go, util.go) node status uses.
 * @module
 */
import { statfsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { ResourceList } from "../../api/core/v1/mod.ts";

/** cAdvisor's MachineInfo, reduced to what node status reports. */
export interface MachineInfo {
  /** Logical CPUs. */
  numCores: number;
  /** Bytes of memory. */
  memoryCapacity: number;
  machineID: string;
  systemUUID: string;
  bootID: string;
  /** Huge page pools: page size in KiB and how many pages are configured. */
  hugePages: { pageSizeKiB: number; numPages: number }[];
}

/** cAdvisor's VersionInfo, reduced to the kernel and the OS image. */
export interface VersionInfo {
  kernelVersion: string;
  /** `PRETTY_NAME` of /etc/os-release (cAdvisor's ContainerOsVersion). */
  containerOsVersion: string;
}

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Reads this machine's facts. Unreadable identity files (e.g. product_uuid without root) give
 * empty strings, as cAdvisor reports them.
 *
 * @example
 * ```ts
 * const info = getMachineInfo();
 * info.numCores; // 2
 * ```
 */
export function getMachineInfo(): MachineInfo {
  const cpuinfo = readText("/proc/cpuinfo") ?? "";
  let numCores = cpuinfo.split("\n").filter((l) => /^processor\s*:/.test(l)).length;
  if (numCores === 0) numCores = navigator.hardwareConcurrency;
  const meminfo = readText("/proc/meminfo") ?? "";
  const memKiB = Number(/^MemTotal:\s+(\d+)\s*kB/m.exec(meminfo)?.[1] ?? 0);
  const hugePages: MachineInfo["hugePages"] = [];
  try {
    for (const entry of Deno.readDirSync("/sys/kernel/mm/hugepages")) {
      const m = /^hugepages-(\d+)kB$/.exec(entry.name);
      if (!m) continue;
      const n = Number(readText(`/sys/kernel/mm/hugepages/${entry.name}/nr_hugepages`)?.trim());
      hugePages.push({ pageSizeKiB: Number(m[1]), numPages: Number.isFinite(n) ? n : 0 });
    }
  } catch {
    // No huge page support: nothing to report.
  }
  hugePages.sort((a, b) => a.pageSizeKiB - b.pageSizeKiB);
  return {
    numCores,
    memoryCapacity: memKiB * 1024,
    machineID: (readText("/etc/machine-id") ?? readText("/var/lib/dbus/machine-id") ?? "").trim(),
    systemUUID: (readText("/sys/class/dmi/id/product_uuid") ?? "").trim(),
    bootID: (readText("/proc/sys/kernel/random/boot_id") ?? "").trim(),
    hugePages,
  };
}

/**
 * The kernel release (`uname -r`) and the OS image's pretty name (`Linux` when unknown).
 *
 * @example
 * ```ts
 * getVersionInfo().containerOsVersion; // "Debian GNU/Linux 12 (bookworm)"
 * ```
 */
export function getVersionInfo(): VersionInfo {
  const osRelease = readText("/etc/os-release") ?? "";
  const pretty = /^PRETTY_NAME=(.*)$/m.exec(osRelease)?.[1]?.trim().replace(/^"(.*)"$/, "$1");
  return { kernelVersion: Deno.osRelease(), containerOsVersion: pretty || "Linux" };
}

/**
 * Bytes of the file system holding `path` (blocks × block size), cAdvisor's RootFsInfo capacity;
 * a path not created yet is measured at its nearest existing parent.
 *
 * @example
 * ```ts
 * rootFsCapacity(".run/probelet"); // 270553174016
 * ```
 */
export function rootFsCapacity(path: string): number {
  let p = resolve(path);
  for (;;) {
    try {
      const fs = statfsSync(p);
      return Number(fs.blocks) * Number(fs.bsize);
    } catch (e) {
      if (!(e instanceof Error && "code" in e && e.code === "ENOENT") || p === dirname(p)) throw e;
      p = dirname(p);
    }
  }
}

/**
 * A byte count as resource.Quantity prints it in BinarySI: `0`, plain below 1024 or when not a
 * multiple of 1024, else the largest exact binary suffix (`16331784Ki`, `2Mi`).
 *
 * @example
 * ```ts
 * binarySI(2 * 1024 * 1024); // "2Mi"
 * binarySI(10e9); // "9765625Ki"
 * ```
 */
export function binarySI(bytes: number): string {
  if (bytes === 0) return "0";
  if (Math.abs(bytes) < 1024 || !Number.isInteger(bytes)) return String(bytes);
  const suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
  let n = bytes;
  let exp = 0;
  while (exp < suffixes.length - 1 && n % 1024 === 0) {
    n /= 1024;
    exp++;
  }
  return `${n}${suffixes[exp]}`;
}

/**
 * Node capacity from the machine: `cpu`, `memory` and one `hugepages-<size>` per page size.
 * Mirrors kubelet's cadvisor.CapacityFromMachineInfo.
 *
 * @example
 * ```ts
 * capacityFromMachineInfo({
 *   numCores: 2,
 *   memoryCapacity: 8 * 2 ** 30,
 *   machineID: "",
 *   systemUUID: "",
 *   bootID: "",
 *   hugePages: [],
 * });
 * // { cpu: "2", memory: "8Gi" }
 * ```
 */
export function capacityFromMachineInfo(info: MachineInfo): ResourceList {
  const c: ResourceList = {
    cpu: String(info.numCores),
    memory: binarySI(info.memoryCapacity),
  };
  for (const hp of info.hugePages) {
    const pageBytes = hp.pageSizeKiB * 1024;
    c[`hugepages-${binarySI(pageBytes)}`] = binarySI(pageBytes * hp.numPages);
  }
  return c;
}
