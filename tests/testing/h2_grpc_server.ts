/**
 * A small gRPC server for tests: HTTP/2 frames spoken by hand (src/util/h2/frame.ts) on
 * `Deno.listen`, on a unix socket in a temporary folder or on 127.0.0.1. Handlers run concurrently,
 * one per stream; the server honours the client's flow-control windows when it sends, encodes its
 * headers with HPACK's Huffman code and dynamic table (as real servers do), and records what the
 * client did (connections, RST_STREAMs, WINDOW_UPDATEs, the most streams open at once) so tests can
 * assert on it. Not `node:http2`: its server sockets go through `node:net`, whose unix sockets Deno
 * 2.9.3 closes twice.
 * @module
 */
import hpack from "hpack.js";
import {
  clientPreface,
  concat,
  defaultMaxFrameSize,
  defaultWindow,
  ErrorCode,
  Flag,
  frame,
  FrameReader,
  FrameType,
  goAwayFrame,
  HeaderDecoder,
  headerFrames,
  parseSettings,
  readUint32,
  Setting,
  settingsFrame,
  stripPadding,
} from "../../src/util/h2/frame.ts";
import { encodeGrpcMessage, grpcFrame } from "../../src/util/h2/grpc.ts";

/** A call as the handler sees it. */
export interface ServerCall {
  path: string;
  headers: Map<string, string>;
  /** The request message (without the 5-byte gRPC prefix). */
  message: Uint8Array;
  streamId: number;
  /** Aborted when the client resets the stream or the connection ends. */
  signal: AbortSignal;
}

/** What a handler answers: a message (status OK), or a status, sent trailers-only if asked. */
export type Reply =
  | { message: Uint8Array }
  | { code: number; details: string; trailersOnly?: boolean };

/** A handler; `undefined` from it sends nothing (the test ends the stream some other way). */
export type Handler = (call: ServerCall) => Promise<Reply | undefined> | Reply | undefined;

/** Options of `startH2GrpcServer`. */
export interface H2GrpcServerOptions {
  /** Sent as SETTINGS_MAX_CONCURRENT_STREAMS. */
  maxConcurrentStreams?: number;
  /** Listen on 127.0.0.1 instead of a unix socket. */
  tcp?: boolean;
}

/** A running server. */
export interface H2GrpcServer {
  /** `unix:///.../grpc.sock` (or `127.0.0.1:port` with `tcp`). */
  endpoint: string;
  /** The socket's path (unix) or port (tcp). */
  path: string;
  port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** RST_STREAM frames the client sent, in order. */
  readonly resets: { streamId: number; code: number }[];
  /** WINDOW_UPDATE frames the client sent. */
  readonly windowUpdates: number;
  /** The most streams that were open at once on one connection. */
  readonly maxOpenStreams: number;
  /** Request headers of every stream, in order of arrival. */
  readonly requests: Map<string, string>[];
  /** Sends GOAWAY on every connection: `lastStreamId` (default: the highest stream seen). */
  goAway(lastStreamId?: number): Promise<void>;
  /** Closes every connection at once (the server process "crashed"); keeps listening. */
  dropConnections(): void;
  /** Stops listening, closes every connection, removes the socket's folder. */
  close(): Promise<void>;
}

/**
 * Starts a server answering `handlers` by full method path (`/pkg.Service/Method`); other paths
 * get Unimplemented.
 *
 * @example
 * ```ts
 * const server = await startH2GrpcServer({ "/x.Y/Z": () => ({ message: new Uint8Array() }) });
 * await server.close();
 * ```
 */
export async function startH2GrpcServer(
  handlers: Record<string, Handler>,
  options: H2GrpcServerOptions = {},
): Promise<H2GrpcServer> {
  const dir = options.tcp ? "" : await Deno.makeTempDir({ prefix: "probelet-h2-" });
  const path = options.tcp ? "" : `${dir}/grpc.sock`;
  const listener: Deno.Listener = options.tcp
    ? Deno.listen({ hostname: "127.0.0.1", port: 0 })
    : Deno.listen({ transport: "unix", path });
  const port = options.tcp ? (listener.addr as Deno.NetAddr).port : 0;
  const conns = new Set<ServerConn>();
  const stats = {
    connections: 0,
    resets: [] as { streamId: number; code: number }[],
    windowUpdates: 0,
    maxOpenStreams: 0,
    requests: [] as Map<string, string>[],
  };
  const served: Promise<void>[] = [];
  const accepting = (async () => {
    for await (const conn of listener) {
      stats.connections++;
      const serverConn = new ServerConn(conn, handlers, stats, options);
      conns.add(serverConn);
      served.push(serverConn.serve().finally(() => conns.delete(serverConn)));
    }
  })().catch(() => {});
  return {
    endpoint: options.tcp ? `127.0.0.1:${port}` : `unix://${path}`,
    path,
    port,
    get connections() {
      return stats.connections;
    },
    get resets() {
      return stats.resets;
    },
    get windowUpdates() {
      return stats.windowUpdates;
    },
    get maxOpenStreams() {
      return stats.maxOpenStreams;
    },
    get requests() {
      return stats.requests;
    },
    async goAway(lastStreamId) {
      for (const c of conns) await c.goAway(lastStreamId);
    },
    dropConnections() {
      for (const c of conns) c.close();
    },
    async close() {
      listener.close();
      await accepting;
      for (const c of conns) c.close();
      await Promise.all(served);
      if (dir) await Deno.remove(dir, { recursive: true });
    },
  };
}

