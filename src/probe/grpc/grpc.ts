/**
 * The gRPC probe: one grpc.health.v1 `Check` call, healthy when the server answers SERVING.
 * Mirrors kubelet's pkg/probe/grpc/grpc.go.
 *
 * The call runs on one HTTP/2 session over one TCP socket that the probe opens itself and always
 * destroys when it ends, whatever the peer did (a port that accepts TCP and never speaks HTTP/2
 * must not keep a socket per probe). grpc-js's channel machinery (resolver, load balancer,
 * subchannel pool, keep-alive timers) is not used: kubelet dials a fresh connection per probe, and
 * the channel cost ≈ 0.5 ms of CPU per probe and left such connections open.
 *
 * Like grpc-go's blocking dial, failed connection attempts are retried with grpc-go's back-off
 * (1 s, ×1.6, ±20 %) until the probe's single deadline; the connection is ready once the server's
 * HTTP/2 SETTINGS arrive, as grpc-go requires.
 *
 * Deviations: the user agent is `kube-probe/1.35 probelet-grpc` (grpc-go appends `grpc-go/<v>`),
 * and the probe socket does not get kubelet's 1 s SO_LINGER (Deno cannot set it).
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import * as http2 from "node:http2";
import * as net from "node:net";
import { Buffer } from "node:buffer";
import { STATUS_CODES } from "node:http";
import { fileURLToPath } from "node:url";
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import { goDuration, goQuote } from "../../util/go_format.ts";
import { kubeUserAgent } from "../../version.ts";
import { joinHostPort } from "../tcp/tcp.ts";
import { grpcCodeName } from "../../util/grpc_codes.ts";

/**
 * Checks a container with the gRPC health checking protocol. Never returns an error: every
 * problem is a Failure with kubelet's text as output.
 *
 * @example
 * ```ts
 * const outcome = await newGrpcProber().probe("10.0.0.5", { service: "", port: 9090, timeoutMs: 1000 });
 * outcome.output; // "service healthy" when the server answered SERVING
 * ```
 */
export interface GrpcProber {
  /** Connects to `host:port` and calls `Check({service})`, all within one `timeoutMs` deadline. */
  probe(
    host: string,
    options: { service: string; port: number; timeoutMs: number },
  ): Promise<ProbeOutcome>;
}

/**
 * Creates a gRPC health prober. `clock` times the deadline and the connection back-off (default:
 * the wall clock).
 *
 * @example
 * ```ts
 * const prober = newGrpcProber();
 * const { result } = await prober.probe("", { service: "", port: 32, timeoutMs: 1000 });
 * // result "failure", output 'timeout: failed to connect service ":32" within 1s: context deadline exceeded'
 * ```
 */
