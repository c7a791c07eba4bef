/**
 * API-server mode's node side, assembled from the flags: node registration (main client), node
 * status and the node lease (heartbeat client; the lease starts right after registration), with
 * this machine's facts and the runtime's health as inputs. Pods from the API server and status sync are the
 * Kubelet's (it gets the main client).
 * Mirrors the node parts of kubelet's NewMainKubelet and Kubelet.Run (kubelet.go).
 * @module
 */
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import type { Image } from "../../cri_client/api.ts";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import {
  getMachineInfo,
  getVersionInfo,
  type MachineInfo,
  rootFsCapacity,
  type VersionInfo,
} from "../../kubelet/cadvisor/cadvisor.ts";
import type { EventRecorder } from "../../kubelet/events/mod.ts";
import {
  KubeletNodeStatus,
  nodeRef,
  type RuntimeCondition,
} from "../../kubelet/kubelet_node_status.ts";
import {
  type Controller,
  NamespaceNodeLease,
  newController,
  nodeLeaseRenewIntervalFraction,
} from "../../kubelet/nodelease/controller.ts";
import { setNodeOwnerFunc } from "../../kubelet/util/nodelease.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { kubernetesVersion } from "../../version.ts";
import { type KubeletFlags, parseNodeIP } from "./flags.ts";
import { getNodeAllocatableReservation } from "../../kubelet/cm/node_container_manager.ts";
import { parseThresholdStatements } from "../../kubelet/eviction/helpers.ts";

/** What node status reports as `kubeletVersion`: the Kubernetes version it follows, marked. */
export const kubeletVersion = `v${kubernetesVersion.major}.${kubernetesVersion.minor}.0-probelet`;

/** Inputs of {@linkcode newNodeAgent}. */
export interface NodeAgentOptions {
  flags: KubeletFlags;
  clock: Clock;
  /** Registration (throttled main client). */
  kubeClient: Clientset;
  /** Status and lease (unthrottled). */
  heartbeatClient: Clientset;
  runtime: RuntimeService;
  /** The runtime's images, when it has an image service. */
  listImages?: () => Promise<Image[]>;
  /** Node events (the agent's event store: `/events` and the API). */
  recorder: EventRecorder;
  /** The port the agent serves on, once listening. */
  kubeletPort: () => number;
  /**
   * Called after the second and later failed tries of a status update or lease renewal (kubelet
   * drops the heartbeat client's connections there).
   */
  onRepeatedHeartbeatFailure?: () => void;
  /** Jitter source of the loops (tests). */
  random?: () => number;
  /** Machine facts (tests; default: read from this machine once). */
  machineInfo?: MachineInfo;
  versionInfo?: VersionInfo;
}

/** The node's status machinery and lease. */
export interface NodeAgent {
  nodeStatus: KubeletNodeStatus;
  nodeLease: Controller;
  /** Starts registration and the status loops; the lease starts once registered. */
  start(): void;
  /** Stops the status loops and the lease. */
  stop(): Promise<void>;
  /** One line for the live view: registration, Ready as the API has it, the last lease renewal. */
  summary(): string;
}

/**
 * Builds the node's status reporting and lease for API-server mode.
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { KubeletFlags } from "./flags.ts";
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 * import type { EventRecorder } from "../../kubelet/events/event.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const flags: KubeletFlags;
 * declare const clock: Clock;
 * declare const kubeClient: Clientset;
 * declare const heartbeatClient: Clientset;
 * declare const runtime: RuntimeService;
 * declare const recorder: EventRecorder;
 * declare const kubeletPort: () => number;
 *
 * const agent = await newNodeAgent({ flags, clock, kubeClient, heartbeatClient, runtime, recorder, kubeletPort });
 * agent.start();
 * await agent.stop();
 * ```
 */