interface Stats {
  connections: number;
  resets: { streamId: number; code: number }[];
  windowUpdates: number;
  maxOpenStreams: number;
  requests: Map<string, string>[];
}

interface ServerStream {
  id: number;
  headers: Map<string, string>;
  data: Uint8Array[];
  sendWindow: number;
  abort: AbortController;
}

/** The server side of one connection. */
class ServerConn {
  #conn: Deno.Conn;
  #reader: FrameReader;
  #decoder = new HeaderDecoder();
  #encoder = hpack.compressor.create({ table: { maxSize: 4096 } });
  #streams = new Map<number, ServerStream>();
  #highestStream = 0;
  #clientInitialWindow = defaultWindow;
  #connSendWindow = defaultWindow;
  #windowWaiters = new Set<() => void>();
  #writes: Promise<void> = Promise.resolve();
  #closed = false;
  #handlers: Record<string, Handler>;
  #stats: Stats;
  #options: H2GrpcServerOptions;
  // After our GOAWAY: streams above it are ignored, as a real server does.
  #goAwayLast = Infinity;

  constructor(
    conn: Deno.Conn,
    handlers: Record<string, Handler>,
    stats: Stats,
    options: H2GrpcServerOptions,
  ) {
    this.#conn = conn;
    this.#reader = new FrameReader(conn);
    this.#handlers = handlers;
    this.#stats = stats;
    this.#options = options;
  }

