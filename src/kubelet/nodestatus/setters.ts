/**
 * Node status setters: each fills one part of a Node's status (addresses, capacity, versions,
 * daemon endpoints, images, OS/arch, the pressure conditions and Ready) and records an event when
 * a condition flips. Kubelet runs them in this order on every status sync.
 * Mirrors kubelet's pkg/kubelet/nodestatus/setters.go.
 * @module
 */
import { isIP } from "node:net";
import { lookup } from "node:dns/promises";
import type {
  ContainerImage,
  Node,
  NodeAddress,
  NodeCondition,
  NodeSystemInfo,
  ResourceList,
} from "../../api/core/v1/mod.ts";
import type { Image } from "../../cri_client/api.ts";
import { metav1Time } from "../../api/meta/v1/mod.ts";
import { EventType } from "../events/mod.ts";
import {
  binarySI,
  capacityFromMachineInfo,
  type MachineInfo,
  type VersionInfo,
} from "../cadvisor/cadvisor.ts";
import { goArch, goOS } from "../../util/go_format.ts";
import * as log from "../../util/log.ts";
import { parseQuantity } from "../../api/resource/quantity.ts";

/** Fills part of `node.status` in place; a thrown error is logged and the next setter runs. */
export type Setter = (node: Node) => void | Promise<void>;

/** Records `"Node <name> status is now: <event>"` against the node (kubelet's recordNodeStatusEvent). */
export type RecordNodeStatusEvent = (eventType: EventType, event: string) => void;

/** Records an event with its own message against the node (kubelet's recordEvent). */
export type RecordEvent = (eventType: EventType, reason: string, message: string) => void;

/** Report up to this many names per image (kubelet's MaxNamesPerImageInNodeStatus). */
export const maxNamesPerImageInNodeStatus = 5;

/** Node condition types kubelet owns. */
export const NodeReady = "Ready";
/** Memory pressure condition type. */
export const NodeMemoryPressure = "MemoryPressure";
/** Disk pressure condition type. */
export const NodeDiskPressure = "DiskPressure";
/** PID pressure condition type. */
export const NodePIDPressure = "PIDPressure";

/** Event reasons of node conditions (kubelet's pkg/kubelet/events). */
export const NodeReadyEvent = "NodeReady";
/** The node became not ready. */
export const NodeNotReadyEvent = "NodeNotReady";
/** The machine's boot ID changed. */
export const NodeRebooted = "Rebooted";

function ensureStatus(node: Node): NonNullable<Node["status"]> {
  node.status ??= {};
  return node.status;
}

function ensureNodeInfo(node: Node): NodeSystemInfo {
  const status = ensureStatus(node);
  status.nodeInfo ??= {
    machineID: "",
    systemUUID: "",
    bootID: "",
    kernelVersion: "",
    osImage: "",
    containerRuntimeVersion: "",
    kubeletVersion: "",
    operatingSystem: "",
    architecture: "",
  };
  return status.nodeInfo;
}

/** Options of {@linkcode nodeAddress}. */
export interface NodeAddressOptions {
  /** `--node-ip`: none, one, or a dual-stack pair. */
  nodeIPs: string[];
  /** The node's host name (reported as the `Hostname` address). */
  hostname: string;
  /** Rejects an IP that cannot be this node's (default {@linkcode validateNodeIP}). */
  validateNodeIP?: (ip: string) => void;
  /** Resolves a name to IPs (default: the system resolver). */
  lookupIP?: (name: string) => Promise<string[]>;
  /** The IP of the interface of the default route (default: read from /proc/net/route). */
  chooseHostInterface?: (preferIPv6: boolean) => string | undefined;
}

function isUnspecified(ip: string): boolean {
  return ip === "0.0.0.0" || ip === "::";
}

/**
 * `InternalIP` (+ a second one for dual-stack) and `Hostname` addresses: the `--node-ip`, else a
 * node name that is an IP, else what the node name resolves to, else the address of the default
 * route's interface. Mirrors setters.go NodeAddress without a cloud provider.
 *
 * @example
 * ```ts
 * const setter = nodeAddress({ nodeIPs: ["10.0.0.5"], hostname: "node-1" });
 * ```
 */
