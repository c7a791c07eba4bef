/**
 * Probe results caches and their update streams.
 * @module
 */
export * from "./results_manager.ts";
