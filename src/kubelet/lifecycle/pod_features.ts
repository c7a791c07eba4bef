/**
 * No silent drops: node-side admission refuses a pod that sets a field probelet does not honour on
 * its runtime, naming the field (`spec.volumes[0].projected is not supported by this node`), so a
 * pod either runs as its spec says or fails with the reason in its status and an event.
 *
 * Every field of the API's `PodSpec` and `Container` (and of the nested types probelet reads) has a
 * row in {@linkcode podSpecFields}: supported, refused, or ignored as kubelet itself ignores it on a
 * node, for each runtime. The tables are typed by the API types, so the compiler demands a row for
 * any field added to `src/api/core/v1/types.ts`; a field missing from the tables (one the node does
 * not know, such as a newer API's) is refused too. A refused field at a value that asks for nothing
 * beyond what probelet already does (an API default, `false`, an empty list) is admitted; each such
 * value is listed with its reason in the row.
 *
 * Mirrors kubelet's pod feature admission in pkg/kubelet/lifecycle/handlers.go
 * (podFeaturesAdmitHandler, declaredFeaturesAdmitHandler: reason `PodFeatureUnsupported`) and
 * predicate.go's rejectPodAdmissionBasedOnOSField (reason `PodOSNotSupported`); the field table is
 * probelet's own.
 * @module
 */
import type {
  Affinity,
  AppArmorProfile,
  Capabilities,
  Container,
  ContainerPort,
  EmptyDirVolumeSource,
  EnvFromSource,
  EnvVar,
  EnvVarSource,
  ExecAction,
  GRPCAction,
  HTTPGetAction,
  HTTPHeader,
  Lifecycle,
  LifecycleHandler,
  NodeAffinity,
  Pod,
  PodOS,
  PodSecurityContext,
  PodSpec,
  Probe,
  ProjectedVolumeSource,
  ResourceRequirements,
  SeccompProfile,
  SecurityContext,
  SleepAction,
  TCPSocketAction,
  Volume,
  VolumeMount,
  VolumeProjection,
} from "../../api/core/v1/mod.ts";
import type { PodAdmitAttributes, PodAdmitResult } from "./predicate.ts";

/** Reason of a pod refused for a field this node does not honour (kubelet's reason for a node lacking a feature the pod needs). */
export const PodFeatureUnsupported = "PodFeatureUnsupported";
/** Reason of a pod whose `spec.os.name` is not the node's OS (kubelet's). */
export const PodOSNotSupported = "PodOSNotSupported";

/** The runtime columns of the table: a CRI runtime (containerd), or host processes. */
export type RuntimeKind = "containerd" | "embedded";

/** What the node does with a field. */
export type Support = "supported" | "refused" | "ignored";

/** What the verdicts depend on besides the pod. */
export interface NodeFacts {
  runtime: RuntimeKind;
  /** The agent reads pods (and would read services) from an API server. */
  apiServer: boolean;
  /** The agent's own uid and gid (host processes of the embedded runtime run as them). */
  uid: number;
  gid: number;
  /** `--cluster-dns` is set: `ClusterFirst` pods get the cluster's nameservers. */
  clusterDNS?: boolean;
}

/** Where a value is being checked. */
export interface FieldContext {
  facts: NodeFacts;
  /** The field path, e.g. `spec.initContainers[0].restartPolicy`. */
  path: string;
  /** The object that holds the field (a port item for `hostPort`). */
  parent: Record<string, unknown>;
}

/** Values of a refused field that ask for nothing beyond what probelet does. */
export interface Allowance {
  /** The values, in words, for the table. */
  text: string;
  test(value: unknown, ctx: FieldContext): boolean;
}

/** One runtime's verdict on a field. */
export interface Verdict {
  support: Support;
  /** Why, for the table (the behaviour, and the issue that will change it). */
  why: string;
  /** For a refused field: the values admitted anyway. */
  allows?: Allowance;
}

/** A row: the verdict on each runtime, and the table of the value's own fields if it has one. */
export interface FieldRule {
  containerd: Verdict;
  embedded: Verdict;
  /** The value (an object, or each item of a list) is checked field by field against this. */
  fields?: Readonly<Record<string, FieldRule>>;
  /** A refusal names each item and its source field (`volumes[2].persistentVolumeClaim`). */
  nameSource?: boolean;
}

/** A row for every field of `T`: the compiler rejects a table that misses one. */
export type FieldTable<T> = { readonly [K in keyof Required<T>]: FieldRule };

