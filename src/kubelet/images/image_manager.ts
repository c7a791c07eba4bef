/**
 * The image manager: before a container is created, make sure its image is there as the pull
 * policy says, with kubelet's events (`Pulling`, `Pulled`, `Failed`, `BackOff`,
 * `ErrImageNeverPull`, `InspectFailed`), its per pod-and-image pull back-off, and pull secrets
 * turned into registry credentials.
 * Mirrors kubelet's pkg/kubelet/images/image_manager.go (v1.36: the pull-records check of
 * KubeletEnsureSecretPulledImages included).
 * @module
 */
import type { ObjectReference, Pod } from "../../api/core/v1/mod.ts";
import type { ImageSpec, PodSandboxConfig } from "../../cri_client/api.ts";
import {
  BasicDockerKeyring,
  type DockerKeyring,
  makeDockerKeyring,
  type TrackedAuthConfig,
} from "../../credentialprovider/keyring.ts";
import type { Clock } from "../../util/clock.ts";
import type { Backoff } from "../../util/flowcontrol/backoff.ts";
import type { RateLimiter } from "../../util/flowcontrol/throttle.ts";
import { goDuration, goQuote } from "../../util/go_format.ts";
import { parseImageName } from "../../util/parsers/parsers.ts";
import type { EventRecorder, EventType } from "../events/mod.ts";
import {
  type ImagePullCredentials,
  ImagePullManager,
  type ImagePullSecret,
} from "./pullmanager/image_pull_manager.ts";
import {
  type ImagePuller,
  type ImagePullService,
  newParallelImagePuller,
  newSerialImagePuller,
} from "./puller.ts";
import {
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
import { errorText } from "../../util/errors.ts";

/** Event reasons of the image manager (kubelet's pkg/kubelet/events). */
export const PullingImage = "Pulling";
/** See {@linkcode PullingImage}. */
export const PulledImage = "Pulled";
/** See {@linkcode PullingImage}. */
export const FailedToPullImage = "Failed";
/** See {@linkcode PullingImage}. */
export const FailedToInspectImage = "InspectFailed";
/** See {@linkcode PullingImage}. */
export const ErrImageNeverPullPolicy = "ErrImageNeverPull";
/** See {@linkcode PullingImage}. */
export const BackOffPullImage = "BackOff";

/** What the image manager works with. */
export interface ImageManagerOptions {
  recorder: EventRecorder;
  /** The runtime's images: presence, pulls, sizes. */
  imageService: ImagePullService & { getImageRef(image: ImageSpec): Promise<string> };
  /** The pull back-off (kubelet: 10 s doubling to 300 s), keyed `<pod UID>_<image>`. */
  backOff: Backoff;
  clock: Clock;
  /** One pull at a time (kubelet's `--serialize-image-pulls`, default true). */
  serialized?: boolean;
  /** With parallel pulls: at most this many at once (`--max-parallel-image-pulls`). */
  maxParallelImagePulls?: number;
  /** Pull rate limit (`--registry-qps` 5, `--registry-burst` 10); none when undefined. */
  limiter?: RateLimiter;
  /** Credentials every pod of the node may use (kubelet's node keyring: none here). */
  nodeKeyring?: DockerKeyring;
  /** Pull records (default: a fresh in-memory one). */
  imagePullManager?: ImagePullManager;
}

/**
 * Kubelet's image manager.
 *
 * @example
 * ```ts
 * import type { ObjectReference, Pod } from "../../api/core/v1/mod.ts";
 * import type { EventRecorder } from "../events/event.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const recorder: EventRecorder;
 * declare const imageService: ImageManagerOptions["imageService"];
 * declare const backOff: ImageManagerOptions["backOff"];
 * declare const clock: Clock;
 * declare const pod: Pod;
 * declare const objRef: ObjectReference;
 *
 * const images = newImageManager({ recorder, imageService, backOff, clock });
 * const r = await images.ensureImageExists(pod, { objRef, requestedImage: "reg/app:1",
 *   pullSecrets: [], pullPolicy: "IfNotPresent" });
 * r.error; // undefined, or "ErrImagePull", "ImagePullBackOff", ...
 * ```
 */
export function newImageManager(options: ImageManagerOptions): ImageManagerImpl {
  return new ImageManagerImpl(options);
}

/** See {@linkcode newImageManager}. */
export class ImageManagerImpl implements ImageManager {
  readonly #recorder: EventRecorder;
  readonly #imageService: ImageManagerOptions["imageService"];
  readonly #backOff: Backoff;
  readonly #clock: Clock;
  readonly #puller: ImagePuller;
  readonly #nodeKeyring: DockerKeyring;
  readonly imagePullManager: ImagePullManager;
  readonly #prevPullErrMsg = new Map<string, string>();

  constructor(options: ImageManagerOptions) {
    this.#recorder = options.recorder;
    this.#imageService = options.imageService;
    this.#backOff = options.backOff;
    this.#clock = options.clock;
    this.#nodeKeyring = options.nodeKeyring ?? new BasicDockerKeyring();
    this.imagePullManager = options.imagePullManager ?? new ImagePullManager();
    const service = throttleImagePulling(options.imageService, options.limiter);
    this.#puller = options.serialized ?? true
      ? newSerialImagePuller(service, { clock: options.clock })
      : newParallelImagePuller(service, {
        clock: options.clock,
        maxParallelImagePulls: options.maxParallelImagePulls,
      });
  }

  #logIt(objRef: ObjectReference, type: EventType, reason: string, message: string): void {
    this.#recorder.event(objRef, { type, reason, message });
  }

  // The pull policy decides whether presence is looked up at all; `Never` without the image fails.
  async #imagePullPrecheck(
    objRef: ObjectReference,
    pullPolicy: string,
    spec: ImageSpec,
    requestedImage: string,
  ): Promise<EnsureImageResult> {
    let imageRef = "";
    if (pullPolicy === "IfNotPresent" || pullPolicy === "Never") {
      try {
        imageRef = await this.#imageService.getImageRef(spec);
      } catch (e) {
        // kubelet quotes the (empty) image ref here, not the image.
        const message = `Failed to inspect image ${goQuote(imageRef)}: ${errorText(e)}`;
        this.#logIt(objRef, "Warning", FailedToInspectImage, message);
        return { imageRef: "", message, error: ErrImageInspect };
      }
    }
    if (imageRef === "" && pullPolicy === "Never") {
      return this.#imageNotPresentOnNeverPolicyError(objRef, requestedImage);
    }
    return { imageRef, message: "" };
  }

  // Said the same way whether the image is absent or present but not accessible to the pod, so
  // as not to reveal the presence of an image the pod may not use.
  #imageNotPresentOnNeverPolicyError(
    objRef: ObjectReference,
    requestedImage: string,
  ): EnsureImageResult {
    const message = `Container image ${
      goQuote(requestedImage)
    } is not present with pull policy of Never`;
    this.#logIt(objRef, "Warning", ErrImageNeverPullPolicy, message);
    return { imageRef: "", message, error: ErrImageNeverPull };
  }

  /** Kubelet's `EnsureImageExists`. */
  async ensureImageExists(pod: Pod, options: EnsureImageOptions): Promise<EnsureImageResult> {
    const { objRef, requestedImage, pullPolicy } = options;
    let image: string;
    try {
      image = applyDefaultImageTag(requestedImage);
    } catch (e) {
      const message = `Failed to apply default image tag ${goQuote(requestedImage)}: ${
        errorText(e)
      }`;
      this.#logIt(objRef, "Warning", FailedToInspectImage, message);
      return { imageRef: "", message, error: ErrInvalidImageName };
    }
    const spec: ImageSpec = {
      image,
      annotations: { ...(pod.metadata.annotations ?? {}) },
      runtimeHandler: options.podRuntimeHandler ?? "",
    };
    const pre = await this.#imagePullPrecheck(objRef, pullPolicy, spec, requestedImage);
    if (pre.error) return pre;
    const imageRef = pre.imageRef;

    const { repoToPull } = parseImageName(spec.image);
    let keyring: DockerKeyring;
    try {
      keyring = makeDockerKeyring(options.pullSecrets, this.#nodeKeyring);
    } catch (e) {
      return { imageRef: "", message: errorText(e), error: errorText(e) };
    }
    const pullCredentials = keyring.lookup(repoToPull).credentials;

    if (imageRef !== "") {
      const secrets: ImagePullSecret[] = pullCredentials.filter((c) => c.source).map((c) => ({
        uid: c.source!.uid,
        name: c.source!.name,
        namespace: c.source!.namespace,
        credentialHash: c.authConfigHash,
      }));
      if (!this.imagePullManager.mustAttemptImagePull(requestedImage, imageRef, secrets)) {
        const message = `Container image ${
          goQuote(requestedImage)
        } already present on machine and can be accessed by the pod`;
        this.#logIt(objRef, "Normal", PulledImage, message);
        return { imageRef, message };
      }
    }
    if (pullPolicy === "Never") {
      // Present, but not accessible with the pod's credentials.
      return this.#imageNotPresentOnNeverPolicyError(objRef, requestedImage);
    }
    return await this.#pullImage(pod, objRef, requestedImage, spec, pullCredentials, options);
  }

  async #pullImage(
    pod: Pod,
    objRef: ObjectReference,
    image: string,
    spec: ImageSpec,
    pullCredentials: TrackedAuthConfig[],
    options: { podSandboxConfig?: PodSandboxConfig },
  ): Promise<EnsureImageResult> {
    const backOffKey = `${pod.metadata.uid ?? ""}_${image}`;
    if (this.#backOff.isInBackOffSinceUpdate(backOffKey, this.#clock.now())) {
      let message = `Back-off pulling image ${goQuote(image)}`;
      this.#logIt(objRef, "Normal", BackOffPullImage, message);
      // The last pull's error goes into the container's waiting message.
      const prev = this.#prevPullErrMsg.get(backOffKey);
      if (prev !== undefined) message = `${message}: ${prev}`;
      return { imageRef: "", message, error: ErrImagePullBackOff };
    }
    this.#prevPullErrMsg.delete(backOffKey);
    this.imagePullManager.recordPullIntent(image);
    let pulled: { imageRef: string; credentials: ImagePullCredentials } | undefined;
    try {
      this.#logIt(objRef, "Normal", PullingImage, `Pulling image ${goQuote(image)}`);
      const start = this.#clock.now();
      const result = await this.#puller.pullImage(spec, pullCredentials, options.podSandboxConfig);
      if (result.error) {
        this.#logIt(
          objRef,
          "Warning",
          FailedToPullImage,
          `Failed to pull image ${goQuote(image)}: ${errorText(result.error)}`,
        );
        this.#backOff.next(backOffKey, this.#clock.now());
        const { message, error } = evalCRIPullErr(image, result.error);
        this.#prevPullErrMsg.set(backOffKey, `${error}: ${message}`);
        return { imageRef: "", message, error };
      }
      const waitedMs = truncateMs(this.#clock.since(start));
      this.#logIt(
        objRef,
        "Normal",
        PulledImage,
        `Successfully pulled image ${goQuote(image)} in ${
          goDuration(truncateMs(result.pullDurationMs))
        } (${goDuration(waitedMs)} including waiting). Image size: ${result.imageSize} bytes.`,
      );
      this.#backOff.gc();
      pulled = {
        imageRef: result.imageRef,
        credentials: trackedToImagePullCreds(result.credentialsUsed),
      };
      return { imageRef: result.imageRef, message: "" };
    } finally {
      if (pulled) {
        this.imagePullManager.recordImagePulled(image, pulled.imageRef, pulled.credentials);
      } else this.imagePullManager.recordImagePullFailed(image);
    }
  }
}

