/**
 * Running commands in containers through the CRI: the `CommandRunner` exec probes use, backed by
 * `ExecSync`.
 * Mirrors RunInContainer in kubelet's pkg/kubelet/kuberuntime/kuberuntime_container.go.
 * @module
 */
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import type { CommandRunner } from "../container/command_runner.ts";
import type { ContainerID } from "../container/container_id.ts";

/**
 * Runs commands through a `RuntimeService`'s `ExecSync`, as kubelet's runtime manager does.
 *
 * Output is stdout followed by stderr, not interleaved (kubelet accepts the same imprecision).
 * Errors are the runtime service's: a non-zero exit rejects with `ExitError` carrying that same
 * combined output, a timeout with `CommandTimedOutError`, anything else with a plain error.
 *
 * @example
 * ```ts
 * const runner = new RuntimeCommandRunner(runtime);
 * const out = await runner.runInContainer(parseContainerID("containerd://0123"), ["cat", "/tmp/ok"], {
 *   timeoutMs: 1000,
 * });
 * ```
 */
export class RuntimeCommandRunner implements CommandRunner {
  readonly #runtime: RuntimeService;

  constructor(runtime: RuntimeService) {
    this.#runtime = runtime;
  }

  /** kubelet's `RunInContainer`: `ExecSync` with the probe's timeout; stdout then stderr. */
  async runInContainer(
    id: ContainerID,
    cmd: string[],
    options: { timeoutMs: number },
  ): Promise<Uint8Array> {
    const { stdout, stderr } = await this.#runtime.execSync(id.id, cmd, {
      timeoutMs: options.timeoutMs,
    });
    const out = new Uint8Array(stdout.length + stderr.length);
    out.set(stdout);
    out.set(stderr, stdout.length);
    return out;
  }
}
