/**
 * Which pods may use an image already on the node (KubeletEnsureSecretPulledImages, on by default
 * in v1.36): an image kubelet pulled with a pull secret may only be used by a pod presenting the
 * same secret (or the same credentials); one pulled without credentials, or preloaded (no record,
 * policy `NeverVerifyPreloadedImages`), by every pod.
 * Mirrors kubelet's pkg/kubelet/images/pullmanager/image_pull_manager.go, with the records kept in
 * memory (kubelet keeps them in files under its root directory; here they end with the process,
 * after which images pulled with secrets count as preloaded).
 * @module
 */

/** A pull secret's identity and its credentials' hash (kubelet's `ImagePullSecret`). */
export interface ImagePullSecret {
  uid: string;
  namespace: string;
  name: string;
  credentialHash: string;
}

/** Who may use a pulled image (kubelet's `ImagePullCredentials`). */
export interface ImagePullCredentials {
  /** Pulled with node credentials or anonymously: every pod may use it. */
  nodePodsAccessible?: boolean;
  kubernetesSecrets?: ImagePullSecret[];
}

/**
 * Records pull intents and pulled images; answers whether a pod must pull again.
 *
 * @example
 * ```ts
 * declare const secret: ImagePullSecret;
 *
 * const m = new ImagePullManager();
 * m.recordPullIntent("reg/app:1");
 * m.recordImagePulled("reg/app:1", "sha256:abc", { kubernetesSecrets: [secret] });
 * m.mustAttemptImagePull("reg/app:1", "sha256:abc", []); // true: no matching secret
 * ```
 */
export class ImagePullManager {
  #intents = new Map<string, number>();
  #pulled = new Map<string, ImagePullCredentials>();

  /** A pull of `image` begins. */
  recordPullIntent(image: string): void {
    this.#intents.set(image, (this.#intents.get(image) ?? 0) + 1);
  }

  /** The pull of `image` ended with `imageRef`, using `credentials`. */
  recordImagePulled(image: string, imageRef: string, credentials: ImagePullCredentials): void {
    this.#decrement(image);
    const key = recordKey(image, imageRef);
    const record = this.#pulled.get(key);
    if (!record) {
      this.#pulled.set(key, structuredClone(credentials));
      return;
    }
    if (record.nodePodsAccessible) return;
    if (credentials.nodePodsAccessible) {
      this.#pulled.set(key, { nodePodsAccessible: true });
      return;
    }
    const secrets = record.kubernetesSecrets ??= [];
    for (const s of credentials.kubernetesSecrets ?? []) {
      if (!secrets.some((r) => sameSecret(r, s) && r.credentialHash === s.credentialHash)) {
        secrets.push({ ...s });
      }
    }
  }

  /** The pull of `image` failed. */
  recordImagePullFailed(image: string): void {
    this.#decrement(image);
  }

  /**
   * Whether a pod presenting `secrets` must pull `image` although `imageRef` is present. Kubelet's
   * `MustAttemptImagePull` under the default policy `NeverVerifyPreloadedImages`.
   */
  mustAttemptImagePull(image: string, imageRef: string, secrets: ImagePullSecret[]): boolean {
    const record = this.#pulled.get(recordKey(image, imageRef));
    if (!record) {
      // A pull that started and never finished: the image may be a partial one; pull again.
      // Otherwise the image was there before kubelet pulled anything: preloaded.
      return (this.#intents.get(image) ?? 0) > 0;
    }
    if (record.nodePodsAccessible) return false;
    const known = record.kubernetesSecrets ?? [];
    for (const s of secrets) {
      if (known.some((r) => sameSecret(r, s) && r.credentialHash === s.credentialHash)) {
        return false;
      }
    }
    // The same credentials from another secret also prove access (kubelet records that secret).
    for (const s of secrets) {
      if (known.some((r) => r.credentialHash === s.credentialHash)) {
        known.push({ ...s });
        return false;
      }
    }
    return true;
  }

  #decrement(image: string): void {
    const n = (this.#intents.get(image) ?? 0) - 1;
    if (n > 0) this.#intents.set(image, n);
    else this.#intents.delete(image);
  }
}

// Kubelet keeps one record per image ID with the credentials per repository (the image name
// without tag or digest): the same image under another name counts as not pulled by kubelet.
function recordKey(image: string, imageRef: string): string {
  return `${imageRef} ${trimImageTagDigest(image)}`;
}

function trimImageTagDigest(image: string): string {
  const at = image.indexOf("@");
  const name = at < 0 ? image : image.slice(0, at);
  const colon = name.lastIndexOf(":");
  return colon > name.lastIndexOf("/") ? name.slice(0, colon) : name;
}

function sameSecret(a: ImagePullSecret, b: ImagePullSecret): boolean {
  return a.uid === b.uid && a.namespace === b.namespace && a.name === b.name;
}
