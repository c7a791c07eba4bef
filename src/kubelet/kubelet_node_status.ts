/**
 * The node in the API server: registration (POST the initial Node, or reconcile an existing one),
 * the status loop (every `--node-status-update-frequency`, compute the status with the setters and
 * patch it when it changed or `--node-status-report-frequency` passed), the fast update right
 * after start-up until the node is Ready, the runtime health check behind the Ready condition, and
 * the node events.
 * Mirrors kubelet's pkg/kubelet/kubelet_node_status.go, with the node status parts of kubelet.go
 * (Run's status goroutines, updateRuntimeUp) and the Kubelet fields they use.
 * @module
 */
import type { Node, NodeCondition, NodeStatus, ResourceList, Taint } from "../api/core/v1/mod.ts";
import type { Clientset } from "../client/kubernetes/clientset.ts";
import { isAlreadyExists, isNotFound } from "../client/errors.ts";
import type { Image } from "../cri_client/api.ts";
import type { Clock } from "../util/clock.ts";
import { goArch, goOS } from "../util/go_format.ts";
import * as log from "../util/log.ts";
import {
  apiDrainTimeoutMs,
  DrainingStop,
  jitterUntil,
  sleepUnlessStopped,
} from "../util/wait/wait.ts";
import { type EventRecorder, EventType } from "./events/mod.ts";
import type { MachineInfo, VersionInfo } from "./cadvisor/cadvisor.ts";
import { patchNodeStatus } from "./nodestatus/patch.ts";
import {
  daemonEndpoints,
  diskPressureCondition,
  goRuntime,
  images,
  machineInfo,
  memoryPressureCondition,
  nodeAddress,
  type NodeAddressOptions,
  NodeReady,
  pidPressureCondition,
  readyCondition,
  type Setter,
  versionInfo,
} from "./nodestatus/setters.ts";
import { RuntimeState } from "./runtime.ts";

/** How many times one status sync tries (kubelet's nodeStatusUpdateRetry). */
export const nodeStatusUpdateRetry = 5;
/** How long the fast status update keeps trying after start-up (kubelet's nodeReadyGracePeriod). */
export const nodeReadyGracePeriodMs = 120_000;
/** Period of the runtime health check behind Ready. */
export const runtimeUpPeriodMs = 5_000;
/** A runtime not checked successfully for this long is reported down (maxWaitForContainerRuntime). */
export const maxWaitForContainerRuntimeMs = 30_000;
/** Cap of the registration back-off (kubelet sleeps 100 ms doubling to 7 s). */
export const registrationMaxBackoffMs = 7_000;
/** How many images node status lists (kubelet's nodeStatusMaxImages default). */
export const defaultNodeStatusMaxImages = 50;

/** `volumes.kubernetes.io/controller-managed-attach-detach`, set on every node kubelet creates. */
export const controllerManagedAttachAnnotation =
  "volumes.kubernetes.io/controller-managed-attach-detach";
/** The taint a node registered unschedulable carries. */
export const taintNodeUnschedulable = "node.kubernetes.io/unschedulable";

/** Well-known labels kubelet sets on its Node (k8s.io/api core/v1 well_known_labels.go). */
export const LabelHostname = "kubernetes.io/hostname";
/** The node's OS, Go's GOOS. */
export const LabelOSStable = "kubernetes.io/os";
/** The node's architecture, Go's GOARCH. */
export const LabelArchStable = "kubernetes.io/arch";
/** Legacy OS label. */
export const LabelOS = "beta.kubernetes.io/os";
/** Legacy architecture label. */
export const LabelArch = "beta.kubernetes.io/arch";

// Labels kubelet keeps in step on an existing Node (updateDefaultLabels).
const defaultLabels = [
  LabelHostname,
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
  "node.kubernetes.io/instance-type",
  "beta.kubernetes.io/instance-type",
  LabelOSStable,
  LabelArchStable,
  "node.kubernetes.io/windows-build",
  LabelOS,
  LabelArch,
];