export function newGrpcProber(options: { clock?: Clock } = {}): GrpcProber {
  const clock = options.clock ?? new RealClock();
  // Loaded now, not by the first probe: under descriptor pressure reading the file could fail.
  const method = checkMethod();
  return {
    async probe(host, probeOptions) {
      try {
        return await doGrpcProbe(host, { ...probeOptions, clock, method });
      } catch (err) {
        // Not a verdict on the container: the prober retries errors.
        return { result: ProbeResult.Unknown, output: "", error: asError(err) };
      }
    },
  };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The grpc.health.v1 `HealthCheckResponse.ServingStatus` names. */
export type ServingStatus = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";

/**
 * The loaded grpc.health.v1 package: the `Health` client constructor and its service definition
 * (servers pass `health.service` to `addService`).
 *
 * @example
 * ```ts
 * const server = new grpc.Server();
 * server.addService(healthPackage().service, { check: (_call, cb) => cb(null, { status: "SERVING" }) });
 * ```
 */
export function healthPackage(): grpc.ServiceClientConstructor {
  if (!loadedHealth) {
    const path = fileURLToPath(
      new URL("../../../proto/grpc/health/v1/health.proto", import.meta.url),
    );
    // Enums as names and defaults filled in, so an omitted status reads "UNKNOWN" as in Go.
    const definition = protoLoader.loadSync(path, { enums: String, defaults: true });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as {
      grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
    };
    loadedHealth = loaded.grpc.health.v1.Health;
  }
  return loadedHealth;
}

let loadedHealth: grpc.ServiceClientConstructor | undefined;

/** The `Check` method: its path and its (de)serialisers from the loaded proto. */
type CheckMethod = grpc.MethodDefinition<{ service: string }, { status?: ServingStatus }>;

function checkMethod(): CheckMethod {
  return healthPackage().service.Check as CheckMethod;
}

/** grpc-go's default largest message a client receives (4 MiB). */
const maxReceiveMessageLength = 4 * 1024 * 1024;

/** A gRPC status as grpc-go's `status.Error`: `rpc error: code = <Name> desc = <message>`. */
class StatusError extends Error {
  constructor(readonly code: number, readonly details: string) {
    super(`rpc error: code = ${grpcCodeName(code)} desc = ${details}`);
    this.name = "StatusError";
  }
}

/** The probe's one deadline (Go's context.WithTimeout): expiry runs every registered abort. */
class Deadline {
  expired = false;
  #timer?: ClockTimer;
  #onExpire = new Set<() => void>();

  constructor(readonly clock: Clock, timeoutMs: number) {
    this.#timer = clock.afterFunc(Math.max(0, timeoutMs), () => {
      this.expired = true;
      for (const fn of [...this.#onExpire]) fn();
      this.#onExpire.clear();
    });
  }

  /** Runs `fn` at expiry (at once when already expired); returns the unsubscribe. */
  watch(fn: () => void): () => void {
    if (this.expired) {
      fn();
      return () => {};
    }
    this.#onExpire.add(fn);
    return () => this.#onExpire.delete(fn);
  }

  stop(): void {
    this.#timer?.stop();
    this.#onExpire.clear();
  }
}

/** One HTTP/2 connection owned by a probe: the socket and the session over it. */
interface Connection {
  socket: net.Socket;
  session: http2.ClientHttp2Session;
}

function destroyConnection(conn: Connection | undefined): void {
  if (!conn) return;
  try {
    conn.session.destroy();
  } finally {
    conn.socket.destroy();
  }
}

async function doGrpcProbe(
  host: string,
  options: { service: string; port: number; timeoutMs: number; clock: Clock; method: CheckMethod },
): Promise<ProbeOutcome> {
  const { service, port, timeoutMs, clock, method } = options;
  const addr = joinHostPort(host, `${port}`);
  // One deadline covers connecting and the call, like the context kubelet creates.
  const deadline = new Deadline(clock, timeoutMs);
  let conn: Connection | undefined;
  try {
    conn = await dialUntilReady(host, port, deadline);
    if (!conn) {
      return failure(
        `timeout: failed to connect service ${goQuote(addr)} within ${
          goDuration(timeoutMs)
        }: context deadline exceeded`,
      );
    }
    let status: string;
    try {
      const authority = addr.startsWith(":") ? `localhost${addr}` : addr;
      const response = await check(conn, { method, authority, service, deadline, timeoutMs });
      status = String(response.status ?? "UNKNOWN");
    } catch (err) {
      if (!(err instanceof StatusError)) throw err;
      if (err.code === grpc.status.UNIMPLEMENTED) {
        return failure(
          "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " +
            err.details,
        );
      }
      if (err.code === grpc.status.DEADLINE_EXCEEDED) {
        return failure(`timeout: health rpc did not complete within ${goDuration(timeoutMs)}`);
      }
      return failure(`error: health rpc probe failed: ${err.message}`);
    }
    if (status !== "SERVING") {
      return failure(`service unhealthy (responded with ${goQuote(status)})`);
    }
    return { result: ProbeResult.Success, output: "service healthy" };
  } finally {
    deadline.stop();
    destroyConnection(conn);
  }
}

function failure(output: string): ProbeOutcome {
  return { result: ProbeResult.Failure, output };
}

/**
 * Dials until a connection is ready or the deadline passes (undefined then). grpc-go's blocking
 * dial retries every failure, whatever it was, so the probe only ever reports the timeout.
 */
async function dialUntilReady(
  host: string,
  port: number,
  deadline: Deadline,
): Promise<Connection | undefined> {
  // Go dials the local system for an empty host.
  const dialHost = host === "" ? "127.0.0.1" : host;
  let backoffMs = 1000;
  while (!deadline.expired) {
    const conn = await connectOnce(dialHost, port, deadline);
    if (conn) return conn;
    if (deadline.expired) return undefined;
    // grpc-go's connection back-off: 1 s base, ×1.6, ±20 % jitter.
    const wait = backoffMs * (0.8 + Math.random() * 0.4);
    backoffMs = Math.min(backoffMs * 1.6, 120_000);
    await new Promise<void>((resolve) => {
      const timer = deadline.clock.afterFunc(wait, () => {
        unwatch();
        resolve();
      });
      const unwatch = deadline.watch(() => {
        timer.stop();
        resolve();
      });
    });
  }
  return undefined;
}

/** One attempt: TCP connect, HTTP/2 preface, the server's SETTINGS. Never leaves a socket open. */
function connectOnce(
  host: string,
  port: number,
  deadline: Deadline,
): Promise<Connection | undefined> {
  return new Promise((resolve) => {
    let socket: net.Socket;
    let session: http2.ClientHttp2Session | undefined;
    let settled = false;
    const settle = (ready: boolean) => {
      if (settled) return;
      settled = true;
      unwatch();
      if (ready && session) {
        resolve({ socket, session });
        return;
      }
      destroyConnection(session ? { socket, session } : { socket, session: dummySession });
      resolve(undefined);
    };
    try {
      socket = net.connect({ host, port });
    } catch {
      // An invalid port or host: grpc-go keeps retrying such a dial until the deadline too.
      resolve(undefined);
      return;
    }
    const unwatch = deadline.watch(() => settle(false));
    socket.on("error", () => settle(false));
    socket.once("close", () => settle(false));
    socket.once("connect", () => {
      if (settled) return;
      const authority = `http://${joinHostPort(host, `${port}`)}`;
      session = http2.connect(authority, {
        createConnection: () => socket,
        // A probe never receives pushes and needs one stream.
        settings: { enablePush: false },
      });
      session.on("error", () => settle(false));
      session.once("close", () => settle(false));
      session.once("remoteSettings", () => settle(true));
    });
  });
}

// Stands in when the attempt failed before a session existed.
const dummySession = { destroy() {} } as unknown as http2.ClientHttp2Session;

/** Go's `encodeTimeout` for the `grpc-timeout` header: at most 8 digits, the finest unit that fits. */
export function encodeGrpcTimeout(ms: number): string {
  if (ms <= 0) return "0n";
  const units: [string, number][] = [
    ["n", 1e-6],
    ["u", 1e-3],
    ["m", 1],
    ["S", 1e3],
    ["M", 60e3],
    ["H", 3600e3],
  ];
  for (const [unit, unitMs] of units) {
    const value = Math.ceil(ms / unitMs);
    if (value <= 99_999_999) return `${value}${unit}`;
  }
  return "99999999H";
}

// HTTP status → gRPC code when a response carries no grpc-status (grpc-go's HTTPStatusConvTab).
const httpStatusCodes: Record<number, number> = {
  400: grpc.status.INTERNAL,
  401: grpc.status.UNAUTHENTICATED,
  403: grpc.status.PERMISSION_DENIED,
  404: grpc.status.UNIMPLEMENTED,
  429: grpc.status.UNAVAILABLE,
  502: grpc.status.UNAVAILABLE,
  503: grpc.status.UNAVAILABLE,
  504: grpc.status.UNAVAILABLE,
};

// RST_STREAM error code → gRPC code (grpc-go's http2ErrConvTab).
function rstStreamCode(http2Code: number): number {
  switch (http2Code) {
    case http2.constants.NGHTTP2_REFUSED_STREAM:
      return grpc.status.UNAVAILABLE;
    case http2.constants.NGHTTP2_CANCEL:
      return grpc.status.CANCELLED;
    case http2.constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return grpc.status.RESOURCE_EXHAUSTED;
    case http2.constants.NGHTTP2_INADEQUATE_SECURITY:
      return grpc.status.PERMISSION_DENIED;
    default:
      return grpc.status.INTERNAL;
  }
}

/** The unary `Check` call on a ready connection; rejects with a StatusError. */
function check(
  conn: Connection,
  options: {
    method: CheckMethod;
    authority: string;
    service: string;
    deadline: Deadline;
    timeoutMs: number;
  },
): Promise<{ status?: ServingStatus | number }> {
  const { method, authority, service, deadline, timeoutMs } = options;
  return new Promise((resolve, reject) => {
    let settled = false;
    let stream: http2.ClientHttp2Stream | undefined;
    const chunks: Uint8Array[] = [];
    let received = 0;
    let httpStatus = 0;
    let contentType = "";
    let headerStatus: string | undefined;
    let headerMessage = "";
    const finish = (err?: StatusError, value?: { status?: ServingStatus | number }) => {
      if (settled) return;
      settled = true;
      unwatch();
      if (err) {
        // grpc-go cancels the stream (RST_STREAM CANCEL) when the call ends early.
        if (stream && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(err);
      } else resolve(value ?? {});
    };
    const unwatch = deadline.watch(() =>
      finish(new StatusError(grpc.status.DEADLINE_EXCEEDED, "context deadline exceeded"))
    );
    if (settled) return;
    try {
      stream = conn.session.request({
        ":method": "POST",
        ":scheme": "http",
        ":path": method.path,
        ":authority": authority,
        "content-type": "application/grpc",
        "user-agent": `${kubeUserAgent()} probelet-grpc`,
        "te": "trailers",
        "grpc-timeout": encodeGrpcTimeout(timeoutMs),
      });
    } catch (err) {
      finish(unavailable(err));
      return;
    }
    stream.on("response", (headers) => {
      httpStatus = Number(headers[":status"] ?? 0);
      contentType = String(headers["content-type"] ?? "");
      if (headers["grpc-status"] !== undefined) {
        headerStatus = String(headers["grpc-status"]);
        headerMessage = String(headers["grpc-message"] ?? "");
      }
    });
    stream.on("data", (chunk: Uint8Array) => {
      received += chunk.length;
      if (received > maxReceiveMessageLength + 5) {
        finish(
          new StatusError(
            grpc.status.RESOURCE_EXHAUSTED,
            `grpc: received message larger than max (${
              received - 5
            } vs. ${maxReceiveMessageLength})`,
          ),
        );
        return;
      }
      chunks.push(chunk);
    });
    stream.on("trailers", (trailers) => {
      if (trailers["grpc-status"] !== undefined) {
        headerStatus = String(trailers["grpc-status"]);
        headerMessage = String(trailers["grpc-message"] ?? "");
      }
    });
    stream.on("error", (err) => finish(unavailable(err)));
    stream.once("close", () => {
      if (settled) return;
      const rst = stream?.rstCode ?? 0;
      if (headerStatus === undefined) {
        if (httpStatus !== 0 && httpStatus !== 200) {
          const code = httpStatusCodes[httpStatus] ?? grpc.status.UNKNOWN;
          finish(
            new StatusError(
              code,
              `unexpected HTTP status code received from server: ${httpStatus} (${
                STATUS_CODES[httpStatus] ?? ""
              })`,
            ),
          );
          return;
        }
        if (httpStatus === 200 && !/^application\/grpc([+;]|$)/.test(contentType)) {
          finish(
            new StatusError(
              grpc.status.UNKNOWN,
              `transport: received unexpected content-type ${goQuote(contentType)}`,
            ),
          );
          return;
        }
        if (rst !== 0 && rst !== http2.constants.NGHTTP2_NO_ERROR) {
          finish(
            new StatusError(
              rstStreamCode(rst),
              `stream terminated by RST_STREAM with error code: ${http2ErrorName(rst)}`,
            ),
          );
          return;
        }
        finish(new StatusError(grpc.status.UNAVAILABLE, "error reading from server: EOF"));
        return;
      }
      const code = Number(headerStatus);
      if (!Number.isInteger(code)) {
        finish(
          new StatusError(
            grpc.status.INTERNAL,
            `transport: malformed grpc-status: ${goQuote(headerStatus)}`,
          ),
        );
        return;
      }
      if (code !== grpc.status.OK) {
        finish(new StatusError(code, decodeGrpcMessage(headerMessage)));
        return;
      }
      const message = firstMessage(chunks);
      if (message instanceof StatusError) {
        finish(message);
        return;
      }
      try {
        finish(undefined, method.responseDeserialize(Buffer.from(message)));
      } catch (err) {
        finish(
          new StatusError(
            grpc.status.INTERNAL,
            `grpc: failed to unmarshal the received message: ${(err as Error).message}`,
          ),
        );
      }
    });
    // Empty metadata, as kubelet sends: the request is just the framed message.
    const body = method.requestSerialize({ service });
    const frame = new Uint8Array(5 + body.length);
    new DataView(frame.buffer).setUint32(1, body.length);
    frame.set(body, 5);
    stream.end(frame);
  });
}

/** The one length-prefixed message of a unary response, or the error grpc-go reports instead. */
function firstMessage(chunks: Uint8Array[]): Uint8Array | StatusError {
  const data = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  if (data.length < 5) return new StatusError(grpc.status.INTERNAL, "unexpected EOF");
  if (data[0] !== 0) {
    return new StatusError(
      grpc.status.INTERNAL,
      "grpc: compressed flag set with identity or empty encoding",
    );
  }
  const length = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1);
  if (data.length < 5 + length) return new StatusError(grpc.status.INTERNAL, "unexpected EOF");
  return data.subarray(5, 5 + length);
}

function unavailable(err: unknown): StatusError {
  const message = err instanceof Error ? err.message : String(err);
  return new StatusError(grpc.status.UNAVAILABLE, `connection error: desc = ${goQuote(message)}`);
}

// grpc-message is percent-encoded (RFC 3986 style) by the server.
function decodeGrpcMessage(message: string): string {
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
}

const http2ErrorNames = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];

function http2ErrorName(code: number): string {
  return http2ErrorNames[code] ?? `unknown error code 0x${code.toString(16)}`;
}
