/**
 * The embedded runtime: containers as host processes behind the CRI `RuntimeService` interface,
 * each started by a shim that outlives the agent (shim.ts), recorded under the root folder so the
 * next runtime adopts them (records.ts), tracked in a cgroup where the machine allows one
 * (cgroup.ts).
 *
 * @example
 * ```ts
 * import { EmbeddedRuntimeService } from "./mod.ts";
 * const runtime = new EmbeddedRuntimeService({ rootDir: ".run/embedded" });
 * // ... use it wherever a RuntimeService is expected ...
 * await runtime.shutdown();
 * ```
 * @module
 */
export {
  embeddedRuntimeName,
  type EmbeddedRuntimeOptions,
  EmbeddedRuntimeService,
  embeddedRuntimeVersion,
  killRecordedGroups,
  maxExecOutputBytes,
  startErrorExitCode,
  startErrorReason,
  unknownExitCode,
  unknownExitReason,
} from "./runtime.ts";
export {
  ContainerLog,
  defaultLogMaxFiles,
  defaultLogMaxSizeBytes,
  type LogRotation,
  type LogStream,
  maxLogLineBytes,
  rotatedLogFiles,
} from "./log.ts";
export { signalGroup, spawnError } from "./process.ts";
export {
  type ExecRecord,
  isSameProcess,
  killLegacyPidRecords,
  killRecordedExecs,
  type ProcStat,
  procStat,
  recordDirs,
} from "./records.ts";
export { cgroup2Mount, cgroupPids, runtimeCgroup } from "./cgroup.ts";
export { outputDrainMs, type ShimExit, shimFiles, type ShimSpec, type ShimState } from "./shim.ts";
