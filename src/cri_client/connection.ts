/**
 * The gRPC plumbing shared by the remote runtime and image services: endpoint parsing, one HTTP/2
 * connection per service over a unix socket with concurrent calls, per-call deadlines,
 * cancellation, reconnection after a runtime restart, and gRPC errors turned into `CriError`s that
 * name the endpoint. Mirrors the dialing half of k8s.io/cri-client's remote_runtime.go and
 * pkg/util/util_unix.go.
 *
 * The transport is our own HTTP/2 client (src/util/h2/) on `Deno.connect({ transport: "unix" })`,
 * not grpc-js: grpc-js dials unix sockets with `node:net`, whose sockets Deno 2.9.3 closes twice
 * (the second close can destroy another thread's descriptor; scripts/node_net_unix_double_close.ts).
 * Messages are (de)serialised by the static codec generated from proto/runtime/v1/api.proto
 * (codec_gen.ts), which needs no protobuf library at run time.
 * @module
 */
import type { CriMethod } from "./codec_gen.ts";
import { grpcCodeName, GrpcStatus } from "../util/grpc_codes.ts";
import {
  grpcFrame,
  grpcHeadersRejected,
  H2ClientConn,
  H2ConnectionClosedError,
  type H2Response,
  unaryRequestHeaders,
  unaryResult,
} from "../util/h2/mod.ts";
import { goQuote } from "../util/go_format.ts";
import { errorText } from "../util/errors.ts";

export { grpcCodeName };

/** The gRPC status codes the CRI client reacts to. */
export const GrpcCode = {
  Canceled: GrpcStatus.Canceled,
  Unknown: GrpcStatus.Unknown,
  DeadlineExceeded: GrpcStatus.DeadlineExceeded,
  NotFound: GrpcStatus.NotFound,
  Unimplemented: GrpcStatus.Unimplemented,
  Unavailable: GrpcStatus.Unavailable,
} as const;

/**
 * A failed CRI call. The message reads like a Go gRPC status error
 * (`rpc error: code = NotFound desc = an error occurred when try to find container "x": not found`),
 * which is what kubelet's events and logs show.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "./runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * try {
 *   await runtime.containerStatus("missing");
 * } catch (err) {
 *   if (err instanceof CriError && err.code === GrpcCode.NotFound) console.log("gone");
 * }
 * ```
 */
export class CriError extends Error {
  /** The numeric gRPC status code. */
  readonly code: number;
  /** The status message the runtime sent (Go's `desc`). */
  readonly details: string;
  /** The endpoint the call went to. */
  readonly endpoint: string;
  /** The RPC, e.g. `/runtime.v1.RuntimeService/ContainerStatus`. */
  readonly method: string;

  constructor(code: number, details: string, options: { endpoint: string; method: string }) {
    super(`rpc error: code = ${grpcCodeName(code)} desc = ${details}`);
    this.name = "CriError";
    this.code = code;
    this.details = details;
    this.endpoint = options.endpoint;
    this.method = options.method;
  }
}

/** The gRPC status code of an error, like Go's `status.Code(err)`: `Unknown` for non-gRPC errors. */
export function grpcCode(err: unknown): number {
  if (err instanceof CriError) return err.code;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : GrpcStatus.Unknown;
}

/** A parsed CRI endpoint. */
export interface Endpoint {
  /** The endpoint as configured, for messages. */
  endpoint: string;
  /** The gRPC target (`unix:///abs/path`). */
  target: string;
  /** The socket's file system path. */
  socketPath: string;
}

/**
 * Parses `unix:///path/to/socket`; a bare absolute path is taken as a unix socket (kubelet logs a
 * deprecation warning for that). Other schemes are refused, as kubelet does on Linux.
 *
 * @example
 * ```ts
 * parseEndpoint("unix:///run/containerd/containerd.sock").socketPath; // "/run/containerd/containerd.sock"
 * ```
 */