function supported(why = ""): Verdict {
  return { support: "supported", why };
}
function refused(why: string, allows?: Allowance): Verdict {
  return { support: "refused", why, allows };
}
function ignored(why: string): Verdict {
  return { support: "ignored", why };
}
function both(v: Verdict): { containerd: Verdict; embedded: Verdict } {
  return { containerd: v, embedded: v };
}
function only(text: string, ...values: unknown[]): Allowance {
  return { text, test: (value) => values.includes(value) };
}

const notPassedToCRI = "not passed to the CRI runtime";
const hostProcess = "a host process cannot honour it";
const noStdinEmbedded = "the shim keeps no stdin for the command (attach drops what is typed)";
const noMountsEmbedded = "a host process cannot see a mount at `mountPath`: volumes are refused " +
  "on this runtime (docs/volumes.md)";
const noPlugin = "no volume plugin for it on this node";
const dnsHost = "the host's resolv.conf";
const predicateChecked = "checked by admission as kubelet does (API-server mode; static pods " +
  "without an API server are not checked, as before)";

// Probes: every field is honoured by the prober on both runtimes.
const execActionFields: FieldTable<ExecAction> = { command: both(supported()) };
const httpHeaderFields: FieldTable<HTTPHeader> = {
  name: both(supported()),
  value: both(supported()),
};
const httpGetFields: FieldTable<HTTPGetAction> = {
  path: both(supported()),
  port: both(supported()),
  host: both(supported()),
  scheme: both(supported()),
  httpHeaders: { ...both(supported()), fields: httpHeaderFields },
};
const tcpSocketFields: FieldTable<TCPSocketAction> = {
  port: both(supported()),
  host: both(supported()),
};
const grpcFields: FieldTable<GRPCAction> = {
  port: both(supported()),
  service: both(supported()),
};
const probeFields: FieldTable<Probe> = {
  exec: {
    ...both(supported("runs in the container (embedded: on the host)")),
    fields: execActionFields,
  },
  httpGet: { ...both(supported()), fields: httpGetFields },
  tcpSocket: { ...both(supported()), fields: tcpSocketFields },
  grpc: { ...both(supported()), fields: grpcFields },
  initialDelaySeconds: both(supported()),
  timeoutSeconds: both(supported()),
  periodSeconds: both(supported()),
  successThreshold: both(supported()),
  failureThreshold: both(supported()),
  terminationGracePeriodSeconds: both(supported("the kill after a liveness or startup failure")),
};

// Lifecycle hooks: kubelet's handler runner on both runtimes; exec runs where exec probes run.
const sleepActionFields: FieldTable<SleepAction> = { seconds: both(supported()) };
const lifecycleHandlerFields: FieldTable<LifecycleHandler> = {
  exec: {
    ...both(supported("runs in the container (embedded: on the host, as exec probes)")),
    fields: execActionFields,
  },
  httpGet: {
    containerd: supported("sent by the agent to the pod IP"),
    embedded: supported("sent by the agent to 127.0.0.1, the pod IP"),
    fields: httpGetFields,
  },
  tcpSocket: {
    ...both(supported("not a lifecycle handler: the hook fails, as in kubelet")),
    fields: tcpSocketFields,
  },
  sleep: { ...both(supported()), fields: sleepActionFields },
};
const lifecycleFields: FieldTable<Lifecycle> = {
  postStart: {
    ...both(supported("after the start; a failure kills the container")),
    fields: lifecycleHandlerFields,
  },
  preStop: {
    ...both(supported("before the stop, within the grace period, which it shortens")),
    fields: lifecycleHandlerFields,
  },
  stopSignal: both(refused("no stop signal is passed to the runtime: SIGTERM is sent")),
};

const containerPortFields: FieldTable<ContainerPort> = {
  name: both(supported("named ports of probes")),
  containerPort: both(supported("informational, as in kubelet")),
  protocol: both(supported()),
  hostPort: {
    containerd: supported("a CRI port mapping (needs the CNI portmap plugin)"),
    embedded: refused("the process listens on the host itself: no mapping", {
      text: "equal to `containerPort`",
      test: (value, ctx) => value === ctx.parent.containerPort,
    }),
  },
  hostIP: {
    containerd: supported("a CRI port mapping"),
    embedded: refused("the process binds where it chooses: no mapping"),
  },
};

// The environment: kubelet's makeEnvironmentVariables, the same on both runtimes (a host process
// gets its environment as a container does).
const fromAPI = "read through the API server (kubelet's configmap/secret managers); a missing " +
  "one that is not `optional` is `CreateContainerConfigError`, as in kubelet";
