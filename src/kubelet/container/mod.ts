/**
 * Container-level types and helpers shared by the prober, PLEG and the runtime manager (kubelet's
 * pkg/kubelet/container): IDs, the command runner, references, runtime pod status, helpers.
 * @module
 */
export * from "./container_id.ts";
export * from "./command_runner.ts";
export * from "./ref.ts";
export * from "./expansion.ts";
export * from "./podutil.ts";
export * from "./runtime.ts";
export * from "./helpers.ts";
