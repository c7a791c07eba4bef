/**
 * The secure port's TLS material and auth from the flags: the serving certificate
 * (`--tls-cert-file`/`--tls-private-key-file`, else a self-signed one kept in `<root-dir>/pki` as
 * kubelet keeps `kubelet.crt`/`kubelet.key` in its cert dir), and the authenticator and authorizer
 * (`--client-ca-file`, `--authentication-token-webhook`, `--anonymous-auth`,
 * `--authorization-mode` and the webhook cache TTLs).
 * Mirrors kubelet's cmd/kubelet/app/auth.go (`BuildAuth`) and `InitializeTLS` of
 * cmd/kubelet/app/server.go.
 * @module
 */
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import type { Authenticator, AuthInterface } from "../../kubelet/server/auth.ts";
import {
  alwaysAllowAuthorizer,
  newDelegatingAuthenticator,
  newKubeletAuth,
  newTokenReviewAuthenticator,
  newWebhookAuthorizer,
  newX509Authenticator,
  type ReviewPoster,
} from "../../kubelet/server/delegating_auth.ts";
import {
  type CertKeyPair,
  generateSelfSignedCertKey,
  parseCABundle,
} from "../../util/cert/cert.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import type { KubeletFlags } from "./flags.ts";

/**
 * The serving certificate and key: the files given, or `<root-dir>/pki/kubelet.{crt,key}`, made
 * self-signed for the node's name (and its `--node-ip`s) when they do not exist yet.
 *
 * @example
 * ```ts
 * import type { KubeletFlags } from "./flags.ts";
 *
 * declare const flags: KubeletFlags;
 *
 * const { certPem, keyPem } = await initializeTLS(flags);
 * ```
 */
export async function initializeTLS(
  flags: Pick<KubeletFlags, "tlsCertFile" | "tlsPrivateKeyFile" | "rootDir" | "nodeName">,
  options: { nodeIPs?: string[] } = {},
): Promise<CertKeyPair> {
  if (flags.tlsCertFile !== "" || flags.tlsPrivateKeyFile !== "") {
    if (flags.tlsCertFile === "" || flags.tlsPrivateKeyFile === "") {
      throw new Error("--tls-cert-file and --tls-private-key-file must be given together");
    }
    return {
      certPem: await Deno.readTextFile(flags.tlsCertFile),
      keyPem: await Deno.readTextFile(flags.tlsPrivateKeyFile),
    };
  }
  const dir = join(flags.rootDir, "pki");
  const certFile = join(dir, "kubelet.crt");
  const keyFile = join(dir, "kubelet.key");
  try {
    return {
      certPem: await Deno.readTextFile(certFile),
      keyPem: await Deno.readTextFile(keyFile),
    };
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const pair = await generateSelfSignedCertKey(flags.nodeName, {
    alternateIPs: options.nodeIPs,
  });
  await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
  await Deno.writeTextFile(certFile, pair.certPem, { mode: 0o644 });
  await Deno.writeTextFile(keyFile, pair.keyPem, { mode: 0o600 });
  log.info("Generated self-signed cert", { certFile, keyFile });
  return pair;
}

/**
 * kubelet's `BuildAuth`: the secure port's authenticator, attribute getter and authorizer.
 * `post` reaches the API server for TokenReview and SubjectAccessReview; until it is set (or
 * without a kubeconfig), the webhooks answer with an error, so requests needing them are refused.
 *
 * @example
 * ```ts
 * import type { KubeletFlags } from "./flags.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const flags: KubeletFlags;
 * declare const clock: Clock;
 *
 * declare const post: Parameters<typeof buildAuth>[1]["post"];
 * const auth = await buildAuth(flags, { clock, post });
 * ```
 */
export async function buildAuth(
  flags: KubeletFlags,
  options: { clock: Clock; post: () => ReviewPoster | undefined },
): Promise<AuthInterface> {
  const post: ReviewPoster = (path, body) => {
    const p = options.post();
    if (!p) return Promise.reject(new Error("no API server to review the request"));
    return p(path, body);
  };
  const authenticators: Authenticator[] = [];
  if (flags.clientCAFile !== "") {
    let roots: X509Certificate[];
    try {
      roots = parseCABundle(await Deno.readTextFile(flags.clientCAFile));
    } catch (e) {
      throw new Error(
        `unable to load client CA file ${flags.clientCAFile}: ${
          e instanceof Error ? e.message : String(e)
        }`,
      );
    }
    authenticators.push(newX509Authenticator(() => roots, options.clock));
  }
  if (flags.authenticationTokenWebhook) {
    authenticators.push(newTokenReviewAuthenticator(post, {
      clock: options.clock,
      cacheTtlMs: flags.authenticationTokenWebhookCacheTtlMs,
    }));
  }
  const authenticator = newDelegatingAuthenticator(authenticators, {
    anonymous: flags.anonymousAuth,
  });
  const authorizer = flags.authorizationMode === "Webhook"
    ? newWebhookAuthorizer(post, {
      clock: options.clock,
      authorizedTtlMs: flags.authorizationWebhookCacheAuthorizedTtlMs,
      unauthorizedTtlMs: flags.authorizationWebhookCacheUnauthorizedTtlMs,
    })
    : alwaysAllowAuthorizer;
  return newKubeletAuth(authenticator, flags.nodeName, authorizer);
}
