/**
 * The CRI v1 messages probelet exchanges with a container runtime, as TypeScript types: the subset of
 * `runtime.v1` that `proto/runtime/v1/api.proto` declares, with camelCase field names.
 * Mirrors k8s.io/cri-api/pkg/apis/runtime/v1 (api.proto / api.pb.go).
 *
 * Conventions: int64 nanosecond timestamps are `bigint` (they do not fit a double); enums keep the
 * proto's value names as string unions; maps are plain records. Request-side types mark every field
 * optional, as proto3 does; response-side types carry proto3's zero values, so scalars are always set.
 * @module
 */

/** Answer of `Version`. */
export interface VersionResponse {
  /** Version of the kubelet runtime API (`0.1.0` for CRI v1). */
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** A condition of the runtime: `RuntimeReady` or `NetworkReady` (CRI RuntimeCondition). */
export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

/** The runtime's health, CRI `StatusResponse` (`info` only with `verbose`). */
export interface StatusResponse {
  status: { conditions: RuntimeCondition[] };
  info: Record<string, string>;
}

/** Identifies a sandbox: the pod's name, UID and namespace, plus the creation attempt. */
export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt?: number;
}

/** DNS servers, search domains and resolver options of a sandbox. */
export interface DNSConfig {
  servers?: string[];
  searches?: string[];
  options?: string[];
}

/** CRI's port protocol. */
export type Protocol = "TCP" | "UDP" | "SCTP";

/** A container port published on the host. */
export interface PortMapping {
  protocol?: Protocol;
  containerPort?: number;
  hostPort?: number;
  hostIp?: string;
}

/** Which namespace a sandbox or container joins. */
export type NamespaceMode = "POD" | "CONTAINER" | "NODE" | "TARGET";

/** Linux namespace choices of a sandbox or container. */
export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  targetId?: string;
}

/** Which seccomp profile applies: the runtime's default, none, or a file on the node. */
export type SecurityProfileType = "RuntimeDefault" | "Unconfined" | "Localhost";

/** A seccomp profile (CRI `SecurityProfile`); `localhostRef` is the profile's absolute path. */
export interface SecurityProfile {
  profileType: SecurityProfileType;
  localhostRef?: string;
}

/** Sandbox-level Linux security settings (the subset probelet sets). */
export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOption;
  runAsUser?: { value: bigint | number };
  runAsGroup?: { value: bigint | number };
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  privileged?: boolean;
  seccomp?: SecurityProfile;
}

/**
 * cgroup settings of a container or a sandbox (CRI `LinuxContainerResources`): CFS period and quota
 * in microseconds (quota 0 = unlimited), relative cpu shares, the memory limit in bytes (0 = none)
 * and the OOM score adjustment of its processes.
 */
export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  cpusetCpus?: string;
  cpusetMems?: string;
  /** cgroup v2 files (`memory.oom.group`); only on a cgroup v2 host. */
  unified?: Record<string, string>;
  memorySwapLimitInBytes?: number;
}

/** Linux-specific sandbox configuration. */
export interface LinuxPodSandboxConfig {
  cgroupParent?: string;
  securityContext?: LinuxSandboxSecurityContext;
  sysctls?: Record<string, string>;
  /** The pod's overhead (`spec.overhead`) as resources. */
  overhead?: LinuxContainerResources;
  /** The pod's summed requests and limits, overhead excluded. */
  resources?: LinuxContainerResources;
}

/** Everything needed to create a sandbox (`RunPodSandbox`). */
export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  /** Must stay empty for host-network sandboxes (runc refuses a hostname without a UTS namespace). */
  hostname?: string;
  logDirectory?: string;
  dnsConfig?: DNSConfig;
  portMappings?: PortMapping[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: LinuxPodSandboxConfig;
}

/** `SANDBOX_READY` or `SANDBOX_NOTREADY`. */
export type PodSandboxState = "SANDBOX_READY" | "SANDBOX_NOTREADY";

/** The sandbox's network: its primary IP and any additional ones. */
export interface PodSandboxNetworkStatus {
  ip: string;
  additionalIps: { ip: string }[];
}

