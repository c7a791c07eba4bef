/**
 * The API pod status the agent reports, generated from the runtime's view of a pod: container
 * states, restart counts, the last termination, CrashLoopBackOff waiting reasons, the pod phase
 * (kubelet's `getPhase` rules) and the pod IP; the pod's image pull secrets; what a container
 * gets besides its spec: the managed `/etc/hosts`, the pod's host name, the folder of its
 * termination message file; and each container's environment (env, envFrom, the downward API,
 * service links, `$(VAR)` expansion).
 * Mirrors generateAPIPodStatus / convertToAPIContainerStatuses / getPhase / getPullSecretsForPod,
 * GenerateRunContainerOptions / makeHostsMount / ensureHostsFile / GeneratePodHostNameAndDomain,
 * makeEnvironmentVariables / getServiceEnvVarMap / podFieldSelectorRuntimeValue /
 * containerResourceRuntimeValue / sortPodIPs in kubelet's pkg/kubelet/kubelet_pods.go.
 * @module
 */
import { join } from "node:path";
import type {
  ConfigMap,
  Container,
  ContainerState,
  ContainerStatus,
  EnvVar,
  HostAlias,
  ObjectFieldSelector,
  Pod,
  PodPhase,
  PodStatus,
  ResourceList,
  Secret as APISecret,
  Service,
  VolumeMountStatus,
} from "../api/core/v1/mod.ts";
import { isServiceIPSet } from "../api/core/v1/helper.ts";
import { isNotFound } from "../client/errors.ts";
import { decodeBase64 } from "../util/base64.ts";
import { extractFieldPathAsString, splitMaybeSubscriptedPath } from "../util/fieldpath.ts";
import { expand, mappingFuncFor } from "../third_party/forked/golang/expansion/expand.ts";
import type { ConfigMapManager } from "./configmap/configmap_manager.ts";
import type { SecretManager } from "./secret/secret_manager.ts";
import { fromServices } from "./envvars/envvars.ts";
import {
  containerResourceRuntimeValue,
  defaultPodLimitsForDownwardAPI,
} from "./kubelet_resources.ts";
import type { Mount } from "../cri_client/api.ts";
import * as log from "../util/log.ts";
import { isDNS1123Label } from "../util/validation/validation.ts";
import { metav1Time } from "../api/meta/v1/mod.ts";
import { containerIDString } from "./container/container_id.ts";
import { isRestartableInitContainer } from "./container/podutil.ts";
import type { PodStatus as RuntimePodStatus, RuntimeContainerStatus } from "./container/runtime.ts";
import { podKey, shouldContainerBeRestarted } from "./container/helpers.ts";
import type { RunContainerOptions } from "./kuberuntime/kuberuntime_container.ts";
import { isStaticPod } from "./types/pod_update.ts";
import type { Secret } from "../credentialprovider/keyring.ts";
import { getPodReference } from "./container/ref.ts";
import type { EventRecorder } from "./events/mod.ts";
import type { PodSyncHandler } from "./lifecycle/interfaces.ts";

/**
 * The secrets named by the pod's `imagePullSecrets` that could be read, in order (kubelet's
 * `getPullSecretsForPod`). One that cannot be read is logged and skipped, and a
 * `FailedToRetrieveImagePullSecret` event names them all: the pull is tried without them.
 */
export async function getPullSecretsForPod(
  pod: Pod,
  options: {
    getSecret?: (namespace: string, name: string) => Promise<Secret>;
    recorder: EventRecorder;
  },
): Promise<Secret[]> {
  const pullSecrets: Secret[] = [];
  const failed: string[] = [];
  const namespace = pod.metadata.namespace ?? "";
  for (const ref of pod.spec.imagePullSecrets ?? []) {
    if (typeof ref.name !== "string" || ref.name === "") continue;
    try {
      if (!options.getSecret) throw new Error("no API server to read secrets from");
      pullSecrets.push(await options.getSecret(namespace, ref.name));
    } catch (e) {
      log.info("Unable to retrieve pull secret, the image pull may not succeed.", {
        pod: `${namespace}/${pod.metadata.name ?? ""}`,
        secret: `${namespace}/${ref.name}`,
        err: e instanceof Error ? e.message : String(e),
      });
      failed.push(ref.name);
    }
  }
  if (failed.length > 0) {
    options.recorder.event(getPodReference(pod), {
      type: "Warning",
      reason: "FailedToRetrieveImagePullSecret",
      message: `Unable to retrieve some image pull secrets (${
        failed.join(", ")
      }); attempting to pull the image may not succeed.`,
    });
  }
  return pullSecrets;
}

/** Why a container could not be started in the last sync: kubelet's reason cache entry. */
export interface StartFailure {
  /** The waiting reason, e.g. `CrashLoopBackOff`. */
  reason: string;
  /** e.g. `back-off 10s restarting failed container=app pod=web_default(uid)`. */
  message: string;
}

/** Waiting reason of a container that has not been created yet. */
export const ContainerCreating = "ContainerCreating";
/** Waiting reason of a container not created yet in a pod that has init containers. */
export const PodInitializing = "PodInitializing";
/** Waiting reason of a container waiting out its restart back-off. */
export const CrashLoopBackOff = "CrashLoopBackOff";

