/**
 * The gRPC probe: one grpc.health.v1 `Check` call, healthy when the server answers SERVING.
 * Mirrors kubelet's pkg/probe/grpc/grpc.go.
 *
 * The call runs on one HTTP/2 connection over one TCP socket that the probe opens itself and always
 * closes when it ends, whatever the peer did (a port that accepts TCP and never speaks HTTP/2
 * must not keep a socket per probe). The HTTP/2 client is our own minimal one on `Deno.connect`
 * (h2_conn.ts): `node:http2` client sessions leak heap in Deno 2.9.3, and grpc-js's channel
 * machinery cost ≈ 0.5 ms of CPU per probe. kubelet dials a fresh connection per probe too. The
 * request and response messages are encoded by hand (one string field, one enum field).
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
import { STATUS_CODES } from "node:http";
import { fileURLToPath } from "node:url";
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import { goDuration, goQuote } from "../../util/go_format.ts";
import { kubeUserAgent } from "../../version.ts";
import { joinHostPort } from "../tcp/tcp.ts";
import { grpcCodeName } from "../../util/grpc_codes.ts";
import { H2Conn, type H2Response } from "./h2_conn.ts";

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
  return {
    async probe(host, probeOptions) {
      try {
        return await doGrpcProbe(host, { ...probeOptions, clock });
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
 * (servers pass `health.service` to `addService`). For servers and tests: the probe itself encodes
 * its messages by hand and never loads it.
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

/** The `Check` method's path. */
const checkPath = "/grpc.health.v1.Health/Check";

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

async function doGrpcProbe(
  host: string,
  options: { service: string; port: number; timeoutMs: number; clock: Clock },
): Promise<ProbeOutcome> {
  const { service, port, timeoutMs, clock } = options;
  const addr = joinHostPort(host, `${port}`);
  // One deadline covers connecting and the call, like the context kubelet creates.
  const deadline = new Deadline(clock, timeoutMs);
  let conn: H2Conn | undefined;
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
      status = await check(conn, { authority, service, deadline, timeoutMs });
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
    conn?.close();
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
): Promise<H2Conn | undefined> {
  // Go dials the local system for an empty host.
  const dialHost = host === "" ? "127.0.0.1" : host;
  let backoffMs = 1000;
  while (!deadline.expired) {
    // One attempt: TCP connect, HTTP/2 preface, the server's SETTINGS; never leaves a socket open.
    const conn = await H2Conn.dial(dialHost, port, deadline);
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
    case 0x7: // REFUSED_STREAM
      return grpc.status.UNAVAILABLE;
    case 0x8: // CANCEL
      return grpc.status.CANCELLED;
    case 0xb: // ENHANCE_YOUR_CALM
      return grpc.status.RESOURCE_EXHAUSTED;
    case 0xc: // INADEQUATE_SECURITY
      return grpc.status.PERMISSION_DENIED;
    default:
      return grpc.status.INTERNAL;
  }
}

/** The unary `Check` call on a ready connection: the serving status name; throws a StatusError. */
async function check(
  conn: H2Conn,
  options: { authority: string; service: string; deadline: Deadline; timeoutMs: number },
): Promise<string> {
  const { authority, service, deadline, timeoutMs } = options;
  const deadlineError = () =>
    new StatusError(grpc.status.DEADLINE_EXCEEDED, "context deadline exceeded");
  if (deadline.expired) throw deadlineError();
  // The deadline closes the socket, which ends a pending read or write.
  const unwatch = deadline.watch(() => conn.close());
  let response: H2Response;
  try {
    // Empty metadata, as kubelet sends: the request is just the framed message.
    response = await conn.request(
      [
        [":method", "POST"],
        [":scheme", "http"],
        [":path", checkPath],
        [":authority", authority],
        ["content-type", "application/grpc"],
        ["user-agent", `${kubeUserAgent()} probelet-grpc`],
        ["te", "trailers"],
        ["grpc-timeout", encodeGrpcTimeout(timeoutMs)],
      ],
      grpcFrame(encodeHealthCheckRequest(service)),
      { maxData: maxReceiveMessageLength + 5 },
    );
  } catch (err) {
    if (deadline.expired) throw deadlineError();
    throw unavailable(err);
  } finally {
    unwatch();
  }
  if (deadline.expired) throw deadlineError();
  return statusOf(response);
}

