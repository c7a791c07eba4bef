/**
 * Self-signed serving certificates as kubelet makes them when it is given none: a throw-away CA
 * `<host>-ca@<unix seconds>` signs a certificate `<host>@<unix seconds>` for the host (an IP SAN when
 * the host is an IP, a DNS SAN otherwise), both RSA 2048 and valid for a year; the certificate file
 * holds the certificate followed by its CA. Mirrors client-go's util/cert/cert.go
 * (`GenerateSelfSignedCertKey`) and the certificate checks kubelet's auth needs from Go's
 * crypto/x509 (`Verify` of a client certificate against a CA pool).
 *
 * X.509 encoding is done by npm `@peculiar/x509` (WebCrypto keys, PEM in and out); checking a
 * peer's chain by `node:crypto`'s `X509Certificate`. `@peculiar/x509` is loaded by the first call
 * that needs it (making a certificate, reading a client certificate's extended key usage): it
 * costs ≈ 12 MiB resident for good, and an agent whose serving certificate is already on disk and
 * that no client certificate reaches never needs it (docs/benchmarks/memory.md).
 * @module
 */
import { X509Certificate } from "node:crypto";

type X509Module = typeof import("@peculiar/x509");
let x509Module: Promise<X509Module> | undefined;

/**
 * `@peculiar/x509`, loaded once on first use (≈ 13–16 MiB resident: only a node that makes or
 * requests a certificate pays for it).
 *
 * @example
 * ```ts
 * const x509 = await loadX509();
 * new x509.X509Certificate(new Uint8Array([]));
 * ```
 */
export function loadX509(): Promise<X509Module> {
  // tsyringe (under @peculiar/x509) needs the Reflect metadata polyfill loaded first.
  x509Module ??= import("reflect-metadata").then(() => import("@peculiar/x509"));
  return x509Module;
}

/** A PEM certificate (chain) and its PEM private key. */
export interface CertKeyPair {
  certPem: string;
  keyPem: string;
}

const rsa = {
  name: "RSASSA-PKCS1-v1_5",
  hash: "SHA-256",
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};

const dayMs = 24 * 60 * 60 * 1000;

/**
 * Generates a CA and a serving certificate for `host` signed by it, as client-go's
 * `GenerateSelfSignedCertKey(host, alternateIPs, alternateDNS)` does.
 *
 * @example
 * ```ts
 * const { certPem, keyPem } = await generateSelfSignedCertKey("node-1");
 * ```
 */
export async function generateSelfSignedCertKey(
  host: string,
  options: { alternateIPs?: string[]; alternateDNS?: string[]; now?: Date } = {},
): Promise<CertKeyPair> {
  const x509 = await loadX509();
  const now = options.now ?? new Date();
  const seconds = Math.floor(now.getTime() / 1000);
  const notAfter = new Date(now.getTime() + 365 * dayMs);
  const caKeys = await crypto.subtle.generateKey(rsa, true, ["sign", "verify"]) as CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${host}-ca@${seconds}`,
    notBefore: now,
    notAfter,
    keys: caKeys,
    signingAlgorithm: rsa,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyEncipherment | x509.KeyUsageFlags.digitalSignature |
          x509.KeyUsageFlags.keyCertSign,
        true,
      ),
    ],
  });
  const keys = await crypto.subtle.generateKey(rsa, true, ["sign", "verify"]) as CryptoKeyPair;
  const ips = [...(isIP(host) ? [host] : []), ...(options.alternateIPs ?? [])];
  const dns = [...(isIP(host) ? [] : [host]), ...(options.alternateDNS ?? [])];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${host}@${seconds}`,
    issuer: ca.subject,
    notBefore: now,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: rsa,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyEncipherment | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...ips.map((value) => ({ type: "ip" as const, value })),
        ...dns.map((value) => ({ type: "dns" as const, value })),
      ]),
    ],
  });
  const pkcs8 = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
  return {
    certPem: cert.toString("pem") + "\n" + ca.toString("pem") + "\n",
    keyPem: x509.PemConverter.encode(pkcs8, "PRIVATE KEY") + "\n",
  };
}

function serial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // positive
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function isIP(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(":");
}

/** The PEM blocks of a bundle, in order. */
export function splitPemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** Go's `x509.ExtKeyUsageClientAuth` and `ExtKeyUsageAny` OIDs. */
const clientAuthOID = "1.3.6.1.5.5.7.3.2";
const anyExtKeyUsageOID = "2.5.29.37.0";

/**
 * Verifies a client's certificate chain (leaf first, DER or `X509Certificate`s) against the CA
 * bundle, as Go's `Certificate.Verify` with `KeyUsages: [ClientAuth]` does for the x509
 * authenticator: each link signed by the next, every certificate within its validity at `now`,
 * the chain ending at a certificate signed by (or equal to) one of `roots`, and the leaf's extended
 * key usage (when it has one) allowing client authentication. Resolves with the Go error text, or
 * undefined when the chain verifies.
 *
 * @example
 * ```ts
 * import type { X509Certificate } from "node:crypto";
 *
 * declare const leaf: X509Certificate;
 * declare const roots: X509Certificate[];
 * const err = await verifyClientChain([leaf], roots, new Date());
 * ```
 */
