/**
 * The gRPC plumbing shared by the remote runtime and image services: endpoint parsing, one channel per
 * service over a unix socket, per-call deadlines, cancellation, reconnection after a runtime restart,
 * and gRPC errors turned into `CriError`s that name the endpoint.
 * Mirrors the dialing half of k8s.io/cri-client's remote_runtime.go and pkg/util/util_unix.go.
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fileURLToPath } from "node:url";
import { grpcCodeName } from "../util/grpc_codes.ts";

export { grpcCodeName };

/** The gRPC status codes the CRI client reacts to. */
export const GrpcCode = {
  Canceled: grpc.status.CANCELLED,
  Unknown: grpc.status.UNKNOWN,
  DeadlineExceeded: grpc.status.DEADLINE_EXCEEDED,
  NotFound: grpc.status.NOT_FOUND,
  Unimplemented: grpc.status.UNIMPLEMENTED,
  Unavailable: grpc.status.UNAVAILABLE,
} as const;

/**
 * A failed CRI call. The message reads like a Go gRPC status error
 * (`rpc error: code = NotFound desc = an error occurred when try to find container "x": not found`),
 * which is what kubelet's events and logs show.
 *
 * @example
 * ```ts
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
  return typeof code === "number" ? code : grpc.status.UNKNOWN;
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

const protoPath = fileURLToPath(new URL("../../proto/runtime/v1/api.proto", import.meta.url));
let cachedPackage: grpc.GrpcObject | undefined;

/** `runtime.v1` loaded from `proto/runtime/v1/api.proto` (once per process). */
function runtimeV1(): grpc.GrpcObject {
  if (!cachedPackage) {
    const definition = protoLoader.loadSync(protoPath, {
      keepCase: false, // camelCase field names, as our TypeScript types
      longs: String, // int64 as decimal strings, turned into bigint by the converters
      enums: String, // enum values by name
      defaults: true, // proto3 zero values present, like Go's getters
      arrays: true,
      objects: true,
    });
    const loaded = grpc.loadPackageDefinition(definition);
    cachedPackage = (loaded.runtime as grpc.GrpcObject).v1 as grpc.GrpcObject;
  }
  return cachedPackage;
}

type UnaryCallback = (err: grpc.ServiceError | null, response: unknown) => void;
type UnaryMethod = (
  request: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: UnaryCallback,
) => grpc.ClientUnaryCall;

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
 * One gRPC client for one CRI service (`RuntimeService` or `ImageService`) on one endpoint.
 *
 * Calls fail fast while the channel is healthy. When a call finds the runtime unreachable
 * (`Unavailable`), a missing socket fails at once; otherwise (connection refused, or dropped because
 * the runtime restarted) the call waits for the channel to reconnect, bounded by `connectTimeoutMs`
 * and the call's deadline, and tries once more. Either way the final error names the endpoint.
 */
export class Connection {
  readonly endpoint: Endpoint;
  readonly requestTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly #client: grpc.Client;
  readonly #service: string;
  #closed = false;

