/**
 * The certificate manager: keeps the current certificate, and requests a new one through the CSR
 * API when there is none, when it no longer matches the template (the node's names changed), and
 * at a jittered deadline between 70 and 90 % of its lifetime. A failed rotation is retried after
 * 2, 4, 8 and 16 s (±10 %), then every 32 s. All waits are on the injected clock.
 * Mirrors k8s.io/client-go/util/certificate/certificate_manager.go.
 * @module
 */
import { createPrivateKey } from "node:crypto";
import { Buffer } from "node:buffer";
import type { KeyUsage } from "../../api/certificates/v1/mod.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import { isForbidden, isNotFound, isUnauthorized, StatusError } from "../../client/errors.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { jitter, sleepUnlessStopped } from "../../util/wait/wait.ts";
import { loadX509 } from "../../util/cert/cert.ts";
import { NoCertKeyError, type Store, type TlsCertificate } from "./certificate_store.ts";
import { requestCertificate, waitForCertificate } from "./csr.ts";

/** What a CSR asks for (the parts of Go's `x509.CertificateRequest` the manager sets). */
export interface CertificateRequestTemplate {
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
}

/** The kind of private key a CSR was made with (`undefined`: not known yet). */
export type PrivateKeyType = "rsa" | "ecdsa" | undefined;

/** Keeps a certificate current (client-go's `certificate.Manager`). */
export interface Manager {
  /** The certificate to use, or undefined when there is none or it has expired. */
  current(): TlsCertificate | undefined;
  /** Starts rotating in the background. */
  start(): void;
  /** Stops rotating; resolves once the loops have returned. */
  stop(): Promise<void>;
  /** Whether the last answers of the API server looked healthy. */
  serverHealthy(): boolean;
}

/** Configuration of {@linkcode newManager} (client-go's `certificate.Config`). */
export interface ManagerConfig {
  /** The client to request certificates with; undefined turns rotation off. */
  clientsetFn?: (current: TlsCertificate | undefined) => Clientset;
  /** The request to make; undefined while there is nothing to ask for (no address yet). */
  getTemplate: () => CertificateRequestTemplate | undefined;
  /** Whether the template can change (a loop then watches it every second). */
  dynamicTemplate?: boolean;
  signerName: string;
  /** `spec.expirationSeconds` of the requests. */
  requestedCertificateLifetimeMs?: number;
  /** The usages to request for a key of this type. */
  getUsages: (keyType: PrivateKeyType) => KeyUsage[];
  certificateStore: Store;
  clock: Clock;
  /** Names the manager in its log lines (default: the signer's name). */
  name?: string;
  /** Source of the jitter, `[0, 1)` (default `Math.random`). */
  random?: () => number;
  /** Told of every certificate the manager takes into use (the TLS listener swaps its context). */
  onCertificate?: (cert: TlsCertificate) => void;
  /** Counts failed rotations (kubelet's `server_expiration_renew_errors`). */
  certificateRenewFailure?: () => void;
  /** Observes how long the replaced certificate lived, in seconds. */
  certificateRotation?: (seconds: number) => void;
  /** How long one request waits for approval and issuance (default 15 min). */
  certificateWaitTimeoutMs?: number;
}

/**
 * The serving usages for a key: `digital signature`, `key encipherment` (RSA only), `server auth`
 * (client-go's `DefaultKubeletServingGetUsages`).
 *
 * @example
 * ```ts
 * defaultKubeletServingGetUsages("ecdsa"); // ["digital signature", "server auth"]
 * ```
 */
export function defaultKubeletServingGetUsages(keyType: PrivateKeyType): KeyUsage[] {
  return keyType === "rsa"
    ? ["digital signature", "key encipherment", "server auth"]
    : ["digital signature", "server auth"];
}

/** client-go's `certificateWaitTimeout`: one request waits this long for its certificate. */
export const certificateWaitTimeoutMs = 15 * 60 * 1000;

