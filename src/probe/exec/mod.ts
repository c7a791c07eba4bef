/**
 * The exec probe handler: the prober, its writers and command interface, the errors it tells
 * apart, and a command runner for the host.
 * @module
 */
export {
  BufferWriter,
  type Cmd,
  type ExecProber,
  LimitWriter,
  MaximumWriteError,
  maxReadLength,
  newExecProber,
  type WarningLogger,
  type Writer,
} from "./exec.ts";
export {
  CommandTimedOutError,
  commandTimedOutPrefix,
  ExitError,
  isCommandTimedOut,
  isExitError,
} from "../../util/exec/errors.ts";
export {
  drainAfterKillMs,
  type HostCommandOptions,
  type HostCommandResult,
  HostCommandRunner,
  maxProbeOutputBytes,
  resolveExecutable,
  runHostCommand,
} from "./host_runner.ts";