/** A CRI RuntimeCondition (`RuntimeReady`, `NetworkReady`). */
export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason?: string;
  message?: string;
}

/** Options of {@linkcode KubeletNodeStatus}. */
export interface KubeletNodeStatusOptions {
  nodeName: string;
  /** The host name reported in the `kubernetes.io/hostname` label and the Hostname address. */
  hostname: string;
  /** Registration (kubelet's kubeClient). */
  kubeClient: Clientset;
  /** Status reads and patches, unthrottled (kubelet's heartbeatClient). */
  heartbeatClient: Clientset;
  clock: Clock;
  /** `--register-node`. */
  registerNode: boolean;
  /** Register schedulable (default true); false adds the unschedulable taint. */
  registerSchedulable?: boolean;
  /** `--register-with-taints`. */
  registerWithTaints: Taint[];
  /** `--node-labels`. */
  nodeLabels: Record<string, string>;
  /** `--node-status-update-frequency` in milliseconds. */
  nodeStatusUpdateFrequencyMs: number;
  /** `--node-status-report-frequency` in milliseconds. */
  nodeStatusReportFrequencyMs: number;
  /** Where node events go (the agent's event store, which forwards them to the API). */
  recorder: EventRecorder;
  /** The runtime's conditions, from CRI `Status`; rejects when the runtime cannot answer. */
  runtimeStatus: () => Promise<RuntimeCondition[]>;
  /** Called after the second and later failed tries of one status sync. */
  onRepeatedHeartbeatFailure?: () => void;
  /** Called once, right after the node is registered (starts the lease controller). */
  onRegistered?: () => void;
  /** Replaces the default setters (tests). */
  setNodeStatusFuncs?: Setter[];
  /** Inputs of the default setters. */
  setters?: DefaultSetterInputs;
  /** Source of the loop jitter and of the report delay after a change (default `Math.random`). */
  random?: () => number;
}

/** What the default setters read. */
export interface DefaultSetterInputs {
  /** `--node-ip` split (none, one, or a dual-stack pair). */
  nodeIPs: string[];
  /** Address lookups of the NodeAddress setter (tests). */
  nodeAddress?: Partial<
    Pick<NodeAddressOptions, "validateNodeIP" | "lookupIP" | "chooseHostInterface">
  >;
  /** `--max-pods`. */
  maxPods: number;
  machineInfo: () => MachineInfo;
  ephemeralStorageCapacity?: () => number | undefined;
  allocatableReservation?: (capacity: ResourceList) => ResourceList;
  versionInfo: () => VersionInfo;
  runtimeType: () => string;
  runtimeVersion: () => Promise<string>;
  kubeletVersion: string;
  /** The port the agent serves on (`daemonEndpoints.kubeletEndpoint.Port`). */
  kubeletPort: () => number;
  /** `nodeStatusMaxImages` (-1 = all). */
  nodeStatusMaxImages?: number;
  /** The runtime's images; none when the runtime has no image service. */
  imageList?: () => Promise<Image[]>;
}

/**
 * The node's registration and status reporting.
 *
 * @example
 * ```ts
 * declare const options: KubeletNodeStatusOptions;
 * const ns = new KubeletNodeStatus(options);
 * ns.start();
 * await ns.stop();
 * ```
 */
