/**
 * The secure port's TLS settings and auth from the flags: the serving certificate
 * (`--tls-cert-file`/`--tls-private-key-file`, else a self-signed one kept in `--cert-dir` as
 * kubelet keeps `kubelet.crt`/`kubelet.key`, or none yet with `--rotate-server-certificates`), the
 * minimum TLS version and cipher suites, and the authenticator and authorizer
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
import { generateSelfSignedCertKey, parseCABundle } from "../../util/cert/cert.ts";
import {
  insecureCiphers,
  tlsCipherSuites,
  tlsVersion,
  type TlsVersionName,
} from "../../util/flag/ciphersuites_flag.ts";
import type { Clock, ClockTimer } from "../../util/clock.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import type { NodeAddress } from "../../api/core/v1/mod.ts";
import type { Manager } from "../../kubelet/certificate/certificate_manager.ts";
import type { TlsCertificate } from "../../kubelet/certificate/certificate_store.ts";
import {
  newKubeletServerCertificateDynamicFileManager,
  newKubeletServerCertificateManager,
} from "../../kubelet/certificate/kubelet.ts";
import * as log from "../../util/log.ts";
import type { KubeletFlags } from "./flags.ts";
import { errorText } from "../../util/errors.ts";

/** The secure port's TLS settings (kubelet's `server.TLSOptions`). */
export interface TLSOptions {
  /** The pair to serve and reload; "" with `--rotate-server-certificates`. */
  certFile: string;
  keyFile: string;
  minVersion: TlsVersionName;
  /** The IDs of `--tls-cipher-suites` (checked; see the flag's note). */
  cipherSuites: number[];
}

/**
 * kubelet's `InitializeTLS`: the pair to serve (`--tls-cert-file`/`--tls-private-key-file`, or
 * `<cert-dir>/kubelet.{crt,key}`, made self-signed for the node's name and its `--node-ip`s when
 * they cannot be read; none with `--rotate-server-certificates`), the minimum version and the
 * cipher suites, refused with kubelet's texts when unknown.
 *
 * @example
 * ```ts
 * import type { KubeletFlags } from "./flags.ts";
 *
 * declare const flags: KubeletFlags;
 *
 * const { certFile, keyFile, minVersion } = await initializeTLS(flags);
 * ```
 */
export async function initializeTLS(
  flags: Pick<
    KubeletFlags,
    | "tlsCertFile"
    | "tlsPrivateKeyFile"
    | "rootDir"
    | "certDir"
    | "nodeName"
    | "rotateServerCertificates"
    | "tlsCipherSuites"
    | "tlsMinVersion"
  >,
  options: { nodeIPs?: string[] } = {},
): Promise<TLSOptions> {
  let certFile = flags.tlsCertFile;
  let keyFile = flags.tlsPrivateKeyFile;
  if (certFile !== "" || keyFile !== "") {
    if (certFile === "" || keyFile === "") {
      throw new Error("--tls-cert-file and --tls-private-key-file must be given together");
    }
  } else if (!flags.rotateServerCertificates) {
    const dir = certDirectory(flags);
    certFile = join(dir, "kubelet.crt");
    keyFile = join(dir, "kubelet.key");
    if (!await canReadCertAndKey(certFile, keyFile)) {
      const pair = await generateSelfSignedCertKey(flags.nodeName, {
        alternateIPs: options.nodeIPs,
      });
      await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
      await Deno.writeTextFile(certFile, pair.certPem, { mode: 0o644 });
      await Deno.writeTextFile(keyFile, pair.keyPem, { mode: 0o600 });
      log.info("Generated self-signed cert", { certFile, keyFile });
    }
  }
  let cipherSuites: number[];
  let minVersion: TlsVersionName;
  try {
    cipherSuites = tlsCipherSuites(flags.tlsCipherSuites);
    minVersion = tlsVersion(flags.tlsMinVersion);
  } catch (e) {
    throw new Error(
      `failed to construct kubelet dependencies: ${e instanceof Error ? e.message : e}`,
    );
  }
  for (const name of flags.tlsCipherSuites) {
    if (Object.hasOwn(insecureCiphers, name)) {
      log.info("Use of insecure cipher detected.", { cipher: name });
    }
  }
  if (cipherSuites.length > 0) {
    if (minVersion === "TLSv1.3") {
      log.info("Warning: TLS 1.3 cipher suites are not configurable, ignoring --tls-cipher-suites");
    } else {
      // node:tls under Deno (rustls) negotiates its own suites whatever it is given.
      log.warning(
        "The TLS stack offers only its own AEAD cipher suites (ECDHE with AES-GCM or " +
          "ChaCha20-Poly1305, TLS 1.3's); --tls-cipher-suites is checked but cannot narrow them",
        { cipherSuites: flags.tlsCipherSuites.join(",") },
      );
    }
  }
  return { certFile, keyFile, minVersion, cipherSuites };
}

