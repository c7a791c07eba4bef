/**
 * The secure port's authenticator and authorizer as kubelet builds them (`BuildAuth`): x509 client
 * certificates against `--client-ca-file` (user = subject CN, groups = subject O), bearer tokens
 * checked by the API server's TokenReview (`--authentication-token-webhook`, cached
 * `--authentication-token-webhook-cache-ttl`), anonymous requests as `system:anonymous` when
 * `--anonymous-auth` allows them, `system:authenticated` added to every authenticated user; and
 * `--authorization-mode` `AlwaysAllow` or `Webhook` (SubjectAccessReview, allowed answers cached
 * `--authorization-webhook-cache-authorized-ttl`, denied ones `...-unauthorized-ttl`).
 * Mirrors kubelet's cmd/kubelet/app/auth.go and apiserver's delegating authenticator/authorizer
 * (authenticatorfactory, authorizerfactory, request/x509, request/bearertoken, request/union,
 * request/anonymous, group/authenticated_group_adder, token/cache, plugin/pkg/authorizer/webhook).
 * @module
 */
import type { X509Certificate } from "node:crypto";
import type { Clock } from "../../util/clock.ts";
import { verifyClientChain } from "../../util/cert/cert.ts";
import {
  type Attributes,
  type Authenticator,
  type AuthInterface,
  type Authorizer,
  type Decision,
  newNodeAuthorizerAttributesGetter,
  type RequestContext,
  type UserInfo,
} from "./auth.ts";
import { errorText } from "../../util/errors.ts";

/** A POST of a JSON object to the API server, answering the decoded JSON. */
export type ReviewPoster = (path: string, body: unknown) => Promise<unknown>;

/** apiserver's well-known users and groups. */
export const anonymousUser = "system:anonymous";
export const unauthenticatedGroup = "system:unauthenticated";
export const authenticatedGroup = "system:authenticated";

/**
 * x509's `CommonNameUserConversion`: the user of a verified client certificate.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * import type { X509Certificate } from "node:crypto";
 *
 * declare const roots: X509Certificate[];
 * newX509Authenticator(() => roots, clock);
 * ```
 */
export function newX509Authenticator(
  roots: () => X509Certificate[],
  clock: Clock,
): Authenticator {
  return {
    authenticateRequest({ peerCertificates }): Promise<UserInfo | undefined> {
      if (peerCertificates.length === 0) return Promise.resolve(undefined);
      const err = verifyClientChain(peerCertificates, roots(), new Date(clock.now()));
      if (err) {
        return Promise.reject(
          new Error(`verifying certificate ${describe(peerCertificates[0])} failed: ${err}`),
        );
      }
      const subject = parseSubject(peerCertificates[0].subject);
      const name = subject.CN?.[0] ?? "";
      if (name === "") return Promise.reject(new Error("common name of client cert is empty"));
      return Promise.resolve({ name, groups: subject.O ?? [] });
    },
  };
}

function describe(cert: X509Certificate): string {
  return `SN=${BigInt("0x" + cert.serialNumber)}, subject="${cert.subject.replaceAll("\n", ",")}"`;
}

function parseSubject(subject: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of subject.split("\n")) {
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    (out[line.slice(0, eq)] ??= []).push(line.slice(eq + 1));
  }
  return out;
}

