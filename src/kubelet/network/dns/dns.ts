/**
 * A pod's DNS configuration for its sandbox (the runtime writes it as the pod's resolv.conf), by
 * `dnsPolicy` and `dnsConfig`, from the node's resolv.conf and the kubelet's `--cluster-dns` and
 * `--cluster-domain`.
 * Mirrors kubelet's pkg/kubelet/network/dns/dns.go.
 * @module
 */
import type { ObjectReference, Pod, PodDNSConfigOption } from "../../../api/core/v1/mod.ts";
import type { DNSConfig } from "../../../cri_client/api.ts";
import * as log from "../../../util/log.ts";
import { getPodReference } from "../../container/ref.ts";
import type { EventRecorder } from "../../events/mod.ts";
import { formatPod } from "../../util/format.ts";

/** The API's limit on nameservers (`validation.MaxDNSNameservers`). */
export const maxDNSNameservers = 3;
/** The API's limit on search paths (`validation.MaxDNSSearchPaths`). */
export const maxDNSSearchPaths = 32;
/** The API's limit on the search line's length (`validation.MaxDNSSearchListChars`). */
export const maxDNSSearchListChars = 2048;
/** A DNS-1123 subdomain's maximum length: longer search paths are dropped. */
const dns1123SubdomainMaxLength = 253;

/** kubelet's options for cluster-DNS pods. */
const defaultDNSOptions = ["ndots:5"];

/** A sandbox's DNS configuration with every list present. */
export type PodDNSConfig = Required<DNSConfig>;

/** How a pod's DNS is made (kubelet's `podDNSType`). */
export type PodDNSType = "cluster" | "host" | "none";

/** What {@linkcode Configurer} needs. */
export interface ConfigurerOptions {
  recorder: EventRecorder;
  /** The node, for the node's `MissingClusterDNS` event. */
  nodeRef: ObjectReference;
  /** The node's IPs: a localhost nameserver per family when `resolverConfig` is "". */
  nodeIPs: string[];
  /** `--cluster-dns`. */
  clusterDNS: string[];
  /** `--cluster-domain`. */
  clusterDomain: string;
  /** `--resolv-conf`: the host's resolver file ("" for none). */
  resolverConfig: string;
}

/**
 * Builds pods' DNS configurations (kubelet's `dns.Configurer`).
 *
 * @example
 * ```ts
 * import type { ObjectReference, Pod } from "../../../api/core/v1/mod.ts";
 * import type { EventRecorder } from "../../events/event.ts";
 *
 * declare const recorder: EventRecorder;
 * declare const nodeRef: ObjectReference;
 * declare const pod: Pod;
 *
 * const c = new Configurer({ recorder, nodeRef, nodeIPs: ["10.0.0.2"], clusterDNS: ["10.96.0.10"],
 *   clusterDomain: "cluster.local", resolverConfig: "/etc/resolv.conf" });
 * (await c.getPodDNS(pod)).servers; // ["10.96.0.10"]
 * ```
 */
export class Configurer {
  readonly clusterDomain: string;
  readonly resolverConfig: string;
  #recorder: EventRecorder;
  #nodeRef: ObjectReference;
  #nodeIPs: string[];
  #clusterDNS: string[];

  constructor(options: ConfigurerOptions) {
    this.#recorder = options.recorder;
    this.#nodeRef = options.nodeRef;
    this.#nodeIPs = options.nodeIPs;
    this.#clusterDNS = options.clusterDNS;
    this.clusterDomain = options.clusterDomain;
    this.resolverConfig = options.resolverConfig;
  }

