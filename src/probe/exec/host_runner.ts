/**
 * A `CommandRunner` that runs exec probe commands on this machine instead of in a container, for
 * pods that run as host processes. The container ID is ignored. Behaves like a CRI runtime's
 * ExecSync: stdout then stderr, a non-zero exit is an `ExitError`, and a command past its timeout
 * is killed (with everything it started) and reported as `CommandTimedOutError`.
 *
 * Like containerd's ExecSync, the output is complete only when every process holding the pipes has
 * closed them: a command that leaves a background child writing to stdout runs until that child
 * exits or the timeout kills the group.
 * @module
 */
import type { CommandRunner } from "../../kubelet/container/command_runner.ts";
import type { ContainerID } from "../../kubelet/container/container_id.ts";
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import { goQuote } from "../../util/go_format.ts";
import { CommandTimedOutError, ExitError } from "./errors.ts";

/** How much of each stream the runner keeps; the rest is read and dropped. */
const maxStreamBytes = 10 * 1024;

// How long the output may keep arriving after a timed-out command's process group was killed.
const drainAfterKillMs = 500;

/**
 * Runs commands as child processes of probelet, each in its own process group.
 *
 * @example
 * ```ts
 * const runner = new HostCommandRunner();
 * const out = await runner.runInContainer({ type: "host", id: "web" }, ["echo", "ok"], { timeoutMs: 1000 });
 * new TextDecoder().decode(out); // "ok\n"
 * ```
 */
export class HostCommandRunner implements CommandRunner {
  #clock: Clock;

  /** `clock` measures the timeout (default: the wall clock). */
  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? new RealClock();
  }

  /**
   * Runs `cmd` and resolves with its stdout followed by its stderr (at most 10 KiB of each).
   * `timeoutMs` 0 means no timeout, as for CRI ExecSync.
   */
  async runInContainer(
    _id: ContainerID,
    cmd: string[],
    options: { timeoutMs: number },
  ): Promise<Uint8Array> {
    if (cmd.length === 0) throw new Error("exec: no command");
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(cmd[0], {
        args: cmd.slice(1),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        // Its own process group, so a timeout can kill everything the command started.
        detached: true,
      }).spawn();
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) {
        throw new Error(`exec: ${goQuote(cmd[0])}: executable file not found in $PATH`, {
          cause: err,
        });
      }
      throw err instanceof Error ? err : new Error(String(err));
    }

    let timedOut = false;
    const drain = new AbortController();
    let drainTimer: ClockTimer | undefined;
    const timer = options.timeoutMs > 0
      ? this.#clock.afterFunc(options.timeoutMs, () => {
        timedOut = true;
        killProcessGroup(child.pid);
        // A descendant that left the group (setsid) could hold the pipes open forever: after the
        // kill, give the streams a short grace and then stop reading, so the probe always ends.
        drainTimer = this.#clock.afterFunc(drainAfterKillMs, () => drain.abort());
      })
      : undefined;
    // Read both streams to the end, even past the cap: a full pipe would stall the command. The
    // streams end when every process holding them (grandchildren too) has exited, as with
    // containerd 1.6's ExecSync.
    const [stdout, stderr, status] = await Promise.all([
      readCapped(child.stdout, { cap: maxStreamBytes, signal: drain.signal }),
      readCapped(child.stderr, { cap: maxStreamBytes, signal: drain.signal }),
      child.status,
    ]);
    timer?.stop();
    drainTimer?.stop();

    if (timedOut) throw new CommandTimedOutError(cmd, { timeoutMs: options.timeoutMs });
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
  signal.addEventListener("abort", stop, { once: true });
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
