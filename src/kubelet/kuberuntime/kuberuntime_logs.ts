/**
 * A container's log for `kubectl logs`: the runtime says where the log is (CRI `ContainerStatus`'s
 * `logPath`) and cri-client's reader reads it with the request's options.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/kuberuntime_logs.go (`ReadLogs`) and
 * `GetContainerLogs` of kuberuntime_container.go.
 * @module
 */
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import {
  type LogSinks,
  newLogOptions,
  type PodLogOptions,
  readLogs as readCRILogs,
} from "../../cri_client/logs/logs.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { errorText } from "../../util/errors.ts";

/** Options of {@linkcode getContainerLogs}. */
export interface ContainerLogsOptions {
  clock: Clock;
  /** Ends a follow when the client goes away. */
  signal?: AbortSignal;
}

/**
 * Finds the log of container `containerId` (the runtime's ID, without `type://`); rejects with
 * kubelet's text when the runtime cannot say. The returned function reads it into the sinks.
 *
 * @example
 * ```ts
 * import type { LogSinks } from "../../cri_client/logs/logs.ts";
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const runtime: RuntimeService;
 * declare const sinks: LogSinks;
 * declare const clock: Clock;
 *
 * const read = await getContainerLogs(runtime, "abc123", "containerd://abc123");
 * await read({ follow: true }, sinks, { clock });
 * ```
 */
export async function getContainerLogs(
  runtime: Pick<RuntimeService, "containerStatus">,
  containerId: string,
  containerIdText: string,
): Promise<(opts: PodLogOptions, sinks: LogSinks, options: ContainerLogsOptions) => Promise<void>> {
  let logPath: string;
  try {
    const { status } = await runtime.containerStatus(containerId);
    logPath = status.logPath;
  } catch (e) {
    log.V(4).info("Failed to get container status", {
      containerID: containerIdText,
      err: errorText(e),
    });
    throw new Error(`unable to retrieve container logs for ${containerIdText}`);
  }
  return (opts, sinks, options) =>
    readCRILogs(logPath, containerId, newLogOptions(opts, options.clock.now()), sinks, {
      runtime: runtime as Parameters<typeof readCRILogs>[4]["runtime"],
      clock: options.clock,
      signal: options.signal,
    });
}