const envVarSourceFields: FieldTable<EnvVarSource> = {
  fieldRef: both(supported("the downward API paths, `spec.nodeName`, `status.podIP(s)`, ...")),
  resourceFieldRef: both(supported("limits default to the node's allocatable, as in kubelet")),
  configMapKeyRef: both(supported(fromAPI)),
  secretKeyRef: both(supported(fromAPI)),
  fileKeyRef: both(refused("no env files (the `EnvFiles` feature)")),
};
const envFromSourceFields: FieldTable<EnvFromSource> = {
  prefix: both(supported()),
  configMapRef: both(supported(fromAPI)),
  secretRef: both(supported(fromAPI)),
};
const envVarFields: FieldTable<EnvVar> = {
  name: both(supported()),
  value: both(supported("`$(VAR)` expanded against earlier variables and the services'")),
  valueFrom: { ...both(supported()), fields: envVarSourceFields },
};

const resourceFields: FieldTable<ResourceRequirements> = {
  requests: {
    containerd: supported(
      "cpu shares and oom_score_adj by QoS class (containerd's `restrict_oom_score_adj` raises " +
        "Guaranteed's -998 to its own score); admission counts them",
    ),
    embedded: refused(`no cpu shares or oom_score_adj for host processes`),
  },
  limits: {
    containerd: supported("memory limit, CFS quota over a 100 ms period"),
    embedded: refused("no limits on the host processes' cgroup"),
  },
  claims: both(refused("no dynamic resource allocation")),
};

const capabilitiesFields: FieldTable<Capabilities> = {
  add: { containerd: supported(), embedded: refused(hostProcess) },
  drop: { containerd: supported(), embedded: refused(hostProcess) },
};

const unconfined = "`type: Unconfined` (what the runtime applies without a profile)";
const seccompFields: FieldTable<SeccompProfile> = {
  type: {
    containerd: supported(
      "RuntimeDefault, Unconfined, Localhost (a file under `<root-dir>/seccomp`)",
    ),
    embedded: refused(hostProcess, only(unconfined, "Unconfined")),
  },
  localhostProfile: {
    containerd: supported("relative to `<root-dir>/seccomp`"),
    embedded: refused(hostProcess),
  },
};
const noAppArmor = "no AppArmor on this host (containerd runs with `disable_apparmor = true`)";
const appArmorFields: FieldTable<AppArmorProfile> = {
  type: { containerd: refused(noAppArmor), embedded: refused(hostProcess) },
  localhostProfile: { containerd: refused(noAppArmor), embedded: refused(hostProcess) },
};

// Identity on the embedded runtime: a host process runs as the agent, so asking for exactly that
// is honoured.
const agentUid: Allowance = {
  text: "the agent's own uid",
  test: (value, ctx) => value === ctx.facts.uid,
};
const agentGid: Allowance = {
  text: "the agent's own gid",
  test: (value, ctx) => value === ctx.facts.gid,
};
const runAsNonRootEmbedded: Allowance = {
  text: "`false`, or `true` when the agent is not root",
  test: (value, ctx) => value === false || (value === true && ctx.facts.uid !== 0),
};
const nothingAsked = "`false` (asks for nothing)";

const securityContextFields: FieldTable<SecurityContext> = {
  capabilities: { ...both(supported()), fields: capabilitiesFields },
  privileged: {
    containerd: supported("every capability the host's root has, no seccomp, a privileged sandbox"),
    embedded: refused(hostProcess, only(nothingAsked, false)),
  },
  seLinuxOptions: { containerd: refused(notPassedToCRI), embedded: refused(hostProcess) },
  windowsOptions: both(ignored("Windows only: kubelet ignores it on Linux")),
  runAsUser: {
    containerd: supported(),
    embedded: refused(hostProcess, agentUid),
  },
  runAsGroup: {
    containerd: supported(),
    embedded: refused(hostProcess, agentGid),
  },
  runAsNonRoot: {
    containerd: supported(
      "checked against `runAsUser` or the image's user (`ImageStatus`): " +
        "`CreateContainerConfigError` as kubelet",
    ),
    embedded: refused(hostProcess, runAsNonRootEmbedded),
  },
  readOnlyRootFilesystem: {
    containerd: supported(),
    embedded: refused(hostProcess, only(nothingAsked, false)),
  },
  allowPrivilegeEscalation: {
    containerd: supported("`false` sets no_new_privs"),
    embedded: refused(hostProcess, only("`true` (the default: no_new_privs off)", true)),
  },
  procMount: {
    containerd: refused(
      "`Unmasked` needs a user namespace (`hostUsers: false`), refused here",
      only("`Default` (kubelet's masked and read-only /proc paths)", "Default"),
    ),
    embedded: refused(hostProcess, only("`Default`", "Default")),
  },
  seccompProfile: { ...both(supported()), fields: seccompFields },
  appArmorProfile: { ...both(supported()), fields: appArmorFields },
};