  async serve(): Promise<void> {
    try {
      const preface = await this.#reader.readExactly(clientPreface.length);
      if (new TextDecoder().decode(preface) !== new TextDecoder().decode(clientPreface)) return;
      const settings: [number, number][] = [];
      if (this.#options.maxConcurrentStreams !== undefined) {
        settings.push([Setting.MaxConcurrentStreams, this.#options.maxConcurrentStreams]);
      }
      await this.#write([settingsFrame(settings)]);
      for (;;) {
        const f = await this.#reader.next();
        if (!f) break;
        await this.#onFrame(f);
      }
    } catch {
      // The client went away or the test closed us.
    } finally {
      // Handlers that never answer are not waited for: the test decides when they end.
      this.close();
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#streams.values()) s.abort.abort();
    for (const wake of [...this.#windowWaiters]) wake();
    try {
      this.#conn.close();
    } catch {
      // Already closed.
    }
  }

  async goAway(lastStreamId?: number): Promise<void> {
    this.#goAwayLast = lastStreamId ?? this.#highestStream;
    await this.#write([goAwayFrame(this.#goAwayLast, ErrorCode.NoError)]);
  }

  async #onFrame(f: Frame): Promise<void> {
    switch (f.type) {
      case FrameType.Settings:
        if ((f.flags & Flag.Ack) !== 0) return;
        for (const [id, value] of parseSettings(f)) {
          if (id === Setting.InitialWindowSize) {
            const delta = value - this.#clientInitialWindow;
            for (const s of this.#streams.values()) s.sendWindow += delta;
            this.#clientInitialWindow = value;
          }
        }
        await this.#write([frame(FrameType.Settings, Flag.Ack, 0, new Uint8Array(0))]);
        this.#wake();
        return;
      case FrameType.WindowUpdate: {
        this.#stats.windowUpdates++;
        const increment = readUint32(f.payload, 0) & 0x7fff_ffff;
        if (f.streamId === 0) this.#connSendWindow += increment;
        else {
          const s = this.#streams.get(f.streamId);
          if (s) s.sendWindow += increment;
        }
        this.#wake();
        return;
      }
      case FrameType.Ping:
        if ((f.flags & Flag.Ack) === 0) {
          await this.#write([frame(FrameType.Ping, Flag.Ack, 0, f.payload)]);
        }
        return;
      case FrameType.RstStream: {
        this.#stats.resets.push({ streamId: f.streamId, code: readUint32(f.payload, 0) });
        const s = this.#streams.get(f.streamId);
        if (s) {
          this.#streams.delete(f.streamId);
          s.abort.abort();
        }
        this.#wake();
        return;
      }
      case FrameType.Headers: {
        const { fields } = await this.#reader.readMetaHeaders(f, this.#decoder, {
          maxHeaderListSize: Infinity,
        });
        if (f.streamId > this.#goAwayLast) return;
        const stream: ServerStream = {
          id: f.streamId,
          headers: new Map(fields),
          data: [],
          sendWindow: this.#clientInitialWindow,
          abort: new AbortController(),
        };
        this.#highestStream = Math.max(this.#highestStream, f.streamId);
        this.#streams.set(f.streamId, stream);
        this.#stats.requests.push(stream.headers);
        this.#stats.maxOpenStreams = Math.max(this.#stats.maxOpenStreams, this.#streams.size);
        if (f.flags & Flag.EndStream) this.#dispatch(stream);
        return;
      }
      case FrameType.Data: {
        const s = this.#streams.get(f.streamId);
        if (!s) return;
        s.data.push(stripPadding(f));
        if (f.flags & Flag.EndStream) this.#dispatch(s);
        return;
      }
      default:
        return;
    }
  }

  #dispatch(stream: ServerStream): void {
    this.#run(stream).catch(() => {});
  }

  async #run(stream: ServerStream): Promise<void> {
    const path = stream.headers.get(":path") ?? "";
    const handler = this.#handlers[path];
    let reply: Reply | undefined;
    if (!handler) {
      reply = { code: 12, details: `unknown method ${path}`, trailersOnly: true };
    } else {
      const body = concat(stream.data);
      reply = await handler({
        path,
        headers: stream.headers,
        message: body.subarray(5),
        streamId: stream.id,
        signal: stream.abort.signal,
      });
    }
    if (!reply || stream.abort.signal.aborted || this.#closed) return;
    const head: [string, string][] = [[":status", "200"], ["content-type", "application/grpc"]];
    if ("code" in reply && reply.trailersOnly) {
      await this.#sendHeaders(stream.id, [...head, ...statusFields(reply)], true);
    } else {
      await this.#sendHeaders(stream.id, head, false);
      if ("message" in reply) await this.#sendData(stream, grpcFrame(reply.message));
      const trailers = "code" in reply ? statusFields(reply) : [["grpc-status", "0"]] as [
        string,
        string,
      ][];
      await this.#sendHeaders(stream.id, trailers, true);
    }
    this.#streams.delete(stream.id);
  }

  async #sendHeaders(id: number, fields: [string, string][], endStream: boolean): Promise<void> {
    // Encoded at send time, in order: the HPACK dynamic table is per connection.
    this.#encoder.write(fields.map(([name, value]) => ({ name, value, huffman: true })));
    const parts: Uint8Array[] = [];
    for (let p = this.#encoder.read(); p !== null; p = this.#encoder.read()) parts.push(p);
    await this.#write(
      headerFrames(id, concat(parts), { maxFrameSize: defaultMaxFrameSize, endStream }),
    );
  }

  /** DATA within the client's windows, waiting for its WINDOW_UPDATEs. */
  async #sendData(stream: ServerStream, bytes: Uint8Array): Promise<void> {
    let off = 0;
    while (off < bytes.length) {
      if (this.#closed || stream.abort.signal.aborted) return;
      const room = Math.min(stream.sendWindow, this.#connSendWindow, defaultMaxFrameSize);
      if (room <= 0) {
        await new Promise<void>((resolve) => this.#windowWaiters.add(resolve));
        continue;
      }
      const chunk = bytes.subarray(off, off + room);
      off += chunk.length;
      stream.sendWindow -= chunk.length;
      this.#connSendWindow -= chunk.length;
      await this.#write([frame(FrameType.Data, 0, stream.id, chunk)]);
    }
  }

  #wake(): void {
    const waiters = [...this.#windowWaiters];
    this.#windowWaiters.clear();
    for (const wake of waiters) wake();
  }

  #write(frames: Uint8Array[]): Promise<void> {
    const bytes = concat(frames);
    this.#writes = this.#writes.then(async () => {
      if (this.#closed) return;
      for (let off = 0; off < bytes.length;) off += await this.#conn.write(bytes.subarray(off));
    }).catch(() => this.close());
    return this.#writes;
  }
}

type Frame = { type: number; flags: number; streamId: number; payload: Uint8Array };

function statusFields(reply: { code: number; details: string }): [string, string][] {
  return [["grpc-status", String(reply.code)], ["grpc-message", encodeGrpcMessage(reply.details)]];
}
