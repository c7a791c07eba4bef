/**
 * The errors exec probes and CRI exec distinguish, as in k8s.io/utils/exec (`ExitError`, `CodeExitError`) and
 * k8s.io/cri-client (`ErrCommandTimedOut`).
 * @module
 */
import { goDuration, goQuote } from "../go_format.ts";

/**
 * A command that ran and exited with a status (Go's `exec.ExitError` interface). Carries the
 * output produced before the exit, so the exec probe can report it.
 *
 * @example
 * ```ts
 * new ExitError(1, { output: new TextEncoder().encode("not ready") }).exitStatus(); // 1
 * ```
 */
export class ExitError extends Error {
  readonly code: number;
  readonly output: Uint8Array;

  /** `message` defaults to Go's `exit status N`. */
  constructor(code: number, options: { message?: string; output?: Uint8Array } = {}) {
    super(options.message ?? `exit status ${code}`);
    this.name = "ExitError";
    this.code = code;
    this.output = options.output ?? new Uint8Array();
  }

  /** The exit status, like Go's `ExitStatus()`. */
  exitStatus(): number {
    return this.code;
  }
}

/**
 * A command that did not finish within its timeout. The message is kubelet's:
 * `command timed out: "<cmd joined by spaces>" timed out after <duration>`.
 *
 * @example
 * ```ts
 * new CommandTimedOutError(["/bin/sh", "-c", "sleep 10"], { timeoutMs: 1000 }).message;
 * // 'command timed out: "/bin/sh -c sleep 10" timed out after 1s'
 * ```
 */
export class CommandTimedOutError extends Error {
  /** Builds kubelet's text from the command and timeout; `detail` replaces the part after the prefix. */
  constructor(cmd: string[], options: { timeoutMs: number; detail?: string }) {
    const detail = options.detail ??
      `${goQuote(cmd.join(" "))} timed out after ${goDuration(options.timeoutMs)}`;
    super(`${commandTimedOutPrefix}: ${detail}`);
    this.name = "CommandTimedOutError";
  }
}

/** The sentinel text of cri-client's `ErrCommandTimedOut`. */
export const commandTimedOutPrefix = "command timed out";

/** Go's `errors.Is(err, ErrCommandTimedOut)`. */
export function isCommandTimedOut(err: unknown): err is CommandTimedOutError {
  return err instanceof CommandTimedOutError;
}

/** Go's `errors.As(err, &exec.ExitError)`. */
export function isExitError(err: unknown): err is ExitError {
  return err instanceof ExitError;
}
