/**
 * The subset of Kubernetes' core/v1 Pod API that probelet uses, with the API's JSON field names so a
 * YAML or JSON manifest maps onto these types directly.
 * Mirrors k8s.io/api/core/v1/types.go.
 * @module
 */

/** An int or a string, as the API's `intstr.IntOrString` (JSON: a number or a string). */
export type IntOrString = number | string;

import type { ListMeta, ObjectMeta, Time, TypeMeta } from "../../meta/v1/types.ts";

export type { ObjectMeta } from "../../meta/v1/types.ts";
import type {
  ConfigMapVolumeSource,
  DownwardAPIVolumeFile,
  DownwardAPIVolumeSource,
  HostPathVolumeSource,
  ObjectFieldSelector,
  ResourceFieldSelector,
  SecretProjection,
  SecretVolumeSource,
  ServiceAccountTokenProjection,
} from "./volume_types.ts";

/** Resource quantities by name (`cpu: "500m"`, `memory: "64Mi"`), as the API's `ResourceList`. */
export type ResourceList = Record<string, string>;

/** A container's resource requests and limits. */
export interface ResourceRequirements {
  limits?: ResourceList;
  requests?: ResourceList;
  /** Dynamic resource claims the container uses (`name`, `request`). */
  claims?: Record<string, unknown>[];
}

/** A port a container exposes. */
export interface ContainerPort {
  name?: string;
  hostPort?: number;
  containerPort: number;
  protocol?: "TCP" | "UDP" | "SCTP";
  hostIP?: string;
}

/** A literal environment variable, or one taken from elsewhere (`valueFrom`). */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

/** Runs a command in the container. */
export interface ExecAction {
  command?: string[];
}

/** One header of an HTTP probe. */
export interface HTTPHeader {
  name: string;
  value: string;
}

/** `HTTP` or `HTTPS`. */
export type URIScheme = "HTTP" | "HTTPS" | string;

/** An HTTP GET probe. */
export interface HTTPGetAction {
  path?: string;
  port: IntOrString;
  host?: string;
  scheme?: URIScheme;
  httpHeaders?: HTTPHeader[];
}

/** A TCP connect probe. */
export interface TCPSocketAction {
  port: IntOrString;
  host?: string;
}

/** A grpc.health.v1 probe. */
export interface GRPCAction {
  port: number;
  service?: string;
}

/** The four probe handlers; exactly one should be set. */
export interface ProbeHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: GRPCAction;
}

/** A liveness, readiness or startup probe. */
export interface Probe extends ProbeHandler {
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

/** `Always`, `OnFailure` or `Never`. */
export type RestartPolicy = "Always" | "OnFailure" | "Never";

/** Container-level restart policy (only `Always`, for restartable init containers). */
export type ContainerRestartPolicy = "Always";

/** A key of a config map, for one environment variable. */
export interface ConfigMapKeySelector {
  name?: string;
  key: string;
  optional?: boolean;
}

/** A key of a secret, for one environment variable. */
export interface SecretKeySelector {
  name?: string;
  key: string;
  optional?: boolean;
}

/** A key of an env file in one of the pod's volumes (the `EnvFiles` feature). */
export interface FileKeySelector {
  volumeName: string;
  path: string;
  key: string;
  optional?: boolean;
}

/** Where an environment variable's value comes from (exactly one source). */
export interface EnvVarSource {
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  configMapKeyRef?: ConfigMapKeySelector;
  secretKeyRef?: SecretKeySelector;
  fileKeyRef?: FileKeySelector;
}

/** A whole config map as environment variables. */
export interface ConfigMapEnvSource {
  name?: string;
  optional?: boolean;
}

/** A whole secret as environment variables. */
export interface SecretEnvSource {
  name?: string;
  optional?: boolean;
}

/** A set of environment variables taken from a config map or a secret, with an optional prefix. */
export interface EnvFromSource {
  prefix?: string;
  configMapRef?: ConfigMapEnvSource;
  secretRef?: SecretEnvSource;
}

/** A volume mounted into a container. */
export interface VolumeMount {
  name: string;
  readOnly?: boolean;
  /** `Disabled` (default), `IfPossible` or `Enabled`. */
  recursiveReadOnly?: string;
  mountPath: string;
  subPath?: string;
  /** `None` (default), `HostToContainer` or `Bidirectional`. */
  mountPropagation?: string;
  subPathExpr?: string;
}

/** A raw block device of a volume (`name`, `devicePath`). */
export type VolumeDevice = Record<string, unknown>;

/** How a container's resource is resized in place (`resourceName`, `restartPolicy`). */
export type ContainerResizePolicy = Record<string, unknown>;

/** A rule that overrides the container's restart policy for some exit codes. */
export type ContainerRestartRule = Record<string, unknown>;

/** A lifecycle hook's pause (`sleep.seconds`). */
export interface SleepAction {
  seconds: number;
}

/** One lifecycle hook: exactly one of `exec`, `httpGet`, `sleep` (`tcpSocket` is deprecated). */
export interface LifecycleHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  sleep?: SleepAction;
}

