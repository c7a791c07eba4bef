/**
 * The gRPC probe: one grpc.health.v1 `Check` call, healthy when the server answers SERVING.
 * Mirrors kubelet's pkg/probe/grpc/grpc.go.
 *
 * The call runs on one HTTP/2 connection over one TCP socket that the probe opens itself and always
 * closes when it ends, whatever the peer did (a port that accepts TCP and never speaks HTTP/2
 * must not keep a socket per probe). The HTTP/2 client is our own on `Deno.connect`
 * (src/util/h2/): `node:http2` client sessions leak heap in Deno 2.9.3, and grpc-js's channel
 * machinery cost ≈ 0.5 ms of CPU per probe. kubelet dials a fresh connection per probe too. The
 * request and response messages (one string field, one enum field) go through src/util/protowire.ts.
 *
 * Like grpc-go's blocking dial, failed connection attempts are retried with grpc-go's back-off
 * (1 s, ×1.6, ±20 %) until the probe's single deadline; the connection is ready once the server's
 * HTTP/2 SETTINGS arrive, as grpc-go requires.
 *
 * Deviations: the user agent is `kube-probe/1.36 probelet-grpc` (grpc-go appends `grpc-go/<v>`),
 * and the probe socket does not get kubelet's 1 s SO_LINGER (Deno cannot set it).
 * @module
 */
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import { goDuration, goQuote } from "../../util/go_format.ts";
import { kubeUserAgent } from "../../version.ts";
import { joinHostPort } from "../tcp/tcp.ts";
import { grpcCodeName, GrpcStatus } from "../../util/grpc_codes.ts";
import {
  grpcFrame,
  grpcHeadersRejected,
  H2ClientConn,
  H2ProtocolError,
  type H2Response,
  unaryRequestHeaders,
  unaryResult,
} from "../../util/h2/mod.ts";
import { errorText } from "../../util/errors.ts";
import { ProtoReader, ProtoWriter } from "../../util/protowire.ts";

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
  let conn: H2ClientConn | undefined;
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
      if (err.code === GrpcStatus.Unimplemented) {
        return failure(
          "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " +
            err.details,
        );
      }
      if (err.code === GrpcStatus.DeadlineExceeded) {
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
): Promise<H2ClientConn | undefined> {
  // Go dials the local system for an empty host.
  const dialHost = host === "" ? "127.0.0.1" : host;
  let backoffMs = 1000;
  while (!deadline.expired) {
    // One attempt: TCP connect, HTTP/2 preface, the server's SETTINGS; never leaves a socket open.
    const conn = await dialOnce(dialHost, port, deadline);
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

/** One TCP connect and HTTP/2 handshake within the deadline; undefined on any failure. */
async function dialOnce(
  hostname: string,
  port: number,
  deadline: Deadline,
): Promise<H2ClientConn | undefined> {
  if (deadline.expired) return undefined;
  const controller = new AbortController();
  const unwatch = deadline.watch(() => controller.abort());
  try {
    const conn = await Deno.connect({ hostname, port, signal: controller.signal });
    // Closes the socket itself when the handshake fails or the deadline aborts it.
    return await H2ClientConn.handshake(conn, { signal: controller.signal });
  } catch {
    return undefined;
  } finally {
    unwatch();
  }
}

/** The unary `Check` call on a ready connection: the serving status name; throws a StatusError. */
async function check(
  conn: H2ClientConn,
  options: { authority: string; service: string; deadline: Deadline; timeoutMs: number },
): Promise<string> {
  const { authority, service, deadline, timeoutMs } = options;
  const deadlineError = () =>
    new StatusError(GrpcStatus.DeadlineExceeded, "context deadline exceeded");
  if (deadline.expired) throw deadlineError();
  // The deadline closes the socket, which ends a pending read or write.
  const unwatch = deadline.watch(() => conn.close());
  let response: H2Response;
  try {
    // Empty metadata, as kubelet sends: the request is just the framed message.
    response = await conn.request(
      unaryRequestHeaders({
        path: checkPath,
        authority,
        userAgent: `${kubeUserAgent()} probelet-grpc`,
        timeoutMs,
      }),
      grpcFrame(encodeHealthCheckRequest(service)),
      { maxData: maxReceiveMessageLength + 5, rejectHeaders: grpcHeadersRejected },
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
  const result = unaryResult(response, { maxReceiveMessageLength });
  if (!(result instanceof Uint8Array)) throw new StatusError(result.code, result.details);
  try {
    return decodeHealthCheckResponse(result);
  } catch (err) {
    throw new StatusError(
      GrpcStatus.Internal,
      `grpc: failed to unmarshal the received message: ${(err as Error).message}`,
    );
  }
}

/** `HealthCheckRequest{service}`: field 1, length-delimited; proto3 omits the empty string. */
export function encodeHealthCheckRequest(service: string): Uint8Array {
  if (service === "") return new Uint8Array(0);
  const w = new ProtoWriter();
  w.uint32(10);
  w.string(service);
  return w.finish();
}

const servingStatusNames: ServingStatus[] = [
  "UNKNOWN",
  "SERVING",
  "NOT_SERVING",
  "SERVICE_UNKNOWN",
];

/**
 * `HealthCheckResponse.status` (field 1, enum) by name, decoded as Go's protobuf does: a missing
 * field is UNKNOWN, a number without a name prints as the number (an enum is the low 32 bits of the
 * varint, signed), and every other field (other numbers, field 1 with another wire type, groups) is
 * skipped as an unknown field. Malformed wire data throws Go protobuf's single error text.
 */
export function decodeHealthCheckResponse(bytes: Uint8Array): string {
  const r = new ProtoReader(bytes);
  let status = 0;
  while (r.pos < bytes.length) {
    const tag = r.tag();
    if (tag === 8) status = r.int32();
    else r.skip(tag);
  }
  return servingStatusNames[status] ?? String(status);
}

function unavailable(err: unknown): StatusError {
  // grpc-go closes the transport on a framer error: "error reading from server: <error>".
  if (err instanceof H2ProtocolError && err.code !== undefined) {
    return new StatusError(GrpcStatus.Unavailable, `error reading from server: ${err.message}`);
  }
  const message = errorText(err);
  return new StatusError(GrpcStatus.Unavailable, `connection error: desc = ${goQuote(message)}`);
}