  /** The sandbox's DNS configuration for the pod (kubelet's `GetPodDNS`). */
  async getPodDNS(pod: Pod): Promise<PodDNSConfig> {
    let dnsConfig = await getHostDNSConfig(this.resolverConfig);
    const dnsType = getPodDNSType(pod);
    switch (dnsType) {
      case "none":
        dnsConfig = { servers: [], searches: [], options: [] };
        break;
      case "cluster":
        if (this.#clusterDNS.length > 0) {
          dnsConfig.servers = [...this.#clusterDNS];
          dnsConfig.searches = this.generateSearchesForDNSClusterFirst(dnsConfig.searches, pod);
          dnsConfig.options = [...defaultDNSOptions];
          break;
        }
        this.#missingClusterDNS(pod);
        this.#hostFallback(dnsConfig);
        break;
      case "host":
        this.#hostFallback(dnsConfig);
        break;
    }
    if (pod.spec.dnsConfig) dnsConfig = appendDNSConfig(dnsConfig, pod.spec.dnsConfig);
    return this.formDNSConfigFitsLimits(dnsConfig, pod);
  }

  // Without a resolver file, a localhost nameserver per node IP family and no search.
  #hostFallback(dnsConfig: PodDNSConfig): void {
    if (this.resolverConfig !== "") return;
    for (const ip of this.#nodeIPs) dnsConfig.servers.push(ip.includes(":") ? "::1" : "127.0.0.1");
    if (dnsConfig.servers.length === 0) dnsConfig.servers.push("127.0.0.1");
    dnsConfig.searches = ["."];
  }

  #missingClusterDNS(pod: Pod): void {
    const message = "kubelet does not have ClusterDNS IP configured and cannot create Pod using " +
      '"ClusterFirst" policy. Falling back to "Default" policy.';
    this.#recorder.event(this.#nodeRef, {
      type: "Warning",
      reason: "MissingClusterDNS",
      message,
    });
    this.#recorder.event(getPodReference(pod), {
      type: "Warning",
      reason: "MissingClusterDNS",
      message: `pod: "${formatPod(pod)}". ${message}`,
    });
  }

  /** The cluster search paths before the host's (kubelet's `generateSearchesForDNSClusterFirst`). */
  generateSearchesForDNSClusterFirst(hostSearch: string[], pod: Pod): string[] {
    if (this.clusterDomain === "") return hostSearch;
    const namespace = pod.metadata.namespace ?? "";
    const nsSvcDomain = `${namespace}.svc.${this.clusterDomain}`;
    const svcDomain = `svc.${this.clusterDomain}`;
    return omitDuplicates([nsSvcDomain, svcDomain, this.clusterDomain, ...hostSearch]);
  }

  /**
   * Cuts nameservers and search paths to the API's limits, with a `DNSConfigForming` event for
   * each cut (kubelet's `formDNSConfigFitsLimits`).
   */
  formDNSConfigFitsLimits(dnsConfig: PodDNSConfig, pod: Pod): PodDNSConfig {
    if (dnsConfig.servers.length > maxDNSNameservers) {
      dnsConfig.servers = dnsConfig.servers.slice(0, maxDNSNameservers);
      const message = "Nameserver limits were exceeded, some nameservers have been omitted, the " +
        `applied nameserver line is: ${dnsConfig.servers.join(" ")}`;
      this.#recorder.event(getPodReference(pod), {
        type: "Warning",
        reason: "DNSConfigForming",
        message,
      });
      log.error(new Error(message), "Nameserver limits exceeded");
    }
    dnsConfig.searches = this.#formDNSSearchFitsLimits(dnsConfig.searches, pod);
    return dnsConfig;
  }

  #formDNSSearchFitsLimits(search: string[], pod: Pod): string[] {
    let limitsExceeded = false;
    let composed = search;
    if (composed.length > maxDNSSearchPaths) {
      composed = composed.slice(0, maxDNSSearchPaths);
      limitsExceeded = true;
    }
    // Some resolvers (glibc 2.28) abort on a search path over 255 characters.
    const fitting = composed.filter((s) => byteLength(s) <= dns1123SubdomainMaxLength);
    if (fitting.length !== composed.length) limitsExceeded = true;
    composed = fitting;
    const lineLength = byteLength(composed.join(" "));
    if (lineLength > maxDNSSearchListChars) {
      let cutNum = 0;
      let cutLen = 0;
      for (let i = composed.length - 1; i >= 0; i--) {
        cutLen += byteLength(composed[i]) + 1;
        cutNum++;
        if (lineLength - cutLen <= maxDNSSearchListChars) break;
      }
      composed = composed.slice(0, composed.length - cutNum);
      limitsExceeded = true;
    }
    if (limitsExceeded) {
      const message = "Search Line limits were exceeded, some search paths have been omitted, " +
        `the applied search line is: ${composed.join(" ")}`;
      this.#recorder.event(getPodReference(pod), {
        type: "Warning",
        reason: "DNSConfigForming",
        message,
      });
      log.error(new Error(message), "Search Line limits exceeded");
    }
    return composed;
  }
}