/** Options of {@linkcode newServingCertificateManager}. */
export interface ServingCertificateManagerOptions {
  clock: Clock;
  /** The API client for CertificateSigningRequests (`--rotate-server-certificates`). */
  kubeClient?: Clientset;
  /** The node's last observed addresses (the CSR's SANs). */
  getAddresses?: () => NodeAddress[];
  /** Serves a certificate to new connections (undefined: handshakes fail). */
  setCertificate: (certificate: TlsCertificate | undefined) => void;
}

/**
 * The serving certificate's manager, as kubelet's `NewMainKubelet` picks it: with
 * `--rotate-server-certificates` the CSR-issued certificate, else the files of `tlsOptions`,
 * reloaded when they change. The current certificate is handed to `setCertificate` now, on every
 * change, and (as undefined) once it expires without a successor, as kubelet's `GetCertificate`
 * then fails the handshake.
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { KubeletFlags } from "./flags.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const flags: KubeletFlags;
 * declare const clock: Clock;
 * declare const kubeClient: Clientset;
 * declare const tlsOptions: Parameters<typeof newServingCertificateManager>[1];
 * declare const getAddresses: Parameters<typeof newServingCertificateManager>[2]["getAddresses"];
 *
 * const m = await newServingCertificateManager(flags, tlsOptions, { clock, kubeClient, getAddresses, setCertificate: (c) => console.log(c) });
 * m.start();
 * ```
 */
export async function newServingCertificateManager(
  flags: Pick<
    KubeletFlags,
    | "rotateServerCertificates"
    | "nodeName"
    | "certDir"
    | "rootDir"
    | "tlsCertFile"
    | "tlsPrivateKeyFile"
  >,
  tlsOptions: TLSOptions,
  options: ServingCertificateManagerOptions,
): Promise<Manager> {
  const { clock } = options;
  let expiry: ClockTimer | undefined;
  let manager: Manager | undefined;
  const serve = (cert: TlsCertificate | undefined) => {
    expiry?.stop();
    options.setCertificate(cert);
    if (!cert) return;
    // One millisecond past notAfter, when Current() stops returning it.
    expiry = clock.afterFunc(cert.leaf.notAfter - clock.now() + 1, () => {
      expiry = undefined;
      options.setCertificate(manager?.current());
    });
  };
  // kubelet's NewMainKubelet wraps what the managers refuse.
  const wrap = (what: string) => (e: unknown): never => {
    throw new Error(`failed to initialize ${what}: ${e instanceof Error ? e.message : e}`, {
      cause: e,
    });
  };
  if (flags.rotateServerCertificates) {
    manager = await newKubeletServerCertificateManager({
      kubeClient: options.kubeClient,
      nodeName: flags.nodeName,
      getAddresses: options.getAddresses ?? (() => []),
      certDirectory: certDirectory(flags),
      tlsCertFile: flags.tlsCertFile,
      tlsPrivateKeyFile: flags.tlsPrivateKeyFile,
      clock,
      onCertificate: serve,
    }).catch(wrap("certificate manager"));
  } else {
    manager = await newKubeletServerCertificateDynamicFileManager(
      tlsOptions.certFile,
      tlsOptions.keyFile,
      { clock, onCertificate: serve },
    ).catch(wrap("file based certificate manager"));
  }
  serve(manager.current());
  const m = manager;
  return {
    current: () => m.current(),
    serverHealthy: () => m.serverHealthy(),
    start: () => m.start(),
    stop: async () => {
      expiry?.stop();
      await m.stop();
    },
  };
}

/** `--cert-dir`, or `<root-dir>/pki` when not given. */
export function certDirectory(flags: Pick<KubeletFlags, "certDir" | "rootDir">): string {
  return flags.certDir !== "" ? flags.certDir : join(flags.rootDir, "pki");
}

// client-go's CanReadCertAndKey: both files readable (a missing one means "make them").
async function canReadCertAndKey(certFile: string, keyFile: string): Promise<boolean> {
  for (const f of [certFile, keyFile]) {
    try {
      await Deno.stat(f);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    }
  }
  return true;
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
        `unable to load client CA file ${flags.clientCAFile}: ${errorText(e)}`,
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
