/**
 * Host processes standing in for containers: each runs in its own process group, so that stopping
 * it reaches everything it started, and when its main process exits the rest of the group is
 * killed, as the kernel does to a PID namespace when its init process exits.
 * @module
 */
import type { Clock } from "../../../util/clock.ts";
import { goQuote } from "../../../util/go_format.ts";

/** How a process ended: its exit code (128 + signal number when killed, as runc reports) and time. */
export interface ProcessExit {
  code: number;
  signal: Deno.Signal | null;
  /** Milliseconds since the epoch, on the runtime's clock. */
  finishedAt: number;
}

/** How long output may keep flowing after the main process exited (from escaped descendants). */
export const outputDrainMs = 1000;

/** Options of {@link HostProcess.spawn}. */
export interface SpawnOptions {
  /** Receives the output as it arrives. */
  onOutput?: (stream: "stdout" | "stderr", chunk: Uint8Array) => void;
  /** Environment added to (or, with `clearEnv`, replacing) probelet's own. */
  env?: Record<string, string>;
  clearEnv?: boolean;
  /** Working directory (default: probelet's). */
  cwd?: string;
  clock: Clock;
}

/**
 * A command running as the leader of its own process group; its stdout and stderr go to
 * `onOutput`.
 *
 * @example
 * ```ts
 * const p = HostProcess.spawn(["sh", "-c", "echo hi; sleep 60"], {
 *   clock: new RealClock(),
 *   onOutput: (stream, chunk) => console.log(stream, chunk.length),
 * });
 * const exit = await p.terminate(300); // SIGTERM, SIGKILL after 300 ms
 * exit.code; // 143
 * ```
 */
export class HostProcess {
  readonly pid: number;
  readonly command: string[];
  /** Resolves when the main process has exited (the rest of its group has then been killed). */
  readonly exited: Promise<ProcessExit>;
  /** Resolves after `exited` once all output has been delivered. */
  readonly done: Promise<ProcessExit>;
  #exit: ProcessExit | undefined;
  #clock: Clock;

  private constructor(child: Deno.ChildProcess, command: string[], options: SpawnOptions) {
    const clock = options.clock;
    this.pid = child.pid;
    this.command = command;
    this.#clock = clock;
    this.exited = child.status.then((status) => {
      // No orphans: whatever the main process left behind in its group goes with it.
      signalGroup(this.pid, "SIGKILL");
      this.#exit = {
        code: status.code,
        signal: status.signal,
        finishedAt: clock.now(),
      };
      return this.#exit;
    });
    // Output ends when every holder of the pipes is gone. A descendant that left the group could
    // hold them forever: stop reading a while after the main process exited.
    let drainTimer: { stop(): boolean } | undefined;
    const giveUp = this.exited.then(() =>
      new Promise<void>((resolve) => drainTimer = clock.afterFunc(outputDrainMs, resolve))
    );
    const onOutput = options.onOutput ?? (() => {});
    this.done = Promise.all([
      consume(child.stdout, (chunk) => onOutput("stdout", chunk), giveUp),
      consume(child.stderr, (chunk) => onOutput("stderr", chunk), giveUp),
      this.exited,
    ]).then(([, , exit]) => {
      drainTimer?.stop();
      return exit;
    });
  }

  /**
   * Starts `command` detached (own process group), stdin from /dev/null. Throws an `Error` worded
   * like the OCI runtime's when the command cannot be started.
   */
  static spawn(command: string[], options: SpawnOptions): HostProcess {
    if (command.length === 0) throw new Error("no command specified");
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(command[0], {
        args: command.slice(1),
        env: options.env,
        clearEnv: options.clearEnv,
        cwd: options.cwd,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
    } catch (err) {
      throw spawnError(command[0], options.cwd, err);
    }
    return new HostProcess(child, command, options);
  }

  /** The exit, once the main process has exited. */
  get exit(): ProcessExit | undefined {
    return this.#exit;
  }

  /** Sends `signal` to the whole group; does nothing once the main process has exited. */
  signal(signal: Deno.Signal): void {
    if (!this.#exit) signalGroup(this.pid, signal);
  }

  /**
   * Stops the group: SIGTERM, then SIGKILL if the main process is still running after
   * `gracePeriodMs` (0 = SIGKILL at once). Resolves with the exit.
   */
  async terminate(gracePeriodMs: number): Promise<ProcessExit> {
    if (this.#exit) return this.#exit;
    if (gracePeriodMs > 0) {
      this.signal("SIGTERM");
      let timer: { stop(): boolean } | undefined;
      const expired = new Promise<"expired">((resolve) => {
        timer = this.#clock.afterFunc(gracePeriodMs, () => resolve("expired"));
      });
      const first = await Promise.race([this.exited, expired]);
      timer?.stop();
      if (first !== "expired") return first;
    }
    this.signal("SIGKILL");
    return await this.exited;
  }
}

/**
 * Collects output up to `cap` bytes; the rest is dropped (but still read, so that the writer never
 * blocks on a full pipe).
 *
 * @example
 * ```ts
 * const out = new CappedBuffer(16 << 20);
 * out.push(new Uint8Array([104, 105]));
 * out.bytes(); // Uint8Array [104, 105]
 * ```
 */
export class CappedBuffer {
  readonly cap: number;
  #parts: Uint8Array[] = [];
  #length = 0;

  /** Keeps at most `cap` bytes. */
  constructor(cap: number) {
    this.cap = cap;
  }

  /** Appends what still fits. */
  push(chunk: Uint8Array): void {
    const take = Math.min(chunk.length, this.cap - this.#length);
    if (take <= 0) return;
    this.#parts.push(chunk.slice(0, take));
    this.#length += take;
  }

  /** Everything kept, as one array. */
  bytes(): Uint8Array {
    const out = new Uint8Array(this.#length);
    let at = 0;
    for (const p of this.#parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

async function consume(
  stream: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
  giveUp: Promise<void>,
): Promise<void> {
  const reader = stream.getReader();
  let finished = false;
  giveUp.then(() => {
    if (!finished) reader.cancel().catch(() => {});
  });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      onChunk(value);
    }
  } catch {
    // Cancelled or broken pipe: the output ends here.
  } finally {
    finished = true;
    reader.releaseLock();
  }
}

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
  const text = err instanceof Error ? err.message : String(err);
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