export class KubeletNodeStatus {
  readonly nodeName: string;
  readonly runtimeState: RuntimeState;
  readonly #options: KubeletNodeStatusOptions;
  readonly #clock: Clock;
  #setNodeStatusFuncs: Setter[];
  #registrationCompleted = false;
  #registeredOnce = false;
  /** Clock time of the last successful status patch; undefined before the first. */
  #lastStatusReportTime?: number;
  /**
   * A one-time random shift (±half the report frequency) of the next periodic report after a
   * real change or a restart, so nodes that changed together do not report together again
   * (kubelet's delayAfterNodeStatusChange); 0 after a periodic report.
   */
  #delayAfterNodeStatusChangeMs = 0;
  /** The Node as last read or written (kubelet reads its node informer here). */
  #lastNode?: Node;
  /** `spec.unschedulable` as last seen, for NodeSchedulable/NodeNotSchedulable events. */
  #lastNodeUnschedulable = false;
  /** Serialises syncNodeStatus and fastNodeStatusUpdate (kubelet's syncNodeStatusMux). */
  #lock: Promise<void> = Promise.resolve();
  #stop = new DrainingStop();
  #loops: Promise<void>[] = [];
  #started = false;

  /** Builds the status machinery; `start()` runs it. */
  constructor(options: KubeletNodeStatusOptions) {
    this.#options = options;
    this.#clock = options.clock;
    this.nodeName = options.nodeName;
    this.runtimeState = new RuntimeState(options.clock, maxWaitForContainerRuntimeMs);
    this.#setNodeStatusFuncs = options.setNodeStatusFuncs ?? this.defaultNodeStatusFuncs();
  }

  /** The Node as last read from or written to the API server. */
  get lastNode(): Node | undefined {
    return this.#lastNode && structuredClone(this.#lastNode);
  }

  /** Whether registration completed (reset when the Node disappears). */
  get registrationCompleted(): boolean {
    return this.#registrationCompleted;
  }