/**
 * A runtime error to the waiting reason and message (kubelet's `evalCRIPullErr`): the registry
 * being unavailable and a failed signature check have reasons of their own; anything else is
 * `ErrImagePull` with the runtime's error text.
 */
export function evalCRIPullErr(image: string, err: Error): { message: string; error: string } {
  const text = err.message;
  if (text.startsWith(ErrRegistryUnavailable)) {
    return {
      message: `image pull failed for ${image} because the registry is unavailable${
        text.slice(ErrRegistryUnavailable.length)
      }`,
      error: ErrRegistryUnavailable,
    };
  }
  if (text.startsWith(ErrSignatureValidationFailed)) {
    return {
      message: `image pull failed for ${image} because the signature validation failed${
        text.slice(ErrSignatureValidationFailed.length)
      }`,
      error: ErrSignatureValidationFailed,
    };
  }
  return { message: text, error: ErrImagePull };
}

/**
 * Appends the default tag to an image with neither tag nor digest (`busybox` → `busybox:latest`),
 * without qualifying the name; throws for a name that does not parse.
 */
export function applyDefaultImageTag(image: string): string {
  const { tag, digest } = parseImageName(image);
  if (digest === "" && tag !== "" && !image.endsWith(":" + tag)) return `${image}:${tag}`;
  return image;
}

function trackedToImagePullCreds(creds?: TrackedAuthConfig): ImagePullCredentials {
  if (!creds?.source) return { nodePodsAccessible: true };
  return {
    kubernetesSecrets: [{
      uid: creds.source.uid,
      name: creds.source.name,
      namespace: creds.source.namespace,
      credentialHash: creds.authConfigHash,
    }],
  };
}

// kubelet's throttledImageService: past the rate limit a pull fails at once.
function throttleImagePulling(service: ImagePullService, limiter?: RateLimiter): ImagePullService {
  if (!limiter) return service;
  return {
    pullImage(image, credentials, podSandboxConfig) {
      if (!limiter.tryAccept()) return Promise.reject(new Error("pull QPS exceeded"));
      return service.pullImage(image, credentials, podSandboxConfig);
    },
    getImageSize: (image) => service.getImageSize(image),
  };
}

function truncateMs(ms: number): number {
  return Math.floor(ms);
}
