/**
 * Lifecycle hooks: running a container's `postStart` or `preStop` handler (exec in the container,
 * an HTTP GET, or a sleep), with kubelet's failure messages. The runtime manager runs postStart
 * after a start and preStop before a stop (kuberuntime_container.ts).
 * Mirrors the handlerRunner part of kubelet's pkg/kubelet/lifecycle/handlers.go (the admission
 * handlers of that file live in pod_features.ts).
 * @module
 */
import type { Container, LifecycleHandler, Pod } from "../../api/core/v1/mod.ts";
import {
  type HttpClient,
  maxRespBodyLength,
  newRequestForHTTPGetAction,
  type ProbeRequest,
} from "../../probe/http/mod.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import { goQuote } from "../../util/go_format.ts";
import * as log from "../../util/log.ts";
import type { CommandRunner } from "../container/command_runner.ts";
import type { ContainerID } from "../container/container_id.ts";
import { getPodReference } from "../container/ref.ts";
import type { EventRecorder } from "../events/mod.ts";
import { formatPod } from "../util/format.ts";

/** What a hook run returns: kubelet's `(msg string, err error)`; `message` is "" on success. */
export interface HandlerResult {
  message: string;
  error?: Error;
}

/**
 * Runs lifecycle handlers (kubelet's `kubecontainer.HandlerRunner`).
 *
 * @example
 * ```ts
 * import type { Container, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const runner: HandlerRunner;
 * declare const id: Parameters<HandlerRunner["run"]>[0];
 * declare const pod: Pod;
 * declare const container: Container;
 *
 * const { error } = await runner.run(id, pod, container, container.lifecycle!.postStart!);
 * ```
 */
export interface HandlerRunner {
  /** Runs `handler`; `signal` aborts a sleep (kubelet's context). */
  run(
    containerID: ContainerID,
    pod: Pod,
    container: Container,
    handler: LifecycleHandler,
    options?: { signal?: AbortSignal },
  ): Promise<HandlerResult>;
}

/** The pod IPs an HTTP hook without a host goes to (kubelet's `podStatusProvider`). */
export interface PodStatusProvider {
  getPodStatus(pod: Pod): Promise<{ ips: string[] }>;
}

/** What {@linkcode newHandlerRunner} needs. */
export interface HandlerRunnerOptions {
  /** Sends HTTP hooks (kubelet's `httpDoer`: TLS unverified, no timeout). */
  httpDoer: HttpClient;
  /** Runs exec hooks in the container. */
  commandRunner: CommandRunner;
  containerManager: PodStatusProvider;
  /** Receives the `LifecycleHTTPFallback` event. */
  eventRecorder?: EventRecorder;
  /** Times sleep hooks. */
  clock?: Clock;
}

/**
 * A lifecycle handler runner (kubelet's `NewHandlerRunner`).
 *
 * @example
 * ```ts
 * import { newHttpClient } from "../../probe/http/http.ts";
 * import type { CommandRunner } from "../container/command_runner.ts";
 *
 * declare const commandRunner: CommandRunner;
 *
 * declare const containerManager: Parameters<typeof newHandlerRunner>[0]["containerManager"];
 * const runner = newHandlerRunner({ httpDoer: newHttpClient(), commandRunner, containerManager });
 * ```
 */
export function newHandlerRunner(options: HandlerRunnerOptions): HandlerRunner {
  return new LifecycleHandlerRunner(options);
}

/** Go's `%v` of a string slice: `[a b c]`. */
function goSliceText(values: readonly string[]): string {
  return `[${values.join(" ")}]`;
}

class LifecycleHandlerRunner implements HandlerRunner {
  #httpDoer: HttpClient;
  #commandRunner: CommandRunner;
  #containerManager: PodStatusProvider;
  #eventRecorder?: EventRecorder;
  #clock: Clock;

  constructor(options: HandlerRunnerOptions) {
    this.#httpDoer = options.httpDoer;
    this.#commandRunner = options.commandRunner;
    this.#containerManager = options.containerManager;
    this.#eventRecorder = options.eventRecorder;
    this.#clock = options.clock ?? new RealClock();
  }

