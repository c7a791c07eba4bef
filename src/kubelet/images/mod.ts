/**
 * Kubelet's image manager: pulls by `imagePullPolicy` with pull secrets' credentials, its events,
 * back-off and waiting reasons.
 *
 * @example
 * ```ts
 * import { type ImageManagerOptions, newImageManager } from "./mod.ts";
 *
 * declare const options: ImageManagerOptions;
 * const { recorder, imageService, backOff, clock } = options;
 * const images = newImageManager({ recorder, imageService, backOff, clock });
 * ```
 * @module
 */
export {
  type EnsureImageOptions,
  type EnsureImageResult,
  ErrImageInspect,
  ErrImageNeverPull,
  ErrImagePull,
  ErrImagePullBackOff,
  ErrInvalidImageName,
  ErrRegistryUnavailable,
  ErrSignatureValidationFailed,
  type ImageManager,
} from "./types.ts";
export {
  applyDefaultImageTag,
  BackOffPullImage,
  ErrImageNeverPullPolicy,
  evalCRIPullErr,
  FailedToInspectImage,
  FailedToPullImage,
  ImageManagerImpl,
  type ImageManagerOptions,
  newImageManager,
  PulledImage,
  PullingImage,
} from "./image_manager.ts";
export {
  type ImagePuller,
  type ImagePullService,
  maxImagePullRequests,
  newParallelImagePuller,
  newSerialImagePuller,
  type PullResult,
} from "./puller.ts";
export {
  type ImagePullCredentials,
  ImagePullManager,
  type ImagePullSecret,
} from "./pullmanager/image_pull_manager.ts";
