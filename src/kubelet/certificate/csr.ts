/**
 * Asking the cluster for a certificate: post a CertificateSigningRequest, then list and watch it
 * (field selector `metadata.name=<name>`) until it is approved and carries a certificate, or is
 * denied, failed or deleted. The request and the issued chain are PEM; the API carries them
 * base64 (Go's []byte).
 * Mirrors k8s.io/client-go/util/certificate/csr/csr.go (`RequestCertificate`,
 * `WaitForCertificate`); the v1beta1 fallbacks are left out (the API has served v1 since 1.19).
 * @module
 */
import type { CertificateSigningRequest, KeyUsage } from "../../api/certificates/v1/mod.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import { isAlreadyExists, StatusError } from "../../client/errors.ts";
import { decodeBase64, encodeBase64 } from "../../util/base64.ts";
import * as log from "../../util/log.ts";
import { errorText } from "../../util/errors.ts";

/** The CSR's name and UID as the API server stored them. */
export interface RequestedCertificate {
  name: string;
  uid: string;
}

/** Options of {@linkcode requestCertificate}. */
export interface RequestCertificateOptions {
  /** The CSR's name; "" lets the server name it `csr-xxxxx`. */
  name?: string;
  signerName: string;
  usages: KeyUsage[];
  /** `spec.expirationSeconds` (client-go's requestedDuration). */
  requestedDurationMs?: number;
  signal?: AbortSignal;
}

/**
 * Creates the CSR for `csrPem` (client-go's `RequestCertificateWithContext`; a named CSR that
 * already exists is not reused here: the serving-certificate manager never names its requests).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const client: Clientset;
 * declare const csrPem: string;
 *
 * const { name, uid } = await requestCertificate(client, csrPem, { signerName: "kubernetes.io/kubelet-serving", usages: ["digital signature", "server auth"] });
 * ```
 */
export async function requestCertificate(
  client: Clientset,
  csrPem: string,
  options: RequestCertificateOptions,
): Promise<RequestedCertificate> {
  const csr: CertificateSigningRequest = {
    metadata: options.name ? { name: options.name } : { generateName: "csr-" },
    spec: {
      request: encodeBase64(new TextEncoder().encode(csrPem)),
      usages: options.usages,
      signerName: options.signerName,
      ...(options.requestedDurationMs !== undefined
        ? { expirationSeconds: Math.trunc(options.requestedDurationMs / 1000) }
        : {}),
    },
  };
  try {
    const created = await client.certificatesV1.certificateSigningRequests().create(csr, {
      signal: options.signal,
    });
    const name = created.metadata.name ?? "";
    log.V(2).info("Certificate signing request created", { csr: name });
    return { name, uid: created.metadata.uid ?? "" };
  } catch (e) {
    if (isAlreadyExists(e) && options.name) {
      throw new Error(`csr "${options.name}" already exists`, { cause: e });
    }
    throw formatError("cannot create certificate signing request: %v", e);
  }
}

/**
 * Waits until the CSR is issued and returns the PEM chain; throws when it is denied, failed,
 * deleted or replaced (another UID), or when `signal` aborts (client-go's `WaitForCertificate`).
 * A watch that ends is resumed from the last resourceVersion seen, or by listing again.
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const client: Clientset;
 * declare const uid: string;
 *
 * const certPem = await waitForCertificate(client, name, uid, { signal: AbortSignal.timeout(900_000) });
 * ```
 */
export async function waitForCertificate(
  client: Clientset,
  reqName: string,
  reqUID: string,
  options: { signal: AbortSignal },
): Promise<string> {
  const { signal } = options;
  const csrs = client.certificatesV1.certificateSigningRequests();
  const fieldSelector = `metadata.name=${reqName}`;
  // UntilWithSync: the list is the first set of events, the watch the rest.
  for (;;) {
    signal.throwIfAborted();
    let resourceVersion: string | undefined;
    try {
      const list = await csrs.list({ fieldSelector, signal });
      for (const csr of list.items) {
        const done = issued(csr, reqName, reqUID);
        if (done !== undefined) return done;
      }
      resourceVersion = list.metadata.resourceVersion;
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      if (e instanceof CsrWaitError) throw e;
      throw formatError("cannot watch on the certificate signing request: %v", e);
    }
    let watch;
    try {
      watch = await csrs.watch({ fieldSelector, resourceVersion, signal });
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      throw formatError("cannot watch on the certificate signing request: %v", e);
    }
    const onAbort = () => watch.stop();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const event of watch) {
        if (event.type === "DELETED" && event.object.metadata.name === reqName) {
          throw new CsrWaitError(`csr "${reqName}" was deleted`);
        }
        if (event.type !== "ADDED" && event.type !== "MODIFIED") continue;
        const done = issued(event.object, reqName, reqUID);
        if (done !== undefined) return done;
      }
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      if (e instanceof CsrWaitError) throw e;
      // A broken watch is listed and watched again, as the reflector under UntilWithSync does.
      log.V(4).info("Watch of the certificate signing request ended", {
        csr: reqName,
        err: errorText(e),
      });
    } finally {
      signal.removeEventListener("abort", onAbort);
      watch.stop();
    }
  }
}

/** Why a wait ended for good (denied, failed, deleted, another UID). */
export class CsrWaitError extends Error {
  /** `message` is client-go's text. */
  constructor(message: string) {
    super(message);
    this.name = "CsrWaitError";
  }
}

// The issued chain, undefined while waiting; throws when the request is over without one.
function issued(
  csr: CertificateSigningRequest,
  reqName: string,
  reqUID: string,
): string | undefined {
  // Another CSR (from a server that ignored the field selector) is not ours to judge.
  if (csr.metadata.name !== reqName) return undefined;
  if ((csr.metadata.uid ?? "") !== reqUID) {
    throw new CsrWaitError(`csr "${csr.metadata.name}" changed UIDs`);
  }
  let approved = false;
  for (const c of csr.status?.conditions ?? []) {
    if (c.type === "Denied") {
      throw new CsrWaitError(
        `certificate signing request is denied, reason: ${c.reason ?? ""}, message: ${
          c.message ?? ""
        }`,
      );
    }
    if (c.type === "Failed") {
      throw new CsrWaitError(
        `certificate signing request failed, reason: ${c.reason ?? ""}, message: ${
          c.message ?? ""
        }`,
      );
    }
    if (c.type === "Approved") approved = true;
  }
  if (!approved) return undefined;
  const cert = csr.status?.certificate;
  if (cert) {
    log.V(2).info("Certificate signing request is issued", { csr: reqName });
    return new TextDecoder().decode(decodeBase64(cert));
  }
  log.V(2).info("Certificate signing request is approved, waiting to be issued", { csr: reqName });
  return undefined;
}

// client-go's formatError: an API status keeps its code, with the message wrapped.
function formatError(format: string, err: unknown): Error {
  const message = errorText(err);
  if (err instanceof StatusError) {
    const wrapped = new StatusError({ ...err.status, message: format.replace("%v", message) });
    return wrapped;
  }
  return new Error(format.replace("%v", message), { cause: err });
}