const podSecurityContextFields: FieldTable<PodSecurityContext> = {
  seLinuxOptions: securityContextFields.seLinuxOptions,
  windowsOptions: securityContextFields.windowsOptions,
  runAsUser: securityContextFields.runAsUser,
  runAsGroup: securityContextFields.runAsGroup,
  runAsNonRoot: securityContextFields.runAsNonRoot,
  supplementalGroups: { containerd: supported(), embedded: refused(hostProcess) },
  supplementalGroupsPolicy: {
    containerd: refused(
      notPassedToCRI,
      only("`Merge` (the runtime merges the image's groups, as without a policy)", "Merge"),
    ),
    embedded: refused(hostProcess, only("`Merge`", "Merge")),
  },
  fsGroup: {
    containerd: supported("a supplementary group of every container (volumes are refused)"),
    embedded: refused(hostProcess),
  },
  sysctls: {
    containerd: supported("the safe set; any other is `SysctlForbidden`, as kubelet"),
    embedded: refused(hostProcess),
  },
  fsGroupChangePolicy: both(
    ignored("only changes how volumes are chowned, and volumes are refused"),
  ),
  seccompProfile: securityContextFields.seccompProfile,
  appArmorProfile: securityContextFields.appArmorProfile,
  seLinuxChangePolicy: both(
    ignored("only changes how volumes are labelled, and volumes are refused"),
  ),
};

// Volumes: the in-tree plugins kubelet's ordinary pods use, on containerd; none on the embedded
// runtime (the `volumes` row refuses them there whole).
const volumeMountFields: FieldTable<VolumeMount> = {
  name: { containerd: supported(), embedded: refused(noMountsEmbedded) },
  mountPath: { containerd: supported("a CRI mount"), embedded: refused(noMountsEmbedded) },
  readOnly: { containerd: supported(), embedded: refused(noMountsEmbedded) },
  subPath: {
    containerd: supported("created when missing; refused when it resolves outside the volume"),
    embedded: refused(noMountsEmbedded),
  },
  mountPropagation: {
    containerd: supported(
      "`None`, `HostToContainer`; `Bidirectional` only for privileged containers, as in kubelet",
    ),
    embedded: refused(noMountsEmbedded),
  },
  subPathExpr: {
    containerd: supported("`$(VAR)` from the container's `env` values, as kubelet expands it"),
    embedded: refused(noMountsEmbedded),
  },
  recursiveReadOnly: {
    containerd: refused(
      "no recursive read-only mounts",
      only("`Disabled` (the default)", "Disabled"),
    ),
    embedded: refused(noMountsEmbedded),
  },
};

const emptyDirFields: FieldTable<EmptyDirVolumeSource> = {
  medium: {
    containerd: supported('`""` (the node\'s disk) or `Memory` (a tmpfs)'),
    embedded: refused(noMountsEmbedded),
  },
  sizeLimit: {
    containerd: refused("no local-storage eviction enforces it on disk", {
      text: "with `medium: Memory` (the tmpfs's size)",
      test: (_value, ctx) => ctx.parent.medium === "Memory",
    }),
    embedded: refused(noMountsEmbedded),
  },
};

const volumeProjectionFields: FieldTable<VolumeProjection> = {
  secret: { containerd: supported(), embedded: refused(noMountsEmbedded) },
  configMap: { containerd: supported(), embedded: refused(noMountsEmbedded) },
  downwardAPI: { containerd: supported(), embedded: refused(noMountsEmbedded) },
  serviceAccountToken: {
    containerd: supported(
      "TokenRequest bound to the pod, renewed at 80 % of its lifetime or after 24 h",
    ),
    embedded: refused(noMountsEmbedded),
  },
  clusterTrustBundle: both(refused("no ClusterTrustBundle projection")),
  podCertificate: both(refused("no pod certificate projection")),
};

const projectedFields: FieldTable<ProjectedVolumeSource> = {
  sources: {
    containerd: supported(),
    embedded: refused(noMountsEmbedded),
    fields: volumeProjectionFields,
  },
  defaultMode: { containerd: supported(), embedded: refused(noMountsEmbedded) },
};

