/**
 * The checks kubelet makes on a CRI call's error.
 * Mirrors k8s.io/cri-api/pkg/errors/errors.go.
 * @module
 */
import { GrpcStatus } from "../util/grpc_codes.ts";

/**
 * Whether a CRI call failed because the sandbox, container or image does not exist: its gRPC
 * status code is NotFound (Go's `IsNotFound`).
 *
 * @example
 * ```ts
 * isNotFound(Object.assign(new Error("no such container"), { code: 5 })); // true
 * isNotFound(new Error("timeout")); // false
 * ```
 */
export function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === GrpcStatus.NotFound;
}
