/**
 * Port forwarding over an upgraded SPDY connection (`portforward.k8s.io`): for each forwarded
 * connection the client opens an `error` and a `data` stream carrying the same `port` and
 * `requestID` headers; once both are there the runtime connects the data stream to the port, and
 * a failure is written to the error stream. The client may open many pairs on one connection, which
 * lasts until the client closes it.
 *
 * Mirrors `k8s.io/cri-streaming/pkg/streaming/portforward` (httpstream.go, constants.go).
 * @module
 */
import type { Clock } from "../util/clock.ts";
import * as klog from "../util/log.ts";
import type { SpdyConnection, SpdyStream } from "./spdy/connection.ts";
import { headerValue } from "./spdy/frame.ts";

/** The port-forward subprotocol (`ProtocolV1Name`). */
export const portForwardProtocolV1Name = "portforward.k8s.io";
/** What cri-streaming offers (`SupportedProtocols`). */
export const supportedPortForwardProtocols = [portForwardProtocolV1Name];

/**
 * What the runtime does with one forwarded connection: copy between `stream` and the port until
 * either side ends. A rejection is reported to the client on the error stream.
 */
export type PortForwarder = (port: number, stream: SpdyStream) => Promise<void>;

// The validation of httpStreamReceived: the error refuses the stream.
function checkStream(stream: SpdyStream): string | undefined {
  const portString = headerValue(stream.headers, "port");
  if (portString === "") return `"port" header is required`;
  const port = /^\d+$/.test(portString) ? Number(portString) : NaN;
  if (!(port <= 65535)) {
    return `unable to parse "${portString}" as a port: strconv.ParseUint: parsing ${
      JSON.stringify(portString)
    }: ${Number.isNaN(port) ? "invalid syntax" : "value out of range"}`;
  }
  if (port < 1) return `port "${portString}" must be > 0`;
  const streamType = headerValue(stream.headers, "streamType");
  if (streamType === "") return `"streamType" header is required`;
  if (streamType !== "error" && streamType !== "data") return `invalid stream type "${streamType}"`;
  return undefined;
}

let connections = 0;

interface StreamPair {
  requestId: string;
  data?: SpdyStream;
  error?: SpdyStream;
  timer?: { stop(): void };
}

/**
 * Pairs the client's streams and forwards each complete pair (`httpStreamHandler`).
 *
 * @example
 * ```ts
 * import { SpdyConnection } from "./spdy/connection.ts";
 * import { RealClock } from "../util/clock.ts";
 *
 * declare const forward: PortForwarder;
 * declare const conn: Deno.Conn;
 * const clock = new RealClock();
 * const podSandboxId = "sandbox-1";
 * const handler = new PortForwardHandler(forward, {
 *   clock,
 *   streamCreationTimeoutMs: 30_000,
 *   podSandboxId,
 * });
 * const spdy = new SpdyConnection(conn, {
 *   onStream: (s, replySent) => handler.onStream(s, replySent),
 * });
 * handler.connection = spdy;
 * ```
 */
export class PortForwardHandler {
  #forward: PortForwarder;
  #clock: Clock;
  #timeoutMs: number;
  #pairs = new Map<string, StreamPair>();
  #podSandboxId: string;
  #connId = `spdy-${++connections}`;
  /** The connection, for forgetting finished streams. */
  connection: SpdyConnection | undefined;

  /** Forwards through `forward`; a pair must be complete within `streamCreationTimeoutMs`. */
  constructor(
    forward: PortForwarder,
    options: { clock: Clock; streamCreationTimeoutMs: number; podSandboxId: string },
  ) {
    this.#podSandboxId = options.podSandboxId;
    this.#forward = forward;
    this.#clock = options.clock;
    this.#timeoutMs = options.streamCreationTimeoutMs;
  }

  /** The connection's `onStream`. */
  onStream(stream: SpdyStream, _replySent: Promise<void>): string | undefined {
    const refusal = checkStream(stream);
    if (refusal !== undefined) return refusal;
    // Run after the stream was answered, as the Go handler receives it from a channel.
    queueMicrotask(() => this.#received(stream));
    return undefined;
  }

  // The request id, or one derived from the stream id for old clients (`requestID`).
  #requestId(stream: SpdyStream): string {
    const id = headerValue(stream.headers, "requestID");
    if (id !== "") return id;
    const type = headerValue(stream.headers, "streamType");
    return String(type === "data" ? stream.id - 2 : stream.id);
  }

  #received(stream: SpdyStream): void {
    const requestId = this.#requestId(stream);
    let pair = this.#pairs.get(requestId);
    if (!pair) {
      const created: StreamPair = { requestId };
      pair = created;
      this.#pairs.set(requestId, created);
      created.timer = this.#clock.afterFunc(this.#timeoutMs, () => {
        const msg = `(conn=${this.#connId}, request=${requestId}) timed out waiting for streams`;
        klog.error(new Error(msg), "Port forward stream pair incomplete");
        this.#printError(created, msg);
        this.#remove(created);
      });
    }
    const type = headerValue(stream.headers, "streamType") as "data" | "error";
    if (pair[type]) {
      const msg =
        `error processing stream for request ${requestId}: ${type} stream already assigned`;
      klog.error(new Error(msg), "Port forward stream refused");
      this.#printError(pair, msg);
      return;
    }
    pair[type] = stream;
    if (pair.data && pair.error) {
      pair.timer?.stop();
      this.#remove(pair);
      this.#portForward(pair.data, pair.error);
    }
  }

  #remove(pair: StreamPair): void {
    if (this.#pairs.get(pair.requestId) === pair) this.#pairs.delete(pair.requestId);
    pair.timer?.stop();
  }

  #printError(pair: StreamPair, msg: string): void {
    pair.error?.write(new TextEncoder().encode(msg)).catch(() => {});
  }

  async #portForward(data: SpdyStream, error: SpdyStream): Promise<void> {
    const port = Number(headerValue(data.headers, "port"));
    try {
      await this.#forward(port, data);
      await Promise.all([data.close(), error.close()]);
    } catch (err) {
      const msg = `error forwarding port ${port} to pod ${this.#podSandboxId}, uid : ${
        (err as Error).message ?? err
      }`;
      klog.error(new Error(msg), "Port forward failed");
      await error.write(new TextEncoder().encode(msg)).catch(() => {});
      data.reset();
      error.reset();
    }
    this.connection?.removeStreams(data, error);
  }
}