const volumeSource = (why = ""): FieldRule => ({
  containerd: supported(why),
  embedded: refused(noMountsEmbedded),
});
const noVolumePlugin: FieldRule = both(refused(noPlugin));

const volumeFields: FieldTable<Volume> = {
  name: volumeSource("names the volume for `volumeMounts`"),
  hostPath: volumeSource("every `type` check; the `OrCreate` types create with kubelet's modes"),
  emptyDir: { ...volumeSource(), fields: emptyDirFields },
  secret: volumeSource("on a tmpfs; items, modes, optional"),
  configMap: volumeSource("items, modes, optional; updates reach the files at each pod sync"),
  downwardAPI: volumeSource("fieldRef (metadata), resourceFieldRef"),
  projected: { ...volumeSource("on a tmpfs"), fields: projectedFields },
  gcePersistentDisk: noVolumePlugin,
  awsElasticBlockStore: noVolumePlugin,
  gitRepo: noVolumePlugin,
  nfs: noVolumePlugin,
  iscsi: noVolumePlugin,
  glusterfs: noVolumePlugin,
  persistentVolumeClaim: noVolumePlugin,
  rbd: noVolumePlugin,
  flexVolume: noVolumePlugin,
  cinder: noVolumePlugin,
  cephfs: noVolumePlugin,
  flocker: noVolumePlugin,
  fc: noVolumePlugin,
  azureFile: noVolumePlugin,
  vsphereVolume: noVolumePlugin,
  quobyte: noVolumePlugin,
  azureDisk: noVolumePlugin,
  photonPersistentDisk: noVolumePlugin,
  portworxVolume: noVolumePlugin,
  scaleIO: noVolumePlugin,
  storageos: noVolumePlugin,
  csi: noVolumePlugin,
  ephemeral: noVolumePlugin,
  image: noVolumePlugin,
};

const containerFields: FieldTable<Container> = {
  name: both(supported()),
  image: {
    containerd: supported("pulled by `imagePullPolicy` through the CRI image service"),
    embedded: supported("a name only: the command runs on the host (the runtime's design)"),
  },
  command: {
    containerd: supported(),
    embedded: supported("required: there is no image entrypoint"),
  },
  args: both(supported()),
  workingDir: both(supported()),
  ports: { ...both(supported()), fields: containerPortFields },
  envFrom: { ...both(supported()), fields: envFromSourceFields },
  env: { ...both(supported()), fields: envVarFields },
  resources: { ...both(supported()), fields: resourceFields },
  resizePolicy: both(ignored("read only for an in-place resize, which needs resources (refused)")),
  restartPolicy: {
    ...both(
      refused("regular containers follow the pod's restart policy", {
        text: "`Always` on an init container (a sidecar)",
        test: (value, ctx) => value === "Always" && ctx.path.startsWith("spec.initContainers["),
      }),
    ),
  },
  restartPolicyRules: both(refused("no per-container restart rules")),
  volumeMounts: {
    containerd: supported(),
    embedded: refused(noMountsEmbedded),
    fields: volumeMountFields,
  },
  volumeDevices: both(refused("no raw block volumes (they come from PVCs, refused)")),
  livenessProbe: { ...both(supported()), fields: probeFields },
  readinessProbe: { ...both(supported()), fields: probeFields },
  startupProbe: { ...both(supported()), fields: probeFields },
  lifecycle: { ...both(supported()), fields: lifecycleFields },
  terminationMessagePath: {
    containerd: supported("a file mounted there is read after the exit (4 KiB)"),
    embedded: refused("a host process has no mount namespace: no file is mounted", {
      text: "the API default `/dev/termination-log`: an offer to report a message, not a demand; " +
        "the process runs the same, and only `FallbackToLogsOnError` reports one",
      test: (value) => value === "/dev/termination-log",
    }),
  },
  terminationMessagePolicy: {
    containerd: supported(),
    embedded: supported("`FallbackToLogsOnError`: the log tail of a failed process"),
  },
  imagePullPolicy: {
    containerd: supported(
      "kubelet's image manager: `Pulling`/`Pulled` events, `ErrImagePull` → `ImagePullBackOff`, " +
        "`ErrImageNeverPull`",
    ),
    embedded: supported("any value: no images on this runtime, nothing to pull (its design)"),
  },
  securityContext: { ...both(supported()), fields: securityContextFields },
  stdin: {
    containerd: supported("passed in the CRI `ContainerConfig`: the runtime keeps stdin open"),
    embedded: refused(noStdinEmbedded, only(nothingAsked, false)),
  },
  stdinOnce: {
    containerd: supported("passed in the CRI `ContainerConfig`"),
    embedded: refused(noStdinEmbedded, only(nothingAsked, false)),
  },
  tty: {
    containerd: supported("passed in the CRI `ContainerConfig`: the runtime allocates a terminal"),
    embedded: refused(
      "the shim runs the command on pipes, without a terminal",
      only(nothingAsked, false),
    ),
  },
};