export async function verifyClientChain(
  chain: X509Certificate[],
  roots: X509Certificate[],
  now: Date,
): Promise<string | undefined> {
  if (chain.length === 0) return "x509: no certificate";
  for (const cert of chain) {
    if (now < new Date(cert.validFrom) || now > new Date(cert.validTo)) {
      return `x509: certificate has expired or is not yet valid: current time ${
        now.toISOString().replace(/\.\d+Z$/, "Z")
      } is ${now < new Date(cert.validFrom) ? "before" : "after"} ${
        new Date(now < new Date(cert.validFrom) ? cert.validFrom : cert.validTo).toISOString()
          .replace(/\.\d+Z$/, "Z")
      }`;
    }
  }
  // node:crypto's keyUsage is not filled in by Deno 2.9.3: the extension is read here.
  const x509 = await loadX509();
  const eku = new x509.X509Certificate(new Uint8Array(chain[0].raw)).getExtension(
    x509.ExtendedKeyUsageExtension,
  );
  const usages = (eku?.usages ?? []).map(String);
  if (usages.length > 0 && !usages.includes(clientAuthOID) && !usages.includes(anyExtKeyUsageOID)) {
    return "x509: certificate specifies an incompatible key usage";
  }
  // Walk up the presented chain until a certificate a root signed.
  for (let i = 0; i < chain.length; i++) {
    const cert = chain[i];
    for (const root of roots) {
      if (root.raw.equals(cert.raw)) return undefined;
      if (cert.checkIssued(root) && cert.verify(root.publicKey)) return undefined;
    }
    const next = chain[i + 1];
    if (!next || !next.ca || !cert.checkIssued(next) || !cert.verify(next.publicKey)) break;
  }
  return "x509: certificate signed by unknown authority";
}

/**
 * Reads a CA bundle (`--client-ca-file`) into certificates.
 *
 * @example
 * ```ts
 * const roots = parseCABundle(await Deno.readTextFile("/etc/kubernetes/pki/ca.crt"));
 * ```
 */
export function parseCABundle(pem: string): X509Certificate[] {
  const blocks = splitPemCertificates(pem);
  if (blocks.length === 0) {
    throw new Error("data does not contain any valid RSA or ECDSA certificates");
  }
  return blocks.map((b) => new X509Certificate(b));
}

/** A CA that signs certificates (tests, and the scripts' kubelet client certificate). */
export interface CertificateAuthority {
  certPem: string;
  keyPem: string;
  /** Signs a certificate for `CN=<commonName>,O=<organizations...>`. */
  sign(
    subject: { commonName: string; organizations?: string[] },
    options?: { usage?: "client" | "server"; ips?: string[]; dns?: string[]; notAfter?: Date },
  ): Promise<CertKeyPair>;
}

const ec = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

/**
 * Creates a CA (ECDSA P-256) valid from `now` for a year.
 *
 * @example
 * ```ts
 * const ca = await newCertificateAuthority("probelet-test-ca");
 * const client = await ca.sign({ commonName: "kube-apiserver", organizations: ["system:masters"] });
 * ```
 */
export async function newCertificateAuthority(
  commonName: string,
  now = new Date(),
): Promise<CertificateAuthority> {
  const x509 = await loadX509();
  const caKeys = await crypto.subtle.generateKey(ec, true, ["sign", "verify"]) as CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 365 * dayMs),
    keys: caKeys,
    signingAlgorithm: ec,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign,
        true,
      ),
    ],
  });
  const pkcs8 = await crypto.subtle.exportKey("pkcs8", caKeys.privateKey);
  return {
    certPem: ca.toString("pem") + "\n",
    keyPem: x509.PemConverter.encode(pkcs8, "PRIVATE KEY") + "\n",
    async sign(subject, options = {}) {
      const keys = await crypto.subtle.generateKey(ec, true, ["sign", "verify"]) as CryptoKeyPair;
      const name = [
        `CN=${subject.commonName}`,
        ...(subject.organizations ?? []).map((o) => `O=${o}`),
      ]
        .join(", ");
      const usage = options.usage ?? "client";
      const sans = [
        ...(options.ips ?? []).map((value) => ({ type: "ip" as const, value })),
        ...(options.dns ?? []).map((value) => ({ type: "dns" as const, value })),
      ];
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject: name,
        issuer: ca.subject,
        notBefore: new Date(now.getTime() - 60_000),
        notAfter: options.notAfter ?? new Date(now.getTime() + 365 * dayMs),
        publicKey: keys.publicKey,
        signingKey: caKeys.privateKey,
        signingAlgorithm: ec,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([
            usage === "client"
              ? x509.ExtendedKeyUsage.clientAuth
              : x509.ExtendedKeyUsage.serverAuth,
          ]),
          ...(sans.length > 0 ? [new x509.SubjectAlternativeNameExtension(sans)] : []),
        ],
      });
      const key = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
      return {
        certPem: cert.toString("pem") + "\n",
        keyPem: x509.PemConverter.encode(key, "PRIVATE KEY") + "\n",
      };
    },
  };
}