// A TTL cache on the injected clock, as apiserver's token and authorization caches.
class TTLCache<V> {
  #entries = new Map<string, { value: V; expires: number }>();
  // apimachinery's Expiring (token cache) drops an entry at its expiry; LRUExpireCache (the
  // authorizer's) only once the time is past it.
  constructor(
    private clock: Clock,
    private options: { keepAtExpiry: boolean },
    private maxEntries = 4096,
  ) {}
  get(key: string): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    const now = this.clock.now();
    if (this.options.keepAtExpiry ? now > e.expires : now >= e.expires) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }
  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    if (this.#entries.size >= this.maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    this.#entries.set(key, { value, expires: this.clock.now() + ttlMs });
  }
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The bearer-token authenticator through TokenReview, cached for `cacheTtlMs` (success and
 * failure alike, as the delegating authenticator configures it; a review answering with an error
 * is not cached).
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * declare const post: ReviewPoster;
 * newTokenReviewAuthenticator(post, { clock, cacheTtlMs: 120_000 });
 * ```
 */
export function newTokenReviewAuthenticator(
  post: ReviewPoster,
  options: { clock: Clock; cacheTtlMs: number },
): Authenticator & { reviews: number } {
  const cache = new TTLCache<UserInfo | null>(options.clock, { keepAtExpiry: false });
  const self = {
    reviews: 0,
    async authenticateRequest({ request }: RequestContext): Promise<UserInfo | undefined> {
      const auth = request.headers.get("authorization")?.trim() ?? "";
      const parts = auth.split(/\s+/);
      if (parts.length < 2 || parts[0].toLowerCase() !== "bearer") return undefined;
      const token = parts[1];
      if (token === "") return undefined;
      const key = await sha256(token);
      let user = cache.get(key);
      if (user === undefined) {
        self.reviews++;
        const review = await post("/apis/authentication.k8s.io/v1/tokenreviews", {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenReview",
          spec: { token },
        }) as {
          status?: {
            authenticated?: boolean;
            error?: string;
            user?: {
              username?: string;
              uid?: string;
              groups?: string[];
              extra?: Record<string, string[]>;
            };
          };
        };
        const s = review.status ?? {};
        user = s.authenticated
          ? {
            name: s.user?.username ?? "",
            uid: s.user?.uid,
            groups: s.user?.groups ?? [],
            extra: s.user?.extra,
          }
          : null;
        // A review that failed with an error is not cached (apiserver's cacheErrs=false).
        if (!user && s.error) throw new Error(s.error);
        cache.set(key, user, options.cacheTtlMs);
      }
      if (!user) throw new Error("invalid bearer token");
      return user;
    },
  };
  return self;
}

/**
 * apiserver's union authenticator, `system:authenticated` added, with anonymous as the fallback
 * (`NewFailOnError`: a credential that failed to verify is refused, not made anonymous).
 *
 * @example
 * ```ts
 * import type { Authenticator } from "./auth.ts";
 *
 * declare const x509: Authenticator;
 * declare const tokens: Authenticator;
 * newDelegatingAuthenticator([x509, tokens], { anonymous: false });
 * ```
 */
export function newDelegatingAuthenticator(
  authenticators: Authenticator[],
  options: { anonymous: boolean },
): Authenticator {
  return {
    async authenticateRequest(ctx): Promise<UserInfo | undefined> {
      const errors: string[] = [];
      for (const a of authenticators) {
        try {
          const user = await a.authenticateRequest(ctx);
          if (user) {
            const groups = user.groups.includes(authenticatedGroup) || user.name === anonymousUser
              ? user.groups
              : [...user.groups, authenticatedGroup];
            return { ...user, groups };
          }
        } catch (e) {
          errors.push(errorText(e));
        }
      }
      if (errors.length === 1) throw new Error(errors[0]);
      if (errors.length > 1) throw new Error(`[${errors.join(", ")}]`);
      if (options.anonymous) return { name: anonymousUser, groups: [unauthenticatedGroup] };
      return undefined;
    },
  };
}

/** `--authorization-mode=AlwaysAllow`. */
export const alwaysAllowAuthorizer: Authorizer = {
  authorize: () => Promise.resolve({ decision: "Allow", reason: "" }),
};

/**
 * The SubjectAccessReview authorizer, caching allowed answers for `authorizedTtlMs` and the others
 * for `unauthorizedTtlMs` (kept until the time is past the TTL, as LRUExpireCache); errors are
 * not cached.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * declare const post: ReviewPoster;
 * newWebhookAuthorizer(post, { clock, authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000 });
 * ```
 */
export function newWebhookAuthorizer(
  post: ReviewPoster,
  options: { clock: Clock; authorizedTtlMs: number; unauthorizedTtlMs: number },
): Authorizer & { reviews: number } {
  const cache = new TTLCache<{ decision: Decision; reason: string }>(options.clock, {
    keepAtExpiry: true,
  });
  const self = {
    reviews: 0,
    async authorize(a: Attributes): Promise<{ decision: Decision; reason: string }> {
      const spec = {
        resourceAttributes: {
          namespace: a.namespace,
          verb: a.verb,
          group: a.apiGroup,
          version: a.apiVersion,
          resource: a.resource,
          subresource: a.subresource,
          name: a.name,
        },
        user: a.user.name,
        uid: a.user.uid,
        groups: a.user.groups,
        extra: a.user.extra,
      };
      const key = JSON.stringify(spec);
      const cached = cache.get(key);
      if (cached) return cached;
      self.reviews++;
      const review = await post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec,
      }) as {
        status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
      };
      const s = review.status ?? {};
      const result = {
        decision: (s.allowed ? "Allow" : s.denied ? "Deny" : "NoOpinion") as Decision,
        reason: s.reason ?? "",
      };
      cache.set(key, result, s.allowed ? options.authorizedTtlMs : options.unauthorizedTtlMs);
      return result;
    },
  };
  return self;
}

/**
 * kubelet's `NewKubeletAuth`: the authenticator, the node's attribute getter and the authorizer.
 *
 * @example
 * ```ts
 * import type { Authenticator, Authorizer } from "./auth.ts";
 *
 * declare const authn: Authenticator;
 * declare const authz: Authorizer;
 * const auth = newKubeletAuth(authn, "node-1", authz);
 * ```
 */
export function newKubeletAuth(
  authenticator: Authenticator,
  nodeName: string,
  authorizer: Authorizer,
): AuthInterface {
  const getter = newNodeAuthorizerAttributesGetter(nodeName);
  return {
    authenticateRequest: (ctx) => authenticator.authenticateRequest(ctx),
    getRequestAttributes: (user, request) => getter.getRequestAttributes(user, request),
    authorize: (attrs) => authorizer.authorize(attrs),
  };
}