const nodeAffinityFields: FieldTable<NodeAffinity> = {
  requiredDuringSchedulingIgnoredDuringExecution: both(
    supported(predicateChecked),
  ),
  preferredDuringSchedulingIgnoredDuringExecution: both(ignored("scheduler only")),
};

const affinityFields: FieldTable<Affinity> = {
  nodeAffinity: { ...both(supported()), fields: nodeAffinityFields },
  podAffinity: both(ignored("scheduler only")),
  podAntiAffinity: both(ignored("scheduler only")),
};

const podOSFields: FieldTable<PodOS> = {
  name: both(supported("kubelet refuses another OS (`PodOSNotSupported`)")),
};

/**
 * The verdict on every field of a pod's spec, per runtime; nested tables for the fields whose
 * values are checked field by field.
 */
export const podSpecFields: FieldTable<PodSpec> = {
  volumes: {
    containerd: supported(),
    embedded: refused(noMountsEmbedded),
    fields: volumeFields,
    nameSource: true,
  },
  initContainers: { ...both(supported()), fields: containerFields },
  containers: { ...both(supported()), fields: containerFields },
  ephemeralContainers: both(refused("no ephemeral containers (`kubectl debug`)")),
  restartPolicy: both(supported()),
  terminationGracePeriodSeconds: both(supported()),
  activeDeadlineSeconds: both(
    supported("failed with `DeadlineExceeded` once active that long (active_deadline.ts)"),
  ),
  dnsPolicy: {
    containerd: supported("the sandbox's resolv.conf, from `--resolv-conf` and `--cluster-dns`"),
    embedded: refused(`host processes read ${dnsHost}`, {
      text: "`ClusterFirst` and `Default` (a host-network pod's DNS); `ClusterFirstWithHostNet` " +
        "without `--cluster-dns`",
      test: (v, ctx) =>
        v === "ClusterFirst" || v === "Default" ||
        (v === "ClusterFirstWithHostNet" && !ctx.facts.clusterDNS),
    }),
  },
  nodeSelector: both(supported(predicateChecked)),
  serviceAccountName: {
    containerd: supported("the account of projected service-account tokens"),
    embedded: supported("read by `fieldRef: spec.serviceAccountName` (token volumes are refused)"),
  },
  serviceAccount: both(ignored("deprecated alias of serviceAccountName")),
  automountServiceAccountToken: both(ignored("read by the API server, which adds the volume")),
  nodeName: both(supported("checked by admission")),
  hostNetwork: {
    containerd: supported(),
    embedded: supported("every pod shares the host network (documented; pod IP 127.0.0.1)"),
  },
  hostPID: {
    containerd: supported(),
    embedded: supported("host processes share the host PID namespace (documented)"),
  },
  hostIPC: {
    containerd: supported(),
    embedded: supported("host processes share the host IPC namespace (documented)"),
  },
  shareProcessNamespace: {
    containerd: supported(),
    embedded: supported("host processes see each other (documented)"),
  },
  securityContext: { ...both(supported()), fields: podSecurityContextFields },
  imagePullSecrets: {
    containerd: supported(
      "`kubernetes.io/dockerconfigjson` / `dockercfg` secrets read through the API become the " +
        "pull's credentials",
    ),
    embedded: supported("no images on this runtime, nothing to pull (its design)"),
  },
  hostname: {
    containerd: supported("the sandbox's host name and the hosts file"),
    embedded: refused(hostProcess),
  },
  subdomain: {
    containerd: supported("the hosts file's FQDN (`--cluster-domain`)"),
    embedded: refused(hostProcess),
  },
  affinity: { ...both(supported()), fields: affinityFields },
  schedulerName: both(ignored("scheduler only")),
  tolerations: both(supported("`NoExecute` ones are checked by admission, as kubelet does")),
  hostAliases: {
    containerd: supported("entries of the kubelet-managed /etc/hosts"),
    embedded: refused("host processes read the host's /etc/hosts"),
  },
  priorityClassName: both(ignored("resolved into `priority` by the API server")),
  priority: both(
    ignored(
      "kubelet reads it for eviction and critical-pod preemption, neither of which exists here",
    ),
  ),
  dnsConfig: {
    containerd: supported("merged into the sandbox's resolv.conf"),
    embedded: refused(`host processes read ${dnsHost}`),
  },
  readinessGates: both(supported()),
  runtimeClassName: both(refused("no runtime handler is passed to CRI")),
  enableServiceLinks: both(
    supported(
      "the services of the pod's namespace as variables, from a watch of all services; " +
        "`KUBERNETES_SERVICE_HOST`/`PORT` either way (none without an API server, as in kubelet)",
    ),
  ),
  preemptionPolicy: both(ignored("scheduler only")),
  overhead: both(
    refused(
      "no pod cgroup enforces it: probelet has no pod cgroups (kubelet's pod container " +
        "manager); it comes with runtimeClassName, refused",
    ),
  ),
  topologySpreadConstraints: both(ignored("scheduler only")),
  setHostnameAsFQDN: {
    containerd: supported("the sandbox's host name is the FQDN"),
    embedded: refused(hostProcess, only(nothingAsked, false)),
  },
  os: { ...both(supported()), fields: podOSFields },
  hostUsers: {
    containerd: refused(
      `${notPassedToCRI} (a user namespace)`,
      only("`true` (the host user namespace, as without the field)", true),
    ),
    embedded: refused(hostProcess, only("`true`", true)),
  },
  schedulingGates: both(ignored("scheduler only: a gated pod is never bound")),
  resourceClaims: both(refused("no dynamic resource allocation")),
  resources: both(refused("no pod-level resources")),
  hostnameOverride: both(refused("the sandbox's hostname is the pod's name (issue 16 item 7)")),
  schedulingGroup: both(ignored("scheduler only (gang scheduling)")),
};

