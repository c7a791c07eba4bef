/**
 * The node agent: static pods from a manifest folder (and, with an API client, the pods bound to
 * this node) are run on a CRI runtime and kept healthy with probes. The sources are merged into
 * ADD / UPDATE / DELETE / REMOVE / RECONCILE operations; API pods pass admission first; mirror pods
 * stand for static pods in the API and are never run; statuses are synced to the API server.
 * One pod worker per pod serialises its syncs; PLEG events (a container started, died or went
 * away), probe result changes and each pod's periodic resync trigger a sync of that pod; liveness
 * and startup failures kill and restart containers with CrashLoopBackOff pacing; removed or
 * deleted pods are killed with their effective grace period. A restarted agent adopts the pods it
 * finds on the runtime (by their labels) instead of recreating them, and stopping the agent can
 * leave pods running.
 * Mirrors the parts of kubelet's pkg/kubelet/kubelet.go (NewMainKubelet, Run, syncLoopIteration,
 * SyncPod, SyncTerminatingPod, SyncTerminatedPod, HandlePodAdditions/Updates/Removes, canAdmitPod,
 * rejectPod, HandlePodCleanups, cleanUpContainersInPod) the prober needs; the Kubelet is the
 * podSyncer of its pod workers (pod_workers.ts).
 * @module
 */
import type { ProbePool } from "../probe/pool/pool.ts";
import { join, resolve } from "node:path";
import type { Node, Pod, PodCondition, PodStatus, Service } from "../api/core/v1/mod.ts";
import { isNotFound } from "../client/errors.ts";
import type { Clientset } from "../client/kubernetes/clientset.ts";
import type { ImageManagerService, RuntimeService } from "../cri_client/runtime_service.ts";
import type { Secret } from "../credentialprovider/keyring.ts";
import { type Clock, type ClockTimer, RealClock } from "../util/clock.ts";
import { Backoff } from "../util/flowcontrol/backoff.ts";
import { TokenBucketRateLimiter } from "../util/flowcontrol/throttle.ts";
import { newImageManager } from "./images/image_manager.ts";
import { newKubeImageService } from "./kuberuntime/kuberuntime_image.ts";
import * as log from "../util/log.ts";
import { StopSignal } from "../util/stop_signal.ts";
import { getNodeHostIPs } from "../util/node/node.ts";
import type { CommandRunner } from "./container/command_runner.ts";
import { containerIDString } from "./container/container_id.ts";
import { calculatePodConditionObservedGeneration } from "./container/podutil.ts";
import { getPodReference } from "./container/ref.ts";
import { ActiveDeadlineHandler } from "./active_deadline.ts";
import type { PodSyncHandler, PodSyncLoopHandler } from "./lifecycle/interfaces.ts";
import { type EventRecorder, LogRecorder } from "./events/mod.ts";
import {
  type ManifestError,
  PodConfigWatcher,
  type PodUpdate as FileUpdate,
} from "./config/mod.ts";
import { newSourceApiserver, type SourceApiserver } from "./config/apiserver.ts";
import { PodConfig } from "./config/config.ts";
import { type PodAdmitResult, PredicateAdmitHandler } from "./lifecycle/predicate.ts";
import { PodFeaturesAdmitHandler } from "./lifecycle/pod_features.ts";
import { newAllowlist } from "./sysctl/allowlist.ts";
import { getSafeSysctlAllowlist } from "./sysctl/safe_sysctls.ts";
import { BasicMirrorClient, type MirrorClient } from "./pod/mirror_client.ts";
import { getPodHash } from "./pod/pod_manager.ts";
import {
  calculateEffectiveGracePeriod,
  defaultSyncFrequencyMs,
  type PodSyncer,
  type PodSyncResult,
  type PodSyncStatus,
  PodWorkers,
} from "./pod_workers.ts";
import { getPodQOS } from "./qos/qos.ts";
import { newSimpleConfigMapManager } from "./configmap/configmap_manager.ts";
import type { JSONRequester } from "./configmap/configmap_manager.ts";
import { newSimpleSecretManager } from "./secret/secret_manager.ts";
import { TokenManager, tokenRequester } from "./token/token_manager.ts";
import { FailedMountVolume, VolumeManager } from "./volumemanager/volume_manager.ts";
import { cleanupOrphanedPodDirs } from "./kubelet_volumes.ts";
import { makeMounts } from "./kubelet_pods_mounts.ts";
import {
  type EnvironmentSources,
  makeEnvironmentVariables,
  type ServiceLister,
} from "./kubelet_pods.ts";
import type { ConfigMapManager } from "./configmap/configmap_manager.ts";
import type { SecretManager } from "./secret/secret_manager.ts";
import { MemoryStore } from "../client/cache/store.ts";
import { Reflector } from "../client/cache/reflector.ts";
import { newListWatchFromClient } from "../client/cache/listwatch.ts";
import type { VolumeHost } from "../volume/volume.ts";
import {
  ApiserverSource,
  FileSource,
  getPodFullName,
  isStaticPod,
  podConditionByKubelet,
  type PodUpdate,
} from "./types/pod_update.ts";
import { EventStore } from "./kubelet_events.ts";
import {
  CrashLoopBackOff,
  generateAPIPodStatus,
  generatePodHostNameAndDomain,
  generateRunContainerOptions,
  getPodDir,
  getPullSecretsForPod,
  rfc3339,
} from "./kubelet_pods.ts";
import { nodeRef } from "./kubelet_node_status.ts";
import { Configurer } from "./network/dns/dns.ts";
import { podKey } from "./container/helpers.ts";
import type * as kubecontainer from "./container/runtime.ts";
import { RuntimeCommandRunner, type RuntimeHelper } from "./kuberuntime/kuberuntime_container.ts";
import { KubeGenericRuntimeManager } from "./kuberuntime/kuberuntime_manager.ts";
import { newStreamingHost, type StreamingHost } from "./kubelet_streaming.ts";
import {
  ContainerGC,
  defaultGCPolicy,
  type GCPolicy,
  getContainersToDeleteInPod,
} from "./kuberuntime/kuberuntime_gc.ts";
import { GenericPLEG, type PodLifecycleEvent } from "./pleg/generic.ts";
import { probeletNodeLabel, probeletPodStartTimeAnnotation } from "./kuberuntime/labels.ts";
import { type ContainerLogManager, newContainerLogManager } from "./logs/container_log_manager.ts";
import {
  newManager as newProberManager,
  newProberMetrics,
  type ProberManager,
  type ProberMetrics,
} from "./prober/mod.ts";
import {
  newManager as newResultsManager,
  Result,
  type ResultsManager,
  type Update,
} from "./prober/results/mod.ts";
import {
  BasicPodManager,
  ContainersReady,
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
  isPodPhaseTerminal,
  newManager as newStatusManager,
  PodReady,
  type StatusManager,
} from "./status/mod.ts";

/** kubelet's initial CrashLoopBackOff delay. */
export const defaultBackOffInitialMs = 10_000;
/** kubelet's housekeeping period: how often runtime pods nobody wants are looked for. */
export const housekeepingPeriodMs = 2_000;
/** kubelet's sync ticker: how often pods whose resync is due are looked for. */
export const syncTickerPeriodMs = 1_000;
/** kubelet's container GC period (`ContainerGCPeriod`). */
export const containerGCPeriodMs = 60_000;
/** kubelet keeps at least this many dead instances of a container when one dies (`minDeadContainerInPod`). */
const minDeadContainerInPod = 1;
/** How long admission and mirror pods wait for the Node from the API server. */
const nodeGetTimeoutMs = 10_000;
/** kubelet's CrashLoopBackOff cap (`MaxContainerBackOff`). */
export const defaultBackOffMaxMs = 300_000;