/** `postStart` and `preStop` hooks, and the stop signal. */
export interface Lifecycle {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
  stopSignal?: string;
}

/** An extra `/etc/hosts` entry: an IP and its host names. */
export interface HostAlias {
  ip: string;
  hostnames?: string[];
}

/** One resolver option of `dnsConfig.options` (`ndots: "2"`, `edns0`). */
export interface PodDNSConfigOption {
  name?: string;
  value?: string;
}

/** The pod's DNS parameters, merged with those `dnsPolicy` generates. */
export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: PodDNSConfigOption[];
}

/** Linux capabilities added to and dropped from the runtime's default set. */
export interface Capabilities {
  add?: string[];
  drop?: string[];
}

/** A seccomp profile: `RuntimeDefault`, `Unconfined` or `Localhost` (with `localhostProfile`). */
export interface SeccompProfile {
  type?: string;
  localhostProfile?: string;
}

/** An AppArmor profile: `RuntimeDefault`, `Unconfined` or `Localhost` (with `localhostProfile`). */
export interface AppArmorProfile {
  type?: string;
  localhostProfile?: string;
}

/** A container's security settings (they override the pod's where both are set). */
export interface SecurityContext {
  capabilities?: Capabilities;
  privileged?: boolean;
  seLinuxOptions?: Record<string, unknown>;
  windowsOptions?: Record<string, unknown>;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  procMount?: string;
  seccompProfile?: SeccompProfile;
  appArmorProfile?: AppArmorProfile;
}

/** The pod's security settings, the defaults of every container's. */
export interface PodSecurityContext {
  seLinuxOptions?: Record<string, unknown>;
  windowsOptions?: Record<string, unknown>;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  supplementalGroups?: number[];
  supplementalGroupsPolicy?: string;
  fsGroup?: number;
  sysctls?: Record<string, unknown>[];
  fsGroupChangePolicy?: string;
  seccompProfile?: SeccompProfile;
  appArmorProfile?: AppArmorProfile;
  seLinuxChangePolicy?: string;
}

/** A container of a pod (every field of the API's v1.36 `Container`). */
export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  envFrom?: EnvFromSource[];
  env?: EnvVar[];
  resources?: ResourceRequirements;
  resizePolicy?: ContainerResizePolicy[];
  restartPolicy?: ContainerRestartPolicy;
  restartPolicyRules?: ContainerRestartRule[];
  volumeMounts?: VolumeMount[];
  volumeDevices?: VolumeDevice[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: Lifecycle;
  /** Where the container writes its termination message (default `/dev/termination-log`). */
  terminationMessagePath?: string;
  /** `File` (default) or `FallbackToLogsOnError`. */
  terminationMessagePolicy?: string;
  imagePullPolicy?: string;
  securityContext?: SecurityContext;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
}

