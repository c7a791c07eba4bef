/**
 * Node status: the setters kubelet runs on every status sync and the status patch it sends.
 *
 * @example
 * ```ts
 * import { patchNodeStatus, readyCondition } from "./mod.ts";
 * ```
 * @module
 */
export * from "./setters.ts";
export * from "./patch.ts";
