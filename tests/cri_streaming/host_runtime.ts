/**
 * A test runtime for the streaming server: exec runs host commands with pipes, port-forward dials
 * 127.0.0.1. What the embedded runtime does, without containers.
 * @module
 */
import {
  CodeExitError,
  type CommandStreams,
  forwardConn,
  pipeInput,
  pipeOutput,
  type SpdyStream,
  type StreamingRuntime,
} from "../../src/cri_streaming/mod.ts";
import { RealClock } from "../../src/util/clock.ts";

/** Host commands and loopback ports behind the streaming server. */
export class HostRuntime implements StreamingRuntime {
  /** The commands run, for assertions. */
  readonly execs: { containerId: string; cmd: string[]; tty: boolean }[] = [];
  /** The ports forwarded. */
  readonly forwards: { podSandboxId: string; port: number }[] = [];

  /** Runs `cmd` on the host with the client's streams. */
  async exec(containerId: string, cmd: string[], streams: CommandStreams): Promise<void> {
    this.execs.push({ containerId, cmd, tty: streams.tty });
    const child = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      stdin: streams.stdin ? "piped" : "null",
      stdout: streams.stdout ? "piped" : "null",
      stderr: streams.stderr ? "piped" : "null",
    }).spawn();
    const copies = [
      streams.stdin ? pipeInput(streams.stdin, child.stdin) : undefined,
      streams.stdout ? pipeOutput(child.stdout, streams.stdout) : undefined,
      streams.stderr ? pipeOutput(child.stderr, streams.stderr) : undefined,
    ];
    const status = await child.status;
    await Promise.all(copies.slice(1));
    if (status.code !== 0) {
      throw new CodeExitError(
        status.code,
        `error executing command [${cmd.join(" ")}], exit code ${status.code}`,
      );
    }
  }

  /** Not supported here. */
  attach(_containerId: string, _streams: CommandStreams): Promise<void> {
    return Promise.reject(new Error("attach is not supported by the test runtime"));
  }

  /** Dials 127.0.0.1:`port`. */
  async portForward(podSandboxId: string, port: number, stream: SpdyStream): Promise<void> {
    this.forwards.push({ podSandboxId, port });
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await forwardConn(stream, conn, { clock: new RealClock() });
  }
}

/**
 * The oracle's path, or undefined when it is not built (`bash scripts/spdy-client.sh build`;
 * .ci/run builds it), after saying so: the tests that need it are ignored, not passed.
 */
export function spdyClientPath(test: string): string | undefined {
  const out = new Deno.Command("bash", {
    args: [new URL("../../scripts/spdy-client.sh", import.meta.url).pathname, "path"],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  if (out.success) return new TextDecoder().decode(out.stdout).trim();
  console.log(
    `${test}: SKIPPED (not a pass): client-go's SPDY client is not built (bash scripts/spdy-client.sh build)`,
  );
  return undefined;
}

/** Runs the oracle with `args`, feeding it `input`. */
export async function runSpdyClient(
  path: string,
  args: string[],
  input = new Uint8Array(0),
): Promise<{ code: number; stdout: Uint8Array; stderr: string }> {
  const child = new Deno.Command(path, {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(input);
  await w.close();
  const out = await child.output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}
