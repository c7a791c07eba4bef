/**
 * Static pod configuration: manifest files → validated, defaulted pods, and a watch that turns file
 * changes into whole desired sets. Mirrors kubelet's pkg/kubelet/config (file source).
 *
 * @example
 * ```ts
 * import { loadPodManifests, watchManifests } from "./mod.ts";
 * const { pods, errors } = await loadPodManifests("fixtures/pods/host", { nodeName: "laptop" });
 * const watcher = await watchManifests("fixtures/pods/host", { onChange: (u) => console.log(u.pods.length) });
 * await watcher.stop();
 * ```
 * @module
 */
export {
  defaultFileCheckIntervalMs,
  defaultNodeName,
  type LoadOptions,
  loadPodManifests,
  ManifestError,
  manifestExtensions,
  maxManifestBytes,
  parsePodManifest,
  PodConfigWatcher,
  type PodManifests,
  type PodUpdate,
  watchManifests,
  type WatchOptions,
} from "./file.ts";
export { inlineDecoder, type ManifestDecoder, WorkerDecoder } from "./decoder.ts";
export {
  applyStaticPodDefaults,
  configHashAnnotationKey,
  configSourceAnnotationKey,
  type DecodedDocument,
  decodePodDocuments,
  fileSource,
  generatePodName,
  maxDocumentsPerFile,
  staticPodUID,
} from "./common.ts";
export {
  defaultTerminationGracePeriodSeconds,
  probeDefaults,
  setDefaultsContainer,
  setDefaultsPod,
  setDefaultsProbe,
} from "./defaults.ts";
export {
  type FieldError,
  formatFieldError,
  maxFileNameBytes,
  maxInt32,
  shortQuote,
  validatePod,
  validateStaticPodIdentity,
} from "./validation.ts";
