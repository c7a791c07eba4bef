/**
 * coordination.k8s.io/v1 API types (Lease).
 * @module
 */
export { type Lease, type LeaseList, type LeaseSpec } from "./types.ts";