/**
 * How the pod's DNS is made from its `dnsPolicy` (kubelet's `getPodDNSType`): `ClusterFirst` is
 * the host's for a host-network pod; an unknown policy is an error.
 */
export function getPodDNSType(pod: Pod): PodDNSType {
  const policy = pod.spec.dnsPolicy ?? "ClusterFirst";
  switch (policy) {
    case "None":
      return "none";
    case "ClusterFirstWithHostNet":
      return "cluster";
    case "ClusterFirst":
      return pod.spec.hostNetwork ? "host" : "cluster";
    case "Default":
      return "host";
  }
  throw new Error(`invalid DNSPolicy=${policy}`);
}

/** The host's nameservers, search paths and options from a resolv.conf file ("" for none). */
export async function getHostDNSConfig(resolverConfigPath: string): Promise<PodDNSConfig> {
  if (resolverConfigPath === "") return { servers: [], searches: [], options: [] };
  let text: string;
  try {
    text = await Deno.readTextFile(resolverConfigPath);
  } catch (e) {
    throw new Error(
      `failed to open DNS resolver config file ${resolverConfigPath}: ${
        e instanceof Error ? e.message : e
      }`,
    );
  }
  const { nameservers, searches, options } = parseResolvConf(text);
  return { servers: nameservers, searches, options };
}

/**
 * Reads a resolv.conf (kubelet's `parseResolvConf`): every `nameserver`, the last `search` line
 * (without `.` and trailing dots), and the `options` merged by name.
 */
export function parseResolvConf(
  text: string,
): { nameservers: string[]; searches: string[]; options: string[] } {
  const nameservers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.startsWith(";")) continue;
    const fields = line.trim().split(/\s+/).filter((f) => f !== "");
    if (fields.length === 0) continue;
    switch (fields[0]) {
      case "nameserver":
        if (fields.length > 1) nameservers.push(fields[1]);
        break;
      case "search":
        searches = fields.slice(1).filter((s) => s !== ".").map((s) => s.replace(/\.$/, ""));
        break;
      case "options":
        options = appendOptions(options, fields.slice(1));
        break;
    }
  }
  return { nameservers, searches, options };
}

// An option replaces an earlier one of the same name (the part before ':').
function appendOptions(options: string[], more: string[]): string[] {
  const result = [...options];
  for (const opt of more) {
    const name = opt.split(":")[0];
    const i = result.findIndex((o) => o.split(":")[0] === name);
    if (i >= 0) result[i] = opt;
    else result.push(opt);
  }
  return result;
}

/**
 * The pod's `dnsConfig` appended to the generated configuration (kubelet's `appendDNSConfig`):
 * nameservers and searches without duplicates, options merged by name.
 */
export function appendDNSConfig(
  existing: PodDNSConfig,
  dnsConfig: NonNullable<Pod["spec"]["dnsConfig"]>,
): PodDNSConfig {
  return {
    servers: omitDuplicates([...existing.servers, ...(dnsConfig.nameservers ?? [])]),
    searches: omitDuplicates([...existing.searches, ...(dnsConfig.searches ?? [])]),
    options: mergeDNSOptions(existing.options, dnsConfig.options ?? []),
  };
}

/**
 * Options as `name` or `name:value`, the pod's replacing the generated ones of the same name
 * (kubelet's `mergeDNSOptions`). Kubelet's order comes from a Go map, so is unspecified; here
 * it is first-seen order.
 */
export function mergeDNSOptions(existing: string[], podOptions: PodDNSConfigOption[]): string[] {
  const merged = new Map<string, string>();
  for (const op of existing) {
    const i = op.indexOf(":");
    if (i >= 0) merged.set(op.slice(0, i), op.slice(i + 1));
    else merged.set(op, "");
  }
  for (const op of podOptions) merged.set(op.name ?? "", op.value ?? "");
  return [...merged].map(([name, value]) => value !== "" ? `${name}:${value}` : name);
}

function omitDuplicates(values: string[]): string[] {
  return [...new Set(values)];
}

function byteLength(s: string): number {
  return new TextEncoder().encode(s).length;
}