/** Formats epoch milliseconds as the API's RFC 3339 time with whole seconds (`metav1.Time`). */
export const rfc3339: (ms: number) => string = metav1Time;

/**
 * The API state of one runtime container instance (kubelet's `convertContainerStatus`).
 */
function convertContainerState(cs: RuntimeContainerStatus): ContainerState {
  switch (cs.state) {
    case "running":
      return { running: { startedAt: rfc3339(cs.startedAt) } };
    case "created":
      return { waiting: {} };
    case "exited":
    case "unknown": {
      const terminated: NonNullable<ContainerState["terminated"]> = {
        exitCode: cs.exitCode,
        reason: cs.reason || (cs.state === "unknown" ? "Unknown" : undefined),
        startedAt: cs.startedAt ? rfc3339(cs.startedAt) : undefined,
        finishedAt: cs.finishedAt ? rfc3339(cs.finishedAt) : undefined,
        containerID: containerIDString(cs.id),
      };
      if (cs.message) terminated.message = cs.message;
      return { terminated };
    }
  }
}

/**
 * Container statuses in spec order: the newest instance gives the state, the one before it the
 * last termination; containers never created wait with `ContainerCreating` (`PodInitializing` in a pod with init
 * containers); containers that will
 * be restarted and could not be started in the last sync wait with the start failure's reason
 * (`CrashLoopBackOff`). `ready` is false here: the prober manager sets it.
 */
export function convertToAPIContainerStatuses(
  pod: Pod,
  podStatus: RuntimePodStatus,
  containers: Container[],
  options: {
    isInit: boolean;
    /** The pod has init containers: the never-created wait as `PodInitializing`. */
    hasInitContainers?: boolean;
    startFailures: Map<string, StartFailure>;
    previous?: ContainerStatus[];
  },
): ContainerStatus[] {
  const statuses = new Map<string, ContainerStatus>();
  const defaultReason = options.hasInitContainers ? PodInitializing : ContainerCreating;
  for (const container of containers) {
    const prev = options.previous?.find((s) => s.name === container.name);
    statuses.set(container.name, {
      name: container.name,
      image: container.image ?? "",
      imageID: "",
      ready: false,
      restartCount: prev?.restartCount ?? 0,
      state: { waiting: { reason: defaultReason } },
      ...(prev?.lastState ? { lastState: prev.lastState } : {}),
    });
  }

  // Newest first: the first instance per name is the current one, the second the previous one.
  const seen = new Map<string, number>();
  for (const cs of podStatus.containerStatuses) {
    const status = statuses.get(cs.name);
    if (!status) continue;
    const count = seen.get(cs.name) ?? 0;
    seen.set(cs.name, count + 1);
    if (count === 0) {
      status.state = convertContainerState(cs);
      status.containerID = containerIDString(cs.id);
      status.image = cs.image || status.image;
      status.imageID = cs.imageID;
      status.restartCount = cs.restartCount;
      delete status.lastState;
    } else if (count === 1 && (cs.state === "exited" || cs.state === "unknown")) {
      status.lastState = convertContainerState(cs);
    }
  }

  for (const container of containers) {
    if (options.isInit && !isRestartableInitContainer(container)) {
      // A regular init container that succeeded is not restarted.
      const current = statuses.get(container.name)!;
      if (current.state?.terminated?.exitCode === 0) continue;
    }
    if (!shouldContainerBeRestarted(container, pod, podStatus)) continue;
    const failure = options.startFailures.get(container.name);
    if (!failure) continue;
    const status = statuses.get(container.name)!;
    if (status.state?.terminated) status.lastState = status.state;
    status.state = { waiting: { reason: failure.reason, message: failure.message } };
  }
  return containers.map((c) => statuses.get(c.name)!);
}

/**
 * The pod phase from its container statuses, kubelet's `getPhase`: Pending while init containers
 * run or containers wait, Running once all started and one runs, Succeeded/Failed when all
 * stopped and the restart policy will not bring them back.
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * declare const statuses: Parameters<typeof getPhase>[1];
 * getPhase(pod, statuses, { podIsTerminal: false, podHasInitialized: true });
 * ```
 */
