/**
 * The prober: runs one probe of a container through the right handler (exec, HTTP, TCP, gRPC),
 * retries errors, records events and turns the handler's verdict into a cached result.
 * Mirrors kubelet's pkg/kubelet/prober/prober.go.
 * @module
 */
import type { Container, HTTPGetAction, Pod, PodStatus, Probe } from "../../api/core/v1/mod.ts";
import { type ProbeOutcome, ProbeResult } from "../../probe/probe.ts";
import { resolveContainerPort } from "../../probe/util.ts";
import { type Cmd, type ExecProber, newExecProber, type Writer } from "../../probe/exec/exec.ts";
import { type HttpProber, newHttpProber } from "../../probe/http/http.ts";
import { newRequestForHTTPGetAction } from "../../probe/http/request.ts";
import { newTcpProber, type TcpProber } from "../../probe/tcp/tcp.ts";
import { type GrpcProber, newGrpcProber } from "../../probe/grpc/grpc.ts";
import { ExitError } from "../../util/exec/errors.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import { defaultProbeBudget, type ProbeBudget } from "../../probe/budget.ts";
import { type ProbePool, ProbePoolClosedError } from "../../probe/pool/pool.ts";
import { goQuote } from "../../util/go_format.ts";
import * as log from "../../util/log.ts";
import {
  type CommandRunner,
  type ContainerID,
  containerIDString,
  expandContainerCommandOnlyStatic,
  generateContainerRef,
} from "../container/mod.ts";
import {
  ContainerProbeWarning,
  ContainerUnhealthy,
  type EventOptions,
  type EventRecorder,
  EventType,
} from "../events/mod.ts";
import { Result } from "./results/mod.ts";
import { probeOf, type ProbeType, probeTypeName, probeTypeString } from "./probe_type.ts";
import { formatPod } from "../util/format.ts";

/** kubelet's maxProbeRetries: attempts per probe when the handler returns an error. */
export const maxProbeRetries = 3;

/** What one probe is about: the pod, its latest status, the container and its current ID. */
export interface ProbeTarget {
  /** The pod as the worker got it. */
  pod: Pod;
  /** The pod's latest status (its pod IP is the default probe host). */
  status: PodStatus;
  /** The container whose probe runs. */
  container: Container;
  /** The container instance exec probes run in. */
  containerID: ContainerID;
}

/** A prober verdict: Go's `(results.Result, error)`. An error means the result is to be ignored. */
export interface ProberResult {
  /** The verdict to cache. */
  result: Result;
  /** Why the probe could not run; the worker then ignores `result`. */
  error?: Error;
}

/**
 * Runs probes for the workers. The four handler fields are public so tests can replace them with
 * fakes, as kubelet's tests do.
 *
 * @example
 * ```ts
 * import { FakeRecorder } from "../events/event.ts";
 * import type { Container, Pod, PodStatus } from "../../api/core/v1/mod.ts";
 * import type { CommandRunner } from "../container/command_runner.ts";
 * import type { ContainerID } from "../container/container_id.ts";
 *
 * declare const runner: CommandRunner;
 * declare const pod: Pod;
 * declare const status: PodStatus;
 * declare const container: Container;
 * declare const containerID: ContainerID;
 *
 * const prober = newProber(runner, new FakeRecorder());
 * const { result } = await prober.probe("readiness", { pod, status, container, containerID });
 * ```
 */
export class Prober {
  /** Exec handler (runs through `runner`). */
  exec: ExecProber;
  /** HTTP GET handler. */
  http: HttpProber;
  /** TCP socket handler. */
  tcp: TcpProber;
  /** gRPC health handler. */
  grpc: GrpcProber;
  /** Where exec probes run; may be undefined when no exec probe is expected. */
  runner: CommandRunner | undefined;
  /** Where probe events go. */
  recorder: EventRecorder;
  /** Bounds the HTTP, TCP and gRPC probes holding sockets at once (none: unbounded). */
  budget: ProbeBudget | undefined;
  #clock: Clock;

