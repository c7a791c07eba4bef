/**
 * Running a command on this machine the way a CRI runtime's ExecSync runs it in a container, and a
 * `CommandRunner` built on it for `deno task probe`. The embedded runtime's ExecSync uses the same
 * {@link runHostCommand}, so the probe command and the agent follow one rule, kubelet's (through
 * containerd): the command is over when its main process has exited AND its stdout and stderr
 * have been closed by every process holding them, or at the timeout. A command that leaves a
 * background child writing to stdout (`sh -c 'sleep 30 & echo started'`) therefore runs until
 * that child exits or the timeout kills the group.
 * @module
 */
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import { goQuote } from "../../util/go_format.ts";
import { CommandTimedOutError, ExitError } from "../../util/exec/errors.ts";

/** How much of each stream a probe keeps (kubelet's `maxReadLength`, 10 KiB); the rest is dropped. */
export const maxProbeOutputBytes = 10 * 1024;

/** How long the output may keep arriving after a timed-out command's process group was killed. */
export const drainAfterKillMs = 500;

/** Options of {@link runHostCommand}. */
export interface HostCommandOptions {
  /** 0 = no timeout, as for CRI ExecSync. Measured on `clock`. */
  timeoutMs: number;
  clock: Clock;
  /** Bytes kept of each stream (default {@link maxProbeOutputBytes}). */
  capBytes?: number;
  env?: Record<string, string>;
  clearEnv?: boolean;
  cwd?: string;
  /** Aborting kills the command's group; the result then has `aborted: true`. */
  signal?: AbortSignal;
  /**
   * Words put before the command (for example a wrapper that joins a cgroup and `exec`s the rest).
   * The executable is still resolved first, so that a missing binary is an error, not an exit 127.
   */
  wrapper?: string[];
  /** Called with the pid once the process is started (to record it). */
  onStarted?: (pid: number) => void;
  /** Called at the timeout or abort, after the group is killed (to kill what left the group). */
  onKill?: () => void;
}

/** What {@link runHostCommand} saw. */
export interface HostCommandResult {
  stdout: Uint8Array;
  stderr: Uint8Array;
  status: Deno.CommandStatus;
  timedOut: boolean;
  aborted: boolean;
}

/**
 * Runs `cmd` in its own process group (stdin from /dev/null) and collects at most `capBytes` of
 * each stream, reading on to the end so that the command never blocks on a full pipe. Throws the
 * spawn error (`Deno.errors.NotFound`, ...) when it cannot be started.
 *
 * @example
 * ```ts
 * import { RealClock } from "../../util/clock.ts";
 *
 * const r = await runHostCommand(["sh", "-c", "echo ok"], { timeoutMs: 1000, clock: new RealClock() });
 * new TextDecoder().decode(r.stdout); // "ok\n"
 * ```
 */