  async run(
    containerID: ContainerID,
    pod: Pod,
    container: Container,
    handler: LifecycleHandler,
    options: { signal?: AbortSignal } = {},
  ): Promise<HandlerResult> {
    if (handler.exec) {
      const command = handler.exec.command ?? [];
      // kubelet passes no timeout (0): the hook runs until it ends or the container stops.
      try {
        await this.#commandRunner.runInContainer(containerID, command, { timeoutMs: 0 });
        return { message: "" };
      } catch (e) {
        const error = asError(e);
        const output = new TextDecoder().decode(
          (e as { output?: Uint8Array }).output ?? new Uint8Array(),
        );
        const message = `Exec lifecycle hook (${goSliceText(command)}) for Container ${
          goQuote(container.name)
        } in Pod ${goQuote(formatPod(pod))} failed - error: ${error.message}, message: ${
          goQuote(output)
        }`;
        log.V(1).info("Exec lifecycle hook for Container in Pod failed", {
          execCommand: command,
          containerName: container.name,
          pod: podRef(pod),
          message: output,
          err: error.message,
        });
        return { message, error };
      }
    }
    if (handler.httpGet) {
      const error = await this.#runHTTPHandler(pod, container, handler);
      if (!error) return { message: "" };
      const path = handler.httpGet.path ?? "";
      log.V(1).info("HTTP lifecycle hook for Container in Pod failed", {
        path,
        containerName: container.name,
        pod: podRef(pod),
        err: error.message,
      });
      return {
        message: `HTTP lifecycle hook (${path}) for Container ${goQuote(container.name)} in Pod ${
          goQuote(formatPod(pod))
        } failed - error: ${error.message}`,
        error,
      };
    }
    if (handler.sleep) {
      const seconds = handler.sleep.seconds;
      const error = await this.#runSleepHandler(seconds, options.signal);
      if (!error) return { message: "" };
      log.V(1).info("Sleep lifecycle hook for Container in Pod failed", {
        sleepSeconds: seconds,
        containerName: container.name,
        pod: podRef(pod),
        err: error.message,
      });
      return {
        message: `Sleep lifecycle hook (${seconds}) for Container ${
          goQuote(container.name)
        } in Pod ${goQuote(formatPod(pod))} failed - error: ${error.message}`,
        error,
      };
    }
    const error = new Error(`invalid handler: ${JSON.stringify(handler)}`);
    log.error(error, "Cannot run handler");
    return { message: `Cannot run handler: ${error.message}`, error };
  }

  // kubelet's runSleepHandler: a stop before the end is an error.
  async #runSleepHandler(seconds: number, signal?: AbortSignal): Promise<Error | undefined> {
    try {
      await this.#clock.sleep(seconds * 1000, { signal });
      return undefined;
    } catch {
      return new Error("container terminated before sleep hook finished");
    }
  }

  // kubelet's runHTTPHandler: the pod's first IP when no host is given; an HTTPS hook answered in
  // plain HTTP is retried over HTTP without the Authorization header. Only a transport error
  // fails the hook: any status code counts as done, as in kubelet.
  async #runHTTPHandler(
    pod: Pod,
    container: Container,
    handler: LifecycleHandler,
  ): Promise<Error | undefined> {
    const httpGet = handler.httpGet!;
    let podIP = httpGet.host ?? "";
    if (podIP === "") {
      let ips: string[];
      try {
        ips = (await this.#containerManager.getPodStatus(pod)).ips;
      } catch (e) {
        log.error(e, "Unable to get pod info, event handlers may be invalid.", {
          pod: podRef(pod),
        });
        return asError(e);
      }
      if (ips.length === 0) {
        return new Error(`failed to find networking container: ${JSON.stringify({ ips })}`);
      }
      podIP = ips[0];
    }
    const { request, error } = newRequestForHTTPGetAction(httpGet, {
      container,
      podIP,
      userAgentFragment: "lifecycle",
    });
    if (!request) return error;
    let err = await this.#doAndDiscard(request);
    if (isHTTPResponseError(err)) {
      log.V(1).info("HTTPS request to lifecycle hook got HTTP response, retrying with HTTP.", {
        pod: podRef(pod),
        host: request.url.host,
        err: err!.message,
      });
      const headers = request.headers.clone();
      headers.del("Authorization");
      const url = request.url.clone();
      url.scheme = "http";
      const retry: ProbeRequest = { ...request, url, headers };
      if ((await this.#doAndDiscard(retry)) === undefined) {
        this.#eventRecorder?.event(getPodReference(pod), {
          type: "Warning",
          reason: "LifecycleHTTPFallback",
          message: `request to HTTPS lifecycle hook ${url.host} got HTTP response, ` +
            "retry with HTTP succeeded",
        });
        err = undefined;
      }
    }
    return err;
  }

  // Go's Do and discardHTTPRespBody: up to 10 KiB of the body read, then the connection released.
  async #doAndDiscard(request: ProbeRequest): Promise<Error | undefined> {
    const { response, error } = await this.#httpDoer.do(request);
    if (response) {
      try {
        await response.readAtMost(maxRespBodyLength);
      } finally {
        response.close();
      }
    }
    return error;
  }
}

function isHTTPResponseError(err: Error | undefined): boolean {
  const inner = (err as { err?: unknown } | undefined)?.err;
  return inner instanceof Error &&
    inner.message.includes("server gave HTTP response to HTTPS client");
}

function podRef(pod: Pod): string {
  return `${pod.metadata.namespace ?? ""}/${pod.metadata.name ?? ""}`;
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