/**
 * Every field table by the API type it covers (`PodSpec`, `Container`, `Probe`, ...): what the
 * generated table (docs/reference/pod_fields.md) and the tests walk.
 */
export const podFieldTables: Readonly<Record<string, Readonly<Record<string, FieldRule>>>> = {
  PodSpec: podSpecFields,
  Container: containerFields,
  ContainerPort: containerPortFields,
  EnvVar: envVarFields,
  EnvVarSource: envVarSourceFields,
  EnvFromSource: envFromSourceFields,
  ResourceRequirements: resourceFields,
  Probe: probeFields,
  ExecAction: execActionFields,
  HTTPGetAction: httpGetFields,
  HTTPHeader: httpHeaderFields,
  TCPSocketAction: tcpSocketFields,
  GRPCAction: grpcFields,
  PodSecurityContext: podSecurityContextFields,
  SecurityContext: securityContextFields,
  Capabilities: capabilitiesFields,
  SeccompProfile: seccompFields,
  AppArmorProfile: appArmorFields,
  Affinity: affinityFields,
  NodeAffinity: nodeAffinityFields,
  PodOS: podOSFields,
  Volume: volumeFields,
  EmptyDirVolumeSource: emptyDirFields,
  ProjectedVolumeSource: projectedFields,
  VolumeProjection: volumeProjectionFields,
  VolumeMount: volumeMountFields,
  Lifecycle: lifecycleFields,
  LifecycleHandler: lifecycleHandlerFields,
  SleepAction: sleepActionFields,
};

/** One field a pod sets that this node does not honour. */
export interface UnsupportedField {
  /** The field path, e.g. `spec.volumes[0].projected`. */
  path: string;
  /** False for a field the node does not know at all (not in its tables). */
  known: boolean;
}

/**
 * The fields of `pod.spec` this node would not honour, in spec order (empty when it runs as asked).
 *
 * @example
 * ```ts
 * const facts = { runtime: "containerd", apiServer: true, uid: 0, gid: 0 } as const;
 * unsupportedPodFields({ metadata: {}, spec: { containers: [], volumes: [{ name: "v", emptyDir: {} }] } }, facts);
 * // [{ path: "spec.volumes[0].emptyDir", known: true }]
 * ```
 */
export function unsupportedPodFields(pod: Pod, facts: NodeFacts): UnsupportedField[] {
  const out: UnsupportedField[] = [];
  walkFields(pod.spec as unknown as Record<string, unknown>, podSpecFields, "spec", facts, out);
  return out;
}

// A value that asks for nothing: absent, null, an empty string (Go's zero value, which the API
// server does not even write), an empty list or an empty object.
function isUnset(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") return Object.keys(value).length === 0;
  return false;
}