  /** Wires the handlers; use `newProber` for kubelet's defaults. */
  constructor(options: {
    exec: ExecProber;
    http: HttpProber;
    tcp: TcpProber;
    grpc: GrpcProber;
    runner?: CommandRunner;
    recorder: EventRecorder;
    budget?: ProbeBudget;
    clock?: Clock;
  }) {
    this.exec = options.exec;
    this.http = options.http;
    this.tcp = options.tcp;
    this.grpc = options.grpc;
    this.runner = options.runner;
    this.recorder = options.recorder;
    this.budget = options.budget;
    this.#clock = options.clock ?? new RealClock();
  }

  /**
   * Probes `container` once (with up to three attempts on errors) and maps the handler's verdict:
   * Success and Warning → Success, everything else → Failure; an error yields Failure plus the error.
   * A container without a probe of this type is Success.
   */
  async probe(probeType: ProbeType, target: ProbeTarget): Promise<ProberResult> {
    const { pod, container } = target;
    if (!Object.hasOwn(probeTypeName, probeType)) {
      return {
        result: Result.Failure,
        error: new Error(`unknown probe type: ${goQuote(probeTypeString(probeType))}`),
      };
    }
    const spec = probeOf(container, probeType);
    const typeName = probeTypeString(probeType);
    const fields = {
      probeType: typeName,
      pod: log.kObj(pod),
      podUID: pod.metadata?.uid ?? "",
      containerName: container.name,
    };
    if (!spec) {
      log.V(3).info("Probe is nil", fields);
      return { result: Result.Success };
    }

    const outcome = await this.#runProbeWithRetries(probeType, spec, target, maxProbeRetries);
    if (outcome.error instanceof ProbePoolClosedError) {
      // The agent is stopping: the worker throws the result away, as for any error, and no
      // Unhealthy event blames the container.
      log.V(4).info("Probe not finished: the probe pool is closed", fields);
      return { result: Result.Failure, error: outcome.error };
    }
    if (outcome.error) {
      log.V(1).info("Probe errored", {
        ...fields,
        probeResult: outcome.result,
        err: outcome.error,
      });
      this.recordContainerEvent(pod, container, {
        type: EventType.Warning,
        reason: ContainerUnhealthy,
        message:
          `${typeName} probe errored and resulted in ${outcome.result} state: ${outcome.error.message}`,
      });
      return { result: Result.Failure, error: outcome.error };
    }

    switch (outcome.result) {
      case ProbeResult.Success:
        log.V(3).info("Probe succeeded", { ...fields, probeResult: outcome.result });
        return { result: Result.Success };
      case ProbeResult.Warning:
        this.recordContainerEvent(pod, container, {
          type: EventType.Warning,
          reason: ContainerProbeWarning,
          message: `${typeName} probe warning: ${outcome.output}`,
        });
        log.V(3).info("Probe succeeded with a warning", { ...fields, output: outcome.output });
        return { result: Result.Success };
      case ProbeResult.Failure:
        log.V(1).info("Probe failed", {
          ...fields,
          probeResult: outcome.result,
          output: outcome.output,
        });
        this.recordContainerEvent(pod, container, {
          type: EventType.Warning,
          reason: ContainerUnhealthy,
          message: `${typeName} probe failed: ${outcome.output}`,
        });
        return { result: Result.Failure };
      case ProbeResult.Unknown:
        log.V(3).info("Probe unknown without error", { ...fields, probeResult: outcome.result });
        return { result: Result.Failure };
      default:
        log.V(3).info("Unsupported probe result", { ...fields, probeResult: outcome.result });
        return { result: Result.Failure };
    }
  }

  /**
   * Records an event against the container (kubelet's `recordContainerEvent`); when no reference can
   * be built the event is only logged as an error.
   */
  recordContainerEvent(pod: Pod, container: Container, event: EventOptions): void {
    let ref;
    try {
      ref = generateContainerRef(pod, container);
    } catch (err) {
      log.error(err, "Can't make a ref to pod and container", {
        pod: log.kObj(pod),
        containerName: container.name,
      });
      return;
    }
    this.recorder.event(ref, event);
  }