  constructor(
    endpoint: string,
    service: "RuntimeService" | "ImageService",
    options: ConnectionOptions = {},
  ) {
    this.endpoint = parseEndpoint(endpoint);
    this.requestTimeoutMs = options.requestTimeoutMs ?? defaultRequestTimeoutMs;
    this.connectTimeoutMs = options.connectTimeoutMs ?? defaultConnectTimeoutMs;
    this.#service = service;
    const ctor = runtimeV1()[service] as grpc.ServiceClientConstructor;
    this.#client = new ctor(this.endpoint.target, grpc.credentials.createInsecure(), {
      "grpc.default_authority": "localhost",
      "grpc.max_receive_message_length": maxMsgSize,
      "grpc.max_send_message_length": maxMsgSize,
      // cri-client's backoff: 100 ms first, growing to at most 3 s between reconnection attempts.
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 3_000,
      "grpc.primary_user_agent": "probelet-cri-client",
    });
  }

  /**
   * Calls `method` (the proto's method name, e.g. `ContainerStatus`) and resolves with the
   * proto-loader response object.
   */
  async unary(method: string, request: unknown, options: UnaryOptions): Promise<unknown> {
    const fullMethod = `/runtime.v1.${this.#service}/${method}`;
    if (this.#closed) {
      throw new CriError(grpc.status.UNAVAILABLE, "grpc: the client connection is closing", {
        endpoint: this.endpoint.endpoint,
        method: fullMethod,
      });
    }
    const deadline = options.timeoutMs > 0 && Number.isFinite(options.timeoutMs)
      ? Date.now() + options.timeoutMs
      : Infinity;
    try {
      return await this.#invoke(method, request, deadline, options.signal);
    } catch (err) {
      if (grpcCode(err) !== grpc.status.UNAVAILABLE || options.signal?.aborted) {
        throw this.#wrap(err, fullMethod);
      }
      // No socket at all: the runtime is down, not restarting. Say so at once.
      if (!socketExists(this.endpoint.socketPath)) throw this.#unreachable(err, fullMethod);
      // The call may have reached the runtime: repeat only what is safe to repeat.
      if (!retriableMethods.has(method)) throw this.#wrap(err, fullMethod);
      // The runtime dropped the connection or is restarting: wait for the channel to come back,
      // then retry an idempotent call once.
      const waitUntil = Math.min(deadline, Date.now() + this.connectTimeoutMs);
      const ready = await this.#waitForReady(waitUntil);
      if (!ready) throw this.#unreachable(err, fullMethod);
      try {
        return await this.#invoke(method, request, deadline, options.signal);
      } catch (retryErr) {
        if (grpcCode(retryErr) === grpc.status.UNAVAILABLE) {
          throw this.#unreachable(retryErr, fullMethod);
        }
        throw this.#wrap(retryErr, fullMethod);
      }
    }
  }

  /** Closes the channel; later calls fail with `Unavailable`. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#client.close();
  }

  #invoke(method: string, request: unknown, deadline: number, signal?: AbortSignal) {
    return new Promise<unknown>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const fn = (this.#client as unknown as Record<string, UnaryMethod>)[method];
      const onAbort = () => call.cancel();
      const call = fn.call(
        this.#client,
        request,
        new grpc.Metadata(),
        { deadline },
        (err, response) => {
          signal?.removeEventListener("abort", onAbort);
          if (err) {
            reject(signal?.aborted ? signal.reason : err);
          } else {
            resolve(response);
          }
        },
      );
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #waitForReady(until: number): Promise<boolean> {
    if (until <= Date.now()) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.#client.waitForReady(until, (err) => resolve(!err));
    });
  }

  #wrap(err: unknown, method: string): Error {
    if (
      err instanceof CriError || !(err instanceof Error) ||
      typeof (err as grpc.ServiceError).code !== "number"
    ) {
      return err as Error;
    }
    const e = err as grpc.ServiceError;
    return new CriError(e.code, e.details ?? e.message, {
      endpoint: this.endpoint.endpoint,
      method,
    });
  }

  #unreachable(err: unknown, method: string): CriError {
    // grpc-js appends an empty "Resolution note: " to connection failures; drop it.
    const detail = ((err as grpc.ServiceError).details ?? String(err))
      .replace(/\.? Resolution note: ?$/, "");
    let hint = "";
    try {
      const info = Deno.statSync(this.endpoint.socketPath);
      if (!info.isSocket) hint = ` (${this.endpoint.socketPath} is not a socket)`;
    } catch {
      hint = ` (socket ${this.endpoint.socketPath} does not exist: is the runtime running?)`;
    }
    return new CriError(
      grpc.status.UNAVAILABLE,
      `CRI runtime unreachable at ${this.endpoint.endpoint}${hint}: ${detail}`,
      { endpoint: this.endpoint.endpoint, method },
    );
  }
}

/**
 * Returns `service` once one cheap call has answered; on failure closes it and rethrows (the error
 * names the endpoint). Shared by the runtime and image service constructors.
 *
 * @example
 * ```ts
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
