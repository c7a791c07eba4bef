/**
 * What kubelet reads off a Node object: its host IPs.
 * Mirrors pkg/util/node/node.go (GetNodeHostIPs).
 * @module
 */
import { isIP } from "node:net";
import type { Node } from "../../api/core/v1/mod.ts";

/**
 * The node's primary IP and, on a dual-stack node, the first IP of the other family: InternalIP
 * addresses first, then ExternalIP ones. Pods on the node report them as `hostIP`/`hostIPs`, and
 * host-network pods as their pod IPs. Throws when the node lists no IP address.
 *
 * @example
 * ```ts
 * getNodeHostIPs({ metadata: {}, status: { addresses: [
 *   { type: "Hostname", address: "n1" },
 *   { type: "ExternalIP", address: "fd00::5" },
 *   { type: "InternalIP", address: "10.0.0.5" },
 * ] } }); // ["10.0.0.5", "fd00::5"]
 * ```
 */
export function getNodeHostIPs(node: Node): string[] {
  const addresses = node.status?.addresses ?? [];
  const ips = [
    ...addresses.filter((a) => a.type === "InternalIP"),
    ...addresses.filter((a) => a.type === "ExternalIP"),
  ].map((a) => a.address).filter((ip) => isIP(ip) !== 0);
  if (ips.length === 0) {
    const known = addresses.map((a) => `{${a.type} ${a.address}}`).join(" ");
    throw new Error(`host IP unknown; known addresses: [${known}]`);
  }
  const primary = ips[0];
  const secondary = ips.find((ip) => isIP(ip) !== isIP(primary));
  return secondary === undefined ? [primary] : [primary, secondary];
}
