/**
 * A CRI v1 client: typed messages, the `RuntimeService` / `ImageManagerService` interfaces, and their
 * gRPC implementations for unix-socket endpoints.
 *
 * @example
 * ```ts
 * import { newRemoteRuntimeService } from "./mod.ts";
 *
 * declare const id: string;
 * const runtime = await newRemoteRuntimeService("unix:///run/containerd/containerd.sock");
 * const { status } = await runtime.containerStatus(id);
 * runtime.close();
 * ```
 * @module
 */
export {
  type AuthConfig,
  type Capability,
  type Container,
  type ContainerConfig,
  type ContainerFilter,
  type ContainerMetadata,
  type ContainerState,
  type ContainerStatus,
  type ContainerStatusResponse,
  type DNSConfig,
  type ExecSyncResult,
  type Image,
  type ImageFilter,
  type ImageSpec,
  type ImageStatusResponse,
  type KeyValue,
  type LinuxContainerConfig,
  type LinuxContainerResources,
  type LinuxContainerSecurityContext,
  type LinuxPodSandboxConfig,
  type LinuxSandboxSecurityContext,
  type Mount,
  type MountPropagation,
  type NamespaceMode,
  type NamespaceOption,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxMetadata,
  type PodSandboxNetworkStatus,
  type PodSandboxState,
  type PodSandboxStatus,
  type PodSandboxStatusResponse,
  type PortMapping,
  type Protocol,
  type RuntimeCondition,
  type SecurityProfile,
  type SecurityProfileType,
  type StatusResponse,
  type VersionResponse,
} from "./api.ts";
export {
  type CallOptions,
  type ContainerStats,
  type ImageManagerService,
  type RuntimeService,
} from "./runtime_service.ts";
export { CriError, GrpcCode, grpcCode, grpcCodeName, parseEndpoint } from "./connection.ts";
export type { ConnectionOptions, Endpoint } from "./connection.ts";
export { defaultConnectTimeoutMs, defaultRequestTimeoutMs } from "./connection.ts";
export {
  kubeRuntimeAPIVersion,
  newRemoteRuntimeService,
  RemoteRuntimeService,
} from "./remote_runtime.ts";
export { newRemoteImageService, RemoteImageService } from "./remote_image.ts";
