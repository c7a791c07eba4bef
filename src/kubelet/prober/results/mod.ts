/**
 * Probe results caches and their update streams.
 * @module
 */
export {
  newManager,
  Result,
  type ResultsManager,
  resultString,
  toPrometheusType,
  type Update,
  updatesBufferSize,
  type UpdateStream,
} from "./results_manager.ts";
