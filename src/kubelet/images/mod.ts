/**
 * Kubelet's image manager: pulls by `imagePullPolicy` with pull secrets' credentials, its events,
 * back-off and waiting reasons.
 *
 * @example
 * ```ts
 * import { newImageManager } from "./src/kubelet/images/mod.ts";
 * const images = newImageManager({ recorder, imageService, backOff, clock });
 * ```
 * @module
 */
export * from "./types.ts";
export * from "./image_manager.ts";
export * from "./puller.ts";
export * from "./pullmanager/image_pull_manager.ts";
