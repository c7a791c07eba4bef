/**
 * The strict kube-apiserver double for probelet's API-mode tests. See server.ts for what it serves
 * and the hooks it offers; docs/testing.md for how to use it.
 * @module
 */
export {
  adminUser,
  ApiServerDouble,
  type ApiServerDoubleOptions,
  type Fault,
  nodeUser,
  type RequestRecord,
  type RunningApiServer,
  type ServingTls,
  startApiServer,
  type UserInfo,
} from "./server.ts";
export {
  type CertPair,
  kubeconfigYaml,
  makeTestPki,
  opensslAvailable,
  type TestPki,
} from "./tls.ts";
export { ApiError, type JsonObject, type JsonValue } from "./status.ts";
export { formatTime } from "./registry.ts";
export { mirrorPodAnnotationKey, namespaceNodeLease } from "./authz.ts";
export type { SentWatchEvent } from "./watch.ts";