export function getPhase(
  pod: Pod,
  info: ContainerStatus[],
  options: { podIsTerminal: boolean; podHasInitialized: boolean },
): PodPhase {
  const spec = pod.spec;
  const policy = spec.restartPolicy ?? "Always";
  const find = (name: string) => info.find((s) => s.name === name);
  let pendingRestartableInit = 0;
  let pendingRegularInit = 0;
  let failedInitialization = 0;

  for (const container of spec.initContainers ?? []) {
    if (isRestartableInitContainer(container)) continue;
    const cs = find(container.name);
    if (!cs) {
      pendingRegularInit++;
      continue;
    }
    if (cs.state?.running) pendingRegularInit++;
    else if (cs.state?.terminated) {
      if (cs.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (cs.state?.waiting) {
      if (cs.lastState?.terminated) {
        if (cs.lastState.terminated.exitCode !== 0) failedInitialization++;
      } else pendingRegularInit++;
    } else pendingRegularInit++;
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;

  for (const container of spec.initContainers ?? []) {
    if (!isRestartableInitContainer(container)) continue;
    const cs = find(container.name);
    if (!cs) {
      unknown++;
      continue;
    }
    if (cs.state?.running) {
      if (!cs.started) pendingRestartableInit++;
      running++;
    }
  }

  for (const container of spec.containers) {
    const cs = find(container.name);
    if (!cs) {
      unknown++;
      continue;
    }
    if (cs.state?.running) running++;
    else if (cs.state?.terminated) {
      stopped++;
      if (cs.state.terminated.exitCode === 0) succeeded++;
    } else if (cs.state?.waiting) {
      if (cs.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0 && policy === "Never") return "Failed";

  if (
    pendingRegularInit > 0 || (pendingRestartableInit > 0 && !options.podHasInitialized) ||
    waiting > 0
  ) {
    return "Pending";
  }
  if (running > 0 && unknown === 0) return "Running";
  if (running === 0 && stopped > 0 && unknown === 0) {
    // A pod being terminated (SyncTerminatingPod's final status) will not be restarted whatever
    // its policy; static pods keep the policy's answer (kubelet's TODO #116484).
    if (options.podIsTerminal && !isStaticPod(pod)) {
      return stopped === succeeded ? "Succeeded" : "Failed";
    }
    if (policy === "Always") return "Running";
    if (stopped === succeeded) return "Succeeded";
    if (policy === "Never") return "Failed";
    return "Running";
  }
  return "Pending";
}

/**
 * The volume mounts a container's status reports (kubelet's convertToAPIContainerStatuses with
 * RecursiveReadOnlyMounts, GA and locked on in v1.36): name, path and `readOnly` from the spec
 * (the CRI does not know volume names), and on a read-only mount `recursiveReadOnly`: always
 * `Disabled` here, as the runtime reports no handler supporting recursive read-only mounts
 * (containerd 1.6), so `IfPossible` resolves to non-recursive and `Enabled` is refused.
 * Undefined when the container mounts nothing.
 *
 * @example
 * ```ts
 * convertVolumeMountStatuses({ name: "app", volumeMounts: [{ name: "cfg", mountPath: "/etc/cfg", readOnly: true }] });
 * // [{ name: "cfg", mountPath: "/etc/cfg", readOnly: true, recursiveReadOnly: "Disabled" }]
 * ```
 */
export function convertVolumeMountStatuses(
  container: Container,
): VolumeMountStatus[] | undefined {
  const mounts = container.volumeMounts ?? [];
  if (mounts.length === 0) return undefined;
  return mounts.map((m) => {
    const status: VolumeMountStatus = { name: m.name, mountPath: m.mountPath };
    if (m.readOnly) {
      status.readOnly = true;
      status.recursiveReadOnly = "Disabled";
    }
    return status;
  });
}

/**
 * Builds the API status of a pod from the runtime's view (conditions and readiness are added
 * afterwards by the prober manager and the status generators).
 */
export function generateAPIPodStatus(
  pod: Pod,
  podStatus: RuntimePodStatus,
  options: {
    startFailures: Map<string, StartFailure>;
    oldStatus?: PodStatus;
    /** The node's IPs (getHostIPsAnyWay): the first is `hostIP`; host-network pods use them all. */
    hostIPs: string[];
    startTime: string;
    /** The pod is being terminated: its stopped containers will not run again. */
    podIsTerminal?: boolean;
    /**
     * Internal modules that may ask for the pod to be failed (kubelet's PodSyncHandlers: the
     * active-deadline handler); the first that does sets the phase, reason and message.
     */
    podSyncHandlers?: readonly PodSyncHandler[];
  },
): PodStatus {
  const hasInitContainers = (pod.spec.initContainers ?? []).length > 0;
  const initContainerStatuses = convertToAPIContainerStatuses(
    pod,
    podStatus,
    pod.spec.initContainers ?? [],
    {
      isInit: true,
      hasInitContainers,
      startFailures: options.startFailures,
      previous: options.oldStatus?.initContainerStatuses,
    },
  );
  const containerStatuses = convertToAPIContainerStatuses(pod, podStatus, pod.spec.containers, {
    isInit: false,
    hasInitContainers,
    startFailures: options.startFailures,
    previous: options.oldStatus?.containerStatuses,
  });
  // Keep `started` known from the previous status until the prober manager recomputes it.
  for (const list of [initContainerStatuses, containerStatuses]) {
    for (const s of list) {
      const prev = [
        ...(options.oldStatus?.initContainerStatuses ?? []),
        ...(options.oldStatus?.containerStatuses ?? []),
      ].find((p) => p.name === s.name && p.containerID === s.containerID);
      if (prev?.started !== undefined) s.started = prev.started;
    }
  }
  for (
    const [specs, statuses] of [
      [pod.spec.initContainers ?? [], initContainerStatuses],
      [pod.spec.containers, containerStatuses],
    ] as const
  ) {
    for (const s of statuses) {
      const container = specs.find((c) => c.name === s.name);
      const mounts = container && convertVolumeMountStatuses(container);
      if (mounts) s.volumeMounts = mounts;
    }
  }
  const podHasInitialized = pod.spec.containers.some((c) => {
    const cs = podStatus.containerStatuses.find((s) => s.name === c.name);
    return cs !== undefined && (cs.state === "created" || cs.state === "running");
  });
  const all = [...initContainerStatuses, ...containerStatuses];
  let phase = getPhase(pod, all, {
    podIsTerminal: options.podIsTerminal ?? false,
    podHasInitialized,
  });
  // A terminal phase is never undone: the status manager's, then the API's (kubelet's three-way
  // merge after getPhase).
  if (phase !== "Failed" && phase !== "Succeeded") {
    const old = options.oldStatus?.phase;
    if (old === "Failed" || old === "Succeeded") phase = old;
    else if (pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded") {
      phase = pod.status.phase;
    }
  }
  // The reason and message go with the phase: kept while it is unchanged.
  const oldPodStatus = options.oldStatus ?? pod.status ?? {};
  let reason: string | undefined;
  let message: string | undefined;
  if (phase === oldPodStatus.phase) {
    reason = oldPodStatus.reason || pod.status?.reason;
    message = oldPodStatus.message || pod.status?.message;
  }
  // An internal module that requested the pod be failed overrides the phase, reason and message.
  for (const handler of options.podSyncHandlers ?? []) {
    const result = handler.shouldEvict(pod);
    if (result.evict) {
      phase = "Failed";
      reason = result.reason;
      message = result.message;
      break;
    }
  }
  // Pods are not allowed to leave the terminal phase the API server shows.
  const apiPhase = pod.status?.phase;
  if ((apiPhase === "Failed" || apiPhase === "Succeeded") && phase !== apiPhase) {
    log.error(undefined, "Pod attempted illegal phase transition", {
      pod: podKey(pod),
      originalStatusPhase: apiPhase,
      apiStatusPhase: phase,
    });
    phase = apiPhase;
  }
  const podIPs = pod.spec.hostNetwork ? options.hostIPs : podStatus.ips;
  const status: PodStatus = {
    phase,
    hostIP: options.hostIPs[0],
    hostIPs: options.hostIPs.map((ip) => ({ ip })),
    startTime: options.startTime,
    containerStatuses,
  };
  if (reason) status.reason = reason;
  if (message) status.message = message;
  if (podIPs.length > 0) {
    status.podIP = podIPs[0];
    status.podIPs = podIPs.map((ip) => ({ ip }));
  }
  if ((pod.spec.initContainers ?? []).length > 0) {
    status.initContainerStatuses = initContainerStatuses;
  }
  return status;
}

/**
 * The runtime ID of the container whose log `kubectl logs` reads (kubelet's
 * `validateContainerLogStatus`): the running one, the last terminated one for `previous`, or the
 * terminated one; otherwise kubelet's error text (waiting to start, not available, terminated).
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * validateContainerLogStatus("web", pod.status!, "app", false); // "containerd://abc..."
 * ```
 */
export function validateContainerLogStatus(
  podName: string,
  podStatus: PodStatus,
  containerName: string,
  previous: boolean,
): string {
  const cStatus = [
    ...(podStatus.containerStatuses ?? []),
    ...(podStatus.initContainerStatuses ?? []),
  ].find((s) => s.name === containerName);
  if (!cStatus) {
    throw new Error(`container "${containerName}" in pod "${podName}" is not available`);
  }
  const last = cStatus.lastState?.terminated;
  const { waiting, running, terminated } = cStatus.state ?? {};
  let id: string;
  if (previous) {
    if (!last?.containerID) {
      throw new Error(
        `previous terminated container "${containerName}" in pod "${podName}" not found`,
      );
    }
    id = last.containerID;
  } else if (running) {
    id = cStatus.containerID ?? "";
  } else if (terminated) {
    // When the next container did not start, the terminated state has no ID: the last one's log.
    if (terminated.containerID) id = terminated.containerID;
    else if (last?.containerID) id = last.containerID;
    else throw new Error(`container "${containerName}" in pod "${podName}" is terminated`);
  } else if (last) {
    if (!last.containerID) {
      throw new Error(`container "${containerName}" in pod "${podName}" is terminated`);
    }
    id = last.containerID;
  } else if (waiting) {
    const why = waiting.reason === "ErrImagePull"
      ? "image can't be pulled"
      : waiting.reason === "ImagePullBackOff"
      ? "trying and failing to pull image"
      : waiting.reason ?? "";
    throw new Error(`container "${containerName}" in pod "${podName}" is waiting to start: ${why}`);
  } else {
    throw new Error(
      `container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`,
    );
  }
  const sep = id.indexOf("://");
  if (sep <= 0 || id.slice(sep + 3) === "") {
    throw new Error(`unable to parse container id "${id}": invalid container ID: "${id}"`);
  }
  return id;
}

/** The services kubelet knows (an informer over all namespaces; kubelet's `serviceLister`). */
export interface ServiceLister {
  /** Every service in the cache. */
  list(): Service[];
  /** True once the first LIST filled the cache (kubelet's `serviceHasSynced`). */
  hasSynced(): boolean;
}

/**
 * What building a container's environment reads besides the pod: kubelet's managers and node.
 * Without `configMapManager`/`secretManager` (no API server: kubelet's nil `kubeClient`), a
 * reference to one fails; without `serviceLister` there are no service variables.
 */
export interface EnvironmentSources {
  configMapManager?: ConfigMapManager;
  secretManager?: SecretManager;
  serviceLister?: ServiceLister;
  /** The node's IPs, the first the primary (kubelet's `getHostIPsAnyWay`). */
  getHostIPs(): string[] | Promise<string[]>;
  /** The node's allocatable resources (kubelet's `getNodeAnyWay().Status.Allocatable`). */
  getNodeAllocatable(): ResourceList | Promise<ResourceList>;
}

// The services whose variables every pod gets, from the default namespace.
const masterServices = new Set(["kubernetes"]);

/**
 * The service variables a pod in namespace `ns` sees (kubelet's `getServiceEnvVarMap`): those of
 * the `kubernetes` service in `default` always, those of the services in `ns` when
 * `enableServiceLinks`; services without a cluster IP are skipped.
 *
 * @example
 * ```ts
 * declare const lister: Parameters<typeof getServiceEnvVarMap>[2];
 * getServiceEnvVarMap("default", true, lister).get("KUBERNETES_SERVICE_HOST"); // "10.0.0.1"
 * ```
 */
export function getServiceEnvVarMap(
  ns: string,
  enableServiceLinks: boolean,
  serviceLister: ServiceLister | undefined,
): Map<string, string> {
  const m = new Map<string, string>();
  // Kubelets without an API server set no service variables.
  if (!serviceLister) return m;
  let services: Service[];
  try {
    services = serviceLister.list();
  } catch {
    throw new Error("failed to list services when setting up env vars");
  }
  const serviceMap = new Map<string, Service>();
  for (const service of services) {
    if (!isServiceIPSet(service)) continue;
    const name = service.metadata.name ?? "";
    if (service.metadata.namespace === "default" && masterServices.has(name)) {
      if (!serviceMap.has(name)) serviceMap.set(name, service);
    } else if (service.metadata.namespace === ns && enableServiceLinks) {
      serviceMap.set(name, service);
    }
  }
  for (const e of fromServices([...serviceMap.values()])) m.set(e.name, e.value ?? "");
  return m;
}

/** Where the pod's IPs come from, for `status.podIP(s)`. */
export interface PodIPs {
  /** The sandbox's primary IP ("" before it has one). */
  podIP: string;
  /** All of the sandbox's IPs. */
  podIPs: string[];
}

/**
 * The environment of `container` (kubelet's `makeEnvironmentVariables`): `envFrom` first (config
 * maps and secrets, with their prefix), then `env` in order, each value with `$(VAR)` expanded
 * against the variables before it and the service variables, or taken from its `valueFrom`
 * source; then the service variables not already set. A missing config map, secret or key that
 * is not `optional` throws kubelet's message (the container's `CreateContainerConfigError`).
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * declare const sources: Parameters<typeof makeEnvironmentVariables>[3];
 * await makeEnvironmentVariables(pod, pod.spec.containers[0], { podIP: "10.1.0.5", podIPs: ["10.1.0.5"] }, sources);
 * // [{ name: "POD_IP", value: "10.1.0.5" }, { name: "KUBERNETES_SERVICE_HOST", value: "10.0.0.1" }, ...]
 * ```
 */
export async function makeEnvironmentVariables(
  pod: Pod,
  container: Container,
  ips: PodIPs,
  sources: EnvironmentSources,
): Promise<EnvVar[]> {
  // The API server and kubelet's file source both default it to true (SetDefaults_PodSpec);
  // probelet's static pods are not defaulted, so an absent field reads as that default here.
  if (pod.spec.enableServiceLinks === null) {
    throw new Error("nil pod.spec.enableServiceLinks encountered, cannot construct envvars");
  }
  const enableServiceLinks = pod.spec.enableServiceLinks ?? true;
  // A restarted kubelet may read pods before services: wait for one LIST, so that
  // KUBERNETES_SERVICE_HOST (read by in-cluster clients) is not missed. Static pods do not wait.
  if (!isStaticPod(pod) && sources.serviceLister && !sources.serviceLister.hasSynced()) {
    throw new Error("services have not yet been read at least once, cannot construct envvars");
  }
  const serviceEnv = getServiceEnvVarMap(
    pod.metadata.namespace ?? "",
    enableServiceLinks,
    sources.serviceLister,
  );
  const namespace = pod.metadata.namespace ?? "";
  const configMaps = new Map<string, ConfigMap>();
  const secrets = new Map<string, APISecret>();
  const tmpEnv = new Map<string, string>();

  // Read once per container; undefined when optional and absent.
  const getConfigMap = async (name: string, optional: boolean) => {
    const known = configMaps.get(name);
    if (known) return known;
    if (!sources.configMapManager) {
      throw new Error(`couldn't get configMap ${namespace}/${name}, no kubeClient defined`);
    }
    try {
      const configMap = await sources.configMapManager.getConfigMap(namespace, name);
      configMaps.set(name, configMap);
      return configMap;
    } catch (e) {
      if (isNotFound(e) && optional) return undefined;
      throw e;
    }
  };
  const getSecret = async (name: string, optional: boolean) => {
    const known = secrets.get(name);
    if (known) return known;
    if (!sources.secretManager) {
      throw new Error(`couldn't get secret ${namespace}/${name}, no kubeClient defined`);
    }
    try {
      const secret = await sources.secretManager.getSecret(namespace, name);
      secrets.set(name, secret);
      return secret;
    } catch (e) {
      if (isNotFound(e) && optional) return undefined;
      throw e;
    }
  };

  // env replaces envFrom: envFrom first. Keys are taken as they are (kubelet no longer checks
  // them: any printable name is valid since RelaxedEnvironmentVariableValidation).
  for (const envFrom of container.envFrom ?? []) {
    const prefix = envFrom.prefix ?? "";
    if (envFrom.configMapRef) {
      const ref = envFrom.configMapRef;
      const configMap = await getConfigMap(ref.name ?? "", ref.optional === true);
      if (!configMap) continue;
      for (const [k, v] of Object.entries(configMap.data ?? {})) tmpEnv.set(prefix + k, v);
    } else if (envFrom.secretRef) {
      const ref = envFrom.secretRef;
      const secret = await getSecret(ref.name ?? "", ref.optional === true);
      if (!secret) continue;
      for (const [k, v] of Object.entries(secret.data ?? {})) {
        tmpEnv.set(prefix + k, bytesToString(v));
      }
    }
  }

  // Each value: `value` expanded against the variables so far and the services', else its
  // source; the container's variables in declared order.
  const mapping = mappingFuncFor(tmpEnv, serviceEnv);
  for (const envVar of container.env ?? []) {
    let runtimeVal = envVar.value ?? "";
    if (runtimeVal !== "") {
      runtimeVal = expand(runtimeVal, mapping);
    } else if (envVar.valueFrom) {
      const from = envVar.valueFrom;
      if (from.fieldRef) {
        runtimeVal = await podFieldSelectorRuntimeValue(from.fieldRef, pod, ips, sources);
      } else if (from.resourceFieldRef) {
        const defaulted = defaultPodLimitsForDownwardAPI(
          pod,
          container,
          await sources.getNodeAllocatable(),
        );
        runtimeVal = containerResourceRuntimeValue(
          from.resourceFieldRef,
          defaulted.pod,
          defaulted.container,
        );
      } else if (from.configMapKeyRef) {
        const { name = "", key, optional = false } = from.configMapKeyRef;
        const configMap = await getConfigMap(name, optional);
        if (!configMap) continue;
        const value = Object.hasOwn(configMap.data ?? {}, key) ? configMap.data![key] : undefined;
        if (value === undefined) {
          if (optional) continue;
          throw new Error(`couldn't find key ${key} in ConfigMap ${namespace}/${name}`);
        }
        runtimeVal = value;
      } else if (from.secretKeyRef) {
        const { name = "", key, optional = false } = from.secretKeyRef;
        const secret = await getSecret(name, optional);
        if (!secret) continue;
        const value = Object.hasOwn(secret.data ?? {}, key) ? secret.data![key] : undefined;
        if (value === undefined) {
          if (optional) continue;
          throw new Error(`couldn't find key ${key} in Secret ${namespace}/${name}`);
        }
        runtimeVal = bytesToString(value);
      }
      // fileKeyRef (the EnvFiles feature) is refused at admission: no value here.
    }
    tmpEnv.set(envVar.name, runtimeVal);
  }

  // Go appends from maps (in no order); here the order is envFrom, env, then services.
  const result: EnvVar[] = [];
  for (const [name, value] of tmpEnv) result.push({ name, value });
  for (const [name, value] of serviceEnv) {
    if (!tmpEnv.has(name)) result.push({ name, value });
  }
  return result;
}

// A secret's value as Go's string([]byte) would pass it on (invalid UTF-8 replaced here).
function bytesToString(base64: string): string {
  return new TextDecoder().decode(decodeBase64(base64));
}

/**
 * The value of a `fieldRef` (kubelet's `podFieldSelectorRuntimeValue`): `spec.nodeName`,
 * `spec.serviceAccountName`, `status.hostIP(s)`, `status.podIP(s)` (comma-separated, the node's
 * IP family first), else the pod's metadata through the downward API paths.
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * declare const sources: Parameters<typeof podFieldSelectorRuntimeValue>[3];
 * await podFieldSelectorRuntimeValue({ fieldPath: "status.podIPs" }, pod, { podIP: "10.1.0.5", podIPs: ["10.1.0.5", "fd00::5"] }, sources);
 * // "10.1.0.5,fd00::5"
 * ```
 */
export async function podFieldSelectorRuntimeValue(
  fs: ObjectFieldSelector,
  pod: Pod,
  ips: PodIPs,
  sources: Pick<EnvironmentSources, "getHostIPs">,
): Promise<string> {
  const internalFieldPath = convertDownwardAPIFieldLabel(fs.apiVersion || "v1", fs.fieldPath);
  let podIP = ips.podIP;
  let podIPs = ips.podIPs;
  // The pod's IPs in the node's family preference (kubelet #97979).
  const hostIPs = async () => {
    const hosts = await sources.getHostIPs();
    if (hosts.length === 0) throw new Error("host IP unknown; known addresses: []");
    return hosts;
  };
  if (podIPs.length > 0) {
    podIPs = sortPodIPs(podIPs, (await sources.getHostIPs())[0]);
    if (podIPs.length > 0) podIP = podIPs[0];
  }
  switch (internalFieldPath) {
    case "spec.nodeName":
      return pod.spec.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "";
    case "status.hostIP":
      return (await hostIPs())[0];
    case "status.hostIPs":
      return (await hostIPs()).join(",");
    case "status.podIP":
      return podIP;
    case "status.podIPs":
      return podIPs.join(",");
  }
  return extractFieldPathAsString(pod, internalFieldPath);
}

// The field paths a pod's downward API accepts, as the API converts them
// (pkg/apis/core/pods ConvertDownwardAPIFieldLabel).
function convertDownwardAPIFieldLabel(version: string, label: string): string {
  if (version !== "v1") throw new Error(`unsupported pod version: ${version}`);
  const [path, , subscripted] = splitMaybeSubscriptedPath(label);
  if (subscripted) {
    if (path === "metadata.annotations" || path === "metadata.labels") return label;
    throw new Error(`field label does not support subscript: ${label}`);
  }
  switch (label) {
    case "metadata.annotations":
    case "metadata.labels":
    case "metadata.name":
    case "metadata.namespace":
    case "metadata.uid":
    case "spec.nodeName":
    case "spec.restartPolicy":
    case "spec.serviceAccountName":
    case "spec.schedulerName":
    case "status.phase":
    case "status.hostIP":
    case "status.hostIPs":
    case "status.podIP":
    case "status.podIPs":
      return label;
    case "spec.host":
      // Old v1 clients' name for spec.nodeName.
      return "spec.nodeName";
  }
  throw new Error(`field label not supported: ${label}`);
}

/**
 * At most one IP of each family, the node's family first (kubelet's `sortPodIPs`).
 *
 * @example
 * ```ts
 * sortPodIPs(["fd00::5", "10.1.0.5"], "192.168.1.2"); // ["10.1.0.5", "fd00::5"]
 * ```
 */
export function sortPodIPs(podIPs: string[], nodeIP: string | undefined): string[] {
  const isIPv6 = (ip: string) => ip.includes(":");
  const isIPv4 = (ip: string) => /^\d{1,3}(\.\d{1,3}){3}$/.test(ip);
  const [primary, secondary] = nodeIP === undefined || !isIPv6(nodeIP)
    ? [isIPv4, isIPv6]
    : [isIPv6, isIPv4];
  const ips: string[] = [];
  const first = podIPs.find(primary);
  if (first !== undefined) ips.push(first);
  const second = podIPs.find(secondary);
  if (second !== undefined) ips.push(second);
  return ips;
}

/** Where containers see the managed hosts file. */
export const etcHostsPath = "/etc/hosts";
/** First line of a pod's managed hosts file. */
export const managedHostsHeader = "# Kubernetes-managed hosts file.\n";
/** First line of a host-network pod's hosts file (the node's file follows). */
export const managedHostsHeaderWithHostNetwork =
  "# Kubernetes-managed hosts file (host network).\n";

/** A pod's folder under the kubelet's pods folder: `<podsDir>/<uid>` (kubelet's `getPodDir`). */
export function getPodDir(podsDir: string, pod: Pod): string {
  return join(podsDir, pod.metadata.uid ?? "");
}

/** A container's folder in its pod's: `<podDir>/containers/<name>` (`getPodContainerDir`). */
export function getPodContainerDir(podsDir: string, pod: Pod, containerName: string): string {
  return join(getPodDir(podsDir, pod), "containers", containerName);
}

/**
 * The pod's host name (`spec.hostname`, else its name, cut to 63 characters) and domain
 * (`<subdomain>.<namespace>.svc.<cluster domain>` when `spec.subdomain` is set), kubelet's
 * `GeneratePodHostNameAndDomain`.
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * generatePodHostNameAndDomain(pod, "cluster.local"); // { hostname: "web-0", hostDomain: "web.default.svc.cluster.local" }
 * ```
 */
export function generatePodHostNameAndDomain(
  pod: Pod,
  clusterDomain: string,
): { hostname: string; hostDomain: string } {
  let hostname = pod.metadata.name ?? "";
  if (pod.spec.hostname) {
    const msgs = isDNS1123Label(pod.spec.hostname);
    if (msgs.length > 0) {
      throw new Error(
        `pod Hostname "${pod.spec.hostname}" is not a valid DNS label: ${msgs.join(";")}`,
      );
    }
    hostname = pod.spec.hostname;
  }
  hostname = truncatePodHostnameIfNeeded(pod.metadata.name ?? "", hostname);
  let hostDomain = "";
  if (pod.spec.subdomain) {
    const msgs = isDNS1123Label(pod.spec.subdomain);
    if (msgs.length > 0) {
      throw new Error(
        `pod Subdomain "${pod.spec.subdomain}" is not a valid DNS label: ${msgs.join(";")}`,
      );
    }
    hostDomain = `${pod.spec.subdomain}.${pod.metadata.namespace ?? ""}.svc.${clusterDomain}`;
  }
  return { hostname, hostDomain };
}

/** A host name cut to 63 characters, without a trailing `-` or `.` (kubelet's). */
export function truncatePodHostnameIfNeeded(podName: string, hostname: string): string {
  const hostnameMaxLen = 63;
  if (hostname.length <= hostnameMaxLen) return hostname;
  let truncated = hostname.slice(0, hostnameMaxLen);
  log.error(undefined, "Hostname for pod was too long, truncated it", {
    podName,
    hostnameMaxLen,
    truncatedHostname: truncated,
  });
  truncated = truncated.replace(/[-.]+$/, "");
  if (truncated === "") throw new Error(`hostname for pod "${podName}" was invalid: "${hostname}"`);
  return truncated;
}

/**
 * The content of a pod's managed hosts file (kubelet's `managedHostsFileContent`): localhost
 * entries, one line per pod IP with the host name (FQDN first when the pod has a domain), then
 * the host aliases.
 */
export function managedHostsFileContent(
  hostIPs: string[],
  hostName: string,
  hostDomainName: string,
  hostAliases: HostAlias[] | undefined,
): string {
  let content = managedHostsHeader +
    "127.0.0.1\tlocalhost\n" +
    "::1\tlocalhost ip6-localhost ip6-loopback\n" +
    "fe00::0\tip6-localnet\n" +
    "fe00::0\tip6-mcastprefix\n" +
    "fe00::1\tip6-allnodes\n" +
    "fe00::2\tip6-allrouters\n";
  for (const ip of hostIPs) {
    content += hostDomainName !== ""
      ? `${ip}\t${hostName}.${hostDomainName}\t${hostName}\n`
      : `${ip}\t${hostName}\n`;
  }
  return content + hostsEntriesFromHostAliases(hostAliases);
}

/** The host aliases as hosts-file lines, after a comment (kubelet's). */
export function hostsEntriesFromHostAliases(hostAliases: HostAlias[] | undefined): string {
  if (!hostAliases || hostAliases.length === 0) return "";
  let content = "\n# Entries added by HostAliases.\n";
  for (const alias of hostAliases) {
    content += `${alias.ip}\t${(alias.hostnames ?? []).join("\t")}\n`;
  }
  return content;
}

/** A host-network pod's hosts file: the node's, then the host aliases (kubelet's). */
export async function nodeHostsFileContent(
  hostsFilePath: string,
  hostAliases: HostAlias[] | undefined,
): Promise<string> {
  const node = await Deno.readTextFile(hostsFilePath);
  return managedHostsHeaderWithHostNetwork + node + hostsEntriesFromHostAliases(hostAliases);
}

/**
 * Writes the pod's hosts file (mode 0644): the node's for a host-network pod, else a managed one
 * (kubelet's `ensureHostsFile`).
 */
export async function ensureHostsFile(
  fileName: string,
  options: {
    hostIPs: string[];
    hostName: string;
    hostDomainName: string;
    hostAliases?: HostAlias[];
    useHostNetwork: boolean;
    /** The node's hosts file (default `/etc/hosts`). */
    nodeHostsFile?: string;
  },
): Promise<void> {
  const content = options.useHostNetwork
    ? await nodeHostsFileContent(options.nodeHostsFile ?? etcHostsPath, options.hostAliases)
    : managedHostsFileContent(
      options.hostIPs,
      options.hostName,
      options.hostDomainName,
      options.hostAliases,
    );
  await Deno.writeTextFile(fileName, content);
  await Deno.chmod(fileName, 0o644);
}

/**
 * Writes `<podDir>/etc-hosts` and returns its mount at `/etc/hosts` (kubelet's `makeHostsMount`).
 */
export async function makeHostsMount(
  podDir: string,
  options: Parameters<typeof ensureHostsFile>[1],
): Promise<Mount> {
  await Deno.mkdir(podDir, { recursive: true });
  const hostPath = join(podDir, "etc-hosts");
  await ensureHostsFile(hostPath, options);
  // kubelet asks for a relabel only where SELinux is enabled; probelet does not check SELinux.
  return { hostPath, containerPath: etcHostsPath, readonly: false };
}

/**
 * What a container gets besides its spec (kubelet's `GenerateRunContainerOptions`): the managed
 * `/etc/hosts` once the pod has an IP (unless the container mounts its own), and the folder of
 * its termination message file.
 */
export async function generateRunContainerOptions(
  pod: Pod,
  container: Container,
  options: { podsDir: string; podIPs: string[]; clusterDomain: string; nodeHostsFile?: string },
): Promise<RunContainerOptions> {
  const { hostname, hostDomain } = generatePodHostNameAndDomain(pod, options.clusterDomain);
  const mounts: Mount[] = [];
  const mountsEtcHosts = (container.volumeMounts ?? []).some((m) => m.mountPath === etcHostsPath);
  if (options.podIPs.length > 0 && !mountsEtcHosts) {
    mounts.push(
      await makeHostsMount(getPodDir(options.podsDir, pod), {
        hostIPs: options.podIPs,
        hostName: hostname,
        hostDomainName: hostDomain,
        hostAliases: pod.spec.hostAliases,
        useHostNetwork: pod.spec.hostNetwork === true,
        nodeHostsFile: options.nodeHostsFile,
      }),
    );
  }
  let podContainerDir = "";
  if (container.terminationMessagePath) {
    const dir = getPodContainerDir(options.podsDir, pod, container.name);
    try {
      await Deno.mkdir(dir, { recursive: true, mode: 0o750 });
      podContainerDir = dir;
    } catch (e) {
      log.error(e, "Error on creating dir", { path: dir });
    }
  }
  return { mounts, podContainerDir };
}
