/**
 * coordination.k8s.io/v1 API types (Lease).
 * @module
 */
export * from "./types.ts";
