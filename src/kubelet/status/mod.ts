/**
 * The pod status cache and the pod conditions it computes.
 * @module
 */
export * from "./status_manager.ts";
export * from "./generate.ts";
