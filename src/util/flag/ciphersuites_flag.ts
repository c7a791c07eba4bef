/**
 * `--tls-cipher-suites` and `--tls-min-version` as kubelet reads them: Go's cipher suite names
 * (secure and insecure ones, plus the two short ChaCha20 aliases) and version names, refused with
 * component-base's texts when unknown.
 * Mirrors k8s.io/component-base/cli/flag/ciphersuites_flag.go and Go's crypto/tls
 * `CipherSuites()`/`InsecureCipherSuites()` (Go 1.26).
 * @module
 */

/** Go's secure cipher suites, by name (`tls.CipherSuites()`), with their IANA IDs. */
export const preferredCiphers: Readonly<Record<string, number>> = {
  TLS_AES_128_GCM_SHA256: 0x1301,
  TLS_AES_256_GCM_SHA384: 0x1302,
  TLS_CHACHA20_POLY1305_SHA256: 0x1303,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 0xc009,
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 0xc00a,
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 0xc013,
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 0xc014,
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 0xc02b,
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 0xc02c,
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 0xc02f,
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 0xc030,
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 0xcca8,
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 0xcca9,
  // component-base's aliases.
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 0xcca8,
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 0xcca9,
};

/** Go's insecure cipher suites (`tls.InsecureCipherSuites()`): accepted, with a log line. */
export const insecureCiphers: Readonly<Record<string, number>> = {
  TLS_RSA_WITH_RC4_128_SHA: 0x0005,
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 0x000a,
  TLS_RSA_WITH_AES_128_CBC_SHA: 0x002f,
  TLS_RSA_WITH_AES_256_CBC_SHA: 0x0035,
  TLS_RSA_WITH_AES_128_CBC_SHA256: 0x003c,
  TLS_RSA_WITH_AES_128_GCM_SHA256: 0x009c,
  TLS_RSA_WITH_AES_256_GCM_SHA384: 0x009d,
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 0xc007,
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 0xc011,
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 0xc012,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 0xc023,
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 0xc027,
};

/**
 * The IDs of the named suites; throws component-base's error for an unknown name.
 *
 * @example
 * ```ts
 * tlsCipherSuites(["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]); // [0xc02b]
 * tlsCipherSuites(["RC5"]); // throws "Cipher suite RC5 not supported or doesn't exist"
 * ```
 */
export function tlsCipherSuites(cipherNames: string[]): number[] {
  return cipherNames.map((name) => {
    const id = Object.hasOwn(preferredCiphers, name)
      ? preferredCiphers[name]
      : Object.hasOwn(insecureCiphers, name)
      ? insecureCiphers[name]
      : undefined;
    if (id === undefined) throw new Error(`Cipher suite ${name} not supported or doesn't exist`);
    return id;
  });
}

/** A TLS version as node:tls names it. */
export type TlsVersionName = "TLSv1" | "TLSv1.1" | "TLSv1.2" | "TLSv1.3";

const versions: Readonly<Record<string, TlsVersionName>> = {
  VersionTLS10: "TLSv1",
  VersionTLS11: "TLSv1.1",
  VersionTLS12: "TLSv1.2",
  VersionTLS13: "TLSv1.3",
};

/**
 * The TLS version of a `--tls-min-version` value ("" = TLS 1.2, Go's server default); throws
 * component-base's error for an unknown one.
 *
 * @example
 * ```ts
 * tlsVersion("VersionTLS13"); // "TLSv1.3"
 * tlsVersion(""); // "TLSv1.2"
 * ```
 */
export function tlsVersion(versionName: string): TlsVersionName {
  if (versionName === "") return "TLSv1.2";
  if (Object.hasOwn(versions, versionName)) return versions[versionName];
  throw new Error(`unknown tls version "${versionName}"`);
}