export function nodeAddress(options: NodeAddressOptions): Setter {
  const validate = options.validateNodeIP ?? validateNodeIP;
  const lookupIP = options.lookupIP ?? defaultLookupIP;
  const choose = options.chooseHostInterface ?? chooseHostInterface;
  const [nodeIP, secondaryNodeIP] = options.nodeIPs;
  const nodeIPSpecified = nodeIP !== undefined && !isUnspecified(nodeIP);
  const preferIPv6 = nodeIP === "::";
  return async (node) => {
    for (const ip of [nodeIPSpecified ? nodeIP : undefined, secondaryNodeIP]) {
      if (ip === undefined) continue;
      try {
        validate(ip);
      } catch (e) {
        throw new Error(`failed to validate nodeIP: ${e instanceof Error ? e.message : e}`);
      }
    }
    const hostnameAddress: NodeAddress = { type: "Hostname", address: options.hostname };
    if (nodeIPSpecified && secondaryNodeIP !== undefined) {
      ensureStatus(node).addresses = [
        { type: "InternalIP", address: nodeIP },
        { type: "InternalIP", address: secondaryNodeIP },
        hostnameAddress,
      ];
      return;
    }
    let ipAddr: string | undefined;
    let lastErr: unknown;
    if (nodeIPSpecified) {
      ipAddr = nodeIP;
    } else if (isIP(options.hostname) !== 0) {
      ipAddr = options.hostname;
    } else {
      let addrs: string[] = [];
      try {
        addrs = await lookupIP(node.metadata.name ?? "");
      } catch (e) {
        lastErr = e;
      }
      const usable = addrs.filter((a) => {
        try {
          validate(a);
          return true;
        } catch (e) {
          lastErr = e;
          return false;
        }
      });
      const preferred = usable.find((a) => (isIP(a) === 6) === preferIPv6);
      ipAddr = preferred ?? usable[0];
      if (ipAddr === undefined) ipAddr = choose(preferIPv6);
    }
    if (ipAddr === undefined) {
      throw new Error(
        `can't get ip address of node ${node.metadata.name}. error: ${
          lastErr instanceof Error ? lastErr.message : String(lastErr ?? "no usable address")
        }`,
      );
    }
    ensureStatus(node).addresses = [{ type: "InternalIP", address: ipAddr }, hostnameAddress];
  };
}

async function defaultLookupIP(name: string): Promise<string[]> {
  const results = await lookup(name, { all: true });
  return results.map((r) => r.address);
}

/**
 * Throws unless `ip` can be this node's address: not loopback, multicast, link-local or
 * unspecified, and present on one of the host's interfaces. Mirrors kubelet's validateNodeIP.
 *
 * @example
 * ```ts
 * validateNodeIP("127.0.0.1"); // throws "nodeIP can't be loopback address"
 * ```
 */
export function validateNodeIP(ip: string): void {
  const family = isIP(ip);
  if (family === 0) throw new Error("nodeIP must be a valid IP address");
  const lower = ip.toLowerCase();
  if (family === 4) {
    const [a, b] = ip.split(".").map(Number);
    if (a === 127) throw new Error("nodeIP can't be loopback address");
    if (a >= 224 && a <= 239) throw new Error("nodeIP can't be a multicast address");
    if (a === 169 && b === 254) throw new Error("nodeIP can't be a link-local unicast address");
    if (ip === "0.0.0.0") throw new Error("nodeIP can't be an all zeros address");
  } else {
    if (lower === "::1") throw new Error("nodeIP can't be loopback address");
    if (lower.startsWith("ff")) throw new Error("nodeIP can't be a multicast address");
    if (/^fe[89ab]/.test(lower)) {
      throw new Error("nodeIP can't be a link-local unicast address");
    }
    if (lower === "::") throw new Error("nodeIP can't be an all zeros address");
  }
  const local = Deno.networkInterfaces().some((i) => i.address.toLowerCase() === lower);
  if (!local) throw new Error(`node IP: "${ip}" not found in the host's network interfaces`);
}

