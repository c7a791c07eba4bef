/**
 * Which kernel namespace isolates a sysctl: IPC for `kernel.sem`, `kernel.shm*`, `kernel.msg*`
 * and `fs.mqueue.*`, network for `net.*`; anything else is not known to be namespaced.
 * Mirrors kubelet's pkg/kubelet/sysctl/namespace.go.
 * @module
 */

/** A kernel namespace name: `ipc`, `net`, or "" when unknown. */
export type Namespace = "ipc" | "net" | "";

const namespaces: Record<string, Namespace> = { "kernel.sem": "ipc" };
const prefixNamespaces: [string, Namespace][] = [
  ["kernel.shm", "ipc"],
  ["kernel.msg", "ipc"],
  ["fs.mqueue.", "ipc"],
  ["net.", "net"],
];

/**
 * `NamespacedBy`: the namespace of a sysctl (dotted name), "" when not known to be namespaced.
 *
 * @example
 * ```ts
 * namespacedBy("net.ipv4.tcp_syncookies"); // "net"
 * namespacedBy("vm.swappiness"); // ""
 * ```
 */
export function namespacedBy(val: string): Namespace {
  if (val in namespaces) return namespaces[val];
  for (const [prefix, ns] of prefixNamespaces) {
    if (val.startsWith(prefix)) return ns;
  }
  return "";
}

/**
 * component-helpers' `NormalizeName`: a sysctl written with `/` separators
 * (`net/ipv4/conf/eno2.100/rp_filter`) in its dotted form (`net.ipv4.conf.eno2/100.rp_filter`).
 *
 * @example
 * ```ts
 * normalizeName("net/ipv4/ip_local_port_range"); // "net.ipv4.ip_local_port_range"
 * ```
 */
export function normalizeName(val: string): string {
  const first = val.search(/[./]/);
  if (first === -1 || val[first] === ".") return val;
  return val.replace(/[./]/g, (c) => (c === "." ? "/" : "."));
}