/** Options of {@linkcode Kubelet}. */
export interface KubeletOptions {
  /** The container runtime. */
  runtime: RuntimeService;
  /** Container ID type (`containerd`); default: the runtime's `Version().runtimeName`. */
  runtimeName?: string;
  /** The runtime puts every sandbox in the host network (default: true for `embedded`). */
  runtimeHostNetworkOnly?: boolean;
  /** Where exec probes run; default: `ExecSync` on `runtime`. */
  runner?: CommandRunner;
  /** Time source for every timer (default: the wall clock). */
  clock?: Clock;
  /** Node name, used for static pod names (`<name>-<node>`). */
  nodeName: string;
  /**
   * The node's IP (`--node-ip`), reported as `hostIP` and used as the pod IP of host-network pods
   * when there is no API server; with one, the IPs the Node reports are used once it has any.
   */
  hostIP?: string;
  /** `--cluster-dns`: nameservers of `ClusterFirst` pods (none: they get the `Default` policy's). */
  clusterDNS?: string[];
  /** `--cluster-domain`: the cluster's DNS domain (default none). */
  clusterDomain?: string;
  /** `--resolv-conf`: the host's resolver file pods' DNS starts from (default `/etc/resolv.conf`). */
  resolverConfig?: string;
  /** Folder (or file) of static pod manifests; none = pods only via `setPods`. */
  podManifestPath?: string;
  /** The agent's state folder (pod logs go to `<rootDir>/pods`, seccomp profiles are read from `<rootDir>/seccomp`). */
  rootDir: string;
  /** The node's memory in bytes for Burstable OOM scores; default: this machine's. */
  memoryCapacity?: number;
  /** Period of each pod's resync when no event asks for one (default 1 min, as kubelet). */
  syncFrequencyMs?: number;
  /**
   * Log rotation of a CRI runtime's containers (kubelet's container log manager); only used when
   * the runtime has `reopenContainerLog`. Default: 10 MiB, 5 files, 1 worker, every 10 s.
   */
  containerLogPolicy?: {
    maxSizeBytes: number;
    maxFiles: number;
    maxWorkers?: number;
    monitorIntervalMs?: number;
  };
  /** PLEG relist period (default 1 s). */
  plegRelistPeriodMs?: number;
  /** Dead containers kept (default: kubelet's, one per container, no minimum age). */
  gcPolicy?: GCPolicy;
  /** Re-list period of the manifest folder (default 20 s; file notifications come sooner). */
  fileCheckFrequencyMs?: number;
  /** CrashLoopBackOff initial delay and cap (defaults 10 s and 5 min). */
  backOff?: { initialMs: number; maxMs: number };
  /**
   * The CRI image service: images are pulled by each container's `imagePullPolicy` before it is
   * created (kubelet's image manager), and the image's user decides `runAsNonRoot` and the default
   * user. Without one (the embedded runtime: its processes run as the agent) nothing is pulled.
   */
  imageService?: ImageManagerService;
  /** Image pulls one at a time (kubelet's `--serialize-image-pulls`, default true). */
  serializeImagePulls?: boolean;
  /** Image pull back-off initial delay and cap (kubelet's: 10 s and 5 min). */
  imageBackOff?: { initialMs: number; maxMs: number };
  /**
   * Reads a secret named by a pod's `imagePullSecrets` (kubelet's secret manager; API-server mode
   * reads it through the API, which the node authorizer allows for pods bound to the node).
   */
  getSecret?: (namespace: string, name: string) => Promise<Secret>;
  /** How many events `/events` keeps (default 1000). */
  maxEvents?: number;
  /** Recorders events are forwarded to besides the in-memory list (default: the structured log). */
  recorders?: EventRecorder[];
  /** Prober metrics (default: a fresh registry). */
  metrics?: ProberMetrics;
  /** Probe start-up jitter source (default `Math.random`). */
  random?: () => number;
  /** Threads for the HTTP, TCP and gRPC probe handlers (default: none, the main thread). */
  probePool?: ProbePool;
  /**
   * API-server mode: pods bound to this node are watched here, their statuses and the mirror pods
   * of static pods are written here. Without it the agent runs static pods only.
   */
  kubeClient?: Clientset;
  /** The registered Node as last seen (default: read with `kubeClient`). */
  getNode?: () => Node | undefined;
  /** The Node this kubelet registers (labels, taints): admission's view until the API has one. */
  initialNode?: () => Node | Promise<Node>;
  /** `--max-pods`: admission refuses more (default 110). */
  maxPods?: number;
}

/** A pod and its latest API status, as served at `/pods`. */
export interface PodWithStatus extends Pod {
  status: PodStatus;
}

/**
 * The node agent.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const kubelet = await newMainKubelet({ runtime, nodeName: "laptop", rootDir: ".run/probelet",
 *   podManifestPath: "fixtures/pods/host" });
 * await kubelet.run();
 * kubelet.pods(); // pods with their status
 * await kubelet.stop(); // tears every pod down
 * ```
 */
