/**
 * certificates.k8s.io/v1 API types (CertificateSigningRequest).
 * @module
 */
export {
  type CertificateSigningRequest,
  type CertificateSigningRequestCondition,
  type CertificateSigningRequestList,
  type CertificateSigningRequestSpec,
  type CertificateSigningRequestStatus,
  type KeyUsage,
  kubeletServingSignerName,
  type RequestConditionType,
} from "./types.ts";
