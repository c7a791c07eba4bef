/**
 * core/v1 API types used by probelet.
 * @module
 */
export * from "./types.ts";
export * from "./volume_types.ts";
export * from "./service_types.ts";
