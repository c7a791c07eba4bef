/**
 * A CRI v1 client: typed messages, the `RuntimeService` / `ImageManagerService` interfaces, and their
 * gRPC implementations for unix-socket endpoints.
 *
 * @example
 * ```ts
 * import { newRemoteRuntimeService } from "./src/cri_client/mod.ts";
 * const runtime = await newRemoteRuntimeService("unix:///run/containerd/containerd.sock");
 * const { status } = await runtime.containerStatus(id);
 * runtime.close();
 * ```
 * @module
 */
export * from "./api.ts";
export * from "./runtime_service.ts";
export { CriError, GrpcCode, grpcCode, grpcCodeName, parseEndpoint } from "./connection.ts";
export type { ConnectionOptions, Endpoint } from "./connection.ts";
export { defaultConnectTimeoutMs, defaultRequestTimeoutMs } from "./connection.ts";
export {
  kubeRuntimeAPIVersion,
  newRemoteRuntimeService,
  RemoteRuntimeService,
} from "./remote_runtime.ts";
export { newRemoteImageService, RemoteImageService } from "./remote_image.ts";