/**
 * The first usable address of the interface holding the default route (IPv4 unless
 * `preferIPv6`), else of any interface; undefined when there is none. Mirrors
 * k8s.io/apimachinery's ChooseHostInterface, reduced.
 */
export function chooseHostInterface(preferIPv6 = false): string | undefined {
  let defaultIface: string | undefined;
  try {
    for (const line of Deno.readTextFileSync("/proc/net/route").split("\n").slice(1)) {
      const [iface, destination] = line.trim().split(/\s+/);
      if (destination === "00000000") {
        defaultIface = iface;
        break;
      }
    }
  } catch {
    // No routing table to read: any interface will do.
  }
  const family = preferIPv6 ? "IPv6" : "IPv4";
  const usable = Deno.networkInterfaces().filter((i) => {
    if (i.family !== family) return false;
    try {
      validateNodeIP(i.address);
      return true;
    } catch {
      return false;
    }
  });
  return (usable.find((i) => i.name === defaultIface) ?? usable[0])?.address;
}

/** Options of {@linkcode machineInfo}. */
export interface MachineInfoOptions {
  nodeName: string;
  /** `--max-pods`: `capacity.pods`. */
  maxPods: number;
  /** This machine's facts (cAdvisor's MachineInfo). */
  machineInfo: () => MachineInfo;
  /** Bytes of the agent's file system (`ephemeral-storage`); undefined when unknown. */
  ephemeralStorageCapacity?: () => number | undefined;
  /** Resources held back from allocatable (kubelet's node allocatable reservation). */
  allocatableReservation?: (capacity: ResourceList) => ResourceList;
  recordEvent: RecordEvent;
}

/**
 * Capacity (`cpu`, `memory`, `hugepages-*`, `pods`, `ephemeral-storage`), allocatable and the
 * machine/system/boot IDs; a changed boot ID records a `Rebooted` warning. Mirrors setters.go
 * MachineInfo (no device plugins, no pods-per-core).
 *
 * @example
 * ```ts
 * import { getMachineInfo } from "../cadvisor/cadvisor.ts";
 *
 * declare const recordEvent: MachineInfoOptions["recordEvent"];
 * const setter = machineInfo({ nodeName: "n1", maxPods: 110, machineInfo: getMachineInfo, recordEvent });
 * ```
 */
export function machineInfo(options: MachineInfoOptions): Setter {
  return (node) => {
    const status = ensureStatus(node);
    status.capacity ??= {};
    let info: MachineInfo | undefined;
    try {
      info = options.machineInfo();
    } catch (e) {
      log.error(e, "Error getting machine info");
    }
    if (!info) {
      status.capacity.cpu = "0";
      status.capacity.memory = "0";
      status.capacity.pods = String(options.maxPods);
    } else {
      const nodeInfo = ensureNodeInfo(node);
      nodeInfo.machineID = info.machineID;
      nodeInfo.systemUUID = info.systemUUID;
      Object.assign(status.capacity, capacityFromMachineInfo(info));
      status.capacity.pods = String(options.maxPods);
      if (nodeInfo.bootID !== "" && nodeInfo.bootID !== info.bootID) {
        options.recordEvent(
          EventType.Warning,
          NodeRebooted,
          `Node ${options.nodeName} has been rebooted, boot id: ${info.bootID}`,
        );
      }
      nodeInfo.bootID = info.bootID;
      const ephemeral = options.ephemeralStorageCapacity?.();
      if (ephemeral !== undefined) {
        status.capacity["ephemeral-storage"] = binarySI(ephemeral);
      }
    }
    // Allocatable: capacity less the reservation, never negative.
    status.allocatable ??= {};
    const reservation = options.allocatableReservation?.(status.capacity) ?? {};
    for (const [name, value] of Object.entries(status.capacity)) {
      const reserved = reservation[name];
      if (reserved === undefined) {
        status.allocatable[name] = value;
        continue;
      }
      const left = Math.max(0, parseQuantity(value) - parseQuantity(reserved));
      status.allocatable[name] = formatQuantity(name, left);
    }
  };
}