/** The status of one sandbox (`PodSandboxStatus`). */
export interface PodSandboxStatus {
  id: string;
  metadata: Required<PodSandboxMetadata>;
  state: PodSandboxState;
  /** Creation time in nanoseconds since the epoch. */
  createdAt: bigint;
  network?: PodSandboxNetworkStatus;
  linux?: { namespaces?: { options?: NamespaceOption } };
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

/** Answer of `PodSandboxStatus`. */
export interface PodSandboxStatusResponse {
  status: PodSandboxStatus;
  /** Verbose debugging information (JSON values), only when asked for. */
  info: Record<string, string>;
  /** Filled only by runtimes that support evented PLEG; containerd 1.6 leaves it empty. */
  containersStatuses: ContainerStatus[];
  /** Nanoseconds; 0 when the runtime does not set it. */
  timestamp: bigint;
}

/** Selects sandboxes for `ListPodSandbox`; all set fields must match. */
export interface PodSandboxFilter {
  id?: string;
  state?: PodSandboxState;
  labelSelector?: Record<string, string>;
}

/** One entry of `ListPodSandbox`. */
export interface PodSandbox {
  id: string;
  metadata: Required<PodSandboxMetadata>;
  state: PodSandboxState;
  createdAt: bigint;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

/** An image reference as the runtime sees it. */
export interface ImageSpec {
  image: string;
  annotations?: Record<string, string>;
  userSpecifiedImage?: string;
  runtimeHandler?: string;
}

/** An environment variable of a container. */
export interface KeyValue {
  key: string;
  value: string;
}

/** Mount propagation of a host path. */
export type MountPropagation =
  | "PROPAGATION_PRIVATE"
  | "PROPAGATION_HOST_TO_CONTAINER"
  | "PROPAGATION_BIDIRECTIONAL";

/** A host path mounted into a container. */
export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  selinuxRelabel?: boolean;
  propagation?: MountPropagation;
}

/** Identifies a container in its sandbox: (name, attempt) is unique for the sandbox's lifetime. */
export interface ContainerMetadata {
  name: string;
  attempt?: number;
}

/** Capabilities added to and dropped from the runtime's default set (names without `CAP_`, or `ALL`). */
export interface Capability {
  addCapabilities?: string[];
  dropCapabilities?: string[];
}

/** Container-level Linux security settings (the subset probelet sets). */
export interface LinuxContainerSecurityContext {
  capabilities?: Capability;
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: { value: bigint | number };
  runAsGroup?: { value: bigint | number };
  /** The image's non-numeric user, when no uid is set. */
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  /** Sets the process's no_new_privs bit. */
  noNewPrivs?: boolean;
  /** Paths masked in the container (/proc entries); empty = the runtime's default. */
  maskedPaths?: string[];
  /** Paths mounted read-only in the container. */
  readonlyPaths?: string[];
  seccomp?: SecurityProfile;
}

/** Linux-specific container configuration. */
export interface LinuxContainerConfig {
  resources?: LinuxContainerResources;
  securityContext?: LinuxContainerSecurityContext;
}

/** Everything needed to create a container (`CreateContainer`). */
export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Relative to the sandbox's `logDirectory`. */
  logPath?: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: LinuxContainerConfig;
}

/** CRI container states. */
export type ContainerState =
  | "CONTAINER_CREATED"
  | "CONTAINER_RUNNING"
  | "CONTAINER_EXITED"
  | "CONTAINER_UNKNOWN";

/** Selects containers for `ListContainers`; all set fields must match. */
export interface ContainerFilter {
  id?: string;
  state?: ContainerState;
  podSandboxId?: string;
  labelSelector?: Record<string, string>;
}

/** One entry of `ListContainers`. */
export interface Container {
  id: string;
  podSandboxId: string;
  metadata: Required<ContainerMetadata>;
  image?: ImageSpec;
  imageRef: string;
  state: ContainerState;
  /** Nanoseconds since the epoch. */
  createdAt: bigint;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  imageId: string;
}

/** The status of one container (`ContainerStatus`). Times are nanoseconds since the epoch; 0 = unset. */
export interface ContainerStatus {
  id: string;
  metadata: Required<ContainerMetadata>;
  state: ContainerState;
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  /** Meaningful only when `finishedAt` is set. */
  exitCode: number;
  image?: ImageSpec;
  imageRef: string;
  /** CamelCase reason, e.g. `Completed`, `Error`, `OOMKilled`. */
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: Mount[];
  logPath: string;
  imageId: string;
}

/** Answer of `ContainerStatus`. */
export interface ContainerStatusResponse {
  status: ContainerStatus;
  info: Record<string, string>;
}

/** What `ExecSync` captured from a command that ran to completion with exit code 0. */
export interface ExecSyncResult {
  stdout: Uint8Array;
  stderr: Uint8Array;
}

/** CRI `ExecRequest`: a command to run in a container over the runtime's streaming server. */
export interface ExecRequest {
  containerId: string;
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  /** Runtimes ignore it with `tty` (one stream carries both outputs). */
  stderr: boolean;
}

/** CRI `AttachRequest`: the streams of a container's main process to connect to. */
export interface AttachRequest {
  containerId: string;
  stdin: boolean;
  /** Must match the container's own `tty`. */
  tty: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** CRI `PortForwardRequest`: ports of a sandbox's network namespace. */
export interface PortForwardRequest {
  podSandboxId: string;
  /** The ports asked for up front (none for SPDY: each stream names its port). */
  port: number[];
}

/**
 * Answer of `Exec`, `Attach` and `PortForward`: where the runtime's streaming server serves the
 * request (a single-use URL, e.g. `http://127.0.0.1:35007/exec/Xk3b9aQe`).
 */
export interface StreamingResponse {
  url: string;
}

/** Selects images for `ListImages`. */
export interface ImageFilter {
  image?: ImageSpec;
}

/** An image stored by the runtime. */
export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  /** Bytes. */
  size: bigint;
  uid?: { value: bigint };
  username: string;
  spec?: ImageSpec;
  pinned: boolean;
}

/**
 * Credentials for one registry, passed with `PullImage` (CRI `AuthConfig`): a user name and
 * password, or the base64 `auth` pair of a docker config, or a token.
 */
export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

/** Answer of `ImageStatus`: `image` is undefined when the runtime does not have it. */
export interface ImageStatusResponse {
  image?: Image;
  info: Record<string, string>;
}
