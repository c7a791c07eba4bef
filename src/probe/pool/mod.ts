/**
 * The probe pool: network probe handlers run on worker threads. probelet's own addition.
 * @module
 */
export {
  defaultDeadlineGraceMs,
  defaultProbeWorkers,
  ProbePool,
  ProbePoolClosedError,
} from "./pool.ts";
