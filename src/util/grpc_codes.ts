/**
 * gRPC status code names as Go prints them (`codes.Code.String()`), shared by the gRPC probe and
 * the CRI client so their error texts read like grpc-go's.
 * @module
 */

// Indexed by the numeric status code.
const goCodeNames = [
  "OK",
  "Canceled",
  "Unknown",
  "InvalidArgument",
  "DeadlineExceeded",
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "ResourceExhausted",
  "FailedPrecondition",
  "Aborted",
  "OutOfRange",
  "Unimplemented",
  "Internal",
  "Unavailable",
  "DataLoss",
  "Unauthenticated",
] as const;

/**
 * Go's name of a gRPC status code; unknown codes print as `Code(N)`, as in grpc-go.
 *
 * @example
 * ```ts
 * grpcCodeName(4); // "DeadlineExceeded"
 * ```
 */
export function grpcCodeName(code: number): string {
  return goCodeNames[code] ?? `Code(${code})`;
}

/** The gRPC status codes by Go's names (google.golang.org/grpc/codes). */
export const GrpcStatus = {
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;