export function parseEndpoint(endpoint: string): Endpoint {
  let path: string;
  if (endpoint.startsWith("unix://")) {
    path = endpoint.slice("unix://".length);
  } else if (endpoint.startsWith("/")) {
    path = endpoint;
  } else {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(endpoint)?.[1];
    throw new Error(
      scheme
        ? `only support unix socket endpoint (got protocol "${scheme}" in ${
          JSON.stringify(endpoint)
        })`
        : `only support unix socket endpoint (got ${JSON.stringify(endpoint)})`,
    );
  }
  if (!path.startsWith("/")) {
    throw new Error(`unix socket endpoint needs an absolute path: ${JSON.stringify(endpoint)}`);
  }
  return { endpoint, target: `unix://${path}`, socketPath: path };
}

function socketExists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Options shared by the remote services. */
export interface ConnectionOptions {
  /**
   * Deadline of ordinary calls (kubelet's `--runtime-request-timeout`, default 2 minutes). ExecSync
   * adds the command's timeout to it; `0` disables the deadline.
   */
  requestTimeoutMs?: number;
  /**
   * How long a call waits for the connection when the runtime's socket exists but the connection
   * failed or dropped (the runtime restarting, say) before it fails; kept below the call's deadline.
   * A missing socket fails at once. Default 5 s, gRPC-Go's minimum connect timeout that kubelet uses.
   */
  connectTimeoutMs?: number;
}

/** kubelet's default `--runtime-request-timeout`. */
export const defaultRequestTimeoutMs = 2 * 60 * 1000;
/** gRPC-Go's `MinConnectTimeout` as cri-client configures it. */
export const defaultConnectTimeoutMs = 5_000;
/** cri-client's `maxMsgSize`: 16 MiB instead of gRPC's 4 MiB. */
export const maxMsgSize = 16 * 1024 * 1024;

/**
 * CRI methods that may be sent a second time after an `Unavailable` error: reads, and writes
 * whose repetition has the same effect (stop, remove, pull). An `Unavailable` call may still have
 * reached the runtime (it can drop the connection after acting), so RunPodSandbox,
 * CreateContainer, StartContainer, ExecSync (runs the command again), Exec, Attach, PortForward,
 * ReopenContainerLog and CheckpointContainer are never retried here: the error goes to the caller,
 * whose next sync reads the runtime's state before acting again.
 */
export const retriableMethods: ReadonlySet<string> = new Set([
  "Version",
  "Status",
  "RuntimeConfig",
  "PodSandboxStatus",
  "ListPodSandbox",
  "ContainerStatus",
  "ListContainers",
  "ContainerStats",
  "ListContainerStats",
  "PodSandboxStats",
  "ListPodSandboxStats",
  "ListMetricDescriptors",
  "ListPodSandboxMetrics",
  "StopPodSandbox",
  "RemovePodSandbox",
  "StopContainer",
  "RemoveContainer",
  "UpdateContainerResources",
  "UpdateRuntimeConfig",
  "ListImages",
  "ImageStatus",
  "ImageFsInfo",
  "PullImage",
  "RemoveImage",
]);

/** Per-call settings of `Connection.unary`. */
export interface UnaryOptions {
  /** Milliseconds until the call's deadline; `0` or `Infinity` = none. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * One gRPC client for one CRI service (`RuntimeService` or `ImageService`) on one endpoint: one
 * HTTP/2 connection, dialled by the first call and again by the first call after it dropped,
 * carrying concurrent calls as streams.
 *
 * Calls fail fast while the connection is healthy. When a call finds the runtime unreachable
 * (`Unavailable`), a missing socket fails at once; otherwise (connection refused, or dropped because
 * the runtime restarted) an idempotent call waits for a new connection, bounded by
 * `connectTimeoutMs` and the call's deadline, and tries once more. A call the server never
 * processed (refused by its GOAWAY) is retried on a new connection whatever the method, as grpc-go
 * does. Either way the final error names the endpoint.
 */
export class Connection {
  readonly endpoint: Endpoint;
  readonly requestTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly #service: string;
  #closed = false;
  // Aborted by close(): ends in-flight calls, dials and waits.
  readonly #closing = new AbortController();
  #h2?: H2ClientConn;
  #dialing?: Promise<H2ClientConn>;