/** A pod readiness gate. */
export interface PodReadinessGate {
  conditionType: string;
}

/** A volume of a pod: its name and one volume source (every source of the API's v1.36 `Volume`). */
export interface Volume {
  name: string;
  hostPath?: HostPathVolumeSource;
  emptyDir?: EmptyDirVolumeSource;
  gcePersistentDisk?: Record<string, unknown>;
  awsElasticBlockStore?: Record<string, unknown>;
  gitRepo?: Record<string, unknown>;
  secret?: SecretVolumeSource;
  nfs?: Record<string, unknown>;
  iscsi?: Record<string, unknown>;
  glusterfs?: Record<string, unknown>;
  persistentVolumeClaim?: Record<string, unknown>;
  rbd?: Record<string, unknown>;
  flexVolume?: Record<string, unknown>;
  cinder?: Record<string, unknown>;
  cephfs?: Record<string, unknown>;
  flocker?: Record<string, unknown>;
  downwardAPI?: DownwardAPIVolumeSource;
  fc?: Record<string, unknown>;
  azureFile?: Record<string, unknown>;
  configMap?: ConfigMapVolumeSource;
  vsphereVolume?: Record<string, unknown>;
  quobyte?: Record<string, unknown>;
  azureDisk?: Record<string, unknown>;
  photonPersistentDisk?: Record<string, unknown>;
  projected?: ProjectedVolumeSource;
  portworxVolume?: Record<string, unknown>;
  scaleIO?: Record<string, unknown>;
  storageos?: Record<string, unknown>;
  csi?: Record<string, unknown>;
  ephemeral?: Record<string, unknown>;
  image?: Record<string, unknown>;
}

/** `volumes[].emptyDir`. */
export interface EmptyDirVolumeSource {
  /** `""` (the node's disk) or `Memory` (a tmpfs). */
  medium?: string;
  sizeLimit?: string | number;
}

/** `volumes[].projected`. */
export interface ProjectedVolumeSource {
  sources?: VolumeProjection[] | null;
  defaultMode?: number;
}

/** One source of a projected volume. */
export interface VolumeProjection {
  secret?: SecretProjection;
  downwardAPI?: { items?: DownwardAPIVolumeFile[] };
  configMap?: ConfigMapVolumeSource;
  serviceAccountToken?: ServiceAccountTokenProjection;
  clusterTrustBundle?: Record<string, unknown>;
  podCertificate?: Record<string, unknown>;
}

/** The node affinity rules of a pod. */
export interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: Record<string, unknown>;
  preferredDuringSchedulingIgnoredDuringExecution?: Record<string, unknown>[];
}

/** Scheduling constraints: node affinity, pod affinity and anti-affinity. */
export interface Affinity {
  nodeAffinity?: NodeAffinity;
  podAffinity?: Record<string, unknown>;
  podAntiAffinity?: Record<string, unknown>;
}

/** The operating system a pod is meant for (`linux` or `windows`). */
export interface PodOS {
  name: string;
}

