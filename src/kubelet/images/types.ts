/**
 * The image manager's errors (their names are the container's waiting reasons) and its interface.
 * Mirrors kubelet's pkg/kubelet/images/types.go (and cri-api's pkg/errors for the registry and
 * signature errors runtimes report).
 * @module
 */
import type { ObjectReference, Pod } from "../../api/core/v1/mod.ts";
import type { PodSandboxConfig } from "../../cri_client/api.ts";
import type { Secret } from "../../credentialprovider/keyring.ts";

/** The pull failed and kubelet is backing off before the next one. */
export const ErrImagePullBackOff = "ImagePullBackOff";
/** The image could not be inspected. */
export const ErrImageInspect = "ImageInspectError";
/** A pull failed for any other reason. */
export const ErrImagePull = "ErrImagePull";
/** The image is absent and the pull policy is `Never`. */
export const ErrImageNeverPull = "ErrImageNeverPull";
/** The image name does not parse. */
export const ErrInvalidImageName = "InvalidImageName";
/** The runtime says the registry is unavailable (cri-api `ErrRegistryUnavailable`). */
export const ErrRegistryUnavailable = "RegistryUnavailable";
/** The runtime says the image's signature did not validate (cri-api). */
export const ErrSignatureValidationFailed = "SignatureValidationFailed";

/** What `ensureImageExists` answers: the image reference, or the error and its message. */
export interface EnsureImageResult {
  imageRef: string;
  /** The message for the container's waiting state (and, on success, the event text). */
  message: string;
  /** One of the `Err*` reasons above, or undefined on success. */
  error?: string;
}

/** Arguments of `ensureImageExists` besides the pod. */
export interface EnsureImageOptions {
  /** The container's reference for events (`spec.containers{name}`). */
  objRef: ObjectReference;
  requestedImage: string;
  pullSecrets: Secret[];
  podSandboxConfig?: PodSandboxConfig;
  podRuntimeHandler?: string;
  /** The container's `imagePullPolicy`, already defaulted. */
  pullPolicy: string;
}

/** Kubelet's `ImageManager`: makes sure a container's image is there before it is created. */
export interface ImageManager {
  /** Pulls the image as the pull policy says; resolves with its reference or the failure. */
  ensureImageExists(pod: Pod, options: EnsureImageOptions): Promise<EnsureImageResult>;
}
