/**
 * The embedded runtime: containers as host processes behind the CRI `RuntimeService` interface.
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
export * from "./runtime.ts";
export { ContainerLog, type LogStream, maxLogLineBytes } from "./log.ts";
export { CappedBuffer, HostProcess, type ProcessExit, type SpawnOptions } from "./process.ts";
export {
  killRecordedGroups,
  type PidRecord,
  pidRecordDir,
  procStat,
  removePidRecord,
  writePidRecord,
} from "./pid_records.ts";