/**
 * A quantity in the form kubelet reports it: `cpu` in DecimalSI (`2`, `1800m`), `pods` as an
 * integer, byte resources in BinarySI (`9765625Ki`).
 *
 * @example
 * ```ts
 * formatQuantity("cpu", 1.8); // "1800m"
 * ```
 */
export function formatQuantity(name: string, value: number): string {
  if (name === "cpu") {
    const millis = Math.round(value * 1000);
    return millis % 1000 === 0 ? String(millis / 1000) : `${millis}m`;
  }
  if (name === "pods") return String(Math.round(value));
  return binarySI(Math.round(value));
}

/** Options of {@linkcode versionInfo}. */
export interface VersionInfoOptions {
  /** Kernel and OS image (cAdvisor's VersionInfo). */
  versionInfo: () => VersionInfo;
  /** The runtime's name (`containerd`), kubelet's containerRuntime.Type(). */
  runtimeType: () => string;
  /** The runtime's version; a rejection reports `Unknown`. */
  runtimeVersion: () => Promise<string>;
  /** What `kubeletVersion` reports. */
  kubeletVersion: string;
}

/**
 * `kernelVersion`, `osImage`, `containerRuntimeVersion` (`<name>://<version>`) and
 * `kubeletVersion`. Mirrors setters.go VersionInfo (`kubeProxyVersion` is left unset, as kubelet
 * stopped reporting it).
 *
 * @example
 * ```ts
 * import { getVersionInfo } from "../cadvisor/cadvisor.ts";
 *
 * versionInfo({ versionInfo: getVersionInfo, runtimeType: () => "containerd",
 *   runtimeVersion: async () => "1.6.20", kubeletVersion: "v1.35.0" });
 * ```
 */
export function versionInfo(options: VersionInfoOptions): Setter {
  return async (node) => {
    let verinfo: VersionInfo;
    try {
      verinfo = options.versionInfo();
    } catch (e) {
      throw new Error(`error getting version info: ${e instanceof Error ? e.message : e}`);
    }
    const nodeInfo = ensureNodeInfo(node);
    nodeInfo.kernelVersion = verinfo.kernelVersion;
    nodeInfo.osImage = verinfo.containerOsVersion;
    let runtimeVersion = "Unknown";
    try {
      runtimeVersion = await options.runtimeVersion();
    } catch {
      // Reported as Unknown, as kubelet does.
    }
    nodeInfo.containerRuntimeVersion = `${options.runtimeType()}://${runtimeVersion}`;
    nodeInfo.kubeletVersion = options.kubeletVersion;
  };
}

/**
 * `status.daemonEndpoints.kubeletEndpoint.Port`: where the agent serves. Mirrors setters.go
 * DaemonEndpoints.
 *
 * @example
 * ```ts
 * daemonEndpoints(() => 10255);
 * ```
 */
export function daemonEndpoints(port: () => number): Setter {
  return (node) => {
    ensureStatus(node).daemonEndpoints = { kubeletEndpoint: { Port: port() } };
  };
}

/**
 * `status.images`: the runtime's images, largest first, at most `maxImages` (-1 = all), each with
 * up to five names (digests, then tags). Mirrors setters.go Images.
 *
 * @example
 * ```ts
 * import type { ImageManagerService } from "../../cri_client/runtime_service.ts";
 *
 * declare const imageService: ImageManagerService;
 *
 * images(50, () => imageService.listImages());
 * ```
 */
export function images(maxImages: number, imageList: () => Promise<Image[]>): Setter {
  return async (node) => {
    const status = ensureStatus(node);
    let list: Image[];
    try {
      list = [...await imageList()];
    } catch (e) {
      delete status.images;
      throw new Error(`error getting image list: ${e instanceof Error ? e.message : e}`);
    }
    // kubelet's image manager keeps the list sorted by size, largest first.
    list.sort((a, b) => (a.size < b.size ? 1 : a.size > b.size ? -1 : 0));
    if (maxImages > -1 && maxImages < list.length) list = list.slice(0, maxImages);
    const onNode: ContainerImage[] = list.map((image) => ({
      names: [...image.repoDigests, ...image.repoTags].slice(0, maxNamesPerImageInNodeStatus),
      sizeBytes: Number(image.size),
    }));
    if (onNode.length > 0) status.images = onNode;
    else delete status.images;
  };
}

