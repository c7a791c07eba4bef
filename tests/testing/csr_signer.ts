/**
 * A cluster's approver and `kubernetes.io/kubelet-serving` signer for unit tests over
 * {@linkcode FakeClientset}: finds the pending CertificateSigningRequests, approves them as
 * `kubectl certificate approve` does and issues a certificate for the request's subject, SANs and
 * public key, signed by a test CA (what kube-controller-manager's csrsigning controller does).
 * Mirrors the parts of kube-controller-manager's pkg/controller/certificates/signer the tests need.
 * @module
 */
// tsyringe (under @peculiar/x509) needs the Reflect metadata polyfill loaded first.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import type { CertificateSigningRequest } from "../../src/api/certificates/v1/mod.ts";
import { type CertificateAuthority, newCertificateAuthority } from "../../src/util/cert/cert.ts";
import { decodeBase64, encodeBase64 } from "../../src/util/base64.ts";
import type { FakeClientset, KubeObject } from "./fake_clientset.ts";

const ec = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

/** What the test signer does with requests. */
export interface TestSigner {
  ca: CertificateAuthority;
  /** The CSRs stored in the fake, oldest first. */
  requests(): CertificateSigningRequest[];
  /** The parsed PKCS#10 request of a CSR. */
  parse(csr: CertificateSigningRequest): x509.Pkcs10CertificateRequest;
  /** Approves and issues `name`, valid `[notBefore, notAfter)`; returns the issued PEM. */
  issue(name: string, validity: { notBefore: number; notAfter: number }): Promise<string>;
  /** Adds a `Denied` condition to `name`. */
  deny(name: string, reason: string, message: string): void;
}

/**
 * A signer over `client` with its own CA.
 *
 * @example
 * ```ts
 * const signer = await newTestSigner(client);
 * await signer.issue(signer.requests()[0].metadata.name!, { notBefore: now, notAfter: now + 100_000 });
 * ```
 */
export async function newTestSigner(client: FakeClientset): Promise<TestSigner> {
  const ca = await newCertificateAuthority("probelet-test-cluster-ca");
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await crypto.subtle.importKey(
    "pkcs8",
    x509.PemConverter.decodeFirst(ca.keyPem),
    ec,
    false,
    ["sign"],
  );
  const requests = () =>
    client.tracker.list("certificatesigningrequests", "") as unknown as CertificateSigningRequest[];
  const get = (name: string) => {
    const csr = requests().find((c) => c.metadata.name === name);
    if (!csr) throw new Error(`no csr ${name}`);
    return structuredClone(csr);
  };
  const parse = (csr: CertificateSigningRequest) =>
    new x509.Pkcs10CertificateRequest(new TextDecoder().decode(decodeBase64(csr.spec.request)));
  return {
    ca,
    requests,
    parse,
    async issue(name, validity) {
      const csr = get(name);
      const req = parse(csr);
      const san = req.extensions.find((e) => e instanceof x509.SubjectAlternativeNameExtension);
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: crypto.randomUUID().replaceAll("-", "").slice(0, 16),
        subject: req.subject,
        issuer: caCert.subject,
        notBefore: new Date(validity.notBefore),
        notAfter: new Date(validity.notAfter),
        publicKey: await req.publicKey.export(),
        signingKey: caKey,
        signingAlgorithm: ec,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          ...(san ? [san] : []),
        ],
      });
      const pem = cert.toString("pem") + "\n";
      csr.status = {
        conditions: [{ type: "Approved", status: "True", reason: "KubectlApprove" }],
        certificate: encodeBase64(new TextEncoder().encode(pem)),
      };
      client.tracker.update("certificatesigningrequests", "", csr as unknown as KubeObject);
      return pem;
    },
    deny(name, reason, message) {
      const csr = get(name);
      csr.status = { conditions: [{ type: "Denied", status: "True", reason, message }] };
      client.tracker.update("certificatesigningrequests", "", csr as unknown as KubeObject);
    },
  };
}
