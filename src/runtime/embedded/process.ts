/**
 * Helpers for the host processes that stand in for containers: signalling a process group, and
 * the OCI runtime's wording for a command that cannot be started.
 * @module
 */
import { goQuote } from "../../util/go_format.ts";
import { errorText } from "../../util/errors.ts";

/** Sends `signal` to process group `pid`; does nothing when the group is gone. */
export function signalGroup(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}

/** The error the OCI runtime would give for a command that cannot be started. */
export function spawnError(executable: string, cwd: string | undefined, err: unknown): Error {
  const text = errorText(err);
  if (cwd !== undefined && /cwd/i.test(text)) {
    return new Error(
      `chdir to cwd (${goQuote(cwd)}) set in config.json failed: no such file or directory`,
      { cause: err },
    );
  }
  if (err instanceof Deno.errors.NotFound) {
    const what = executable.includes("/")
      ? `exec: ${goQuote(executable)}: no such file or directory`
      : `exec: ${goQuote(executable)}: executable file not found in $PATH`;
    return new Error(what, { cause: err });
  }
  if (err instanceof Deno.errors.PermissionDenied) {
    return new Error(`exec: ${goQuote(executable)}: permission denied`, { cause: err });
  }
  return new Error(`exec: ${goQuote(executable)}: ${text}`, { cause: err });
}
