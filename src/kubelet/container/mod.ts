/**
 * Container-level types shared by the prober and the runtime: IDs, the command runner, references.
 * @module
 */
export * from "./container_id.ts";
export * from "./command_runner.ts";
export * from "./ref.ts";
export * from "./expansion.ts";
export * from "./podutil.ts";
