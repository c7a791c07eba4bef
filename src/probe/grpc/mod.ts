/**
 * The gRPC health probe handler.
 * @module
 */
export { type GrpcProber, newGrpcProber, type ServingStatus } from "./grpc.ts";