export async function runHostCommand(
  cmd: string[],
  options: HostCommandOptions,
): Promise<HostCommandResult> {
  if (cmd.length === 0) throw new Error("exec: no command");
  const { clock, signal } = options;
  const cap = options.capBytes ?? maxProbeOutputBytes;
  let argv = cmd;
  if (options.wrapper?.length) {
    resolveExecutable(cmd[0], { env: options.env, clearEnv: options.clearEnv, cwd: options.cwd });
    argv = [...options.wrapper, ...cmd];
  }
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env: options.env,
    clearEnv: options.clearEnv,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    // Its own process group, so a timeout can kill everything the command started.
    detached: true,
  }).spawn();
  options.onStarted?.(child.pid);

  let timedOut = false;
  let aborted = false;
  const drain = new AbortController();
  let drainTimer: ClockTimer | undefined;
  const kill = () => {
    killProcessGroup(child.pid);
    options.onKill?.();
    // A descendant that left the group (setsid) could hold the pipes open forever: after the
    // kill, give the streams a short grace and then stop reading, so the command always ends.
    drainTimer ??= clock.afterFunc(drainAfterKillMs, () => drain.abort());
  };
  const timer = options.timeoutMs > 0
    ? clock.afterFunc(options.timeoutMs, () => {
      timedOut = true;
      kill();
    })
    : undefined;
  const onAbort = () => {
    aborted = true;
    kill();
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const [stdout, stderr, status] = await Promise.all([
      readCapped(child.stdout, { cap, signal: drain.signal }),
      readCapped(child.stderr, { cap, signal: drain.signal }),
      child.status,
    ]);
    return { stdout, stderr, status, timedOut, aborted };
  } finally {
    timer?.stop();
    drainTimer?.stop();
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Finds `executable` as execve would with the PATH of `env` (or probelet's own unless `clearEnv`)
 * and throws the error Go's exec would (`executable file not found in $PATH`, `no such file or
 * directory`, `permission denied`) when it cannot run.
 */
export function resolveExecutable(
  executable: string,
  options: { env?: Record<string, string>; clearEnv?: boolean; cwd?: string } = {},
): string {
  const candidates: string[] = [];
  if (executable.includes("/")) {
    candidates.push(
      executable.startsWith("/") || !options.cwd ? executable : `${options.cwd}/${executable}`,
    );
  } else {
    const path = options.env?.PATH ?? (options.clearEnv ? undefined : Deno.env.get("PATH")) ??
      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const dir of path.split(":")) candidates.push(`${dir || "."}/${executable}`);
  }
  let denied = false;
  for (const candidate of candidates) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(candidate);
    } catch {
      continue;
    }
    if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return candidate;
    denied = true;
  }
  if (denied) {
    throw new Deno.errors.PermissionDenied(`exec: ${goQuote(executable)}: permission denied`);
  }
  const why = executable.includes("/")
    ? "no such file or directory"
    : "executable file not found in $PATH";
  throw new Deno.errors.NotFound(`exec: ${goQuote(executable)}: ${why}`);
}

/**
 * Runs exec probe commands as child processes of probelet, each in its own process group, for
 * pods that run as host processes. The container ID is ignored. Behaves like a CRI runtime's
 * ExecSync: stdout then stderr (at most 10 KiB of each), a non-zero exit is an `ExitError`, and a
 * command past its timeout is killed (with everything it started) and reported as
 * `CommandTimedOutError`. It satisfies kubelet's `CommandRunner`
 * (`src/kubelet/container/command_runner.ts`) structurally: `probe` does not import `kubelet`.
 *
 * @example
 * ```ts
 * const runner = new HostCommandRunner();
 * const out = await runner.runInContainer({ type: "host", id: "web" }, ["echo", "ok"], { timeoutMs: 1000 });
 * new TextDecoder().decode(out); // "ok\n"
 * ```
 */
export class HostCommandRunner {
  #clock: Clock;

  /** `clock` measures the timeout (default: the wall clock). */
  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? new RealClock();
  }

  /**
   * Runs `cmd` and resolves with its stdout followed by its stderr (at most 10 KiB of each).
   * `timeoutMs` 0 means no timeout, as for CRI ExecSync. The container ID is not used.
   */
  async runInContainer(
    _id: unknown,
    cmd: string[],
    options: { timeoutMs: number },
  ): Promise<Uint8Array> {
    let result: HostCommandResult;
    try {
      result = await runHostCommand(cmd, { timeoutMs: options.timeoutMs, clock: this.#clock });
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) {
        throw new Error(`exec: ${goQuote(cmd[0])}: executable file not found in $PATH`, {
          cause: err,
        });
      }
      throw err instanceof Error ? err : new Error(String(err));
    }
    const { stdout, stderr, status } = result;
    if (result.timedOut) throw new CommandTimedOutError(cmd, { timeoutMs: options.timeoutMs });
    const output = new Uint8Array(stdout.length + stderr.length);
    output.set(stdout);
    output.set(stderr, stdout.length);
    if (!status.success) {
      const message = status.signal ? `signal: ${status.signal}` : undefined;
      throw new ExitError(status.code, { output, message });
    }
    return output;
  }
}

function killProcessGroup(pid: number): void {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch {
    // The group is already gone.
  }
}

async function readCapped(
  stream: ReadableStream<Uint8Array>,
  options: { cap: number; signal: AbortSignal },
): Promise<Uint8Array> {
  const { cap, signal } = options;
  const kept = new Uint8Array(cap);
  let length = 0;
  const reader = stream.getReader();
  const stop = () => reader.cancel().catch(() => {});
  if (signal.aborted) stop();
  else signal.addEventListener("abort", stop, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.length, cap - length);
      if (take > 0) {
        kept.set(value.subarray(0, take), length);
        length += take;
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  } finally {
    signal.removeEventListener("abort", stop);
    reader.releaseLock();
  }
  return kept.slice(0, length);
}