export class Kubelet {
  readonly clock: Clock;
  readonly nodeName: string;
  readonly hostIP: string;
  readonly podManager: BasicPodManager = new BasicPodManager();
  readonly statusManager: StatusManager;
  readonly livenessManager: ResultsManager = newResultsManager();
  readonly readinessManager: ResultsManager = newResultsManager();
  readonly startupManager: ResultsManager = newResultsManager();
  readonly probeManager: ProberManager;
  readonly events: EventStore;
  /** Modules that ask for a pod to be synced at the next tick (kubelet's PodSyncLoopHandlers). */
  readonly #podSyncLoopHandlers: PodSyncLoopHandler[];
  /** Modules that may fail a pod while its status is generated (kubelet's PodSyncHandlers). */
  readonly #podSyncHandlers: PodSyncHandler[];
  readonly metrics: ProberMetrics;
  readonly backoff: Backoff;
  readonly runtime: RuntimeService;
  #options: KubeletOptions;
  readonly #runtimeName: string;
  readonly #runtimeManager: KubeGenericRuntimeManager;
  readonly #runtimeHostNetworkOnly: boolean;
  /** The per-pod state machines; this Kubelet is their podSyncer. */
  readonly #podWorkers: PodWorkers;
  #watcher?: PodConfigWatcher;
  #syncTimer?: ClockTimer;
  readonly #pleg: GenericPLEG;
  readonly #containerGC: ContainerGC;
  /** Rotates a CRI runtime's container logs; none for the embedded runtime (its shims rotate). */
  readonly #containerLogManager?: ContainerLogManager;
  #lastContainerGC = -Infinity;
  #containerGCRun?: Promise<void>;
  #started = false;
  /** stop() has begun: no sync starts from then on (a restart would outlive the stop). */
  get #shuttingDown(): boolean {
    return this.#podWorkers.shuttingDown;
  }
  /** stop() has stopped the pod workers. */
  get #stopped(): boolean {
    return this.#podWorkers.stopped;
  }
  // Ends the sync loop's consumers; one waiter per loop, not one per update received.
  #stopSignal = new StopSignal();
  #consumers: Promise<void>[] = [];
  #loggedManifestErrors = new Set<string>();
  #manifestErrors: ManifestError[] = [];
  /** Merges the pod sources (files, the API server) into ADD/UPDATE/... operations. */
  #podConfig: PodConfig;
  #fileSource?: (u: PodUpdate) => void;
  #apiSource?: SourceApiserver;
  /** Sources that delivered an update to the sync loop (kubelet's sourcesReady). */
  #seenSources = new Set<string>();
  #podUpdatesLoop?: Promise<void>;
  #podUpdatesHandled = 0;
  #podUpdateWaiters: { target: number; resolve: () => void }[] = [];
  /** Admission of the pod's fields (every pod, static ones too). */
  readonly #featuresAdmitHandler: PodFeaturesAdmitHandler;
  // kubelet's sysctl admission: the safe sysctls (probelet has no --allowed-unsafe-sysctls).
  #sysctlsAllowlist = newAllowlist(getSafeSysctlAllowlist());
  /** Admission against the Node (API-server mode only). */
  readonly #admitHandler?: PredicateAdmitHandler;
  #admitNode?: Node;
  /** Sets up the pods' volumes under `<rootDir>/pods/<uid>/volumes`. */
  readonly #volumeManager: VolumeManager;
  readonly #tokenManager?: TokenManager;
  /** Config maps and secrets through the API server (volumes and env); none without one. */
  readonly #configMapManager?: ConfigMapManager;
  readonly #secretManager?: SecretManager;
  /** The services for service links (API-server mode). */
  #serviceLister?: ServiceLister;
  #serviceReflectorStop = new AbortController();
  #serviceReflectorRun?: Promise<void>;
  /** Pods refused by admission, by UID: never run; listed by pods() with their Failed status. */
  #rejected = new Map<string, Pod>();
  readonly #mirrorClient?: MirrorClient;
  /** Full name → hash of mirror pods created and not yet seen through the watch. */
  #mirrorCreated = new Map<string, string>();
  #node?: Node;
  #nodeFetchedAt = -Infinity;
  /** The latest desired set of pods by UID (what the last update asked for). */
  #desired = new Map<string, Pod>();
  // API pods already terminal when first seen (a restarted agent): never run again, but their
  // remains stay until they are deleted, as kubelet's pod worker keeps a terminated pod. The value
  // says whether nothing of it runs any more (checked once).
  #finished = new Map<string, boolean>();
  /** When housekeeping last ran (kubelet's housekeeping ticker); the orphan cleanup in progress. */
  #lastHousekeeping = -Infinity;
  #orphanCleanup?: Promise<void>;

  /**
   * Builds every part, as kubelet's NewMainKubelet; `run()` starts the loops. The runtime's name
   * must be known: {@linkcode newMainKubelet} asks the runtime for it.
   */
  constructor(options: KubeletOptions & { runtimeName: string }) {
    this.#options = options;
    this.clock = options.clock ?? new RealClock();
    // kubelet's NewMainKubelet: the Kubelet is its pod workers' podSyncer.
    const podSyncer: PodSyncer = {
      syncPod: (status) => this.#syncPod(status),
      syncTerminatingPod: (status, gracePeriod) =>
        this.#syncTerminatingPodAndRemove(status, gracePeriod),
      syncTerminatedPod: (status) => this.#syncTerminatedPod(status),
    };
    this.#podWorkers = new PodWorkers(podSyncer, {
      clock: this.clock,
      resyncIntervalMs: options.syncFrequencyMs ?? defaultSyncFrequencyMs,
      random: options.random,
    });
    this.nodeName = options.nodeName;
    this.hostIP = options.hostIP ?? "127.0.0.1";
    this.runtime = options.runtime;
    this.statusManager = newStatusManager({
      podManager: this.podManager,
      clock: this.clock,
      kubeClient: options.kubeClient,
      // A terminal phase is held back while the pod could have running containers (kubelet's
      // PodCouldHaveRunningContainers): it has a pod worker whose SyncTerminatingPod has not
      // completed. A completing Job pod thus first shows its container terminated in phase
      // Running, as on kubelet.
      podDeletionSafety: {
        shouldDelayTransitioningPodToTerminal: (pod) =>
          this.#podWorkers.couldHaveRunningContainers(pod.metadata.uid ?? ""),
      },
    });
    this.events = new EventStore({
      clock: this.clock,
      limit: options.maxEvents ?? 1000,
      forward: options.recorders ?? [new LogRecorder()],
    });
    // kubelet's NewMainKubelet: the active-deadline handler is both a sync-loop and a sync handler.
    const activeDeadlineHandler = new ActiveDeadlineHandler(
      this.statusManager,
      this.events,
      this.clock,
    );
    this.#podSyncLoopHandlers = [activeDeadlineHandler];
    this.#podSyncHandlers = [activeDeadlineHandler];
    this.metrics = options.metrics ?? newProberMetrics();
    this.probeManager = newProberManager({
      statusManager: this.statusManager,
      livenessManager: this.livenessManager,
      readinessManager: this.readinessManager,
      startupManager: this.startupManager,
      runner: options.runner ?? new RuntimeCommandRunner(options.runtime),
      recorder: this.events,
      clock: this.clock,
      metrics: this.metrics,
      random: options.random,
      probePool: options.probePool,
    });
    this.backoff = new Backoff(this.clock, {
      initialMs: options.backOff?.initialMs ?? defaultBackOffInitialMs,
      maxMs: options.backOff?.maxMs ?? defaultBackOffMaxMs,
    });
    this.#podConfig = new PodConfig({ recorder: this.events, clock: this.clock });
    this.#runtimeName = options.runtimeName;
    const runtimeName = options.runtimeName;
    // Kubelet rotates the logs a CRI runtime writes; the embedded runtime's shims rotate theirs.
    const runtime = this.runtime;
    const reopenContainerLog = runtime.reopenContainerLog?.bind(runtime);
    if (reopenContainerLog) {
      const policy = options.containerLogPolicy ?? { maxSizeBytes: 10 << 20, maxFiles: 5 };
      this.#containerLogManager = newContainerLogManager({
        ...policy,
        runtime: {
          listContainers: (filter) => runtime.listContainers(filter),
          containerStatus: (id) => runtime.containerStatus(id),
          reopenContainerLog: (id) => reopenContainerLog(id),
        },
        clock: this.clock,
        labelSelector: { [probeletNodeLabel]: this.nodeName },
      });
    }
    const volumes = newVolumeManagers(options, {
      clock: this.clock,
      recorder: this.events,
      getNodeAllocatable: () =>
        (this.#admitNode?.status?.allocatable ?? {}) as Record<string, string>,
    });
    this.#volumeManager = volumes.volumeManager;
    this.#tokenManager = volumes.tokenManager;
    this.#configMapManager = volumes.configMapManager;
    this.#secretManager = volumes.secretManager;
    const hostNetworkOnly = options.runtimeHostNetworkOnly ?? runtimeName === "embedded";
    this.#runtimeHostNetworkOnly = hostNetworkOnly;
    this.#runtimeManager = new KubeGenericRuntimeManager({
      runtime: this.runtime,
      runtimeName,
      // Host processes get no mounts, hosts file or resolv.conf: admission refuses what needs them.
      runtimeHelper: hostNetworkOnly ? undefined : this.#runtimeHelper(),
      // The environment, on both runtimes (a host process gets its variables too).
      makeEnvironmentVariables: (pod, container, ips) =>
        makeEnvironmentVariables(pod, container, ips, this.#environmentSources()),
      clock: this.clock,
      recorder: this.events,
      lookups: { livenessManager: this.livenessManager, startupManager: this.startupManager },
      backoff: this.backoff,
      podLogsRootDir: join(options.rootDir, "pods"),
      runtimeHostNetworkOnly: hostNetworkOnly,
      nodeName: this.nodeName,
      logManager: this.#containerLogManager,
      imageManager: options.imageService && newImageManager({
        recorder: this.events,
        imageService: newKubeImageService(options.imageService),
        backOff: new Backoff(this.clock, {
          initialMs: options.imageBackOff?.initialMs ?? defaultBackOffInitialMs,
          maxMs: options.imageBackOff?.maxMs ?? defaultBackOffMaxMs,
        }),
        clock: this.clock,
        serialized: options.serializeImagePulls ?? true,
        // kubelet's --registry-qps 5 and --registry-burst 10.
        limiter: new TokenBucketRateLimiter(this.clock, { qps: 5, burst: 10 }),
      }),
      getPullSecrets: (pod) =>
        getPullSecretsForPod(pod, { getSecret: options.getSecret, recorder: this.events }),
      imageService: options.imageService,
      linux: {
        seccompProfileRoot: join(options.rootDir, "seccomp"),
        memoryCapacity: options.memoryCapacity,
      },
    });
    this.#pleg = new GenericPLEG({
      runtime: this.#runtimeManager,
      clock: this.clock,
      relistPeriodMs: options.plegRelistPeriodMs,
    });
    const runtimeManager = this.#runtimeManager;
    this.#containerGC = new ContainerGC({
      runtime: this.runtime,
      clock: this.clock,
      nodeName: this.nodeName,
      podStateProvider: {
        shouldPodContentBeRemoved: (uid) =>
          !this.#podWorkers.isKnown(uid) && !this.#desired.has(uid) && !this.#finished.has(uid),
      },
      removeContainer: (id) => runtimeManager.removeContainer(id),
      podLogsDirectory: join(options.rootDir, "pods"),
    });
    const kubeClient = options.kubeClient;
    // No silent drops: a pod setting a field this runtime does not honour is refused, whatever
    // its source.
    this.#featuresAdmitHandler = new PodFeaturesAdmitHandler({
      facts: {
        runtime: runtimeName === "embedded" ? "embedded" : "containerd",
        apiServer: kubeClient !== undefined,
        clusterDNS: (options.clusterDNS ?? []).length > 0,
        uid: Deno.uid() ?? -1,
        gid: Deno.gid() ?? -1,
      },
    });
    if (kubeClient) {
      this.#admitHandler = new PredicateAdmitHandler({
        getNode: () => this.#admitNode,
        // Containers of the embedded runtime are host processes: only pods that ask for this
        // node by tolerating its taint key run here.
        requireAgentToleration: runtimeName === "embedded",
      });
      this.#mirrorClient = new BasicMirrorClient(kubeClient, {
        nodeName: this.nodeName,
        nodeGetter: () => this.#apiNode(),
      });
    }
  }

  /**
   * Starts the loops (kubelet's Run): consuming probe results, PLEG events and pod updates, the
   * status manager (API-server mode), the periodic sync and (with a manifest path) the manifest
   * watch; resolves once the first set of pods has been dispatched.
   */
  async run(): Promise<void> {
    if (this.#started) throw new Error("kubelet already started");
    this.#started = true;
    log.info("Starting probelet node agent", {
      nodeName: this.nodeName,
      runtime: this.#runtimeName,
      podManifestPath: this.#options.podManifestPath ?? "",
    });
    this.#consumers = [
      this.#consume(this.livenessManager, "liveness"),
      this.#consume(this.readinessManager, "readiness"),
      this.#consume(this.startupManager, "startup"),
      this.#consumePLEG(this.#pleg),
    ];
    this.#podUpdatesLoop = this.#consumePodUpdates();
    const kubeClient = this.#options.kubeClient;
    if (kubeClient) this.statusManager.start();
    this.#pleg.start();
    this.#containerLogManager?.start();
    this.#scheduleSyncTick();
    if (this.#options.podManifestPath) {
      this.#fileSource ??= this.#podConfig.channel(FileSource);
      this.#watcher = new PodConfigWatcher(this.#options.podManifestPath, {
        nodeName: this.nodeName,
        clock: this.clock,
        intervalMs: this.#options.fileCheckFrequencyMs,
        onChange: (u) => this.#handleFileUpdate(u),
        onError: (e) => log.error(e, "Failed to apply static pod update"),
      });
      await this.#watcher.start();
    }
    if (kubeClient) {
      // kubelet's service informer: every service of every namespace, for service links.
      const store = new MemoryStore<Service>();
      const reflector = new Reflector(
        newListWatchFromClient(kubeClient.coreV1.services("")),
        store,
        {
          name: "services",
          clock: this.clock,
        },
      );
      this.#serviceLister = { list: () => store.list(), hasSynced: () => reflector.hasSynced() };
      this.#serviceReflectorRun = reflector.run(this.#serviceReflectorStop.signal);
      this.#apiSource = newSourceApiserver(kubeClient, {
        nodeName: this.nodeName,
        clock: this.clock,
        nodeHasSynced: async () => (await this.#apiNode()) !== undefined,
        updates: this.#podConfig.channel(ApiserverSource),
      });
    }
    // Pods left on the runtime by a previous run are removed once the desired set is known.
    await this.#cleanupOrphanedPods();
  }

  /** Replaces the desired set of static pods (what a manifest update does). */
  setPods(pods: Pod[]): void {
    void this.#handleFileUpdate({ op: "SET", source: "file", pods, errors: [] });
  }

  /** Resolves once every pod update queued so far has gone through the sync loop. */
  podUpdatesHandled(): Promise<void> {
    const target = this.#podConfig.updatesSent;
    if (this.#podUpdatesHandled >= target || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => this.#podUpdateWaiters.push({ target, resolve }));
  }

  /** Problems found in the manifests by the last listing. */
  manifestErrors(): ManifestError[] {
    return [...this.#manifestErrors];
  }

  // The manifest folder's whole set: its errors are logged once, its pods go to the merge.
  #handleFileUpdate(update: FileUpdate): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#manifestErrors = update.errors;
    const current = new Set(update.errors.map((e) => e.message));
    for (const e of update.errors) {
      if (this.#loggedManifestErrors.has(e.message)) continue;
      log.error(e, "Could not process manifest file", {
        file: e.file,
        ...(e.field ? { field: e.field } : {}),
      });
    }
    this.#loggedManifestErrors = current;
    this.#fileSource ??= this.#podConfig.channel(FileSource);
    this.#fileSource({ op: "SET", source: FileSource, pods: update.pods });
    return this.podUpdatesHandled();
  }

  // kubelet's syncLoopIteration, the configCh case: one merged update at a time, in order.
  async #consumePodUpdates(): Promise<void> {
    const updates = this.#podConfig.updates();
    for (;;) {
      const next = await this.#stopSignal.race(updates.receive());
      if (!next || next.done || this.#stopped) break;
      const u = next.value;
      try {
        await this.#syncLoopIteration(u);
      } catch (e) {
        log.error(e, "Failed to handle pod update", { op: u.op, source: u.source });
      }
      this.#podUpdatesHandled++;
      this.#podUpdateWaiters = this.#podUpdateWaiters.filter((w) => {
        if (w.target > this.#podUpdatesHandled) return true;
        w.resolve();
        return false;
      });
    }
    for (const w of this.#podUpdateWaiters.splice(0)) w.resolve();
  }

  async #syncLoopIteration(u: PodUpdate): Promise<void> {
    this.#seenSources.add(u.source);
    const pods = u.pods.map(podKey);
    switch (u.op) {
      case "ADD":
        if (pods.length > 0) log.V(2).info("SyncLoop ADD", { source: u.source, pods });
        await this.#handlePodAdditions(u.pods);
        break;
      case "UPDATE":
        log.V(2).info("SyncLoop UPDATE", { source: u.source, pods });
        this.#handlePodUpdates(u.pods);
        break;
      case "REMOVE":
        log.V(2).info("SyncLoop REMOVE", { source: u.source, pods });
        this.#handlePodRemoves(u.pods);
        break;
      case "RECONCILE":
        log.V(4).info("SyncLoop RECONCILE", { source: u.source, pods });
        for (const pod of u.pods) {
          this.podManager.updatePod(pod);
          // A readiness gate set by a controller changes Ready: sync the pod now.
          if ((pod.spec.readinessGates ?? []).length > 0) {
            this.syncPodByUID(pod.metadata.uid ?? "");
          }
        }
        break;
      case "DELETE":
        // A graceful deletion is an update carrying a deletion timestamp.
        log.V(2).info("SyncLoop DELETE", { source: u.source, pods });
        this.#handlePodUpdates(u.pods);
        break;
      default:
        log.error(
          new Error(`unsupported pod update ${u.op}`),
          "Kubelet does not support this update",
        );
    }
  }

  // kubelet's sourcesReady: a source exists, every source has sent a whole set and the sync loop
  // has seen it. Until then any pod on the runtime may still be wanted (adopted).
  #sourcesReady(): boolean {
    return this.#seenSources.size > 0 && this.#podConfig.seenAllSources(this.#seenSources);
  }

  // kubelet's HandlePodAdditions: oldest first; mirror pods are never run (their static pod is
  // synced instead); admission decides the rest.
  async #handlePodAdditions(pods: Pod[]): Promise<void> {
    const sorted = [...pods].sort((a, b) =>
      (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "")
    );
    for (const pod of sorted) {
      if (this.#stopped || this.#shuttingDown) return;
      this.podManager.addPod(pod);
      const found = this.podManager.getPodAndMirrorPod(pod);
      if (found.wasMirror) {
        if (!found.pod) {
          log.V(2).info("Unable to find pod for mirror pod, skipping", {
            mirrorPod: podKey(pod),
            mirrorPodUID: pod.metadata.uid,
          });
          continue;
        }
        this.syncPodByUID(found.pod.metadata.uid ?? "");
        continue;
      }
      const uid = pod.metadata.uid ?? "";
      // An API pod that already finished (seen again after a restart) never runs again.
      if (!isStaticPod(pod) && isPodPhaseTerminal(pod.status?.phase)) {
        if (pod.metadata.deletionTimestamp) this.statusManager.terminatePod(pod);
        else if (!this.#finished.has(uid)) this.#finished.set(uid, false);
        continue;
      }
      if (pod.metadata.deletionTimestamp !== undefined) {
        // Deleted while the agent was away: kill whatever of it runs, then finish the deletion.
        log.info("Pod is already being deleted, killing it", { pod: podKey(pod), podUID: uid });
        this.#desired.delete(uid);
        if (!this.#podWorkers.isKnown(uid)) {
          this.#addPod(pod, { start: false });
          this.#podWorkers.updatePod({ updateType: "kill", pod });
        }
        continue;
      }
      const admitted = await this.#canAdmitPod(pod);
      if (!admitted.admit) {
        this.#rejectPod(pod, admitted.reason ?? "", admitted.message ?? "");
        continue;
      }
      this.#desired.set(uid, pod);
      // A pod still being torn down is started again once its teardown ends (#forgetPod).
      if (this.#podWorkers.isKnown(uid)) continue;
      this.#addPod(pod);
    }
  }

  // kubelet's HandlePodUpdates (UPDATE and DELETE).
  #handlePodUpdates(pods: Pod[]): void {
    for (const pod of pods) {
      this.podManager.updatePod(pod);
      const found = this.podManager.getPodAndMirrorPod(pod);
      if (found.wasMirror) {
        if (found.pod) this.syncPodByUID(found.pod.metadata.uid ?? "");
        continue;
      }
      const uid = pod.metadata.uid ?? "";
      const worker = this.#podWorkers.getPodSyncStatus(uid);
      if (pod.metadata.deletionTimestamp !== undefined) {
        this.#desired.delete(uid);
        this.#finished.delete(uid);
        if (!worker) {
          // Never ran (rejected) or already torn down: the deletion can complete.
          if (!isStaticPod(pod)) this.statusManager.terminatePod(pod);
          continue;
        }
        worker.pod = pod;
        if (worker.terminating) void this.#shortenTermination(worker);
        else this.#podWorkers.updatePod({ updateType: "kill", pod });
        continue;
      }
      if (!worker || this.#rejected.has(uid)) continue;
      this.#desired.set(uid, pod);
      if (worker.terminating) continue;
      if (isStaticPod(pod)) {
        // Only a manifest with an explicit metadata.uid keeps its UID when edited (others get a
        // new one). Recreate the pod, as a changed static pod is: tear down, then start the new
        // spec once the teardown ends (#forgetPod restarts desired UIDs).
        log.info("Static pod changed under the same UID, recreating it", {
          pod: podKey(pod),
          podUID: uid,
        });
        void this.#podWorkers.terminatePod(worker);
        continue;
      }
      // An API pod is synced with its new spec: changed containers are restarted, others kept.
      this.#podWorkers.updatePod({ updateType: "update", pod });
    }
  }

  // kubelet's pod worker: a termination can only speed up. A shorter grace period arriving while
  // the kill runs (a second delete) kills again with it; the runtime SIGKILLs at the earlier end.
  async #shortenTermination(worker: PodSyncStatus): Promise<void> {
    const { gracePeriod } = calculateEffectiveGracePeriod(worker.gracePeriod, worker.pod);
    const runtimeManager = this.#runtimeManager;
    if (worker.gracePeriod === 0 || gracePeriod >= worker.gracePeriod) return;
    worker.gracePeriod = gracePeriod;
    const pod = worker.pod;
    log.info("Killing pod with a shorter grace period", {
      pod: podKey(pod),
      podUID: pod.metadata.uid,
      gracePeriod,
    });
    try {
      const runtimeStatus = await runtimeManager.getPodStatus(pod);
      await runtimeManager.killPod(pod, runtimeStatus, { gracePeriodOverrideSeconds: gracePeriod });
    } catch (e) {
      // The teardown in progress may have removed the pod meanwhile; it reports its own failures.
      log.V(2).info("Faster kill did not complete", { pod: podKey(pod), err: String(e) });
    }
  }

  // kubelet's HandlePodRemoves: the pod is gone from its source (a removed manifest, a pod
  // deleted at once): kill it with its own grace period.
  #handlePodRemoves(pods: Pod[]): void {
    for (const pod of pods) {
      this.podManager.removePod(pod);
      const found = this.podManager.getPodAndMirrorPod(pod);
      if (found.wasMirror) {
        this.#mirrorCreated.delete(getPodFullName(pod));
        if (found.pod) this.syncPodByUID(found.pod.metadata.uid ?? "");
        continue;
      }
      const uid = pod.metadata.uid ?? "";
      this.#desired.delete(uid);
      this.#rejected.delete(uid);
      this.#finished.delete(uid);
      const worker = this.#podWorkers.getPodSyncStatus(uid);
      if (worker && !worker.terminating) void this.#podWorkers.terminatePod(worker);
    }
  }

  // kubelet's canAdmitPod: the handlers in kubelet's order, the first refusal wins. The sysctl
  // allowlist (every pod), the predicate handler (API-server mode; a node-affinity refusal is
  // retried with a freshly read Node, as generalFilter does), then the pod's fields (every pod,
  // static ones too).
  async #canAdmitPod(pod: Pod): Promise<PodAdmitResult> {
    const otherPods = this.#podWorkers.activePods();
    const sysctls = this.#sysctlsAllowlist.admit({ pod, otherPods });
    if (!sysctls.admit) return sysctls;
    if (this.#admitHandler) {
      this.#admitNode = await this.#nodeForAdmission(false);
      let result = this.#admitHandler.admit({ pod, otherPods });
      if (!result.admit && result.reason === "NodeAffinity") {
        this.#admitNode = await this.#nodeForAdmission(true);
        result = this.#admitHandler.admit({ pod, otherPods });
      }
      if (!result.admit) return result;
    }
    return this.#featuresAdmitHandler.admit({ pod, otherPods });
  }

  // kubelet's rejectPod: a Warning event and a Failed status saying why; the pod never runs.
  #rejectPod(pod: Pod, reason: string, message: string): void {
    log.info("Pod was rejected", { pod: podKey(pod), reason, message });
    this.#rejected.set(pod.metadata.uid ?? "", pod);
    this.events.event(getPodReference(pod), { type: "Warning", reason, message });
    this.statusManager.setPodStatus(pod, {
      phase: "Failed",
      reason,
      message: `Pod was rejected: ${message}`,
    });
  }

  // kubelet's getNodeAnyWay: the registered Node, else the one this kubelet would register.
  async #nodeForAdmission(fresh: boolean): Promise<Node> {
    const node = await this.#apiNode(fresh);
    if (node) return node;
    if (this.#options.initialNode) return await this.#options.initialNode();
    return {
      metadata: {
        name: this.nodeName,
        labels: { "kubernetes.io/hostname": this.nodeName, "kubernetes.io/os": Deno.build.os },
      },
      status: { allocatable: { pods: String(this.#options.maxPods ?? 110) } },
    };
  }

  // The Node as the API server has it: node status's copy, else read (at most every 10 s).
  async #apiNode(fresh = false): Promise<Node | undefined> {
    const known = this.#options.getNode?.();
    if (known && !fresh) return known;
    const client = this.#options.kubeClient;
    if (!client) return undefined;
    if (!fresh && this.#node && this.clock.since(this.#nodeFetchedAt) < 10_000) return this.#node;
    // Admission waits for this read: an API server that does not answer must not stall the pods.
    const abort = new AbortController();
    const timer = this.clock.afterFunc(
      nodeGetTimeoutMs,
      () => abort.abort(new DOMException("node get timed out", "TimeoutError")),
    );
    try {
      this.#node = await client.coreV1.nodes().get(this.nodeName, { signal: abort.signal });
      this.#nodeFetchedAt = this.clock.now();
    } catch (e) {
      if (isNotFound(e)) this.#node = undefined;
      else log.error(e, "Failed to get node", { node: this.nodeName });
    } finally {
      timer.stop();
    }
    return this.#node ?? known;
  }

  // What a container's environment reads: kubelet's managers, service lister and node.
  #environmentSources(): EnvironmentSources {
    return {
      configMapManager: this.#configMapManager,
      secretManager: this.#secretManager,
      serviceLister: this.#serviceLister,
      getHostIPs: () => this.#hostIPs(),
      getNodeAllocatable: async () =>
        (await this.#nodeForAdmission(false)).status?.allocatable ?? {},
    };
  }

  // kubelet's getHostIPsAnyWay: in API mode the IPs the Node reports (as registered, else as
  // admission last saw it), so pods and `kubectl get node` agree; --node-ip (or 127.0.0.1) when
  // there is no API server or the Node has no address yet.
  #hostIPs(): string[] {
    const node = this.#options.kubeClient
      ? this.#options.getNode?.() ?? this.#admitNode
      : undefined;
    if (node) {
      try {
        return getNodeHostIPs(node);
      } catch (e) {
        log.V(4).info("Cannot get host IPs", { err: e instanceof Error ? e.message : String(e) });
      }
    }
    return [this.hostIP];
  }

  // SyncPod's mirror pod part: a missing, outdated or deleted mirror is replaced.
  async #syncMirrorPod(pod: Pod, mirrorClient: MirrorClient): Promise<void> {
    const fullName = getPodFullName(pod);
    const mirror = this.podManager.getMirrorPodByPod(pod);
    let deleted = false;
    if (
      mirror &&
      (mirror.metadata.deletionTimestamp !== undefined ||
        !this.podManager.isMirrorPodOf(mirror, pod))
    ) {
      log.info("Trying to delete pod", { pod: podKey(pod), podUID: mirror.metadata.uid });
      deleted = await mirrorClient.deleteMirrorPod(fullName, mirror.metadata.uid);
      if (deleted) log.info("Deleted mirror pod because it is outdated", { pod: podKey(mirror) });
    }
    if (mirror && !deleted) return;
    const hash = getPodHash(pod);
    // Created already; the watch has not brought it back yet.
    if (!deleted && this.#mirrorCreated.get(fullName) === hash) return;
    const node = await this.#apiNode();
    if (!node) {
      log.V(4).info(
        "No need to create a mirror pod, since failed to get node info from the cluster",
        {
          node: this.nodeName,
        },
      );
      return;
    }
    if (node.metadata.deletionTimestamp !== undefined) {
      log.V(4).info(
        "No need to create a mirror pod, since node has been removed from the cluster",
        {
          node: this.nodeName,
        },
      );
      return;
    }
    log.V(4).info("Creating a mirror pod for static pod", { pod: podKey(pod) });
    try {
      await mirrorClient.createMirrorPod(pod);
      this.#mirrorCreated.set(fullName, hash);
    } catch (e) {
      log.error(e, "Failed creating a mirror pod", { pod: podKey(pod) });
    }
  }

  // kubelet's UpdatePod(SyncPodCreate); the pod manager knows the pod before its first sync.
  #addPod(pod: Pod, options: { start?: boolean } = {}): void {
    this.podManager.addPod(pod);
    this.#podWorkers.updatePod({ updateType: "create", pod, start: options.start });
  }

  /** Requests a sync of the pod with this UID (no-op for unknown or terminating pods). */
  syncPodByUID(uid: string): void {
    this.#podWorkers.syncPodByUID(uid);
  }

  // What the runtime manager asks of the kubelet (kubelet's RuntimeHelper): the pod's DNS, host
  // name, volume mounts, hosts file and termination message folder (the last two under
  // <rootDir>/pod-dirs/<uid>; the volumes are under <rootDir>/pods/<uid>/volumes).
  #runtimeHelper(): RuntimeHelper {
    const clusterDomain = this.#options.clusterDomain ?? "";
    // Made at the first pod's DNS, once running: the node's IPs are those the Node reports by then.
    let dns: Configurer | undefined;
    const newDNSConfigurer = () =>
      new Configurer({
        recorder: this.events,
        nodeRef: nodeRef(this.nodeName),
        nodeIPs: this.#hostIPs(),
        clusterDNS: this.#options.clusterDNS ?? [],
        clusterDomain,
        resolverConfig: this.#options.resolverConfig ?? "/etc/resolv.conf",
      });
    const podsDir = this.#podsDir();
    return {
      getPodDNS: (pod) => (dns ??= newDNSConfigurer()).getPodDNS(pod),
      generatePodHostNameAndDomain: (pod) => generatePodHostNameAndDomain(pod, clusterDomain),
      // kubelet's makeMounts: the container's volume mounts, then the managed /etc/hosts.
      generateRunContainerOptions: async (pod, container, { podIPs, envs }) => {
        const volumeMounts = await makeMounts(
          pod,
          // subPathExpr expands against the environment makeEnvironmentVariables built.
          envs ? { ...container, env: envs } : container,
          this.#volumeManager.getMountedVolumesForPod(pod.metadata.uid ?? ""),
        );
        const options = await generateRunContainerOptions(pod, container, {
          podsDir,
          podIPs,
          clusterDomain,
        });
        return { ...options, mounts: [...volumeMounts, ...options.mounts] };
      },
    };
  }

  // Kubelet's <root-dir>/pods; probelet's <root-dir>/pods holds the container logs.
  #podsDir(): string {
    return join(this.#options.rootDir, "pod-dirs");
  }

  // kubelet's cleanupOrphanedPodDirs, for one pod whose containers are gone.
  async #removePodDir(pod: Pod): Promise<void> {
    await Deno.remove(getPodDir(this.#podsDir(), pod), { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) {
        log.error(e, "Failed to remove the pod's folder", { pod: podKey(pod) });
      }
    });
  }

  /**
   * Kubelet's SyncPod for a running pod: status first, then probes, then runtime actions. Returns
   * what the pod worker's requeue needs (an error, the end of a restart back-off), or undefined
   * when the pod went terminal or is terminating.
   */
  async #syncPod(worker: PodSyncStatus): Promise<PodSyncResult | undefined> {
    const pod = worker.pod;
    const runtimeManager = this.#runtimeManager;
    let retryAt: number | undefined;
    let failed = false;
    try {
      let runtimeStatus = await runtimeManager.getPodStatus(pod);
      if (worker.syncs === 0) this.#adoptStartTime(worker, runtimeStatus);
      if (worker.died.size > 0) {
        runtimeStatus = await this.#cleanUpContainersInPod(worker, runtimeStatus);
      }
      const phase = this.#setAPIStatus(worker, runtimeStatus);
      if (worker.terminating || this.#stopped || this.#shuttingDown) return undefined;
      // Kubelet's SyncPod returns "terminal" before any set-up; its pod worker then runs
      // SyncTerminatingPod, which stops the sandbox (and with it the pod's network).
      if (phase === "Succeeded" || phase === "Failed") {
        await this.#syncTerminalPod(worker);
        return undefined;
      }
      if (this.#mirrorClient && isStaticPod(pod)) {
        await this.#syncMirrorPod(pod, this.#mirrorClient);
      }
      this.probeManager.addPod(pod);
      // kubelet's SyncPod: the volumes before any container; a pod whose volumes cannot be set
      // up waits (ContainerCreating) and is synced again after the back-off period.
      try {
        await this.#volumeManager.waitForAttachAndMount(pod);
      } catch (e) {
        this.events.event(getPodReference(pod), {
          type: "Warning",
          reason: FailedMountVolume,
          message: `Unable to attach or mount volumes: ${(e as Error).message}`,
        });
        throw e;
      }
      // As kubelet: the runtime status takes the API status's pod IPs (a host-network pod's are
      // the node's, which its hosts file needs).
      const apiIPs = (this.statusManager.getPodStatus(pod.metadata.uid ?? "")?.podIPs ?? [])
        .map((p) => p.ip);
      if (apiIPs.length > 0) runtimeStatus = { ...runtimeStatus, ips: apiIPs };
      const result = await runtimeManager.syncPod(pod, runtimeStatus, {
        podStartTime: worker.startTime,
      });
      // Containers whose status (generated above) shows them waiting out a restart back-off.
      const backingOff = new Set(
        [...worker.startFailures].filter(([, f]) => f.reason === CrashLoopBackOff).map(([n]) => n),
      );
      for (const [name, failure] of result.startResults) {
        if (failure) worker.startFailures.set(name, failure);
        else worker.startFailures.delete(name);
      }
      worker.syncs++;
      retryAt = result.retryAt;
      // kubelet's SyncPod returns an image pull's error; the pod worker retries after its back-off.
      if (result.syncFailed) failed = true;
      // A sync that only met a restart back-off changed nothing: kubelet's status keeps the
      // container terminated until the next sync, which shows the reason cache's CrashLoopBackOff.
      // A container restarted after its back-off keeps showing CrashLoopBackOff until the PLEG
      // reports it started (within its relist period), as on kubelet.
      const restartedAfterBackOff = [...result.startResults].some(([name, failure]) =>
        failure === null && backingOff.has(name)
      );
      if (result.changed && !restartedAfterBackOff) {
        // What PLEG would report right after the change: regenerate the status now.
        runtimeStatus = await runtimeManager.getPodStatus(pod);
        this.#setAPIStatus(worker, runtimeStatus);
      }
    } catch (e) {
      failed = true;
      log.error(e, "Error syncing pod, skipping", { pod: podKey(pod), podUID: pod.metadata.uid });
    }
    return { failed, retryAt };
  }

  /**
   * The pod worker's syncs after a SyncPod that found the pod terminal: SyncTerminatingPod (its
   * first status, stop liveness and startup probes, kill what still runs and stop the sandbox, drop
   * the probe workers, its last status), then SyncTerminatedPod (a status generated as terminal,
   * volumes and tokens released, the status manager's final version). Each starts as kubelet's pod
   * worker starts a sync: with a pod status newer than the end of the previous sync
   * (`podCache.GetNewerThan(lastSyncTime)`), i.e. after the PLEG's next relist. Until
   * SyncTerminatingPod completes, the status manager holds the terminal phase back (the API shows
   * the containers terminated under the phase it had). The exited containers stay (for their logs
   * and statuses) until the pod is removed. Throws when the runtime fails; the pod is then synced
   * again after the back-off period.
   */
  async #syncTerminalPod(worker: PodSyncStatus): Promise<void> {
    const pod = worker.pod;
    const runtimeManager = this.#runtimeManager;
    log.V(4).info("Pod is terminal, stopping it", { pod: podKey(pod), podUID: pod.metadata.uid });
    // SyncTerminatingPod.
    await this.#pleg.waitNewerThan(this.clock.now());
    const before = await runtimeManager.getPodStatus(pod);
    this.#setAPIStatus(worker, before);
    const after = await this.#syncTerminatingPod(worker, before, { recordStatus: true });
    // SyncTerminatedPod.
    await this.#pleg.waitNewerThan(this.clock.now());
    const terminated = preserveDataFromBeforeStopping(
      await runtimeManager.getPodStatus(pod),
      after,
    );
    this.#setAPIStatus(worker, terminated, { podIsTerminal: true });
    // kubelet unmounts the volumes of a terminated pod (a finished Job's secrets leave the node's
    // memory) while the pod object stays.
    await this.#volumeManager.unmountPodVolumes(pod.metadata.uid ?? "");
    this.#tokenManager?.deleteServiceAccountToken(pod.metadata.uid ?? "");
    // The status manager's final version (TerminatePod), sent whatever changed.
    if (!this.#stopped) this.statusManager.terminatePod(pod);
    worker.finished = true;
    log.V(2).info("Pod is terminal, its sandbox is stopped", {
      pod: podKey(pod),
      podUID: pod.metadata.uid,
    });
  }

  /**
   * Kubelet's SyncTerminatingPod, shared by terminal pods and teardowns: stop liveness and startup
   * probes, kill what runs and stop the sandbox, stop the remaining probes, check that nothing
   * runs any more, and record the final status (generated as terminal, with the IPs from before
   * the stop). Returns the runtime's view after the kill. Throws when the runtime fails.
   */
  async #syncTerminatingPod(
    worker: PodSyncStatus,
    before: kubecontainer.PodStatus,
    options: { gracePeriodOverrideSeconds?: number; recordStatus: boolean },
  ): Promise<kubecontainer.PodStatus> {
    const pod = worker.pod;
    const runtimeManager = this.#runtimeManager;
    this.probeManager.stopLivenessAndStartup(pod);
    await runtimeManager.killPod(pod, before, {
      gracePeriodOverrideSeconds: options.gracePeriodOverrideSeconds,
    });
    this.probeManager.removePod(pod);
    const after = preserveDataFromBeforeStopping(await runtimeManager.getPodStatus(pod), before);
    const running = after.containerStatuses.filter((c) => c.state === "running");
    if (running.length > 0) {
      throw new Error(
        `detected running containers after a successful KillPod, CRI violation: ${
          running.map((c) => containerIDString(c.id)).join(" ")
        }`,
      );
    }
    if (options.recordStatus) this.#setAPIStatus(worker, after, { podIsTerminal: true });
    worker.terminatedAt = this.clock.now();
    return after;
  }

  // A pod found already on the runtime (a restarted agent adopting it) keeps its start time: the
  // one its sandbox recorded when it was created, else the oldest sandbox's creation; not the
  // moment this agent first saw it.
  #adoptStartTime(
    worker: PodSyncStatus,
    runtimeStatus: kubecontainer.PodStatus,
  ): void {
    let oldest = Infinity;
    for (const s of runtimeStatus.sandboxStatuses) {
      const recorded = Date.parse(s.annotations?.[probeletPodStartTimeAnnotation] ?? "");
      const ms = Number.isNaN(recorded) ? Number(s.createdAt / 1_000_000n) : recorded;
      if (ms > 0 && ms < oldest) oldest = ms;
    }
    if (oldest < Date.parse(worker.startTime)) {
      worker.startTime = rfc3339(oldest);
      log.V(2).info("Adopting pod found on the runtime", {
        pod: podKey(worker.pod),
        podUID: worker.pod.metadata.uid,
        containers: runtimeStatus.containerStatuses.filter((c) => c.state === "running").length,
      });
    }
  }

  /**
   * Kubelet's cleanUpContainersInPod after ContainerDied events: of each container that died, the
   * dead instances beyond the newest `max(maximum-dead-containers-per-container, 1)` are removed
   * through CRI RemoveContainer. Returns the pod status without them.
   */
  async #cleanUpContainersInPod(
    worker: PodSyncStatus,
    runtimeStatus: kubecontainer.PodStatus,
  ): Promise<kubecontainer.PodStatus> {
    const policy = this.#options.gcPolicy ?? defaultGCPolicy;
    const keep = policy.maxPerPodContainer < 0
      ? -1
      : Math.max(policy.maxPerPodContainer, minDeadContainerInPod);
    const removed = new Set<string>();
    for (const id of worker.died) {
      for (const victim of getContainersToDeleteInPod(id, runtimeStatus, keep)) {
        if (removed.has(victim)) continue;
        try {
          await this.#runtimeManager.removeContainer(victim);
          removed.add(victim);
          log.V(4).info("Removed dead container", { pod: podKey(worker.pod), containerID: victim });
        } catch (e) {
          log.error(e, "Failed to remove container", {
            pod: podKey(worker.pod),
            containerID: victim,
          });
        }
      }
    }
    worker.died.clear();
    if (removed.size === 0) return runtimeStatus;
    return {
      ...runtimeStatus,
      containerStatuses: runtimeStatus.containerStatuses.filter((c) => !removed.has(c.id.id)),
    };
  }

  // generateAPIPodStatus + probeManager.UpdatePodStatus + conditions, then statusManager.SetPodStatus.
  // Returns the phase it set.
  #setAPIStatus(
    worker: PodSyncStatus,
    runtimeStatus: kubecontainer.PodStatus,
    options: { podIsTerminal?: boolean } = {},
  ): PodStatus["phase"] {
    const pod = worker.pod;
    const uid = pod.metadata.uid ?? "";
    const oldStatus = this.statusManager.getPodStatus(uid);
    // kubelet's basis: the status manager's status, else the API's (a pod this agent has not
    // reported yet, e.g. after a restart, keeps its restart counts and last terminations).
    const apiStatus = this.podManager.getPodByUID(uid)?.status ?? pod.status;
    const oldPodStatus = oldStatus ?? apiStatus ?? {};
    // kubelet syncs the pod manager's copy, whose status is the API's latest (the pod-level
    // resources and the terminal-phase merge read it); the worker keeps the spec it runs.
    const status = generateAPIPodStatus({ ...pod, status: apiStatus }, runtimeStatus, {
      startFailures: worker.startFailures,
      oldStatus: oldPodStatus,
      hostIPs: this.#hostIPs(),
      startTime: oldStatus?.startTime ?? worker.startTime,
      podIsTerminal: options.podIsTerminal,
      podSyncHandlers: this.#podSyncHandlers,
    });
    this.probeManager.updatePodStatus(pod, status);
    status.qosClass = getPodQOS(pod);
    const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    // Conditions others own (readiness gates) come from the API's copy of the pod.
    const conditions: PodCondition[] = (this.podManager.getPodByUID(uid)?.status?.conditions ?? [])
      .filter((c) => !podConditionByKubelet(c.type));
    conditions.push(
      generatePodReadyToStartContainersCondition(pod, oldPodStatus, runtimeStatus, {
        runtimeHostNetworkOnly: this.#runtimeHostNetworkOnly,
      }),
    );
    conditions.push(generatePodInitializedCondition(pod, oldPodStatus, all, status.phase));
    conditions.push(
      generatePodReadyCondition(pod, oldPodStatus, [...conditions], all, status.phase),
    );
    conditions.push(generateContainersReadyCondition(pod, oldPodStatus, all, status.phase));
    const scheduled: PodCondition = { type: "PodScheduled", status: "True" };
    const generation = calculatePodConditionObservedGeneration(
      oldPodStatus,
      pod.metadata.generation,
      "PodScheduled",
    );
    if (generation !== 0) scheduled.observedGeneration = generation;
    conditions.push(scheduled);
    status.conditions = conditions;
    this.statusManager.setPodStatus(pod, status);
    return status.phase;
  }

  // One consumer per results manager, as the three cases of kubelet's syncLoopIteration.
  async #consume(manager: ResultsManager, type: "liveness" | "readiness" | "startup") {
    const updates = manager.updates();
    for (;;) {
      const next = await this.#stopSignal.race(updates.receive());
      if (!next || next.done || this.#stopped) return;
      this.#handleUpdate(next.value, type);
    }
  }

  // syncLoopIteration's PLEG case: sync the pod a container of which changed.
  async #consumePLEG(pleg: GenericPLEG) {
    const events = pleg.watch();
    for (;;) {
      const next = await this.#stopSignal.race(events.receive());
      if (!next || next.done || this.#stopped) return;
      this.#handlePLEGEvent(next.value);
    }
  }

  #handlePLEGEvent(e: PodLifecycleEvent): void {
    // isSyncPodWorthy: everything but ContainerRemoved.
    if (e.type === "ContainerRemoved") return;
    const worker = this.#podWorkers.getPodSyncStatus(e.id);
    if (!worker) {
      log.V(4).info("SyncLoop (PLEG): pod does not exist, ignore irrelevant event", { event: e });
      return;
    }
    log.V(2).info("SyncLoop (PLEG): event for pod", {
      pod: podKey(worker.pod),
      event: e,
    });
    if (e.type === "ContainerDied") worker.died.add(e.data);
    this.#podWorkers.updatePod({ updateType: "sync", pod: worker.pod });
  }

  #handleUpdate(u: Update, type: "liveness" | "readiness" | "startup"): void {
    let status = "";
    switch (type) {
      case "liveness":
        if (u.result !== Result.Failure) return;
        status = "unhealthy";
        break;
      case "readiness": {
        const ready = u.result === Result.Success;
        this.statusManager.setContainerReadiness(u.podUID, u.containerID, ready);
        status = ready ? "ready" : "";
        break;
      }
      case "startup": {
        const started = u.result === Result.Success;
        this.statusManager.setContainerStartup(u.podUID, u.containerID, started);
        status = started ? "started" : "unhealthy";
        break;
      }
    }
    const pod = this.podManager.getPodByUID(u.podUID);
    if (!pod) {
      log.V(4).info("SyncLoop (probe): ignore irrelevant update", {
        probe: type,
        status,
        podUID: u.podUID,
      });
      return;
    }
    log.V(1).info("SyncLoop (probe)", {
      probe: type,
      status,
      pod: podKey(pod),
      containerID: containerIDString(u.containerID),
    });
    this.syncPodByUID(u.podUID);
  }

  // syncLoop's sync ticker: every second, pods whose work queue entry is due are synced.
  #scheduleSyncTick(): void {
    if (this.#stopped) return;
    this.#syncTimer = this.clock.afterFunc(syncTickerPeriodMs, () => {
      // Whatever one tick throws, the next is armed: a lost tick chain would stop every pod's
      // periodic sync and retry without a word.
      try {
        this.#housekeeping();
      } catch (e) {
        log.error(e, "Housekeeping failed, will retry at the next tick");
      }
      try {
        this.#podWorkers.syncDuePods((pod) => this.#shouldSync(pod));
      } finally {
        this.#scheduleSyncTick();
      }
    });
  }

  // getPodsToSync's second half: a pod not due is synced when a sync-loop handler asks for it
  // (the active-deadline handler once the pod is past its deadline).
  #shouldSync(pod: Pod): boolean {
    return this.#podSyncLoopHandlers.some((h) => h.shouldSync(pod));
  }

  // Kubelet's HandlePodCleanups, reduced: stop probe workers of unknown pods, forget old back-offs;
  // once every source is ready, drop statuses of unknown pods and delete orphaned mirror pods.
  #housekeeping(): void {
    // kubelet's housekeeping ticker fires every housekeepingPeriod (2 s); the 1-s sync tick
    // carries it every other tick.
    if (this.clock.now() - this.#lastHousekeeping >= housekeepingPeriodMs) {
      this.#lastHousekeeping = this.clock.now();
      // Terminating pods keep their readiness workers until they are removed, as in kubelet.
      const desired = new Set(this.#podWorkers.knownPods());
      this.probeManager.cleanupPods(desired);
      this.backoff.gc();
      void this.#cleanupOrphanedPods();
      if (this.#options.kubeClient && this.#sourcesReady()) {
        const { pods, mirrorPods } = this.podManager.getPodsAndMirrorPods();
        const known = new Set([...pods, ...mirrorPods].map((p) => p.metadata.uid ?? ""));
        for (const uid of this.#podWorkers.knownPods()) known.add(uid);
        this.statusManager.removeOrphanedStatuses(known);
        void this.#cleanupOrphanedMirrorPods();
      }
    }
    // kubelet's StartGarbageCollection: every minute, in every mode.
    if (this.clock.now() - this.#lastContainerGC >= containerGCPeriodMs) {
      void this.garbageCollect();
    }
  }

  // Mirror pods whose static pod is gone are deleted (unless that pod is still terminating).
  async #cleanupOrphanedMirrorPods(): Promise<void> {
    for (const fullName of this.podManager.getOrphanedMirrorPodNames()) {
      const terminating = [...this.#podWorkers.podSyncStatuses()].some((w) =>
        w.terminating && getPodFullName(w.pod) === fullName
      );
      if (terminating) continue;
      log.info("Deleting orphaned mirror pod", { podFullName: fullName });
      await this.#mirrorClient?.deleteMirrorPod(fullName).catch((e) =>
        log.error(e, "Failed deleting an orphaned mirror pod", { podFullName: fullName })
      );
    }
  }

  /**
   * One container garbage collection (kubelet's `StartGarbageCollection` loop runs it every
   * minute): dead instances beyond the policy's count and dead sandboxes are removed.
   */
  garbageCollect(): Promise<void> {
    if (this.#containerGCRun) return this.#containerGCRun;
    // The loops collect from run() on; before it there is nothing of this agent's to collect.
    if (!this.#started) return Promise.resolve();
    const gc = this.#containerGC;
    this.#lastContainerGC = this.clock.now();
    this.#containerGCRun = gc.garbageCollect(this.#options.gcPolicy ?? defaultGCPolicy, {
      allSourcesReady: this.#sourcesReady(),
    }).then(() => {}, (e) => log.error(e, "Container garbage collection failed")).finally(() =>
      this.#containerGCRun = undefined
    );
    return this.#containerGCRun;
  }

  /**
   * Kubelet's HandlePodCleanups → killing runtime pods that are not desired: sandboxes made by
   * probelet (its label) whose pod UID is neither desired nor known here are stopped and removed.
   */
  #cleanupOrphanedPods(): Promise<void> {
    if (this.#orphanCleanup) return this.#orphanCleanup;
    // Nothing is an orphan before every source has said what it wants.
    if (!this.#sourcesReady()) return Promise.resolve();
    const runtimeManager = this.#runtimeManager;
    this.#orphanCleanup = (async () => {
      try {
        for (const pod of await runtimeManager.listManagedPods()) {
          const uid = pod.metadata.uid ?? "";
          if (this.#stopped) return;
          if (this.#podWorkers.isKnown(uid) || this.#desired.has(uid)) continue;
          if (this.#finished.has(uid)) {
            if (!this.#finished.get(uid)) this.#finished.set(uid, await this.#stopFinishedPod(uid));
            continue;
          }
          log.info("Cleaning up orphaned pod left on the runtime", {
            pod: podKey(pod),
            podUID: uid,
          });
          try {
            await runtimeManager.removeOrphanedPod(pod);
            await this.#removePodDir(pod);
          } catch (e) {
            log.error(e, "Failed to clean up orphaned pod, will retry", { pod: podKey(pod) });
          }
        }
        await this.#cleanupOrphanedPodDirs();
      } catch (e) {
        log.error(e, "Failed to list runtime pods for cleanup, will retry");
      } finally {
        this.#orphanCleanup = undefined;
      }
    })();
    return this.#orphanCleanup;
  }

  // Kubelet's cleanupOrphanedPodDirs: folders of pods this node no longer has (a pod deleted
  // while the agent was down), volumes unmounted first.
  async #cleanupOrphanedPodDirs(): Promise<void> {
    if (!this.#volumeManager) return;
    const active = new Set([
      ...this.#podWorkers.knownPods(),
      ...this.#desired.keys(),
      ...this.#finished.keys(),
    ]);
    for (
      const uid of await cleanupOrphanedPodDirs(resolve(this.#options.rootDir, "pods"), active)
    ) {
      log.info("Cleaned up orphaned pod dir", { podUID: uid });
    }
  }

  /**
   * A pod terminal in the API whose runtime pod still runs something (it ended while the agent was
   * away, e.g. failed by the pod GC): kill its containers and stop its sandbox, as kubelet's pod
   * worker runs SyncTerminatingPod; the exited remains stay until the pod is deleted. Returns
   * whether nothing of it runs now.
   */
  async #stopFinishedPod(uid: string): Promise<boolean> {
    const pod = this.podManager.getPodByUID(uid);
    const runtimeManager = this.#runtimeManager;
    if (!pod) return false;
    try {
      const status = await runtimeManager.getPodStatus(pod);
      const running = status.containerStatuses.some((c) => c.state === "running") ||
        status.sandboxStatuses.some((s) => s.state === "SANDBOX_READY");
      if (!running) return true;
      log.info("Stopping a pod that is terminal in the API", { pod: podKey(pod), podUID: uid });
      await runtimeManager.killPod(pod, status);
      return true;
    } catch (e) {
      log.error(e, "Failed to stop a terminal pod, will retry", { pod: podKey(pod) });
      return false;
    }
  }

  /**
   * The pod workers' SyncTerminatingPod of a pod being torn down: stop its liveness and startup
   * probes, kill its containers and sandbox with `gracePeriod`, stop the remaining probes, then
   * remove the sandbox, the pod's folder, volumes and tokens (kubelet's SyncTerminatedPod and
   * removal). Throws when the runtime fails; the pod workers retry at the next resync.
   */
  async #syncTerminatingPodAndRemove(worker: PodSyncStatus, gracePeriod: number): Promise<void> {
    const pod = worker.pod;
    const runtimeManager = this.#runtimeManager;
    const before = await runtimeManager.getPodStatus(pod);
    log.V(2).info("Killing pod", { pod: podKey(pod), podUID: pod.metadata.uid, gracePeriod });
    // The final status names how each container ended; the API server needs it only while the
    // agent runs.
    const after = await this.#syncTerminatingPod(worker, before, {
      gracePeriodOverrideSeconds: gracePeriod,
      recordStatus: !this.#stopped && this.#options.kubeClient !== undefined,
    });
    await runtimeManager.removePod(pod, after);
    await this.#removePodDir(pod);
    // kubelet's reconciler unmounts the volumes of a pod gone from the desired state; its
    // tokens go with it.
    await this.#volumeManager.unmountPodVolumes(pod.metadata.uid ?? "");
    this.#tokenManager?.deleteServiceAccountToken(pod.metadata.uid ?? "");
    log.info("Pod terminated and removed", { pod: podKey(pod), podUID: pod.metadata.uid });
  }

  // The pod workers' SyncTerminatedPod: the pod is gone from the runtime (or the agent is
  // shutting down) and from the pod workers; drop every trace of it.
  #syncTerminatedPod(worker: PodSyncStatus): void {
    const pod = worker.pod;
    this.probeManager.removePod(pod);
    const uid = pod.metadata.uid ?? "";
    const known = this.podManager.getPodByUID(uid);
    if (
      !this.#stopped && known?.metadata.deletionTimestamp !== undefined && !isStaticPod(known)
    ) {
      // Gracefully deleted: the final status (terminal phase) goes to the API server, then the
      // status manager deletes the pod; the pod manager forgets it when the source drops it.
      this.statusManager.terminatePod(known);
    } else {
      this.statusManager.deletePodStatus(uid);
      this.podManager.removePod(pod);
    }
    // Re-added (same UID) while it was going down: kubelet's HandlePodCleanups restarts it.
    const again = this.#desired.get(uid);
    if (again && !this.#stopped && !this.#podWorkers.isKnown(uid)) {
      log.V(3).info(
        "Pod will be restarted because it is in the desired set and not known to the pod workers (likely due to UID reuse)",
        { podUID: uid },
      );
      this.#addPod(again);
    }
  }

  /**
   * Whether the PLEG relisted within its threshold (kubelet registers `pleg.Healthy` as the
   * runtime state's "PLEG" health check, which the node's Ready condition reads).
   */
  plegHealthy(): { ok: boolean; message: string } {
    if (!this.#started) return { ok: false, message: "pleg has yet to be successful" };
    return this.#pleg.healthy();
  }

  /**
   * What the secure port's `/exec`, `/attach`, `/portForward` and `/run` call (kubelet's
   * `GetExec`, `GetAttach`, `GetPortForward`, `RunInContainer`, `GetPodByName`); the runtime
   * manager is needed, so it is there once the agent has started.
   */
  get streaming(): StreamingHost | undefined {
    // Not served before run(), as before the loops run the pods are not known.
    if (!this.#started) return undefined;
    const runtimeManager = this.#runtimeManager;
    return newStreamingHost({
      runtime: this.runtime,
      getPods: () => runtimeManager.getPods(),
      podManager: this.podManager,
    }, (namespace, name) => this.podManager.getPodByName(namespace, name));
  }

  /**
   * Pods with their latest status, in the order they were added; then the pods admission refused
   * (Failed, with the reason), as kubelet's pod manager lists them too. Copies, unless `shared`:
   * then the kubelet's own objects, for a caller that only reads them at once (the live view,
   * every 500 ms, would otherwise deep-copy every pod and status).
   */
  pods(options: { shared?: boolean } = {}): PodWithStatus[] {
    const { shared = false } = options;
    const copy = <T>(v: T): T => shared ? v : structuredClone(v);
    const out: PodWithStatus[] = [];
    for (const worker of this.#podWorkers.podSyncStatuses()) {
      const uid = worker.pod.metadata.uid ?? "";
      const status = this.statusManager.getPodStatus(uid, { shared }) ??
        { phase: "Pending", startTime: worker.startTime };
      out.push({ ...copy(worker.pod), status });
    }
    for (const [uid, pod] of this.#rejected) {
      const status = this.statusManager.getPodStatus(uid, { shared });
      if (this.#podWorkers.isKnown(uid) || !status) continue;
      out.push({ ...copy(pod), status });
    }
    return out;
  }

  /** The pod with this name (and namespace, default `default`), if running here. */
  getPod(name: string, namespace = "default"): PodWithStatus | undefined {
    const matches = [...this.#podWorkers.podSyncStatuses()].filter((w) =>
      w.pod.metadata.name === name && (w.pod.metadata.namespace ?? "default") === namespace
    );
    // A replaced manifest briefly has two pods of one name: prefer the one not going away.
    const worker = matches.find((w) => !w.terminating) ?? matches[0];
    if (!worker) return undefined;
    const uid = worker.pod.metadata.uid ?? "";
    const status = this.statusManager.getPodStatus(uid) ??
      { phase: "Pending", startTime: worker.startTime };
    return { ...structuredClone(worker.pod), status };
  }

  /** Whether `run()` ran and `stop()` has not. */
  get running(): boolean {
    return this.#started && !this.#stopped;
  }

  /**
   * Stops the agent: the manifest watch, the PLEG, the sync loop and every probe worker. By
   * default every pod is torn down first (containers stopped, sandboxes removed). With
   * `leavePodsRunning`, as kubelet does, pods are left running on the runtime for the next start to
   * adopt: syncs in progress finish, nothing is stopped or removed.
   */
  async stop(
    options: { leavePodsRunning?: boolean; gracePeriodOverrideSeconds?: number } = {},
  ): Promise<void> {
    if (this.#stopped || this.#shuttingDown) return;
    // From here no sync starts: a container restarted now (a liveness kill, a crash) would only
    // be stopped again, and its grace period would come on top of the others'.
    // Like the node shutdown manager: no pod gets longer than the shutdown grace period.
    this.#podWorkers.shutdown(options.gracePeriodOverrideSeconds);
    log.info("Shutting down probelet node agent", {
      pods: this.#podWorkers.size,
      leavePodsRunning: options.leavePodsRunning === true,
    });
    // Nothing reaches the API server from here on: pods stopped with the agent are not deleted
    // or failed there.
    await this.#apiSource?.stop();
    this.#serviceReflectorStop.abort();
    await this.#serviceReflectorRun;
    await this.statusManager.stop();
    await this.#watcher?.stop();
    this.#syncTimer?.stop();
    await this.#pleg?.stop();
    await this.#containerLogManager?.stop();
    // Syncs in progress finish; then either every pod is torn down or all are left running.
    await this.#podWorkers.stop({ leavePodsRunning: options.leavePodsRunning });
    await this.#orphanCleanup;
    await this.#containerGCRun;
    this.probeManager.cleanupPods(new Set());
    this.#stopSignal.stop();
    this.#podConfig.close();
    await Promise.all([...this.#consumers, this.#podUpdatesLoop]);
  }
}

/**
 * Builds the kubelet and every part of it (kubelet's NewMainKubelet): the runtime is asked for its
 * name unless `options.runtimeName` gives it. `run()` then starts the loops.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const kubelet = await newMainKubelet({ runtime, nodeName: "laptop", rootDir: ".run/probelet" });
 * await kubelet.run();
 * await kubelet.stop();
 * ```
 */
export async function newMainKubelet(options: KubeletOptions): Promise<Kubelet> {
  const runtimeName = options.runtimeName ?? (await options.runtime.version()).runtimeName;
  return new Kubelet({ ...options, runtimeName });
}

// The volume host and its managers: config maps, secrets and tokens through the API server when
// there is one (an HTTP clientset's REST client; the node authorizer limits them to pods bound
// here).
function newVolumeManagers(
  options: KubeletOptions,
  made: {
    clock: Clock;
    recorder: EventRecorder;
    getNodeAllocatable: () => Record<string, string>;
  },
): {
  volumeManager: VolumeManager;
  tokenManager?: TokenManager;
  configMapManager?: ConfigMapManager;
  secretManager?: SecretManager;
} {
  const rest = (options.kubeClient as { rest?: JSONRequester } | undefined)?.rest;
  const noAPI = (what: string) => () =>
    Promise.reject(new Error(`${what} cannot be read: this node has no API server`));
  const tokens = rest
    ? new TokenManager({ getToken: tokenRequester(rest), clock: made.clock })
    : undefined;
  const configMaps = rest ? newSimpleConfigMapManager(rest) : undefined;
  const secrets = rest ? newSimpleSecretManager(rest) : undefined;
  const host: VolumeHost = {
    podsDir: resolve(options.rootDir, "pods"),
    getConfigMap: configMaps
      ? (ns, name) => configMaps.getConfigMap(ns, name)
      : noAPI("config maps"),
    getSecret: secrets ? (ns, name) => secrets.getSecret(ns, name) : noAPI("secrets"),
    getServiceAccountToken: tokens
      ? (ns, name, tr) => tokens.getServiceAccountToken(ns, name, tr)
      : noAPI("service account tokens"),
    getNodeAllocatable: made.getNodeAllocatable,
  };
  return {
    volumeManager: new VolumeManager({ host, recorder: made.recorder }),
    tokenManager: tokens,
    configMapManager: configMaps,
    secretManager: secrets,
  };
}

export { ContainersReady, PodReady };

// Kubelet's preserveDataFromBeforeStopping: a stopped sandbox reports no IP, yet the pod's final
// status keeps the IPs it had, so the API never sees podIP vanish when a pod ends.
function preserveDataFromBeforeStopping(
  stopped: kubecontainer.PodStatus,
  before: kubecontainer.PodStatus,
): kubecontainer.PodStatus {
  return { ...stopped, ips: before.ips };
}