export async function newNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const { flags, clock, runtime } = options;
  // Machine facts change only with a reboot: read them once, as kubelet caches cAdvisor's.
  const machine = options.machineInfo ?? getMachineInfo();
  // Checked when the flags were parsed; an options object from code is checked here.
  const hardEvictionThresholds = parseThresholdStatements(flags.evictionHard);
  const versions = options.versionInfo ?? getVersionInfo();
  const runtimeName = (await runtime.version()).runtimeName;
  const nodeLease = newController({
    clock,
    client: options.heartbeatClient,
    holderIdentity: flags.nodeName,
    leaseDurationSeconds: flags.nodeLeaseDurationSeconds,
    renewIntervalMs: flags.nodeLeaseDurationSeconds * 1000 * nodeLeaseRenewIntervalFraction,
    leaseNamespace: NamespaceNodeLease,
    newLeasePostProcessFunc: setNodeOwnerFunc(options.heartbeatClient, flags.nodeName),
    onRepeatedHeartbeatFailure: options.onRepeatedHeartbeatFailure,
    random: options.random,
  });
  const runtimeStatus = async (): Promise<RuntimeCondition[]> => {
    // The embedded runtime has no CRI Status: its processes run on the host, always ready.
    if (!runtime.status) {
      return [{ type: "RuntimeReady", status: true }, { type: "NetworkReady", status: true }];
    }
    return (await runtime.status()).status.conditions;
  };
  const nodeStatus = new KubeletNodeStatus({
    nodeName: flags.nodeName,
    hostname: flags.nodeName,
    kubeClient: options.kubeClient,
    heartbeatClient: options.heartbeatClient,
    clock,
    registerNode: flags.registerNode,
    registerWithTaints: flags.registerWithTaints,
    nodeLabels: flags.nodeLabels,
    nodeStatusUpdateFrequencyMs: flags.nodeStatusUpdateFrequencyMs,
    nodeStatusReportFrequencyMs: flags.nodeStatusReportFrequencyMs,
    recorder: options.recorder,
    runtimeStatus,
    random: options.random,
    onRegistered: () => nodeLease.run(),
    onRepeatedHeartbeatFailure: options.onRepeatedHeartbeatFailure,
    setters: {
      nodeIPs: parseNodeIP(flags.nodeIP),
      maxPods: flags.maxPods,
      machineInfo: () => machine,
      ephemeralStorageCapacity: () => {
        try {
          return rootFsCapacity(flags.rootDir);
        } catch (e) {
          log.error(e, "Failed to read the capacity of the agent's file system", {
            rootDir: flags.rootDir,
          });
          return undefined;
        }
      },
      allocatableReservation: (capacity) =>
        getNodeAllocatableReservation(capacity, { hardEvictionThresholds }),
      versionInfo: () => versions,
      runtimeType: () => runtimeName,
      runtimeVersion: async () => (await runtime.version()).runtimeVersion,
      kubeletVersion,
      kubeletPort: options.kubeletPort,
      imageList: options.listImages,
    },
  });
  return {
    nodeStatus,
    nodeLease,
    start() {
      // kubelet's Run announces itself on the Node before anything else.
      options.recorder.event(nodeRef(flags.nodeName), {
        type: "Normal",
        reason: "Starting",
        message: "Starting kubelet.",
      });
      nodeStatus.start();
      // Without registration the Node is someone else's: heartbeat from the start.
      if (!flags.registerNode) nodeLease.run();
    },
    async stop() {
      await nodeStatus.stop();
      await nodeLease.stop();
    },
    summary() {
      if (flags.registerNode && !nodeStatus.registrationCompleted) return "registering";
      const ready = nodeStatus.lastNode?.status?.conditions?.find((c) => c.type === "Ready");
      const readyText = !ready
        ? "status not reported yet"
        : ready.status === "True"
        ? "Ready"
        : `NotReady (${ready.message ?? ready.reason ?? ""})`;
      const renewed = Date.parse(nodeLease.latestLease?.spec?.renewTime ?? "");
      const leaseText = Number.isNaN(renewed)
        ? "no lease yet"
        : `lease renewed ${Math.max(0, Math.round((clock.now() - renewed) / 1000))}s ago`;
      return `${readyText}, ${leaseText}`;
    },
  };
}