  /**
   * An exec `Cmd` that runs `cmd` in the container through the runner (kubelet's
   * `newExecInContainer`): `start()` runs the command, hands stdout+stderr to the writer (a write
   * error, such as the 10 KiB limit, is only logged) and rejects with the run error, if any.
   */
  newExecInContainer(
    containerID: ContainerID,
    cmd: string[],
    options: { container?: Container; timeoutMs: number },
  ): Cmd {
    const { container, timeoutMs } = options;
    return new ExecInContainer(
      () => {
        if (!this.runner) throw new Error("no command runner configured for exec probes");
        return this.runner.runInContainer(containerID, cmd, { timeoutMs });
      },
      { containerName: container?.name ?? "", containerID: containerIDString(containerID) },
    );
  }

  /**
   * Runs the container's probe of this type once through its handler and returns the handler's own
   * verdict and output: no retries, no events (for one-shot tools such as `deno task probe`).
   * A container without such a probe yields Unknown with an error.
   */
  runProbe(probeType: ProbeType, target: ProbeTarget): Promise<ProbeOutcome> {
    const spec = probeOf(target.container, probeType);
    if (!spec) {
      return Promise.resolve({
        result: ProbeResult.Unknown,
        output: "",
        error: new Error(
          `container ${target.container.name} has no ${probeTypeString(probeType)} probe`,
        ),
      });
    }
    return this.#runProbe(probeType, spec, target);
  }

