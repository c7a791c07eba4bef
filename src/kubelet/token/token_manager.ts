/**
 * Service-account tokens for pods: requested through the TokenRequest API (bound to the pod),
 * cached, and renewed once 80 % of their lifetime has passed or they are 24 h old, each with up to
 * 10 s of jitter; a failed renewal keeps serving the cached token until it expires.
 * Mirrors kubelet's pkg/kubelet/token/token_manager.go (Manager, GetServiceAccountToken,
 * DeleteServiceAccountToken, cleanup, expired, requiresRefresh, keyFunc).
 * @module
 */
import type { TokenRequest } from "../../api/core/v1/mod.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import type { JSONRequester } from "../configmap/configmap_manager.ts";

/** Tokens older than this are renewed whatever their expiry (kubelet's `maxTTL`). */
export const maxTTLMs = 24 * 60 * 60 * 1000;
/** Up to this much earlier, at random (kubelet's `maxJitter`). */
export const maxJitterMs = 10_000;
/** How often expired tokens are dropped from the cache (kubelet's `gcPeriod`). */
export const gcPeriodMs = 60_000;

/** Creates a token for `namespace/name` (`POST .../serviceaccounts/<name>/token`). */
export type GetTokenFunc = (
  namespace: string,
  name: string,
  tr: TokenRequest,
) => Promise<TokenRequest>;

/**
 * The TokenRequest call over a REST client.
 *
 * @example
 * ```ts
 * import type { HTTPClientset } from "../../client/kubernetes/clientset.ts";
 * import { RealClock } from "../../util/clock.ts";
 *
 * declare const clientset: HTTPClientset;
 *
 * const manager = new TokenManager({ getToken: tokenRequester(clientset.rest), clock: new RealClock() });
 * ```
 */
export function tokenRequester(client: JSONRequester): GetTokenFunc {
  return (namespace, name, tr) =>
    client.json<TokenRequest>({
      method: "POST",
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${
        encodeURIComponent(name)
      }/token`,
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", ...tr },
    });
}

/** Options of {@linkcode TokenManager}. */
export interface TokenManagerOptions {
  getToken: GetTokenFunc;
  clock: Clock;
  /** Jitter source in [0, 1) (default `Math.random`). */
  random?: () => number;
}

/**
 * Caches and renews pods' service-account tokens (kubelet's token `Manager`).
 *
 * @example
 * ```ts
 * declare const uid: string;
 * declare const manager: TokenManager;
 *
 * const tr = await manager.getServiceAccountToken("default", "default", {
 *   spec: { expirationSeconds: 3600, boundObjectRef: { kind: "Pod", name: "web", uid } },
 * });
 * tr.status!.token;
 * ```
 */
export class TokenManager {
  readonly #options: TokenManagerOptions;
  readonly #cache = new Map<string, TokenRequest>();
  #lastGC = 0;

  /** A manager with an empty cache. */
  constructor(options: TokenManagerOptions) {
    this.#options = options;
  }

  /**
   * A token for `namespace/name` as `tr` asks: the cached one unless it needs a refresh; a fresh
   * one otherwise. When the request fails, the cached token is returned while it is unexpired.
   */
  async getServiceAccountToken(
    namespace: string,
    name: string,
    tr: TokenRequest,
  ): Promise<TokenRequest> {
    this.#maybeCleanup();
    const key = keyFunc(name, namespace, tr);
    const cached = this.#cache.get(key);
    if (cached && !this.requiresRefresh(cached)) return cached;
    let fresh: TokenRequest;
    try {
      fresh = await this.#options.getToken(namespace, name, tr);
    } catch (e) {
      if (cached && !this.expired(cached)) {
        log.error(e, "Couldn't update token", { cacheKey: key });
        return cached;
      }
      throw e;
    }
    // kubelet keeps the request's spec with the status the API server returned.
    const entry: TokenRequest = { ...tr, status: fresh.status };
    if (fresh.spec?.expirationSeconds !== undefined) {
      entry.spec = { ...tr.spec, expirationSeconds: fresh.spec.expirationSeconds };
    }
    this.#cache.set(key, entry);
    return entry;
  }

  /** Drops the tokens bound to the pod with this UID (kubelet calls it when the pod goes). */
  deleteServiceAccountToken(podUID: string): void {
    for (const [k, tr] of this.#cache) {
      if (tr.spec.boundObjectRef?.uid === podUID) this.#cache.delete(k);
    }
  }

  /** How many tokens are cached (for tests and metrics). */
  get size(): number {
    return this.#cache.size;
  }

  /** Drops expired tokens (kubelet runs it every minute). */
  cleanup(): void {
    for (const [k, tr] of this.#cache) if (this.expired(tr)) this.#cache.delete(k);
  }

  #maybeCleanup(): void {
    const now = this.#options.clock.now();
    if (now - this.#lastGC < gcPeriodMs) return;
    this.#lastGC = now;
    this.cleanup();
  }

  /** Whether the token's expiry has passed. */
  expired(tr: TokenRequest): boolean {
    return this.#options.clock.now() > Date.parse(tr.status?.expirationTimestamp ?? "");
  }

  /**
   * Whether the token is due for renewal: older than 24 h, or within 20 % of its lifetime of
   * expiring, each less a random jitter of up to 10 s.
   */
  requiresRefresh(tr: TokenRequest): boolean {
    const expirationSeconds = tr.spec.expirationSeconds;
    if (expirationSeconds === undefined) {
      log.error(undefined, "Expiration seconds was nil for token request");
      return false;
    }
    const now = this.#options.clock.now();
    const exp = Date.parse(tr.status?.expirationTimestamp ?? "");
    const iat = exp - expirationSeconds * 1000;
    const jitter = Math.floor((this.#options.random ?? Math.random)() * maxJitterMs / 1000) *
      1000;
    if (now > iat + maxTTLMs - jitter) return true;
    // Within 20 % of the TTL plus a jitter of the expiry.
    if (now > exp - Math.floor(expirationSeconds * 20 / 100) * 1000 - jitter) return true;
    return false;
  }
}

/** The cache key: name, namespace, audiences, expiry and bound object (kubelet's `keyFunc`). */
export function keyFunc(name: string, namespace: string, tr: TokenRequest): string {
  return JSON.stringify([
    name,
    namespace,
    tr.spec.audiences ?? [],
    tr.spec.expirationSeconds ?? null,
    tr.spec.boundObjectRef ?? null,
  ]);
}
