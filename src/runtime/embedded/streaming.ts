/**
 * The embedded runtime's side of the streaming server (`src/cri_streaming`): exec with pipes or a
 * pseudo-terminal, attach to a container's output, and port-forward to 127.0.0.1 (every sandbox
 * shares the host's network).
 *
 * Mirrors containerd's CRI streaming runtime (`pkg/cri/server/streaming.go`,
 * `container_exec.go`'s `execInContainer`, `container_attach.go`,
 * `sandbox_portforward_linux.go`) with host processes for containers. The runtime decides where a
 * command runs (its container's working folder, environment and cgroup, as for ExecSync);
 * this file runs it with the client's streams.
 * @module
 */
import { readLogs } from "../../cri_client/logs/logs.ts";
import {
  CodeExitError,
  type CommandStreams,
  forwardConn,
  pipeInput,
  pipeOutput,
  type SpdyStream,
} from "../../cri_streaming/mod.ts";
import { resolveExecutable } from "../../probe/exec/host_runner.ts";
import type { Clock } from "../../util/clock.ts";
import { openPty, type Pty, ptyCommand } from "../../util/pty.ts";
import { signalGroup, spawnError } from "./process.ts";

/** Where and how an exec runs: what the runtime decided for its container. */
export interface ExecPlacement {
  env: Record<string, string>;
  clearEnv: boolean;
  cwd?: string;
  /** Words put before the command (joining the exec's cgroup). */
  wrapper?: string[];
  /** Called with the pid (and process group) once the command is started. */
  onStarted(pid: number): void;
  /** Called after the group was killed, when the client went away. */
  onKill(): void;
}

// Go's %v of a []string.
function goList(values: string[]): string {
  return `[${values.join(" ")}]`;
}

/**
 * Runs `cmd` with the client's streams and resolves when it has exited and its output is sent;
 * rejects with `CodeExitError` for a non-zero exit (containerd's `error executing command [..],
 * exit code N`) and with `failed to exec in container: ...` when it cannot start. With `tty`,
 * the command gets a pseudo-terminal (stdout and stderr are both on it) that follows the
 * client's window size. When the client goes away the command's group is killed.
 */
export async function execStreaming(
  cmd: string[],
  streams: CommandStreams,
  placement: ExecPlacement,
): Promise<void> {
  if (cmd.length === 0) throw new Error("failed to exec in container: exec: no command");
  let pty: Pty | undefined;
  let child: Deno.ChildProcess;
  try {
    // Resolved here so a missing binary is an error, not an exit 127 from a wrapper.
    resolveExecutable(cmd[0], {
      env: placement.env,
      clearEnv: placement.clearEnv,
      cwd: placement.cwd,
    });
    if (streams.tty) {
      pty = openPty();
      if (!pty) throw new Error("a TTY needs libc through FFI (--allow-ffi) on Linux");
    }
    const inner = [...(placement.wrapper ?? []), ...cmd];
    const argv = pty ? ptyCommand(pty, inner) : inner;
    child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      env: placement.env,
      clearEnv: placement.clearEnv,
      cwd: placement.cwd,
      stdin: !pty && streams.stdin ? "piped" : "null",
      stdout: !pty && streams.stdout ? "piped" : "null",
      stderr: !pty && streams.stderr ? "piped" : "null",
      // With a TTY, setsid makes the child its own session (and group) without a fork.
      detached: !pty,
    }).spawn();
  } catch (err) {
    pty?.close();
    const why = err instanceof Deno.errors.NotFound || err instanceof Deno.errors.PermissionDenied
      ? new Error(err.message)
      : spawnError(cmd[0], placement.cwd, err);
    throw new Error(`failed to exec in container: ${why.message}`, { cause: err });
  }
  placement.onStarted(child.pid);
  const onAbort = () => {
    signalGroup(child.pid, "SIGKILL");
    placement.onKill();
  };
  streams.signal.addEventListener("abort", onAbort, { once: true });
  try {
    let outputs: Promise<unknown>;
    if (pty) {
      const term = pty;
      if (streams.resize) {
        (async () => {
          for await (const size of streams.resize!) {
            // containerd's handleResizing skips empty sizes.
            if (size.width >= 1 && size.height >= 1) term.resize(size);
          }
        })().catch(() => {});
      }
      if (streams.stdin) {
        const stdin = streams.stdin;
        (async () => {
          for (let c = await stdin.read(); c !== null; c = await stdin.read()) await term.write(c);
          // The client closed stdin: end-of-file for the terminal's reader.
          await term.write(new Uint8Array([4]));
        })().catch(() => {});
      }
      outputs = (async () => {
        for (let c = await term.read(); c !== null; c = await term.read()) {
          await streams.stdout?.write(c).catch(() => {});
        }
        await streams.stdout?.close();
      })();
    } else {
      if (streams.stdin) pipeInput(streams.stdin, child.stdin);
      outputs = Promise.all([
        streams.stdout ? pipeOutput(child.stdout, streams.stdout) : undefined,
        streams.stderr ? pipeOutput(child.stderr, streams.stderr) : undefined,
      ]);
    }
    const status = await child.status;
    await outputs;
    if (status.code !== 0) {
      throw new CodeExitError(
        status.code,
        `error executing command ${goList(cmd)}, exit code ${status.code}`,
      );
    }
  } finally {
    streams.signal.removeEventListener("abort", onAbort);
    pty?.close();
  }
}