/**
 * `operatingSystem` and `architecture` in Go's names (`linux`, `amd64`). Mirrors setters.go
 * GoRuntime.
 *
 * @example
 * ```ts
 * goRuntime();
 * ```
 */
export function goRuntime(): Setter {
  return (node) => {
    const nodeInfo = ensureNodeInfo(node);
    nodeInfo.operatingSystem = goOS();
    nodeInfo.architecture = goArch();
  };
}

interface PressureTexts {
  type: string;
  trueReason: string;
  trueMessage: string;
  trueEvent: string;
  falseReason: string;
  falseMessage: string;
  falseEvent: string;
}

function pressureCondition(
  texts: PressureTexts,
  now: () => number,
  pressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return (node) => {
    const status = ensureStatus(node);
    status.conditions ??= [];
    const currentTime = metav1Time(now());
    let condition = status.conditions.find((c) => c.type === texts.type);
    const isNew = condition === undefined;
    condition ??= { type: texts.type, status: "Unknown" };
    condition.lastHeartbeatTime = currentTime;
    // A new condition starts Unknown, so either branch below sets it.
    if (pressure()) {
      if (condition.status !== "True") {
        condition.status = "True";
        condition.reason = texts.trueReason;
        condition.message = texts.trueMessage;
        condition.lastTransitionTime = currentTime;
        recordEvent(EventType.Normal, texts.trueEvent);
      }
    } else if (condition.status !== "False") {
      condition.status = "False";
      condition.reason = texts.falseReason;
      condition.message = texts.falseMessage;
      condition.lastTransitionTime = currentTime;
      recordEvent(EventType.Normal, texts.falseEvent);
    }
    if (isNew) status.conditions.push(orderCondition(condition));
  };
}

// Field order as the API serialises NodeCondition, so patches and logs read as kubelet's.
function orderCondition(c: NodeCondition): NodeCondition {
  const out: NodeCondition = { type: c.type, status: c.status };
  if (c.lastHeartbeatTime !== undefined) out.lastHeartbeatTime = c.lastHeartbeatTime;
  if (c.lastTransitionTime !== undefined) out.lastTransitionTime = c.lastTransitionTime;
  if (c.reason !== undefined) out.reason = c.reason;
  if (c.message !== undefined) out.message = c.message;
  return out;
}

/**
 * The `MemoryPressure` condition (probelet has no eviction manager: `pressure` is constant false).
 * Mirrors setters.go MemoryPressureCondition.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * declare const record: Parameters<typeof memoryPressureCondition>[2];
 * memoryPressureCondition(() => clock.now(), () => false, record);
 * ```
 */
export function memoryPressureCondition(
  now: () => number,
  pressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return pressureCondition(
    {
      type: NodeMemoryPressure,
      trueReason: "KubeletHasInsufficientMemory",
      trueMessage: "kubelet has insufficient memory available",
      trueEvent: "NodeHasInsufficientMemory",
      falseReason: "KubeletHasSufficientMemory",
      falseMessage: "kubelet has sufficient memory available",
      falseEvent: "NodeHasSufficientMemory",
    },
    now,
    pressure,
    recordEvent,
  );
}

/**
 * The `DiskPressure` condition. Mirrors setters.go DiskPressureCondition.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * declare const record: Parameters<typeof diskPressureCondition>[2];
 * diskPressureCondition(() => clock.now(), () => false, record);
 * ```
 */
export function diskPressureCondition(
  now: () => number,
  pressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return pressureCondition(
    {
      type: NodeDiskPressure,
      trueReason: "KubeletHasDiskPressure",
      trueMessage: "kubelet has disk pressure",
      trueEvent: "NodeHasDiskPressure",
      falseReason: "KubeletHasNoDiskPressure",
      falseMessage: "kubelet has no disk pressure",
      falseEvent: "NodeHasNoDiskPressure",
    },
    now,
    pressure,
    recordEvent,
  );
}

