/**
 * Images through the CRI image service: pull with each matching credential in turn, the image's
 * reference when present, and its size.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/kuberuntime_image.go (PullImage, GetImageRef,
 * GetImageSize).
 * @module
 */
import type { ImageSpec, PodSandboxConfig } from "../../cri_client/api.ts";
import type { ImageManagerService } from "../../cri_client/runtime_service.ts";
import type { TrackedAuthConfig } from "../../credentialprovider/keyring.ts";
import * as log from "../../util/log.ts";
import type { ImagePullService } from "../images/puller.ts";
import { errorText } from "../../util/errors.ts";

/**
 * The runtime manager's image functions over a CRI image service.
 *
 * @example
 * ```ts
 * import type { ImageManagerService } from "../../cri_client/runtime_service.ts";
 *
 * declare const remoteImageService: ImageManagerService;
 *
 * const images = newKubeImageService(remoteImageService);
 * await images.getImageRef({ image: "probelet.local/busybox:1" }); // "sha256:..." or ""
 * ```
 */
export function newKubeImageService(service: ImageManagerService): KubeImageService {
  return new KubeImageService(service);
}

/** See {@linkcode newKubeImageService}. */
export class KubeImageService implements ImagePullService {
  constructor(readonly service: ImageManagerService) {}

  /**
   * Pulls anonymously without credentials; otherwise tries each credential until one works and
   * fails with every error (Go's aggregate: one error as is, several as `[e1, e2]`).
   */
  async pullImage(
    image: ImageSpec,
    credentials: TrackedAuthConfig[],
    podSandboxConfig?: PodSandboxConfig,
  ): Promise<{ imageRef: string; credentialsUsed?: TrackedAuthConfig }> {
    if (credentials.length === 0) {
      log.V(3).info("Pulling image without credentials", { image: image.image });
      try {
        return {
          imageRef: await this.service.pullImage(image, { sandboxConfig: podSandboxConfig }),
        };
      } catch (e) {
        log.error(e, "Failed to pull image", { image: image.image });
        throw e;
      }
    }
    const errors: unknown[] = [];
    for (const creds of credentials) {
      const auth = {
        username: creds.username ?? "",
        password: creds.password ?? "",
        auth: creds.auth ?? "",
        serverAddress: creds.serverAddress ?? "",
        identityToken: creds.identityToken ?? "",
        registryToken: creds.registryToken ?? "",
      };
      try {
        const imageRef = await this.service.pullImage(image, {
          auth,
          sandboxConfig: podSandboxConfig,
        });
        return { imageRef, credentialsUsed: creds };
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length === 1) throw errors[0];
    throw new Error(`[${errors.map(errorText).join(", ")}]`, { cause: errors });
  }

  /** The image's ID when the runtime has it, "" otherwise (Go's `GetImageRef`). */
  async getImageRef(image: ImageSpec): Promise<string> {
    const { image: found } = await this.service.imageStatus(image);
    return found?.id ?? "";
  }

  /** The image's size, 0 when the runtime does not have it (Go's `GetImageSize`). */
  async getImageSize(image: ImageSpec): Promise<bigint> {
    const { image: found } = await this.service.imageStatus(image);
    return found?.size ?? 0n;
  }
}
