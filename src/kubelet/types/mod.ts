/**
 * Types shared by the kubelet's pod sources, pod manager and status manager.
 * @module
 */
export * from "./pod_update.ts";