/**
 * The `PIDPressure` condition. Mirrors setters.go PIDPressureCondition.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * declare const record: Parameters<typeof pidPressureCondition>[2];
 * pidPressureCondition(() => clock.now(), () => false, record);
 * ```
 */
export function pidPressureCondition(
  now: () => number,
  pressure: () => boolean,
  recordEvent: RecordNodeStatusEvent,
): Setter {
  return pressureCondition(
    {
      type: NodePIDPressure,
      trueReason: "KubeletHasInsufficientPID",
      trueMessage: "kubelet has insufficient PID available",
      trueEvent: "NodeHasInsufficientPID",
      falseReason: "KubeletHasSufficientPID",
      falseMessage: "kubelet has sufficient PID available",
      falseEvent: "NodeHasSufficientPID",
    },
    now,
    pressure,
    recordEvent,
  );
}

/** Options of {@linkcode readyCondition}. */
export interface ReadyConditionOptions {
  now: () => number;
  runtimeErrors: () => Error | undefined;
  networkErrors: () => Error | undefined;
  storageErrors: () => Error | undefined;
  recordEvent: RecordNodeStatusEvent;
  /** Require `ephemeral-storage` capacity too (kubelet's localStorageCapacityIsolation). */
  localStorageCapacityIsolation?: boolean;
}

/**
 * The `Ready` condition, always last: True `KubeletReady` unless the runtime, network or storage
 * report errors or a required capacity is missing (then False `KubeletNotReady` with the joined
 * errors). The transition time moves only on a flip, which records `NodeReady`/`NodeNotReady`.
 * Mirrors setters.go ReadyCondition.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 * declare const options: Parameters<typeof readyCondition>[0];
 * const { runtimeErrors, networkErrors, storageErrors, recordEvent } = options;
 *
 * readyCondition({ now: () => clock.now(), runtimeErrors, networkErrors, storageErrors, recordEvent });
 * ```
 */
export function readyCondition(options: ReadyConditionOptions): Setter {
  return (node) => {
    const status = ensureStatus(node);
    status.conditions ??= [];
    const currentTime = metav1Time(options.now());
    let next: NodeCondition = {
      type: NodeReady,
      status: "True",
      lastHeartbeatTime: currentTime,
      reason: "KubeletReady",
      message: "kubelet is posting ready status",
    };
    const errs: (Error | undefined)[] = [
      options.runtimeErrors(),
      options.networkErrors(),
      options.storageErrors(),
    ];
    const required = ["cpu", "memory", "pods"];
    if (options.localStorageCapacityIsolation ?? true) required.push("ephemeral-storage");
    const missing = required.filter((r) => status.capacity?.[r] === undefined);
    if (missing.length > 0) {
      errs.push(new Error(`missing node capacity for resources: ${missing.join(", ")}`));
    }
    const present = errs.filter((e): e is Error => e !== undefined);
    if (present.length > 0) {
      next = {
        type: NodeReady,
        status: "False",
        lastHeartbeatTime: currentTime,
        reason: "KubeletNotReady",
        message: present.length === 1
          ? present[0].message
          : `[${present.map((e) => e.message).join(", ")}]`,
      };
    }
    let needToRecordEvent = false;
    const i = status.conditions.findIndex((c) => c.type === NodeReady);
    if (i >= 0) {
      const old = status.conditions[i];
      if (old.status === next.status) {
        next.lastTransitionTime = old.lastTransitionTime;
      } else {
        next.lastTransitionTime = currentTime;
        needToRecordEvent = true;
      }
      status.conditions[i] = orderCondition(next);
    } else {
      next.lastTransitionTime = currentTime;
      status.conditions.push(orderCondition(next));
    }
    if (needToRecordEvent) {
      if (next.status === "True") {
        options.recordEvent(EventType.Normal, NodeReadyEvent);
      } else {
        options.recordEvent(EventType.Normal, NodeNotReadyEvent);
        log.info("Node became not ready", {
          node: node.metadata.name,
          condition: JSON.stringify(next),
        });
      }
    }
  };
}
