/**
 * certificates.k8s.io/v1 CertificateSigningRequest: how a node asks the cluster's signers for a
 * certificate (kubelet's serving certificate, signer `kubernetes.io/kubelet-serving`).
 * Mirrors k8s.io/api/certificates/v1/types.go.
 * @module
 */
import type { ListMeta, ObjectMeta, Time, TypeMeta } from "../../meta/v1/types.ts";

/** A key usage the requested certificate may have (`digital signature`, `server auth`, ...). */
export type KeyUsage =
  | "signing"
  | "digital signature"
  | "content commitment"
  | "key encipherment"
  | "key agreement"
  | "data encipherment"
  | "cert sign"
  | "crl sign"
  | "encipher only"
  | "decipher only"
  | "any"
  | "server auth"
  | "client auth"
  | "code signing"
  | "email protection"
  | "s/mime"
  | "ipsec end system"
  | "ipsec tunnel"
  | "ipsec user"
  | "timestamping"
  | "ocsp signing"
  | "microsoft sgc"
  | "netscape sgc";

/** `Approved`, `Denied`, `Failed`, or a custom type. */
export type RequestConditionType = string;

/** kubelet's serving certificates' signer. */
export const kubeletServingSignerName = "kubernetes.io/kubelet-serving";

/** The request. `request` is the PEM `CERTIFICATE REQUEST`, base64 on the wire (Go's []byte). */
export interface CertificateSigningRequestSpec {
  request: string;
  signerName: string;
  expirationSeconds?: number;
  usages?: KeyUsage[];
  /** Set by the API server: who asked. */
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** One condition (approval, denial, failure). */
export interface CertificateSigningRequestCondition {
  type: RequestConditionType;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastUpdateTime?: Time;
  lastTransitionTime?: Time;
}

/** What the approver and the signer wrote. `certificate` is base64 of the PEM chain. */
export interface CertificateSigningRequestStatus {
  conditions?: CertificateSigningRequestCondition[];
  certificate?: string;
}

/** A certificate signing request. */
export interface CertificateSigningRequest extends TypeMeta {
  metadata: ObjectMeta;
  spec: CertificateSigningRequestSpec;
  status?: CertificateSigningRequestStatus;
}

/** A list of requests as LIST returns it. */
export interface CertificateSigningRequestList extends TypeMeta {
  metadata: ListMeta;
  items: CertificateSigningRequest[];
}