  async #runProbeWithRetries(
    probeType: ProbeType,
    spec: Probe,
    target: ProbeTarget,
    retries: number,
  ): Promise<ProbeOutcome> {
    let outcome: ProbeOutcome = { result: ProbeResult.Unknown, output: "" };
    for (let i = 0; i < retries; i++) {
      outcome = await this.#runProbe(probeType, spec, target);
      // Only errors are retried; a Failure is a verdict. A closed pool refuses every retry.
      if (!outcome.error || outcome.error instanceof ProbePoolClosedError) return outcome;
    }
    return outcome;
  }

  #runProbe(probeType: ProbeType, spec: Probe, target: ProbeTarget): Promise<ProbeOutcome> {
    const { pod, status, container, containerID } = target;
    const timeoutMs = (spec.timeoutSeconds ?? 0) * 1000;
    const fields = {
      probeType: probeTypeString(probeType),
      pod: log.kObj(pod),
      containerName: container.name,
    };
    if (spec.exec) {
      const command = expandContainerCommandOnlyStatic(spec.exec.command ?? [], container.env);
      log.V(4).info("Exec-Probe runProbe", { ...fields, execCommand: command });
      return this.exec.probe(
        this.newExecInContainer(containerID, command, { container, timeoutMs }),
      );
    }
    if (spec.httpGet) {
      const { request, error } = this.#httpRequest(spec.httpGet, container, status.podIP ?? "");
      if (error || !request) {
        return Promise.resolve({
          result: ProbeResult.Unknown,
          output: "",
          error: error ?? new Error("no HTTP request built"),
        });
      }
      log.V(4).info("HTTP-Probe", { ...fields, url: String(request.url) });
      return this.#withSocket(timeoutMs, (t) => this.http.probe(request, { timeoutMs: t }));
    }
    if (spec.tcpSocket) {
      const { port, error } = resolveContainerPort(spec.tcpSocket.port, container);
      if (error) return Promise.resolve({ result: ProbeResult.Unknown, output: "", error });
      const host = spec.tcpSocket.host || status.podIP || "";
      log.V(4).info("TCP-Probe", { ...fields, host, port, timeout: `${timeoutMs}ms` });
      return this.#withSocket(timeoutMs, (t) => this.tcp.probe(host, { port, timeoutMs: t }));
    }
    if (spec.grpc) {
      // gRPC probes have no host field and only take numeric ports.
      const host = status.podIP ?? "";
      const service = spec.grpc.service ?? "";
      const port = spec.grpc.port;
      log.V(4).info("GRPC-Probe", { ...fields, host, service, port });
      return this.#withSocket(
        timeoutMs,
        (t) => this.grpc.probe(host, { service, port, timeoutMs: t }),
      );
    }
    log.info("Failed to find probe builder for container", fields);
    return Promise.resolve({
      result: ProbeResult.Unknown,
      output: "",
      error: new Error(`missing probe handler for ${formatPod(pod)}:${container.name}`),
    });
  }

  /**
   * Kubelet builds the request on every probe; the result only depends on the action, the
   * container (named ports, env) and the pod IP, so it is kept while those are the same objects.
   * Handlers never change a request (redirects build new ones).
   */
  #httpRequest(
    action: HTTPGetAction,
    container: Container,
    podIP: string,
  ): ReturnType<typeof newRequestForHTTPGetAction> {
    const cached = this.#httpRequests.get(action);
    if (cached && cached.container === container && cached.podIP === podIP) return cached.built;
    const built = newRequestForHTTPGetAction(action, {
      container,
      podIP,
      userAgentFragment: "probe",
    });
    this.#httpRequests.set(action, { container, podIP, built });
    return built;
  }

  #httpRequests = new WeakMap<
    HTTPGetAction,
    { container: Container; podIP: string; built: ReturnType<typeof newRequestForHTTPGetAction> }
  >();

  // A network probe runs inside the descriptor budget, when there is one.
  #withSocket(
    timeoutMs: number,
    probe: (timeoutMs: number) => Promise<ProbeOutcome>,
  ): Promise<ProbeOutcome> {
    if (!this.budget) return probe(timeoutMs);
    return this.budget.run({ timeoutMs, clock: this.#clock }, probe);
  }
}

/**
 * Creates a prober with kubelet's handlers: exec (honouring ExecProbeTimeout, default on), HTTP
 * without following redirects to other hosts, TCP and gRPC. `clock` times the HTTP, TCP and
 * gRPC handlers' timeouts (default: the wall clock). HTTP, TCP and gRPC probes run inside `budget`
 * (default: this process's descriptor budget, see src/probe/budget.ts). With `pool`, the HTTP, TCP
 * and gRPC handlers run on its threads (on the wall clock; their pool must not follow non-local
 * redirects, as kubelet's default).
 *
 * @example
 * ```ts
 * import { LogRecorder } from "../events/event.ts";
 * import { HostCommandRunner } from "../../probe/exec/host_runner.ts";
 *
 * const prober = newProber(new HostCommandRunner(), new LogRecorder());
 * ```
 */
export function newProber(
  runner: CommandRunner | undefined,
  recorder: EventRecorder,
  options: {
    execProbeTimeout?: boolean;
    clock?: Clock;
    budget?: ProbeBudget;
    pool?: ProbePool;
  } = {},
): Prober {
  const { clock, pool } = options;
  return new Prober({
    exec: newExecProber({ execProbeTimeout: options.execProbeTimeout ?? true }),
    http: pool?.http ?? newHttpProber({ followNonLocalRedirects: false, clock }),
    tcp: pool?.tcp ?? newTcpProber({ clock }),
    grpc: pool?.grpc ?? newGrpcProber({ clock }),
    runner,
    recorder,
    budget: options.budget ?? defaultProbeBudget(),
    clock,
  });
}

// The exec.Cmd adapter over a CommandRunner; stdout and stderr share one writer, as in kubelet.
class ExecInContainer implements Cmd {
  #writer: Writer | undefined;
  #run: () => Promise<Uint8Array>;
  #fields: log.LogFields;

  constructor(run: () => Promise<Uint8Array>, fields: log.LogFields) {
    this.#run = run;
    this.#fields = fields;
  }

  setStdout(w: Writer): void {
    this.#writer = w;
  }

  setStderr(w: Writer): void {
    this.#writer = w;
  }

  async start(): Promise<void> {
    let data: Uint8Array;
    let runError: unknown;
    try {
      data = await this.#run();
    } catch (err) {
      runError = err;
      data = outputOf(err);
    }
    if (this.#writer) {
      try {
        this.#writer.write(data);
      } catch (err) {
        // Only recorded: the run error (if any) is what the exec prober must see.
        log.error(err, "Unable to write all bytes from execInContainer", {
          ...this.#fields,
          expectedBytes: data.length,
        });
      }
    }
    if (runError !== undefined) throw runError;
  }

  wait(): Promise<void> {
    return Promise.resolve();
  }
}

// A runner reports a failed command by throwing; output produced before the failure rides on the
// error (ExitError carries it by contract, other errors may attach an `output` byte array).
function outputOf(err: unknown): Uint8Array {
  if (err instanceof ExitError) return err.output;
  const output = (err as { output?: unknown } | null)?.output;
  return output instanceof Uint8Array ? output : new Uint8Array();
}

export { formatPod };
