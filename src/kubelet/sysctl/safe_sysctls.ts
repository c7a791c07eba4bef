/**
 * The sysctls every pod may set: namespaced, and without effect on other pods of the node. Some
 * became namespaced in a given kernel and are left out on older ones.
 * Mirrors kubelet's pkg/kubelet/sysctl/safe_sysctls.go (SafeSysctlAllowlist).
 * @module
 */

const safeSysctls: { name: string; kernel?: string }[] = [
  { name: "kernel.shm_rmid_forced" },
  { name: "net.ipv4.ip_local_port_range" },
  { name: "net.ipv4.tcp_syncookies" },
  { name: "net.ipv4.ping_group_range" },
  { name: "net.ipv4.ip_unprivileged_port_start" },
  { name: "net.ipv4.ip_local_reserved_ports", kernel: "3.16" },
  { name: "net.ipv4.tcp_keepalive_time", kernel: "4.5" },
  { name: "net.ipv4.tcp_fin_timeout", kernel: "4.6" },
  { name: "net.ipv4.tcp_keepalive_intvl", kernel: "4.5" },
  { name: "net.ipv4.tcp_keepalive_probes", kernel: "4.5" },
  { name: "net.ipv4.tcp_rmem" },
  { name: "net.ipv4.tcp_wmem" },
];

function versionParts(v: string): number[] {
  return (/^(\d+(?:\.\d+)*)/.exec(v)?.[1] ?? "").split(".").filter((p) => p !== "").map(Number);
}

function atLeast(version: number[], min: number[]): boolean {
  for (let i = 0; i < Math.max(version.length, min.length); i++) {
    const a = version[i] ?? 0;
    const b = min[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/**
 * `SafeSysctlAllowlist`: the safe sysctls for a kernel version (default: this machine's); one
 * that needs a newer kernel, or any kernel when the version cannot be read, is left out.
 *
 * @example
 * ```ts
 * getSafeSysctlAllowlist("4.4.0").includes("net.ipv4.tcp_keepalive_time"); // false
 * ```
 */
export function getSafeSysctlAllowlist(kernelVersion: string = Deno.osRelease()): string[] {
  const version = versionParts(kernelVersion);
  return safeSysctls.filter((s) =>
    s.kernel === undefined || (version.length > 0 && atLeast(version, versionParts(s.kernel)))
  ).map((s) => s.name);
}