/** The desired state of a pod (every field of the API's v1.36 `PodSpec`). */
export interface PodSpec {
  volumes?: Volume[];
  initContainers?: Container[];
  containers: Container[];
  ephemeralContainers?: Record<string, unknown>[];
  restartPolicy?: RestartPolicy;
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  dnsPolicy?: string;
  nodeSelector?: Record<string, string>;
  serviceAccountName?: string;
  /** Deprecated alias of `serviceAccountName`. */
  serviceAccount?: string;
  automountServiceAccountToken?: boolean;
  nodeName?: string;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  shareProcessNamespace?: boolean;
  securityContext?: PodSecurityContext;
  imagePullSecrets?: Record<string, unknown>[];
  hostname?: string;
  subdomain?: string;
  affinity?: Affinity;
  schedulerName?: string;
  tolerations?: Toleration[];
  hostAliases?: HostAlias[];
  priorityClassName?: string;
  priority?: number;
  dnsConfig?: PodDNSConfig;
  readinessGates?: PodReadinessGate[];
  runtimeClassName?: string;
  enableServiceLinks?: boolean;
  preemptionPolicy?: string;
  overhead?: ResourceList;
  topologySpreadConstraints?: Record<string, unknown>[];
  setHostnameAsFQDN?: boolean;
  os?: PodOS;
  hostUsers?: boolean;
  schedulingGates?: Record<string, unknown>[];
  resourceClaims?: Record<string, unknown>[];
  resources?: ResourceRequirements;
  hostnameOverride?: string;
  schedulingGroup?: Record<string, unknown>;
}

/** `NoSchedule`, `PreferNoSchedule` or `NoExecute`. */
export type TaintEffect = "NoSchedule" | "PreferNoSchedule" | "NoExecute";

/** A pod's toleration of node taints. `operator` is `Equal` (default) or `Exists`. */
export interface Toleration {
  key?: string;
  operator?: "Equal" | "Exists";
  value?: string;
  effect?: TaintEffect | "";
  tolerationSeconds?: number;
}

/** `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`. */
export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";

/** `True`, `False` or `Unknown`. */
export type ConditionStatus = "True" | "False" | "Unknown";

/** One condition of a pod (`Ready`, `ContainersReady`, ...). */
export interface PodCondition {
  type: string;
  status: ConditionStatus;
  observedGeneration?: number;
  lastProbeTime?: string | null;
  lastTransitionTime?: string | null;
  reason?: string;
  message?: string;
}

/** A waiting container. */
export interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}

/** A running container; `startedAt` is RFC 3339. */
export interface ContainerStateRunning {
  startedAt?: string;
}

/** A terminated container. */
export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}

/** At most one of the three is set. */
export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

/** The observed state of one container. */
export interface ContainerStatus {
  name: string;
  state?: ContainerState;
  lastState?: ContainerState;
  ready: boolean;
  restartCount: number;
  image?: string;
  imageID?: string;
  /** `<type>://<id>`, e.g. `containerd://0123abcd`. */
  containerID?: string;
  started?: boolean;
  /** The container's volume mounts as the node made them. */
  volumeMounts?: VolumeMountStatus[];
}

/** One volume mount of a container as made (`containerStatuses[].volumeMounts`). */
export interface VolumeMountStatus {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  /** Set on read-only mounts: `Disabled` or `Enabled` (never `IfPossible`). */
  recursiveReadOnly?: "Disabled" | "Enabled";
}

/** The observed state of a pod. */
export interface PodStatus {
  phase?: PodPhase;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  podIP?: string;
  podIPs?: PodIP[];
  hostIPs?: HostIP[];
  nominatedNodeName?: string;
  qosClass?: string;
  observedGeneration?: number;
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
}

/** One IP of a pod (`status.podIPs`, merged by `ip`). */
export interface PodIP {
  ip: string;
}

/** One IP of the pod's host (`status.hostIPs`, merged by `ip`). */
export interface HostIP {
  ip: string;
}