/**
 * The rotation threshold for a certificate valid `totalMs`: 70 to 90 % of it (client-go's
 * `jitteryDuration`: `wait.Jitter(total, 0.2) - 0.3 * total`).
 *
 * @example
 * ```ts
 * jitteryDuration(100_000, () => 0.5); // 80000
 * ```
 */
export function jitteryDuration(totalMs: number, random: () => number = Math.random): number {
  return jitter(totalMs, 0.2, random) - totalMs * 0.3;
}

/**
 * A manager with the store's current certificate, if valid (client-go's `NewManager`; bootstrap
 * certificates are not supported: the serving manager never has one).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const client: Clientset;
 * declare const clock: Clock;
 * declare const getTemplate: Parameters<typeof newManager>[0]["getTemplate"];
 * declare const store: Parameters<typeof newManager>[0]["certificateStore"];
 *
 * const m = await newManager({ clientsetFn: () => client, getTemplate, signerName: "kubernetes.io/kubelet-serving", getUsages: defaultKubeletServingGetUsages, certificateStore: store, clock });
 * m.start();
 * ```
 */
export async function newManager(config: ManagerConfig): Promise<CertificateManager> {
  let cert: TlsCertificate | undefined;
  let forceRotation = true;
  try {
    const current = await config.certificateStore.current();
    if (config.clock.now() < current.leaf.notAfter) {
      cert = current;
      forceRotation = false;
    }
  } catch (e) {
    if (!(e instanceof NoCertKeyError)) throw e;
  }
  return new CertificateManager(config, cert, forceRotation);
}

/** The manager {@linkcode newManager} returns. */
export class CertificateManager implements Manager {
  readonly #config: ManagerConfig;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #name: string;
  #cert: TlsCertificate | undefined;
  #forceRotation: boolean;
  #serverHealth = false;
  #stop = new AbortController();
  #loops: Promise<void>[] = [];
  // The template last requested and a way to give up waiting for its certificate.
  #lastRequest: CertificateRequestTemplate | undefined;
  #lastRequestCancel: (() => void) | undefined;
  // Go's unbuffered templateChanged channel: a change waits until the rotation loop takes it.
  #templateChangePending = false;
  #wakeRotation: (() => void) | undefined;

  /** Use {@linkcode newManager}. */
  constructor(config: ManagerConfig, cert: TlsCertificate | undefined, forceRotation: boolean) {
    this.#config = config;
    this.#clock = config.clock;
    this.#random = config.random ?? Math.random;
    this.#name = config.name ?? config.signerName;
    this.#cert = cert;
    this.#forceRotation = forceRotation;
  }