/**
 * Attaches to a running container's output: what it writes from now on, read from its CRI log
 * (the shim holds its stdout and stderr and writes only the log), until the container stops or
 * the client goes away. The shim keeps no stdin, so what the client types is read and dropped,
 * as containerd drops it for a container created without stdin.
 */
export async function attachStreaming(
  containerId: string,
  logPath: string,
  streams: CommandStreams,
  options: {
    clock: Clock;
    runtime: { containerStatus(id: string): Promise<{ status: { state: string } }> };
  },
): Promise<void> {
  if (streams.stdin) {
    const stdin = streams.stdin;
    (async () => {
      while (await stdin.read() !== null) { /* dropped */ }
    })().catch(() => {});
  }
  // No terminal to size: window sizes are read (the connection must not stall on them) and dropped.
  if (streams.resize) {
    const sizes = streams.resize;
    (async () => {
      for await (const _ of sizes) { /* dropped */ }
    })().catch(() => {});
  }
  const sink = (out: CommandStreams["stdout"]) =>
    out ? (bytes: Uint8Array) => out.write(bytes).catch(() => {}) : undefined;
  try {
    await readLogs(
      logPath,
      containerId,
      { tail: 0, bytes: -1, since: undefined, follow: true, timestamp: false },
      { stdout: sink(streams.stdout), stderr: sink(streams.tty ? streams.stdout : streams.stderr) },
      { runtime: options.runtime, clock: options.clock, signal: streams.signal },
    );
  } finally {
    await Promise.all([streams.stdout?.close(), streams.stderr?.close()]);
  }
}

/**
 * Connects `stream` to `port` on the host's loopback (the sandbox's network is the host's), IPv4
 * first then IPv6 as containerd dials `localhost`, and copies both ways until the connection ends.
 */
export async function portForwardHost(
  podSandboxId: string,
  port: number,
  stream: SpdyStream,
  options: { clock: Clock },
): Promise<void> {
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: "127.0.0.1", port });
  } catch (err4) {
    try {
      conn = await Deno.connect({ hostname: "::1", port });
    } catch (err6) {
      throw new Error(
        `failed to execute portforward in network namespace "host": failed to connect to localhost:${port} inside namespace "${podSandboxId}", IPv4: ${
          dialText("tcp4", "127.0.0.1", port, err4)
        } IPv6 ${dialText("tcp6", "[::1]", port, err6)} `,
      );
    }
  }
  await forwardConn(stream, conn, { clock: options.clock });
}

// Go's net.Dial error text for the common cases.
function dialText(network: string, host: string, port: number, err: unknown): string {
  const why = err instanceof Deno.errors.ConnectionRefused
    ? "connect: connection refused"
    : err instanceof Error
    ? err.message
    : String(err);
  return `dial ${network} ${host}:${port}: ${why}`;
}