  constructor(
    endpoint: string,
    service: "RuntimeService" | "ImageService",
    options: ConnectionOptions = {},
  ) {
    this.endpoint = parseEndpoint(endpoint);
    this.requestTimeoutMs = options.requestTimeoutMs ?? defaultRequestTimeoutMs;
    this.connectTimeoutMs = options.connectTimeoutMs ?? defaultConnectTimeoutMs;
    this.#service = service;
  }

  /**
   * Calls `method` (one of codec_gen.ts's `RuntimeServiceMethods` or `ImageServiceMethods`) and
   * resolves with its decoded response. Rejects with a `CriError`, or with the signal's reason
   * when `options.signal` aborted the call.
   */
  async unary<Request, Response>(
    method: CriMethod<Request, Response>,
    request: Request,
    options: UnaryOptions,
  ): Promise<Response> {
    const fullMethod = method.path;
    if (!fullMethod.startsWith(`/runtime.v1.${this.#service}/`)) {
      throw new Error(`unknown CRI method ${this.#service}: ${fullMethod}`);
    }
    if (this.#closed) throw this.#status(GrpcStatus.Unavailable, closingText, fullMethod);
    const deadline = options.timeoutMs > 0 && Number.isFinite(options.timeoutMs)
      ? Date.now() + options.timeoutMs
      : Infinity;
    const call = new Call(deadline, [options.signal, this.#closing.signal]);
    try {
      const body = grpcFrame(method.encode(request));
      try {
        return await this.#invoke(method, body, call);
      } catch (err) {
        if (grpcCode(err) !== GrpcStatus.Unavailable || call.signal.aborted) throw err;
        // No socket at all: the runtime is down, not restarting. Say so at once.
        if (!socketExists(this.endpoint.socketPath)) throw this.#unreachable(err, fullMethod);
        // The call may have reached the runtime: repeat only what is safe to repeat.
        if (!retriableMethods.has(method.name)) throw err;
        // The runtime dropped the connection or is restarting: wait for a new connection, then
        // retry an idempotent call once.
        const ready = await this.#waitForReady(
          Math.min(deadline, Date.now() + this.connectTimeoutMs),
          call,
        );
        if (!ready) throw this.#unreachable(err, fullMethod);
        try {
          return await this.#invoke(method, body, call);
        } catch (retryErr) {
          if (grpcCode(retryErr) === GrpcStatus.Unavailable && !call.signal.aborted) {
            throw this.#unreachable(retryErr, fullMethod);
          }
          throw retryErr;
        }
      }
    } catch (err) {
      if (call.signal.aborted) throw this.#abortError(call, fullMethod);
      throw err;
    } finally {
      call.dispose();
    }
  }

  /** Closes the connection; in-flight and later calls fail with `Unavailable`. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    this.#h2?.close();
    this.#h2 = undefined;
  }

  /** One attempt on the current connection (dialled if needed); throws a `CriError`. */
  async #invoke<Response>(
    definition: CriMethod<unknown, Response>,
    body: Uint8Array,
    call: Call,
  ): Promise<Response> {
    const method = definition.path;
    for (let attempt = 1;; attempt++) {
      const h2 = await this.#transport(call, method);
      let response: H2Response;
      try {
        response = await h2.request(
          unaryRequestHeaders({
            path: method,
            authority: "localhost",
            userAgent,
            timeoutMs: Number.isFinite(call.deadline) ? call.deadline - Date.now() : undefined,
          }),
          body,
          { maxData: maxMsgSize + 5, signal: call.signal, rejectHeaders: grpcHeadersRejected },
        );
      } catch (err) {
        if (call.signal.aborted) throw err;
        // Not sent: the connection went away between the dial and the request.
        if (err instanceof H2ConnectionClosedError && attempt === 1) continue;
        throw this.#status(
          GrpcStatus.Unavailable,
          `connection error: desc = ${goQuote(`error reading from server: ${errorText(err)}`)}`,
          method,
        );
      }
      // Never processed by the server (GOAWAY or REFUSED_STREAM): safe to send again, once.
      if ((response.refusedByGoAway || response.rstCode === 0x7) && attempt === 1) continue;
      const result = unaryResult(response, { maxReceiveMessageLength: maxMsgSize });
      if (!(result instanceof Uint8Array)) throw this.#status(result.code, result.details, method);
      try {
        return definition.decode(result);
      } catch (err) {
        throw this.#status(
          GrpcStatus.Internal,
          `grpc: failed to unmarshal the received message: ${errorText(err)}`,
          method,
        );
      }
    }
  }

