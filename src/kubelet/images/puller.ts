/**
 * Image pullers: the parallel one starts every pull at once (up to an optional limit); the serial
 * one, kubelet's default (`--serialize-image-pulls=true`), pulls one image at a time in the order
 * asked. Both measure the pull and then ask the runtime for the image's size.
 * Mirrors kubelet's pkg/kubelet/images/puller.go.
 * @module
 */
import type { ImageSpec, PodSandboxConfig } from "../../cri_client/api.ts";
import type { TrackedAuthConfig } from "../../credentialprovider/keyring.ts";
import type { Clock } from "../../util/clock.ts";

/** The outcome of one pull (Go's `pullResult`). */
export interface PullResult {
  imageRef: string;
  imageSize: bigint;
  error?: Error;
  /** Wall time of the pull itself, in milliseconds (queueing excluded). */
  pullDurationMs: number;
  /** The credentials the runtime accepted, if any were tried. */
  credentialsUsed?: TrackedAuthConfig;
}

/** What a puller needs of the runtime: a pull with credentials, and the image's size. */
export interface ImagePullService {
  /** Pulls with each credential in turn (none: anonymously); see kuberuntime_image.ts. */
  pullImage(
    image: ImageSpec,
    credentials: TrackedAuthConfig[],
    podSandboxConfig?: PodSandboxConfig,
  ): Promise<{ imageRef: string; credentialsUsed?: TrackedAuthConfig }>;
  /** The image's size in bytes (0 when unknown). */
  getImageSize(image: ImageSpec): Promise<bigint>;
}

/** Go's `imagePuller`: a pull resolves with its result, never rejects. */
export interface ImagePuller {
  pullImage(
    spec: ImageSpec,
    credentials: TrackedAuthConfig[],
    podSandboxConfig?: PodSandboxConfig,
  ): Promise<PullResult>;
}

async function pullOnce(
  service: ImagePullService,
  clock: Clock,
  spec: ImageSpec,
  credentials: TrackedAuthConfig[],
  podSandboxConfig?: PodSandboxConfig,
): Promise<PullResult> {
  const start = clock.now();
  try {
    const { imageRef, credentialsUsed } = await service.pullImage(
      spec,
      credentials,
      podSandboxConfig,
    );
    const pullDurationMs = clock.since(start);
    // kubelet: a size that cannot be read is logged and reported as 0.
    const imageSize = await service.getImageSize(spec).catch(() => 0n);
    return { imageRef, imageSize, pullDurationMs, credentialsUsed };
  } catch (e) {
    return {
      imageRef: "",
      imageSize: 0n,
      pullDurationMs: clock.since(start),
      error: e instanceof Error ? e : new Error(String(e)),
    };
  }
}

/**
 * Pulls in parallel, at most `maxParallelImagePulls` at a time when set (Go's
 * `parallelImagePuller` with its token channel).
 */
export function newParallelImagePuller(
  service: ImagePullService,
  options: { clock: Clock; maxParallelImagePulls?: number },
): ImagePuller {
  const max = options.maxParallelImagePulls ?? 0;
  let running = 0;
  const waiting: (() => void)[] = [];
  return {
    async pullImage(spec, credentials, podSandboxConfig) {
      if (max > 0 && running >= max) {
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
      running++;
      try {
        return await pullOnce(service, options.clock, spec, credentials, podSandboxConfig);
      } finally {
        running--;
        waiting.shift()?.();
      }
    },
  };
}

/** Maximum number of queued pull requests of the serial puller (Go's `maxImagePullRequests`). */
export const maxImagePullRequests = 10;

/**
 * Pulls one image at a time, in the order asked (Go's `serialImagePuller`: one goroutine draining
 * a channel of requests).
 */
export function newSerialImagePuller(
  service: ImagePullService,
  options: { clock: Clock },
): ImagePuller {
  let tail: Promise<unknown> = Promise.resolve();
  return {
    pullImage(spec, credentials, podSandboxConfig) {
      const result = tail.then(() =>
        pullOnce(service, options.clock, spec, credentials, podSandboxConfig)
      );
      tail = result;
      return result;
    },
  };
}