/** The serving status a finished stream carries, or the StatusError grpc-go reports instead. */
function statusOf(response: H2Response): string {
  const { httpStatus, headers, rstCode } = response;
  let received = 0;
  for (const chunk of response.data) received += chunk.length;
  if (received > maxReceiveMessageLength + 5) {
    throw new StatusError(
      grpc.status.RESOURCE_EXHAUSTED,
      `grpc: received message larger than max (${received - 5} vs. ${maxReceiveMessageLength})`,
    );
  }
  const headerStatus = headers.get("grpc-status");
  if (headerStatus === undefined) {
    if (response.refusedByGoAway) {
      throw new StatusError(
        grpc.status.UNAVAILABLE,
        "the stream is rejected because server is draining the connection",
      );
    }
    if (httpStatus !== 0 && httpStatus !== 200) {
      const code = httpStatusCodes[httpStatus] ?? grpc.status.UNKNOWN;
      throw new StatusError(
        code,
        `unexpected HTTP status code received from server: ${httpStatus} (${
          STATUS_CODES[httpStatus] ?? ""
        })`,
      );
    }
    const contentType = headers.get("content-type") ?? "";
    if (httpStatus === 200 && !/^application\/grpc([+;]|$)/.test(contentType)) {
      throw new StatusError(
        grpc.status.UNKNOWN,
        `transport: received unexpected content-type ${goQuote(contentType)}`,
      );
    }
    if (rstCode !== undefined && rstCode !== 0) {
      throw new StatusError(
        rstStreamCode(rstCode),
        `stream terminated by RST_STREAM with error code: ${http2ErrorName(rstCode)}`,
      );
    }
    throw new StatusError(grpc.status.UNAVAILABLE, "error reading from server: EOF");
  }
  const code = Number(headerStatus);
  if (!Number.isInteger(code)) {
    throw new StatusError(
      grpc.status.INTERNAL,
      `transport: malformed grpc-status: ${goQuote(headerStatus)}`,
    );
  }
  if (code !== grpc.status.OK) {
    throw new StatusError(code, decodeGrpcMessage(headers.get("grpc-message") ?? ""));
  }
  const message = firstMessage(response.data);
  if (message instanceof StatusError) throw message;
  try {
    return decodeHealthCheckResponse(message);
  } catch (err) {
    throw new StatusError(
      grpc.status.INTERNAL,
      `grpc: failed to unmarshal the received message: ${(err as Error).message}`,
    );
  }
}

/** The gRPC length-prefixed message: flag 0 (uncompressed), 4-byte length, bytes. */
function grpcFrame(body: Uint8Array): Uint8Array {
  const frame = new Uint8Array(5 + body.length);
  new DataView(frame.buffer).setUint32(1, body.length);
  frame.set(body, 5);
  return frame;
}

/** `HealthCheckRequest{service}`: field 1, length-delimited; proto3 omits the empty string. */
export function encodeHealthCheckRequest(service: string): Uint8Array {
  if (service === "") return new Uint8Array(0);
  const text = new TextEncoder().encode(service);
  const out: number[] = [0x0a];
  for (let n = text.length;; n = Math.floor(n / 128)) {
    if (n < 128) {
      out.push(n);
      break;
    }
    out.push((n % 128) | 0x80);
  }
  const bytes = new Uint8Array(out.length + text.length);
  bytes.set(out);
  bytes.set(text, out.length);
  return bytes;
}

const servingStatusNames: ServingStatus[] = [
  "UNKNOWN",
  "SERVING",
  "NOT_SERVING",
  "SERVICE_UNKNOWN",
];

/**
 * `HealthCheckResponse.status` (field 1, enum) by name; a missing field is UNKNOWN as in Go, a
 * number without a name prints as the number. Other fields are skipped; bad wire data throws.
 */
export function decodeHealthCheckResponse(bytes: Uint8Array): string {
  let status = 0;
  let off = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      if (off >= bytes.length) throw new Error("unexpected EOF");
      const b = bytes[off++];
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
    throw new Error("proto: integer overflow");
  };
  while (off < bytes.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wireType = key % 8;
    if (field === 0) throw new Error("proto: illegal tag 0");
    if (wireType === 0) {
      const value = varint();
      // An enum is an int32: the low 32 bits, signed.
      if (field === 1) status = value % 2 ** 32 | 0;
    } else if (wireType === 1) off += 8;
    else if (wireType === 5) off += 4;
    else if (wireType === 2) off += varint();
    else throw new Error(`proto: cannot parse invalid wire-format data`);
    if (off > bytes.length) throw new Error("unexpected EOF");
  }
  return servingStatusNames[status] ?? String(status);
}

/** The one length-prefixed message of a unary response, or the error grpc-go reports instead. */
function firstMessage(chunks: Uint8Array[]): Uint8Array | StatusError {
  const data = chunks.length === 1 ? chunks[0] : concatBytes(chunks);
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

function concatBytes(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
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