  /** The live connection, or a new one (one dial shared by the calls that need it). */
  async #transport(call: Call, method: string): Promise<H2ClientConn> {
    if (this.#h2?.usable) return this.#h2;
    if (!this.#dialing) {
      this.#dialing = this.#dial().finally(() => this.#dialing = undefined);
      // Callers that gave up (deadline, abort) no longer await it.
      this.#dialing.catch(() => {});
    }
    try {
      return await call.race(this.#dialing);
    } catch (err) {
      if (call.signal.aborted) throw err;
      throw this.#status(
        GrpcStatus.Unavailable,
        `connection error: desc = ${goQuote(`transport: Error while dialing: ${errorText(err)}`)}`,
        method,
      );
    }
  }

  async #dial(): Promise<H2ClientConn> {
    const path = this.endpoint.socketPath;
    let conn: Deno.UnixConn;
    try {
      conn = await Deno.connect({ transport: "unix", path });
    } catch (err) {
      throw new Error(`dial unix ${path}: connect: ${connectErrorText(err)}`);
    }
    // close() during the connect: its abort below would never fire, and the handshake would hold
    // the socket until the connect timeout.
    if (this.#closed) {
      conn.close();
      throw new Error(closingText);
    }
    // The handshake is bounded by the connect timeout and by close().
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new Error("timed out waiting for the server's HTTP/2 settings")),
      this.connectTimeoutMs,
    );
    const onClose = () => timeout.abort(new Error(closingText));
    this.#closing.signal.addEventListener("abort", onClose, { once: true });
    try {
      const h2 = await H2ClientConn.handshake(conn, { signal: timeout.signal });
      if (this.#closed) {
        h2.close();
        throw new Error(closingText);
      }
      this.#h2 = h2;
      return h2;
    } finally {
      clearTimeout(timer);
      this.#closing.signal.removeEventListener("abort", onClose);
    }
  }

  /**
   * Dials until a connection is ready (true) or `until` passes (false), with cri-client's back-off:
   * 100 ms first, growing to at most 3 s between attempts.
   */
  async #waitForReady(until: number, call: Call): Promise<boolean> {
    let backoffMs = 100;
    while (Date.now() < until) {
      try {
        await call.race(this.#transport(call, ""), until);
        return true;
      } catch (err) {
        if (call.signal.aborted) throw err;
      }
      const wait = Math.min(backoffMs, until - Date.now());
      if (wait <= 0) break;
      await call.sleep(wait);
      backoffMs = Math.min(backoffMs * 1.6, 3_000);
    }
    return false;
  }

  #abortError(call: Call, method: string): unknown {
    if (call.abortedBy(this.#closing.signal)) {
      return this.#status(GrpcStatus.Unavailable, closingText, method);
    }
    if (call.deadlineExceeded) {
      return this.#status(GrpcStatus.DeadlineExceeded, "context deadline exceeded", method);
    }
    return call.signal.reason;
  }

  #status(code: number, details: string, method: string): CriError {
    return new CriError(code, details, { endpoint: this.endpoint.endpoint, method });
  }

  #unreachable(err: unknown, method: string): CriError {
    const detail = err instanceof CriError ? err.details : errorText(err);
    let hint = "";
    try {
      const info = Deno.statSync(this.endpoint.socketPath);
      if (!info.isSocket) hint = ` (${this.endpoint.socketPath} is not a socket)`;
    } catch {
      hint = ` (socket ${this.endpoint.socketPath} does not exist: is the runtime running?)`;
    }
    return this.#status(
      GrpcStatus.Unavailable,
      `CRI runtime unreachable at ${this.endpoint.endpoint}${hint}: ${detail}`,
      method,
    );
  }
}

