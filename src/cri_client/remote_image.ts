/**
 * `ImageManagerService` over gRPC to a CRI v1 runtime: the image queries and pulls probelet needs.
 * Mirrors k8s.io/cri-client's pkg/remote_image.go.
 * @module
 */
import type {
  AuthConfig,
  Image,
  ImageFilter,
  ImageSpec,
  ImageStatusResponse,
  PodSandboxConfig,
} from "./api.ts";
import { Connection, type ConnectionOptions, validatedService } from "./connection.ts";
import { ImageServiceMethods as methods } from "./codec_gen.ts";
import type { CallOptions, ImageManagerService } from "./runtime_service.ts";

/**
 * Connects to the CRI image service at `endpoint` and checks it answers (`ImageFsInfo` is not part
 * of our schema, so a `ListImages` with an impossible filter does the job).
 *
 * @example
 * ```ts
 * const images = await newRemoteImageService("unix:///run/containerd/containerd.sock");
 * const { image } = await images.imageStatus({ image: "probelet.local/busybox:1" });
 * images.close();
 * ```
 */
export async function newRemoteImageService(
  endpoint: string,
  options: ConnectionOptions = {},
): Promise<RemoteImageService> {
  return await validatedService(new RemoteImageService(endpoint, options));
}

/** The gRPC implementation of `ImageManagerService`. */
export class RemoteImageService implements ImageManagerService {
  readonly #conn: Connection;

  constructor(endpoint: string, options: ConnectionOptions = {}) {
    this.#conn = new Connection(endpoint, "ImageService", options);
  }

  /** The endpoint this client talks to. */
  get endpoint(): string {
    return this.#conn.endpoint.endpoint;
  }

  /** One cheap call within the connect timeout; the error names the endpoint. */
  async validateServiceConnection(): Promise<void> {
    try {
      await this.#conn.unary(methods.ImageStatus, { image: { image: "probelet.invalid/none:0" } }, {
        timeoutMs: this.#conn.connectTimeoutMs,
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(
        `validate service connection: validate CRI v1 image API for endpoint ${
          JSON.stringify(this.endpoint)
        }: ${message}`,
        { cause: err },
      );
    }
  }

  async listImages(filter?: ImageFilter, options: CallOptions = {}): Promise<Image[]> {
    const { images } = await this.#conn.unary(methods.ListImages, { filter }, {
      timeoutMs: this.#conn.requestTimeoutMs,
      signal: options.signal,
    });
    return images;
  }

  async imageStatus(
    image: ImageSpec,
    options: CallOptions & { verbose?: boolean } = {},
  ): Promise<ImageStatusResponse> {
    const raw = await this.#conn.unary(methods.ImageStatus, {
      image,
      verbose: options.verbose ?? false,
    }, { timeoutMs: this.#conn.requestTimeoutMs, signal: options.signal });
    const found = raw.image;
    if (found) {
      // cri-client: an image without an ID or size is a runtime bug.
      if (found.id === "" || found.size === 0n) {
        throw new Error(`Id or size of image ${JSON.stringify(image.image)} is not set`);
      }
    }
    return { image: found, info: raw.info };
  }

  /**
   * cri-client's `PullImage`: no request timeout (a pull takes as long as the image is big); the
   * caller's signal cancels it. An empty image reference from the runtime is an error.
   */
  async pullImage(
    image: ImageSpec,
    options: CallOptions & { auth?: AuthConfig; sandboxConfig?: PodSandboxConfig } = {},
  ): Promise<string> {
    const { imageRef: ref } = await this.#conn.unary(methods.PullImage, {
      image,
      auth: options.auth,
      sandboxConfig: options.sandboxConfig,
    }, { timeoutMs: 0, signal: options.signal });
    if (ref === "") throw new Error(`imageRef of image ${JSON.stringify(image.image)} is not set`);
    return ref;
  }

  close(): void {
    this.#conn.close();
  }
}
