/**
 * certificates.k8s.io/v1 API types (CertificateSigningRequest).
 * @module
 */
export * from "./types.ts";