/** A pod. */
export interface Pod extends TypeMeta {
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

/** A reference to an object, with a field path inside it (used as an event's target). */
export interface ObjectReference {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiVersion?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

/** A list of pods as LIST returns it (items carry no `kind`/`apiVersion`). */
export interface PodList extends TypeMeta {
  metadata: ListMeta;
  items: Pod[];
}

/** Assigns a pod to a node (`pods/<name>/binding`). */
export interface Binding extends TypeMeta {
  metadata: ObjectMeta;
  target: ObjectReference;
}

/** A node taint: pods that do not tolerate it are kept off (or evicted, for `NoExecute`). */
export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  /** RFC 3339; only for `NoExecute` taints added by the node controller. */
  timeAdded?: Time;
}

/** The desired state of a node. */
export interface NodeSpec {
  podCIDR?: string;
  podCIDRs?: string[];
  providerID?: string;
  unschedulable?: boolean;
  taints?: Taint[];
  externalID?: string;
}

/** `Ready`, `MemoryPressure`, `DiskPressure`, `PIDPressure`, `NetworkUnavailable`, ... */
export type NodeConditionType = string;

/** One condition of a node (merged by `type` in a strategic merge patch). */
export interface NodeCondition {
  type: NodeConditionType;
  status: ConditionStatus;
  lastHeartbeatTime?: Time | null;
  lastTransitionTime?: Time | null;
  reason?: string;
  message?: string;
}

/** `Hostname`, `InternalIP`, `ExternalIP`, `InternalDNS` or `ExternalDNS`. */
export type NodeAddressType =
  | "Hostname"
  | "InternalIP"
  | "ExternalIP"
  | "InternalDNS"
  | "ExternalDNS";

/** One address of a node. */
export interface NodeAddress {
  type: NodeAddressType;
  address: string;
}

/** A port one of the node's daemons listens on. */
export interface DaemonEndpoint {
  Port: number;
}

/** Ports of the node's daemons (`kubeletEndpoint.Port`: the field name is capitalised on the wire). */
export interface NodeDaemonEndpoints {
  kubeletEndpoint?: DaemonEndpoint;
}

/** Facts about the node's machine and software. */
export interface NodeSystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  kubeProxyVersion?: string;
  operatingSystem: string;
  architecture: string;
  /** Newer servers add fields here (swap, features); they pass through untouched. */
  [field: string]: unknown;
}

/** An image present on the node. */
export interface ContainerImage {
  names?: string[];
  sizeBytes?: number;
}

/** A container runtime handler the node offers. */
export interface NodeRuntimeHandler {
  name?: string;
  features?: Record<string, unknown>;
}

/** The observed state of a node. */
export interface NodeStatus {
  capacity?: ResourceList;
  allocatable?: ResourceList;
  /** Deprecated upstream; kept for wire fidelity. */
  phase?: string;
  conditions?: NodeCondition[];
  addresses?: NodeAddress[];
  daemonEndpoints?: NodeDaemonEndpoints;
  nodeInfo?: NodeSystemInfo;
  images?: ContainerImage[];
  volumesInUse?: string[];
  volumesAttached?: Record<string, unknown>[];
  config?: Record<string, unknown>;
  runtimeHandlers?: NodeRuntimeHandler[];
  features?: Record<string, unknown>;
}

/** A node. */
export interface Node extends TypeMeta {
  metadata: ObjectMeta;
  spec?: NodeSpec;
  status?: NodeStatus;
}

/** A list of nodes as LIST returns it. */
export interface NodeList extends TypeMeta {
  metadata: ListMeta;
  items: Node[];
}

/** Which component on which host produced an event. */
export interface EventSource {
  component?: string;
  host?: string;
}

/** Data about a series of events (events.k8s.io-style; core/v1 events from kubelet leave it unset). */
export interface EventSeries {
  count?: number;
  lastObservedTime?: string;
}

/** A core/v1 Event, as client-go's recorder writes it. */
export interface Event extends TypeMeta {
  metadata: ObjectMeta;
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  source?: EventSource;
  firstTimestamp?: Time | null;
  lastTimestamp?: Time | null;
  count?: number;
  /** `Normal` or `Warning`. */
  type?: string;
  /** MicroTime; null on events written by the core/v1 recorder. */
  eventTime?: string | null;
  series?: EventSeries;
  action?: string;
  related?: ObjectReference;
  reportingComponent?: string;
  reportingInstance?: string;
}

/** A list of events as LIST returns it. */
export interface EventList extends TypeMeta {
  metadata: ListMeta;
  items: Event[];
}