  /** The certificate to use; undefined when there is none or it has expired. */
  current(): TlsCertificate | undefined {
    if (this.#cert && this.#clock.now() > this.#cert.leaf.notAfter) {
      log.V(2).info("Current certificate is expired", { logger: this.#name });
      return undefined;
    }
    return this.#cert;
  }

  /** Whether the API server's last answers looked healthy. */
  serverHealthy(): boolean {
    return this.#serverHealth;
  }

  /** Starts the rotation loop and, with a dynamic template, the template loop. */
  start(): void {
    const signal = this.#stop.signal;
    if (!this.#config.clientsetFn) {
      log.V(2).info("Certificate rotation is not enabled, no connection to the apiserver", {
        logger: this.#name,
      });
      return;
    }
    log.V(2).info("Certificate rotation is enabled", { logger: this.#name });
    // wait.UntilWithContext(rotate, 1s): the second counts from when rotate returned.
    this.#loops.push((async () => {
      while (!signal.aborted) {
        await this.#rotate(signal);
        if (!await sleepUnlessStopped(this.#clock, 1000, signal)) return;
      }
    })());
    if (this.#config.dynamicTemplate) {
      this.#loops.push((async () => {
        while (!signal.aborted) {
          this.#checkTemplate();
          if (!await sleepUnlessStopped(this.#clock, 1000, signal)) return;
        }
      })());
    }
  }

  /** Stops both loops and a request in progress; resolves once they returned. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error("asked to stop"));
    this.#wakeRotation?.();
    await Promise.all(this.#loops);
  }

  /**
   * Requests, waits for and stores a new certificate; true when it changed the certificate
   * (client-go's `RotateCerts`, exposed for tests).
   */
  rotateCerts(signal: AbortSignal = this.#stop.signal): Promise<boolean> {
    return this.#rotateCerts(signal);
  }

  /**
   * When the current certificate should be replaced: now when rotation is forced or the
   * certificate does not satisfy the template, else `notBefore` plus 70–90 % of its lifetime.
   */
  nextRotationDeadline(): number {
    if (this.#forceRotation) {
      this.#forceRotation = false;
      return this.#clock.now();
    }
    if (!this.#certSatisfiesTemplate()) return this.#clock.now();
    const { notBefore, notAfter } = this.#cert!.leaf;
    const deadline = notBefore + jitteryDuration(notAfter - notBefore, this.#random);
    log.V(2).info("Certificate rotation deadline determined", {
      logger: this.#name,
      expiration: new Date(notAfter).toISOString(),
      deadline: new Date(deadline).toISOString(),
    });
    return deadline;
  }

  // One pass of the rotation loop: wait for the deadline (or a template change), then rotate
  // with backoff.
  async #rotate(signal: AbortSignal): Promise<void> {
    const deadline = this.nextRotationDeadline();
    const sleepMs = deadline - this.#clock.now();
    if (sleepMs > 0) {
      log.V(2).info("Waiting for next certificate rotation", {
        logger: this.#name,
        sleep: `${Math.round(sleepMs / 1000)}s`,
      });
      const reason = await this.#waitDeadline(sleepMs, signal);
      if (reason === "stop") return;
      if (reason === "templateChanged") {
        if (templatesEqual(this.#lastRequest, this.#config.getTemplate())) return;
        log.V(2).info("Certificate template changed, rotating", { logger: this.#name });
      }
    }
    if (this.#config.getTemplate() === undefined) return;
    // wait.Backoff{2s, ×2, jitter 0.1, 5 steps}, then wait.PollInfinite every 32 s.
    let durationMs = 2000;
    for (let step = 5; step > 0; step--) {
      if (signal.aborted) return;
      if (await this.#rotateCerts(signal)) return;
      if (step === 1) break;
      const waitMs = jitter(durationMs, 0.1, this.#random);
      durationMs *= 2;
      if (!await sleepUnlessStopped(this.#clock, waitMs, signal)) return;
    }
    log.error(
      new Error("timed out waiting for the condition"),
      "Reached backoff limit, still unable to rotate certs",
      { logger: this.#name },
    );
    for (;;) {
      if (!await sleepUnlessStopped(this.#clock, 32_000, signal)) return;
      if (await this.#rotateCerts(signal)) return;
    }
  }

  // Resolves with why the wait ended; nothing stays registered afterwards.
  #waitDeadline(ms: number, signal: AbortSignal): Promise<"tick" | "templateChanged" | "stop"> {
    if (this.#templateChangePending) {
      this.#templateChangePending = false;
      return Promise.resolve("templateChanged");
    }
    return new Promise((resolve) => {
      const finish = (reason: "tick" | "templateChanged" | "stop") => {
        timer.stop();
        this.#wakeRotation = undefined;
        resolve(reason);
      };
      const timer = this.#clock.afterFunc(ms, () => finish("tick"));
      this.#wakeRotation = () => {
        if (signal.aborted) return finish("stop");
        this.#templateChangePending = false;
        finish("templateChanged");
      };
      if (signal.aborted) finish("stop");
    });
  }

  // The template loop: a certificate that no longer fits what would be asked for now, and was
  // not asked for already, interrupts the wait for the deadline (and a wait for a CSR of the
  // old template).
  #checkTemplate(): void {
    if (this.#certSatisfiesTemplate()) return;
    if (templatesEqual(this.#lastRequest, this.#config.getTemplate())) return;
    this.#lastRequestCancel?.();
    this.#templateChangePending = true;
    this.#wakeRotation?.();
  }

  async #rotateCerts(signal: AbortSignal): Promise<boolean> {
    log.V(2).info("Rotating certificates", { logger: this.#name });
    const fail = () => this.#config.certificateRenewFailure?.();
    let generated: Awaited<ReturnType<typeof generateCSR>>;
    const template = this.#config.getTemplate();
    try {
      if (!template) throw new Error("unable to create a csr, no template available");
      generated = await generateCSR(template);
    } catch (e) {
      log.error(e, "Unable to generate a certificate signing request", { logger: this.#name });
      fail();
      return false;
    }
    let client: Clientset;
    try {
      client = this.#config.clientsetFn!(this.current());
    } catch (e) {
      log.error(e, "Unable to load a client to request certificates", { logger: this.#name });
      fail();
      return false;
    }
    let req;
    try {
      req = await requestCertificate(client, generated.csrPem, {
        signerName: this.#config.signerName,
        usages: this.#config.getUsages(generated.keyType),
        requestedDurationMs: this.#config.requestedCertificateLifetimeMs,
        signal,
      });
    } catch (e) {
      if (signal.aborted) return false;
      log.error(e, "Failed while requesting a signed certificate from the control plane", {
        logger: this.#name,
      });
      fail();
      this.#updateServerError(e);
      return false;
    }
    // The wait ends at the timeout, at a template change, or at stop.
    const wait = new AbortController();
    const onStop = () => wait.abort(signal.reason);
    signal.addEventListener("abort", onStop, { once: true });
    const timeout = this.#clock.afterFunc(
      this.#config.certificateWaitTimeoutMs ?? certificateWaitTimeoutMs,
      () => wait.abort(new Error("timed out waiting for the condition")),
    );
    this.#lastRequest = template;
    this.#lastRequestCancel = () => wait.abort(new Error("the template changed"));
    let certPem: string;
    try {
      certPem = await waitForCertificate(client, req.name, req.uid, { signal: wait.signal });
    } catch (e) {
      if (!signal.aborted) {
        log.error(
          wait.signal.aborted ? wait.signal.reason : e,
          "Certificate request was not signed",
          {
            logger: this.#name,
          },
        );
        fail();
      }
      return false;
    } finally {
      timeout.stop();
      signal.removeEventListener("abort", onStop);
    }
    let cert: TlsCertificate;
    try {
      cert = await this.#config.certificateStore.update(certPem, generated.keyPem);
    } catch (e) {
      log.error(e, "Unable to store the new cert/key pair", { logger: this.#name });
      fail();
      return false;
    }
    const old = this.#updateCached(cert);
    if (old) this.#config.certificateRotation?.((this.#clock.now() - old.leaf.notBefore) / 1000);
    return true;
  }

  #updateCached(cert: TlsCertificate): TlsCertificate | undefined {
    this.#serverHealth = true;
    const old = this.#cert;
    this.#cert = cert;
    this.#config.onCertificate?.(cert);
    return old;
  }

  // client-go's updateServerError: which answers mean the API server itself is fine.
  #updateServerError(err: unknown): void {
    if (isUnauthorized(err)) this.#serverHealth = true;
    else if (isUnexpectedServerError(err)) this.#serverHealth = false;
    else this.#serverHealth = isNotFound(err) || isForbidden(err);
  }

  // Extra names or organisations in the certificate do not call for a new one; missing ones do.
  #certSatisfiesTemplate(): boolean {
    const cert = this.#cert;
    if (!cert) return false;
    const template = this.#config.getTemplate();
    if (!template) return true;
    const leaf = cert.leaf;
    const fields = { logger: this.#name };
    if (template.commonName !== leaf.commonName) {
      log.V(2).info("Current certificate CN does not match requested CN", {
        ...fields,
        currentName: leaf.commonName,
        requestedName: template.commonName,
      });
      return false;
    }
    const missing = (want: string[], have: string[]) => {
      const set = new Set(have);
      return [...new Set(want)].filter((w) => !set.has(w)).sort();
    };
    const dnsNames = missing(template.dnsNames, leaf.dnsNames);
    if (dnsNames.length > 0) {
      log.V(2).info("Current certificate is missing requested DNS names", { ...fields, dnsNames });
      return false;
    }
    const ips = missing(template.ipAddresses.map(canonicalIP), leaf.ipAddresses.map(canonicalIP));
    if (ips.length > 0) {
      log.V(2).info("Current certificate is missing requested IP addresses", {
        ...fields,
        IPs: ips,
      });
      return false;
    }
    const orgs = missing(template.organizations, leaf.organizations);
    if (orgs.length > 0) {
      log.V(2).info("Current certificate is missing requested orgs", { ...fields, orgs });
      return false;
    }
    return true;
  }
}

// apimachinery's IsUnexpectedServerError: a cause of type UnexpectedServerResponse.
function isUnexpectedServerError(err: unknown): boolean {
  return err instanceof StatusError &&
    (err.status.details?.causes ?? []).some((c) => c.reason === "UnexpectedServerResponse");
}

/** Whether two templates ask for the same (Go's `reflect.DeepEqual` of the requests). */
export function templatesEqual(
  a: CertificateRequestTemplate | undefined,
  b: CertificateRequestTemplate | undefined,
): boolean {
  if (!a || !b) return a === b;
  const same = (x: string[], y: string[]) => x.length === y.length && x.every((v, i) => v === y[i]);
  return a.commonName === b.commonName && same(a.organizations, b.organizations) &&
    same(a.dnsNames, b.dnsNames) && same(a.ipAddresses, b.ipAddresses);
}

const ecdsaP256 = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

/**
 * A new ECDSA P-256 key (PEM `EC PRIVATE KEY`) and a CSR for `template` signed with it (client-go's
 * `generateCSR` with `cert.MakeCSRFromTemplate`).
 *
 * @example
 * ```ts
 * const { csrPem, keyPem } = await generateCSR({ commonName: "system:node:n1", organizations: ["system:nodes"], dnsNames: ["n1"], ipAddresses: ["10.0.0.5"] });
 * ```
 */
export async function generateCSR(
  template: CertificateRequestTemplate,
): Promise<{ csrPem: string; keyPem: string; keyType: PrivateKeyType }> {
  const keys = await crypto.subtle.generateKey(ecdsaP256, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = createPrivateKey({ key: Buffer.from(pkcs8), format: "der", type: "pkcs8" })
    .export({ type: "sec1", format: "pem" }) as string;
  // Go's pkix.Name order: O before CN.
  const name = [
    ...template.organizations.map((o) => `O=${o}`),
    `CN=${template.commonName}`,
  ].join(", ");
  const sans = [
    ...template.dnsNames.map((value) => ({ type: "dns" as const, value })),
    ...template.ipAddresses.map((value) => ({ type: "ip" as const, value })),
  ];
  const x509 = await loadX509();
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys,
    signingAlgorithm: ecdsaP256,
    extensions: sans.length > 0 ? [new x509.SubjectAlternativeNameExtension(sans)] : [],
  });
  return { csrPem: csr.toString("pem") + "\n", keyPem, keyType: "ecdsa" };
}

// IPv6 written one way, so that "::1" and "0:0:0:0:0:0:0:1" compare equal (Go's IP.String()).
function canonicalIP(ip: string): string {
  if (!ip.includes(":")) return ip;
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip;
  }
}