function walkFields(
  object: Record<string, unknown>,
  table: Readonly<Record<string, FieldRule>>,
  path: string,
  facts: NodeFacts,
  out: UnsupportedField[],
): void {
  for (const [key, value] of Object.entries(object)) {
    if (isUnset(value)) continue;
    const fieldPath = `${path}.${key}`;
    const rule = Object.hasOwn(table, key) ? table[key] : undefined;
    if (!rule) {
      out.push({ path: fieldPath, known: false });
      continue;
    }
    const verdict = rule[facts.runtime];
    if (
      rule.fields && verdict.support === "refused" &&
      !verdict.allows?.test(value, { facts, path: fieldPath, parent: object })
    ) {
      // A refused row with its own table (volumes on the embedded runtime) refuses the value
      // whole, `emptyDir: {}` included.
      const paths = rule.nameSource ? sourcePaths(fieldPath, value) : [fieldPath];
      for (const p of paths) out.push({ path: p, known: true });
      continue;
    }
    if (rule.fields) {
      const items = Array.isArray(value) ? value : [value];
      items.forEach((item, i) => {
        if (isUnset(item)) return;
        const itemPath = Array.isArray(value) ? `${fieldPath}[${i}]` : fieldPath;
        // Not an object where the API has one: nothing the node could honour.
        if (typeof item !== "object" || Array.isArray(item)) {
          out.push({ path: itemPath, known: true });
          return;
        }
        walkFields(item as Record<string, unknown>, rule.fields!, itemPath, facts, out);
      });
      continue;
    }
    if (verdict.support !== "refused") continue;
    if (verdict.allows?.test(value, { facts, path: fieldPath, parent: object })) continue;
    const paths = rule.nameSource ? sourcePaths(fieldPath, value) : [fieldPath];
    for (const p of paths) out.push({ path: p, known: true });
  }
}

// `volumes[2].persistentVolumeClaim`, `valueFrom.secretKeyRef`, `lifecycle.preStop`: each item,
// and in it each field other than `name`.
function sourcePaths(path: string, value: unknown): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item, i) => isUnset(item) ? [] : sourcePaths(`${path}[${i}]`, item));
  }
  if (value === null || typeof value !== "object") return [path];
  // `emptyDir: {}` chooses its source by the key alone: only absent and null values are skipped.
  const keys = Object.keys(value).filter((k) => {
    const v = (value as Record<string, unknown>)[k];
    return k !== "name" && v !== undefined && v !== null;
  });
  return keys.length === 0 ? [path] : keys.map((k) => `${path}.${k}`);
}

/**
 * The message of a refusal: each field, `spec.volumes[0].projected is not supported by this node`.
 *
 * @example
 * ```ts
 * unsupportedFieldsMessage([{ path: "spec.hostPID", known: true }]);
 * // "spec.hostPID is not supported by this node"
 * ```
 */
export function unsupportedFieldsMessage(fields: UnsupportedField[]): string {
  return fields.map((f) =>
    `${f.path} is not supported by this node${f.known ? "" : " (a field this node does not know)"}`
  ).join("; ");
}

/** Options of {@linkcode PodFeaturesAdmitHandler}. */
export interface PodFeaturesAdmitOptions {
  /** What the node honours depends on these. */
  facts: NodeFacts;
  /** The node's operating system (default: `Deno.build.os`). */
  os?: string;
}

/**
 * Refuses a pod that sets a field this node does not honour (`PodFeatureUnsupported`) or asks for
 * another OS (`PodOSNotSupported`). Static pods and API pods alike.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const handler = new PodFeaturesAdmitHandler({
 *   facts: { runtime: "containerd", apiServer: true, uid: 0, gid: 0 },
 * });
 * handler.admit({ pod, otherPods: [] }); // { admit: false, reason: "PodFeatureUnsupported", ... }
 * ```
 */
export class PodFeaturesAdmitHandler {
  #options: PodFeaturesAdmitOptions;

  /** Creates the handler. */
  constructor(options: PodFeaturesAdmitOptions) {
    this.#options = options;
  }

  /** Decides whether `attrs.pod` can run here as its spec says. */
  admit(attrs: PodAdmitAttributes): PodAdmitResult {
    const pod = attrs.pod;
    const os = pod.spec.os?.name;
    if (os !== undefined && os !== (this.#options.os ?? Deno.build.os)) {
      return {
        admit: false,
        reason: PodOSNotSupported,
        message: "Failed to admit pod as the OS field doesn't match node OS",
      };
    }
    const fields = unsupportedPodFields(pod, this.#options.facts);
    if (fields.length === 0) return { admit: true };
    return {
      admit: false,
      reason: PodFeatureUnsupported,
      message: unsupportedFieldsMessage(fields),
    };
  }
}
