/**
 * The subset of Kubernetes' core/v1 Pod API that probelet uses, with the API's JSON field names so a
 * YAML or JSON manifest maps onto these types directly.
 * Mirrors k8s.io/api/core/v1/types.go.
 * @module
 */

/** An int or a string, as the API's `intstr.IntOrString` (JSON: a number or a string). */
export type IntOrString = number | string;

/** Standard object metadata (the fields probelet reads). */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** RFC 3339 time at which graceful deletion was requested. */
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
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
  valueFrom?: Record<string, unknown>;
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

/** A container of a pod. */
export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  restartPolicy?: ContainerRestartPolicy;
  imagePullPolicy?: string;
  /** Where the container writes its termination message (default `/dev/termination-log`). */
  terminationMessagePath?: string;
  /** `File` (default) or `FallbackToLogsOnError`. */
  terminationMessagePolicy?: string;
}

/** A pod readiness gate. */
export interface PodReadinessGate {
  conditionType: string;
}

/** The desired state of a pod. */
export interface PodSpec {
  initContainers?: Container[];
  containers: Container[];
  restartPolicy?: RestartPolicy;
  terminationGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  nodeName?: string;
  readinessGates?: PodReadinessGate[];
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
  lastTransitionTime?: string;
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
}

/** The observed state of a pod. */
export interface PodStatus {
  phase?: PodPhase;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
}

/** A pod. */
export interface Pod {
  apiVersion?: string;
  kind?: string;
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
  fieldPath?: string;
}