  /**
   * Starts what kubelet's Run starts for the node: the runtime check, then the status loop
   * (jittered by 4 %, sliding) and the one-shot fast update, plus the runtime check every 5 s.
   */
  start(): void {
    if (this.#started) throw new Error("node status already started");
    this.#started = true;
    const signal = this.#stop.stopping;
    const random = this.#options.random;
    this.#loops.push(
      (async () => {
        // Check the runtime once first, or the first report would say NotReady.
        await this.updateRuntimeUp();
        await jitterUntil(
          () => this.syncNodeStatus(),
          this.#options.nodeStatusUpdateFrequencyMs,
          0.04,
          true,
          { clock: this.#clock, signal, random },
        );
      })(),
      this.fastStatusUpdateOnce(),
      jitterUntil(() => this.updateRuntimeUp(), runtimeUpPeriodMs, 0, true, {
        clock: this.#clock,
        signal,
      }),
    );
  }

  /**
   * Stops the loops (a registration back-off or retry in progress ends) and waits for them; a
   * request in flight gets `apiDrainTimeoutMs` to finish.
   */
  async stop(): Promise<void> {
    await this.#stop.stop(Promise.all([...this.#loops, this.#lock]), {
      clock: this.#clock,
      drainMs: apiDrainTimeoutMs,
    });
  }

  #withLock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(fn);
    this.#lock = run.then(() => {}, () => {});
    return run;
  }

  /**
   * Registers the node, retrying with a back-off of 100 ms doubling to 7 s until it succeeds (or
   * the status machinery stops). Safe to call again: it returns at once once registered.
   */
  async registerWithAPIServer(): Promise<void> {
    if (this.#registrationCompleted) return;
    const signal = this.#stop.stopping;
    let step = 100;
    for (;;) {
      if (!(await sleepUnlessStopped(this.#clock, step, signal))) return;
      step = Math.min(step * 2, registrationMaxBackoffMs);
      let node: Node;
      try {
        node = await this.initialNode();
      } catch (e) {
        log.error(e, "Unable to construct v1.Node object for kubelet");
        continue;
      }
      log.info("Attempting to register node", { node: node.metadata.name });
      if (await this.tryRegisterWithAPIServer(node)) {
        log.info("Successfully registered node", { node: node.metadata.name });
        this.#registrationCompleted = true;
        if (!this.#registeredOnce) {
          this.#registeredOnce = true;
          this.#options.onRegistered?.();
        }
        return;
      }
    }
  }

  /**
   * One registration attempt: create the Node; when it exists, reconcile the attach-detach
   * annotation and the default labels, patching when they differ. True when registered.
   */
  async tryRegisterWithAPIServer(node: Node): Promise<boolean> {
    const nodes = this.#options.kubeClient.coreV1.nodes();
    try {
      this.#lastNode = await nodes.create(node, { signal: this.#stop.requests });
      return true;
    } catch (e) {
      if (!isAlreadyExists(e)) {
        log.error(e, "Unable to register node with API server", { node: this.nodeName });
        return false;
      }
    }
    let existingNode: Node;
    try {
      existingNode = await nodes.get(this.nodeName, { signal: this.#stop.requests });
    } catch (e) {
      log.error(e, "Unable to register node with API server, error getting existing node", {
        node: this.nodeName,
      });
      return false;
    }
    const originalNode = structuredClone(existingNode);
    log.info("Node was previously registered", { node: this.nodeName });
    let requiresUpdate = reconcileCMADAnnotationWithExistingNode(node, existingNode);
    requiresUpdate = updateDefaultLabels(node, existingNode) || requiresUpdate;
    requiresUpdate = updateDefaultResources(node, existingNode) || requiresUpdate;
    if (requiresUpdate) {
      try {
        const { node: updated } = await patchNodeStatus(nodes, {
          oldNode: originalNode,
          newNode: existingNode,
          signal: this.#stop.requests,
        });
        this.#lastNode = updated;
      } catch (e) {
        log.error(e, "Unable to reconcile node with API server, error updating node", {
          node: this.nodeName,
        });
        return false;
      }
    } else {
      this.#lastNode = existingNode;
    }
    return true;
  }

  /**
   * The Node kubelet creates: name, hostname/OS/arch labels then `--node-labels`, unschedulable
   * and the registration taints, the attach-detach annotation, and a status from every setter.
   */
  async initialNode(): Promise<Node> {
    const registerSchedulable = this.#options.registerSchedulable ?? true;
    const node: Node = {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: this.nodeName,
        labels: {
          [LabelHostname]: this.#options.hostname,
          [LabelOSStable]: goOS(),
          [LabelArchStable]: goArch(),
          [LabelOS]: goOS(),
          [LabelArch]: goArch(),
        },
      },
      spec: {},
    };
    if (!registerSchedulable) node.spec!.unschedulable = true;
    const taints: Taint[] = this.#options.registerWithTaints.map((t) => ({ ...t }));
    if (
      !registerSchedulable &&
      !taints.some((t) => t.key === taintNodeUnschedulable && t.effect === "NoSchedule")
    ) {
      taints.push({ key: taintNodeUnschedulable, effect: "NoSchedule" });
    }
    if (taints.length > 0) node.spec!.taints = taints;
    node.metadata.annotations = { [controllerManagedAttachAnnotation]: "true" };
    for (const [k, v] of Object.entries(this.#options.nodeLabels)) {
      const current = node.metadata.labels![k];
      if (current !== undefined) {
        log.info("the node label will overwrite default setting", {
          labelKey: k,
          labelValue: v,
          default: current,
        });
      }
      node.metadata.labels![k] = v;
    }
    await this.setNodeStatus(node);
    return node;
  }

  /**
   * One tick of the status loop: register if needed, then update the status. A Node deleted
   * behind the agent's back is registered again right away (kubelet would keep failing until
   * restarted, k/k#116485).
   */
  syncNodeStatus(): Promise<void> {
    return this.#withLock(async () => {
      if (this.#stop.stopping.aborted) return;
      if (this.#options.registerNode) await this.registerWithAPIServer();
      try {
        await this.updateNodeStatus();
      } catch (e) {
        log.error(e, "Unable to update node status");
      }
      if (this.#options.registerNode && !this.#registrationCompleted) {
        log.info("Node object is gone from the API server, registering it again", {
          node: this.nodeName,
        });
        await this.registerWithAPIServer();
        try {
          await this.updateNodeStatus();
        } catch (e) {
          log.error(e, "Unable to update node status");
        }
      }
    });
  }

  /** Up to five tries of {@linkcode tryUpdateNodeStatus}; rejects when all fail. */
  async updateNodeStatus(): Promise<void> {
    log.V(5).info("Updating node status");
    for (let i = 0; i < nodeStatusUpdateRetry; i++) {
      if (this.#stop.stopping.aborted) return;
      try {
        await this.tryUpdateNodeStatus(i);
        return;
      } catch (e) {
        if (i > 0) this.#options.onRepeatedHeartbeatFailure?.();
        log.error(e, "Error updating node status, will retry");
        // A Node that is gone will not come back by retrying: re-register instead.
        if (isNotFound(e)) {
          this.#registrationCompleted = false;
          break;
        }
      }
    }
    throw new Error("update node status exceeds retry count");
  }

  /**
   * Reads the Node (the first try from the API server's cache, `resourceVersion=0`), computes
   * its status and patches it when it changed or the report frequency passed.
   */
  async tryUpdateNodeStatus(tryNumber: number): Promise<void> {
    const nodes = this.#options.heartbeatClient.coreV1.nodes();
    const originalNode = await nodes.get(this.nodeName, {
      ...(tryNumber === 0 ? { resourceVersion: "0" } : {}),
      signal: this.#stop.requests,
    });
    this.#lastNode = originalNode;
    const { node, changed } = await this.updateNode(originalNode);
    if (!changed && !this.isUpdateStatusPeriodExpired()) return;
    // A change (or the first report of this run) draws a new shift of the next periodic report;
    // a periodic report keeps the plain cadence.
    this.#delayAfterNodeStatusChangeMs = changed || this.#lastStatusReportTime === undefined
      ? this.calculateDelay()
      : 0;
    await this.patchNodeStatus(originalNode, node);
  }

  /** Whether the report frequency (shifted by the delay after a change) has passed. */
  isUpdateStatusPeriodExpired(): boolean {
    if (this.#lastStatusReportTime === undefined) return true;
    return this.#clock.since(this.#lastStatusReportTime) >=
      this.#options.nodeStatusReportFrequencyMs + this.#delayAfterNodeStatusChangeMs;
  }

  /** A uniform draw in ±half the report frequency (kubelet's calculateDelay). */
  calculateDelay(): number {
    const random = this.#options.random ?? Math.random;
    return this.#options.nodeStatusReportFrequencyMs * (-0.5 + random());
  }

  /**
   * A copy of `originalNode` with the OS/arch labels ensured and the status recomputed, and
   * whether anything (heartbeat times aside) changed.
   */
  async updateNode(originalNode: Node): Promise<{ node: Node; changed: boolean }> {
    const node = structuredClone(originalNode);
    let areRequiredLabelsNotPresent = false;
    node.metadata.labels ??= {};
    if (node.metadata.labels[LabelOSStable] !== goOS()) {
      node.metadata.labels[LabelOSStable] = goOS();
      areRequiredLabelsNotPresent = true;
    }
    if (node.metadata.labels[LabelArchStable] !== goArch()) {
      node.metadata.labels[LabelArchStable] = goArch();
      areRequiredLabelsNotPresent = true;
    }
    await this.setNodeStatus(node);
    const changed = nodeStatusHasChanged(originalNode.status, node.status) ||
      areRequiredLabelsNotPresent;
    return { node, changed };
  }

  /** Sends the patch and remembers when, and the node the server returned. */
  async patchNodeStatus(originalNode: Node, node: Node): Promise<Node> {
    const { node: updated, patch } = await patchNodeStatus(
      this.#options.heartbeatClient.coreV1.nodes(),
      { oldNode: originalNode, newNode: node, signal: this.#stop.requests },
    );
    log.V(4).info("Patched node status", { node: this.nodeName, patch });
    this.#lastStatusReportTime = this.#clock.now();
    this.#lastNode = updated;
    return updated;
  }

  /** Runs every setter on `node`; a failing setter is logged and the others still run. */
  async setNodeStatus(node: Node): Promise<void> {
    for (const [i, f] of this.#setNodeStatusFuncs.entries()) {
      log.V(5).info("Setting node status condition code", {
        position: i,
        node: node.metadata.name,
      });
      try {
        await f(node);
      } catch (e) {
        log.error(e, "Failed to set some node status fields", { node: node.metadata.name });
      }
    }
  }

  /**
   * Every 100 ms after start-up, until the node is Ready in the API (or 2 minutes passed): when
   * the runtime turns ready, patch at once rather than waiting for the next status tick.
   */
  async fastStatusUpdateOnce(): Promise<void> {
    const start = this.#clock.now();
    const signal = this.#stop.stopping;
    while (!signal.aborted) {
      const timeout = this.#clock.since(start) >= nodeReadyGracePeriodMs;
      if (await this.fastNodeStatusUpdate(timeout)) return;
      if (!(await sleepUnlessStopped(this.#clock, 100, signal))) return;
    }
  }

  /** One round of the fast update; true when the loop should end. */
  fastNodeStatusUpdate(timeout: boolean): Promise<boolean> {
    return this.#withLock(async () => {
      if (timeout) {
        log.error(undefined, "Node not becoming ready in time after startup");
        return true;
      }
      const originalNode = this.#lastNode;
      if (!originalNode) return false;
      const original = findCondition(originalNode.status, NodeReady);
      if (!original) return false;
      if (original.status === "True") return true;
      await this.updateRuntimeUp();
      const { node, changed } = await this.updateNode(originalNode);
      if (!changed) return false;
      const ready = findCondition(node.status, NodeReady);
      if (!ready || ready.status === "False") return false;
      log.info("Fast updating node status as it just became ready");
      try {
        await this.patchNodeStatus(originalNode, node);
        return true;
      } catch (e) {
        log.error(e, "Error updating node status, will retry with syncNodeStatus");
      }
      // The cached node was probably stale: the regular sync (queued behind this round) reads
      // it afresh.
      void this.syncNodeStatus();
      return true;
    });
  }

  /**
   * Asks the runtime for its conditions and records them for the Ready condition (kubelet's
   * updateRuntimeUp): a failing call leaves the last state (which goes stale after 30 s).
   */
  async updateRuntimeUp(): Promise<void> {
    let conditions: RuntimeCondition[];
    try {
      conditions = await this.#options.runtimeStatus();
    } catch (e) {
      log.error(e, "Container runtime sanity check failed");
      return;
    }
    const networkReady = conditions.find((c) => c.type === "NetworkReady");
    if (!networkReady?.status) {
      log.V(4).info("Container runtime network not ready", {
        networkReady: formatRuntimeCondition(networkReady),
      });
      this.runtimeState.setNetworkState(
        new Error(`container runtime network not ready: ${formatRuntimeCondition(networkReady)}`),
      );
    } else {
      this.runtimeState.setNetworkState(undefined);
    }
    const runtimeReady = conditions.find((c) => c.type === "RuntimeReady");
    if (!runtimeReady?.status) {
      log.V(4).info("Container runtime not ready", {
        runtimeReady: formatRuntimeCondition(runtimeReady),
      });
      this.runtimeState.setRuntimeState(
        new Error(`container runtime not ready: ${formatRuntimeCondition(runtimeReady)}`),
      );
      return;
    }
    this.runtimeState.setRuntimeState(undefined);
    this.runtimeState.setRuntimeSync(this.#clock.now());
  }

  /** Records `Node <name> status is now: <event>` against the node. */
  recordNodeStatusEvent(eventType: EventType, event: string): void {
    log.V(2).info("Recording event message for node", { node: this.nodeName, event });
    this.#options.recorder.event(nodeRef(this.nodeName), {
      type: eventType,
      reason: event,
      message: `Node ${this.nodeName} status is now: ${event}`,
    });
  }

  /** The setters in kubelet's order (setters.go via defaultNodeStatusFuncs). */
  defaultNodeStatusFuncs(): Setter[] {
    const inputs = this.#options.setters;
    if (!inputs) throw new Error("node status setters need their inputs (options.setters)");
    const now = () => this.#clock.now();
    const recordStatus = (t: EventType, e: string) => this.recordNodeStatusEvent(t, e);
    const setters: Setter[] = [
      nodeAddress({
        nodeIPs: inputs.nodeIPs,
        hostname: this.#options.hostname,
        ...inputs.nodeAddress,
      }),
      machineInfo({
        nodeName: this.nodeName,
        maxPods: inputs.maxPods,
        machineInfo: inputs.machineInfo,
        ephemeralStorageCapacity: inputs.ephemeralStorageCapacity,
        allocatableReservation: inputs.allocatableReservation,
        recordEvent: (type, reason, message) =>
          this.#options.recorder.event(nodeRef(this.nodeName), { type, reason, message }),
      }),
      versionInfo({
        versionInfo: inputs.versionInfo,
        runtimeType: inputs.runtimeType,
        runtimeVersion: inputs.runtimeVersion,
        kubeletVersion: inputs.kubeletVersion,
      }),
      daemonEndpoints(inputs.kubeletPort),
      images(
        inputs.nodeStatusMaxImages ?? defaultNodeStatusMaxImages,
        inputs.imageList ?? (() => Promise.resolve([])),
      ),
      goRuntime(),
      // No eviction manager: the node never reports pressure.
      memoryPressureCondition(now, () => false, recordStatus),
      diskPressureCondition(now, () => false, recordStatus),
      pidPressureCondition(now, () => false, recordStatus),
      readyCondition({
        now,
        runtimeErrors: () => this.runtimeState.runtimeErrors(),
        networkErrors: () => this.runtimeState.networkErrors(),
        storageErrors: () => this.runtimeState.storageErrors(),
        recordEvent: recordStatus,
      }),
      (node) => this.recordNodeSchedulableEvent(node),
    ];
    return setters;
  }

  /** Records NodeSchedulable / NodeNotSchedulable when `spec.unschedulable` changed (a cordon). */
  recordNodeSchedulableEvent(node: Node): void {
    const unschedulable = node.spec?.unschedulable ?? false;
    if (this.#lastNodeUnschedulable === unschedulable) return;
    this.recordNodeStatusEvent(
      EventType.Normal,
      unschedulable ? "NodeNotSchedulable" : "NodeSchedulable",
    );
    this.#lastNodeUnschedulable = unschedulable;
  }
}

/** The reference node events are recorded against (kubelet's nodeRef: UID = node name). */
export function nodeRef(nodeName: string) {
  return { kind: "Node", name: nodeName, uid: nodeName, namespace: "" };
}

function findCondition(status: NodeStatus | undefined, type: string): NodeCondition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

/** kubecontainer.RuntimeCondition's String(), `<nil>` when absent. */
function formatRuntimeCondition(c: RuntimeCondition | undefined): string {
  if (!c) return "<nil>";
  return `${c.type}=${c.status} reason:${c.reason ?? ""} message:${c.message ?? ""}`;
}

/**
 * Sets the attach-detach annotation of `existingNode` to what the new node says; true when it
 * changed. Mirrors reconcileCMADAnnotationWithExistingNode.
 */
export function reconcileCMADAnnotationWithExistingNode(node: Node, existingNode: Node): boolean {
  const existing = existingNode.metadata.annotations?.[controllerManagedAttachAnnotation];
  const wanted = node.metadata.annotations?.[controllerManagedAttachAnnotation];
  if (existing === wanted) return false;
  if (wanted === undefined) {
    log.info("Controller attach-detach setting changed to false; updating existing Node");
    delete existingNode.metadata.annotations![controllerManagedAttachAnnotation];
  } else {
    log.info("Controller attach-detach setting changed to true; updating existing Node");
    existingNode.metadata.annotations ??= {};
    existingNode.metadata.annotations[controllerManagedAttachAnnotation] = wanted;
  }
  return true;
}

/**
 * Copies the default labels (hostname, OS, arch, zone, instance type) of the initial node onto
 * the existing one; true when one changed. Mirrors updateDefaultLabels.
 */
export function updateDefaultLabels(initialNode: Node, existingNode: Node): boolean {
  let needsUpdate = false;
  existingNode.metadata.labels ??= {};
  const existing = existingNode.metadata.labels;
  for (const label of defaultLabels) {
    const initial = initialNode.metadata.labels?.[label];
    if (initial === undefined) continue;
    if (existing[label] !== initial) {
      existing[label] = initial;
      needsUpdate = true;
    }
    if (existing[label] === "") delete existing[label];
  }
  return needsUpdate;
}

/**
 * Gives an existing node without capacity/allocatable those of the initial node; true when it
 * did. Mirrors updateDefaultResources.
 */
export function updateDefaultResources(initialNode: Node, existingNode: Node): boolean {
  let requiresUpdate = false;
  existingNode.status ??= {};
  if (existingNode.status.capacity === undefined && initialNode.status?.capacity) {
    existingNode.status.capacity = structuredClone(initialNode.status.capacity);
    requiresUpdate = true;
  }
  if (existingNode.status.allocatable === undefined && initialNode.status?.allocatable) {
    existingNode.status.allocatable = structuredClone(initialNode.status.allocatable);
    requiresUpdate = true;
  }
  return requiresUpdate;
}

// Drops what apiequality.Semantic treats as absent (null, empty lists and maps), sorts keys.
function normalize(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalize);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const n = normalize((v as Record<string, unknown>)[k]);
      if (n === null || n === undefined) continue;
      if (Array.isArray(n) && n.length === 0) continue;
      if (typeof n === "object" && !Array.isArray(n) && Object.keys(n).length === 0) continue;
      out[k] = n;
    }
    return out;
  }
  return v;
}

/**
 * Whether the conditions differ, ignoring heartbeat times and order. Mirrors
 * nodeConditionsHaveChanged.
 */
export function nodeConditionsHaveChanged(
  originalConditions: NodeCondition[] = [],
  conditions: NodeCondition[] = [],
): boolean {
  if (originalConditions.length !== conditions.length) return true;
  const prep = (cs: NodeCondition[]) =>
    [...cs].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
      .map((c) => JSON.stringify(normalize({ ...c, lastHeartbeatTime: undefined })));
  const a = prep(originalConditions);
  const b = prep(conditions);
  return a.some((x, i) => x !== b[i]);
}

/**
 * Whether a node status changed, heartbeat times aside: the report that must go out now rather
 * than at the report frequency. Mirrors nodeStatusHasChanged.
 *
 * @example
 * ```ts
 * import type { Node } from "../api/core/v1/mod.ts";
 *
 * declare const before: Node;
 * declare const after: Node;
 * nodeStatusHasChanged(before.status, after.status); // false when only heartbeats moved
 * ```
 */
export function nodeStatusHasChanged(
  originalStatus: NodeStatus | undefined,
  status: NodeStatus | undefined,
): boolean {
  if (originalStatus === undefined && status === undefined) return false;
  if (originalStatus === undefined || status === undefined) return true;
  if (nodeConditionsHaveChanged(originalStatus.conditions, status.conditions)) return true;
  const strip = (s: NodeStatus) => JSON.stringify(normalize({ ...s, conditions: undefined }));
  return strip(originalStatus) !== strip(status);
}
