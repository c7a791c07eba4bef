/**
 * The interface exec probes run through: kubelet's `kubecontainer.CommandRunner`.
 * Mirrors the CommandRunner part of kubelet's pkg/kubelet/container/runtime.go.
 * @module
 */
import type { ContainerID } from "./container_id.ts";

/**
 * Runs a command in a container and returns its stdout followed by its stderr.
 *
 * Errors follow kubelet's conventions (see `src/util/exec/errors.ts`): a non-zero exit is an
 * `ExitError` that still carries the output; a command past its timeout is a `CommandTimedOutError`;
 * anything else means the command could not be run at all.
 *
 * @example
 * ```ts
 * import type { ContainerID } from "./container_id.ts";
 *
 * declare const runner: CommandRunner;
 * declare const id: ContainerID;
 *
 * const out = await runner.runInContainer(id, ["cat", "/tmp/healthy"], { timeoutMs: 1000 });
 * ```
 */
export interface CommandRunner {
  runInContainer(
    id: ContainerID,
    cmd: string[],
    options: { timeoutMs: number },
  ): Promise<Uint8Array>;
}