/** grpc-go's text for calls on a closed client connection. */
const closingText = "grpc: the client connection is closing";
const userAgent = "probelet-cri-client";

/** The errno text Go prints for a failed unix connect. */
function connectErrorText(err: unknown): string {
  if (err instanceof Deno.errors.ConnectionRefused) return "connection refused";
  if (err instanceof Deno.errors.NotFound) return "no such file or directory";
  if (err instanceof Deno.errors.PermissionDenied) return "permission denied";
  return errorText(err);
}

/**
 * One call's cancellation: its deadline, the caller's signal and the client's close, as one
 * signal for the HTTP/2 stream and the waits around it.
 */
class Call {
  readonly #controller = new AbortController();
  readonly #sources: AbortSignal[];
  #timer?: ReturnType<typeof setTimeout>;
  #abortedBy?: AbortSignal;
  deadlineExceeded = false;

  constructor(readonly deadline: number, sources: (AbortSignal | undefined)[]) {
    this.#sources = sources.filter((s): s is AbortSignal => s !== undefined);
    for (const source of this.#sources) {
      if (source.aborted) {
        this.#abort(source);
        break;
      }
      source.addEventListener("abort", this.#onAbort);
    }
    if (Number.isFinite(deadline) && !this.signal.aborted) {
      this.#timer = setTimeout(() => {
        this.deadlineExceeded = true;
        this.#controller.abort(new Error("context deadline exceeded"));
      }, Math.max(0, deadline - Date.now()));
    }
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True when `source` (rather than the deadline or another source) aborted the call. */
  abortedBy(source: AbortSignal): boolean {
    return this.#abortedBy === source;
  }

  readonly #onAbort = (event: Event) => this.#abort(event.target as AbortSignal);

  #abort(source: AbortSignal): void {
    if (this.signal.aborted) return;
    this.#abortedBy = source;
    this.#controller.abort(source.reason);
  }

  /** `promise`, or a rejection when the call aborts (or `until` passes first). */
  race<T>(promise: Promise<T>, until = Infinity): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const signal = this.signal;
      if (signal.aborted) return reject(signal.reason);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        signal.removeEventListener("abort", onAbort);
        clearTimeout(timer);
      };
      const onAbort = () => {
        done();
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      if (Number.isFinite(until)) {
        timer = setTimeout(() => {
          done();
          reject(new Error("timed out"));
        }, Math.max(0, until - Date.now()));
      }
      promise.then((value) => {
        done();
        resolve(value);
      }, (err) => {
        done();
        reject(err);
      });
    });
  }

  /** Waits `ms`, or less when the call aborts (then rejects). */
  sleep(ms: number): Promise<void> {
    // A promise that never settles: only the timer or the abort ends the race.
    return this.race(new Promise<void>(() => {}), Date.now() + ms).catch((err) => {
      if (this.signal.aborted) throw err;
    });
  }

  dispose(): void {
    clearTimeout(this.#timer);
    for (const source of this.#sources) source.removeEventListener("abort", this.#onAbort);
  }
}

/**
 * Returns `service` once one cheap call has answered; on failure closes it and rethrows (the error
 * names the endpoint). Shared by the runtime and image service constructors.
 *
 * @example
 * ```ts
 * import { RemoteRuntimeService } from "./remote_runtime.ts";
 *
 * declare const endpoint: string;
 *
 * const runtime = await validatedService(new RemoteRuntimeService(endpoint));
 * ```
 */
export async function validatedService<
  T extends { validateServiceConnection(): Promise<void>; close(): void },
>(service: T): Promise<T> {
  try {
    await service.validateServiceConnection();
  } catch (err) {
    service.close();
    throw err;
  }
  return service;
}
