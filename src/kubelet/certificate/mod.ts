/**
 * kubelet's serving certificates: requested through the CSR API and rotated
 * (`--rotate-server-certificates`), or read from files and reloaded when they change.
 * @module
 */
export {
  type CertificateLeaf,
  FileStore,
  type FileStoreOptions,
  newFileStore,
  NoCertKeyError,
  parseLeaf,
  type Store,
  type TlsCertificate,
  x509KeyPair,
} from "./certificate_store.ts";
export {
  CsrWaitError,
  requestCertificate,
  type RequestCertificateOptions,
  type RequestedCertificate,
  waitForCertificate,
} from "./csr.ts";
export {
  CertificateManager,
  type CertificateRequestTemplate,
  certificateWaitTimeoutMs,
  defaultKubeletServingGetUsages,
  generateCSR,
  jitteryDuration,
  type Manager,
  type ManagerConfig,
  newManager,
  type PrivateKeyType,
  templatesEqual,
} from "./certificate_manager.ts";
export {
  addressesToHostnamesAndIPs,
  DynamicFileManager,
  type DynamicFileManagerOptions,
  type KubeletServerCertificateManagerOptions,
  newGetTemplateFn,
  newKubeletServerCertificateDynamicFileManager,
  newKubeletServerCertificateManager,
} from "./kubelet.ts";
