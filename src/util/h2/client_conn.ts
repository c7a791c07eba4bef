/**
 * Our own HTTP/2 client connection on any `Deno.Conn` (TCP for the gRPC probe, a unix socket for the
 * CRI client): the preface and SETTINGS handshake, then any number of concurrent request streams,
 * each a request (HEADERS + DATA) and its response (headers, DATA, trailers). It honours the peer's
 * MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE and MAX_FRAME_SIZE, keeps both flow-control windows
 * open with WINDOW_UPDATE while responses arrive, answers PING, handles RST_STREAM and GOAWAY (the
 * streams a GOAWAY does not cover are handed back as refused, so callers can retry them on a new
 * connection), and cancels a stream with RST_STREAM CANCEL when its signal aborts.
 *
 * Why not `node:http2`: in Deno 2.9.3 destroyed `node:http2` client sessions keep heap
 * (scripts/http2_session_retention.ts), and `node:net` unix sockets close their descriptor twice
 * (scripts/node_net_unix_double_close.ts). `Deno.connect` sockets have neither problem.
 * @module
 */
import {
  clientPreface,
  concat,
  connectionError,
  defaultMaxFrameSize,
  defaultWindow,
  encodeHeaderBlock,
  ErrorCode,
  Flag,
  type Frame,
  frame,
  FrameReader,
  FrameType,
  H2ProtocolError,
  HeaderDecoder,
  headerFrames,
  type MetaHeaders,
  parseSettings,
  readUint32,
  Setting,
  settingsFrame,
  stripPadding,
  uint32Frame,
} from "./frame.ts";
import { abortConn, writeAll } from "../socket.ts";

/** What the server sent on a request's stream. */
export interface H2Response {
  /** `:status` of the response headers; 0 when none arrived. */
  httpStatus: number;
  /** Response headers then trailers, by lower-case name (a trailer replaces a header). */
  headers: Map<string, string>;
  /** Names that arrived in the trailers (or a trailers-only response). */
  trailerNames: Set<string>;
  /** Every header block of the stream as it arrived: its fields and whether it ended the stream. */
  blocks: { fields: [string, string][]; endStream: boolean }[];
  /**
   * The DATA payloads' bytes, in order, gathered into as few arrays as possible (a flood of tiny
   * or empty DATA frames must not cost an object per frame).
   */
  data: Uint8Array[];
  /** DATA bytes received; above the request's `maxData` the stream was cancelled there. */
  received: number;
  /** The RST_STREAM error code, when the server reset the stream. */
  rstCode?: number;
  /** Set when the server's GOAWAY did not cover the stream: it was never processed. */
  refusedByGoAway?: boolean;
  /** Set when the connection ended cleanly before the stream did. */
  eof?: boolean;
  /**
   * Set when a header block of the stream decoded to more than grpc-go's 16 MiB header list
   * limit; the stream was reset (FRAME_SIZE_ERROR), as grpc-go does.
   */
  headerListTooLarge?: boolean;
  /**
   * Set when a header block held a field HTTP/2 forbids (Go's framer text, e.g. `invalid header
   * field name "A"`); the stream was reset (PROTOCOL_ERROR), as grpc-go does.
   */
  invalidHeader?: string;
  /** Set when `rejectHeaders` refused a header block; the stream was reset (PROTOCOL_ERROR). */
  headersRejected?: boolean;
}

/** Per-request settings. */
export interface H2RequestOptions {
  /** DATA bytes kept; past it the stream is cancelled and the response returned as it is. */
  maxData: number;
  /** Aborting it resets the stream (RST_STREAM CANCEL) and rejects with its reason. */
  signal?: AbortSignal;
  /**
   * Looks at the response after each header block; true ends the stream there with RST_STREAM
   * PROTOCOL_ERROR (grpc-go closes a stream whose headers it refuses as they arrive).
   */
  rejectHeaders?: (response: H2Response) => boolean;
}

/**
 * The connection cannot start a new stream (closed, broken, or draining after a GOAWAY); the
 * request was not sent, so it may go to a new connection.
 */
export class H2ConnectionClosedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "H2ConnectionClosedError";
  }
}

/** The per-stream receive window we grant (SETTINGS_INITIAL_WINDOW_SIZE). */
const streamReceiveWindow = 4 * 1024 * 1024;
/** The connection's receive window, raised from 65,535 by a WINDOW_UPDATE in the handshake. */
const connectionReceiveWindow = 16 * 1024 * 1024;
/** The largest stream id (RFC 9113 §5.1.1); a connection that used it up takes no new stream. */
const maxStreamId = 0x7fff_ffff;
/** The largest flow-control window (RFC 9113 §6.9.1). */
const maxWindow = 0x7fff_ffff;
/**
 * The largest header list we take (grpc-go's client default MaxHeaderListSize, 16 MiB), decoded;
 * past it, header bytes end the connection (frame.ts, Go's CVE-2023-45288 rule).
 */
const maxHeaderListSize = 16 * 1024 * 1024;
/**
 * Replies the reader may queue before it waits for the writer: a peer that sends PINGs (or DATA)
 * but reads nothing would otherwise grow our queue without bound. grpc-go throttles its reader
 * the same way (maxQueuedTransportResponseFrames).
 */
const maxQueuedReplies = 64;
/** The dynamic table size our SETTINGS allow the peer's encoder, and the one ours starts with. */
const headerTableSize = 4096;

interface Stream {
  id: number;
  response: H2Response;
  maxData: number;
  rejectHeaders?: (response: H2Response) => boolean;
  /** Bytes we may still send on it (the peer's window for it). */
  sendWindow: number;
  /** Bytes received since our last WINDOW_UPDATE for it. */
  unacked: number;
  /** Header blocks seen: the first is the response headers, a later one the trailers. */
  blocks: number;
  done: boolean;
  resolve(response: H2Response): void;
  reject(err: unknown): void;
}

/**
 * One HTTP/2 client connection. Start it with `H2ClientConn.handshake`; always `close` it.
 *
 * @example
 * ```ts
 * declare const path: string;
 * declare const body: Uint8Array;
 *
 * const h2 = await H2ClientConn.handshake(await Deno.connect({ transport: "unix", path }));
 * const response = await h2.request([[":method", "POST"], [":path", "/x"]], body, { maxData: 1e6 });
 * h2.close();
 * ```
 */
export class H2ClientConn {
  #conn: Deno.Conn;
  #reader: FrameReader;
  #decoder = new HeaderDecoder();
  #streams = new Map<number, Stream>();
  #nextStreamId = 1;
  #closed = false;
  #goAway = false;
  #closeReason = "";
  // Queued writes, flushed in order by one writer so frames never interleave.
  #out: Uint8Array[] = [];
  #flushing = false;
  #flushed: Promise<void> = Promise.resolve();
  // Frames the reader queued in answer to the peer (PING and SETTINGS ACKs, WINDOW_UPDATEs,
  // RST_STREAMs) since the writer last took the queue.
  #queuedReplies = 0;
  // Woken when send windows grow, a stream slot frees up, or the connection ends.
  #waiters = new Set<() => void>();
  #peerMaxFrameSize = defaultMaxFrameSize;
  #peerInitialWindow = defaultWindow;
  #peerMaxConcurrentStreams = Infinity;
  #connSendWindow = defaultWindow;
  #connUnacked = 0;
  // The HPACK table size our encoder may use (it never indexes), lowered by the peer's SETTINGS;
  // a lowering is announced at the start of our next header block.
  #encoderTableSize = headerTableSize;
  #tableSizeUpdate: number | undefined;
  #settled!: () => void;
  #ready!: { resolve(): void; reject(err: unknown): void };

  /** Settles when the connection has ended, for whatever reason. */
  readonly done: Promise<void>;

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
    this.#reader = new FrameReader(conn);
    this.done = new Promise((resolve) => this.#settled = resolve);
  }

  /**
   * Sends the preface and our SETTINGS on `conn` and waits for the server's SETTINGS (the
   * connection is "ready" then, as grpc-go requires). On failure or abort `conn` is closed and the
   * error thrown.
   */
  static async handshake(
    conn: Deno.Conn,
    options: {
      signal?: AbortSignal;
      /** The first stream id (odd; 1 by default): lets tests reach the end of the id space. */
      firstStreamId?: number;
    } = {},
  ): Promise<H2ClientConn> {
    const h2 = new H2ClientConn(conn);
    h2.#nextStreamId = options.firstStreamId ?? 1;
    const ready = new Promise<void>((resolve, reject) => h2.#ready = { resolve, reject });
    const onAbort = () => h2.#fail(options.signal?.reason ?? new Error("aborted"));
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      h2.#send([
        clientPreface,
        settingsFrame([
          [Setting.EnablePush, 0],
          [Setting.InitialWindowSize, streamReceiveWindow],
          [Setting.HeaderTableSize, headerTableSize],
        ]),
        uint32Frame(FrameType.WindowUpdate, 0, connectionReceiveWindow - defaultWindow),
      ]);
      h2.#readLoop();
      await ready;
      return h2;
    } catch (err) {
      h2.close();
      throw err;
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** False once the connection cannot take a new stream: closed, broken, or after a GOAWAY. */
  get usable(): boolean {
    return !this.#closed && !this.#goAway && this.#nextStreamId <= maxStreamId;
  }

  /** Bytes of frames waiting to be written to the socket. */
  get queuedBytes(): number {
    let n = 0;
    for (const f of this.#out) n += f.length;
    return n;
  }

  /** Streams open right now. */
  get activeStreams(): number {
    return this.#streams.size;
  }

  /** Releases the socket; open streams reject. Safe to call twice. */
  close(): void {
    this.#fail(new H2ConnectionClosedError("connection closed"));
  }

  /**
   * Sends one request on a new stream (`headers` in order, pseudo-headers first; `body` ends the
   * stream) and resolves when the response ends. Throws `H2ConnectionClosedError` when no stream
   * could be started, the signal's reason on abort, and the connection's error when it broke
   * mid-stream; a clean end of the connection resolves with `eof` set instead.
   */
  async request(
    headers: [string, string][],
    body: Uint8Array,
    options: H2RequestOptions,
  ): Promise<H2Response> {
    const { signal } = options;
    signal?.throwIfAborted();
    // Wait for a slot under the server's MAX_CONCURRENT_STREAMS.
    while (this.usable && this.#streams.size >= this.#peerMaxConcurrentStreams) {
      await this.#wait(signal);
    }
    if (!this.usable) throw new H2ConnectionClosedError(this.#unusableReason());

    const id = this.#nextStreamId;
    this.#nextStreamId += 2;
    let stream!: Stream;
    const finished = new Promise<H2Response>((resolve, reject) => {
      stream = {
        id,
        response: {
          httpStatus: 0,
          headers: new Map(),
          trailerNames: new Set(),
          blocks: [],
          data: [],
          received: 0,
        },
        maxData: options.maxData,
        rejectHeaders: options.rejectHeaders,
        sendWindow: this.#peerInitialWindow,
        unacked: 0,
        blocks: 0,
        done: false,
        resolve,
        reject,
      };
    });
    // Handled here so an early rejection (abort while the body waits for window) is never
    // reported as unhandled; the await below still sees it.
    finished.catch(() => {});
    this.#streams.set(id, stream);
    const onAbort = () => {
      if (stream.done) return;
      this.#send([uint32Frame(FrameType.RstStream, id, ErrorCode.Cancel)]);
      this.#endStream(stream, signal?.reason, true);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const block = encodeHeaderBlock(headers, { tableSizeUpdate: this.#tableSizeUpdate });
      this.#tableSizeUpdate = undefined;
      this.#send(
        headerFrames(id, block, {
          maxFrameSize: this.#peerMaxFrameSize,
          endStream: body.length === 0,
        }),
      );
      if (body.length > 0) await this.#sendBody(stream, body);
      return await finished;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (!stream.done) {
        this.#send([uint32Frame(FrameType.RstStream, id, ErrorCode.Cancel)]);
        this.#endStream(stream, new Error("request abandoned"), true);
      }
    }
  }

  /** DATA frames of `body` within the peer's windows and frame size; the last ends the stream. */
  async #sendBody(stream: Stream, body: Uint8Array): Promise<void> {
    let off = 0;
    while (off < body.length) {
      if (stream.done) return;
      const room = Math.min(stream.sendWindow, this.#connSendWindow, this.#peerMaxFrameSize);
      if (room <= 0) {
        await this.#wait();
        continue;
      }
      const chunk = body.subarray(off, off + room);
      off += chunk.length;
      stream.sendWindow -= chunk.length;
      this.#connSendWindow -= chunk.length;
      const flags = off >= body.length ? Flag.EndStream : 0;
      this.#send([frame(FrameType.Data, flags, stream.id, chunk)]);
    }
  }

  /** Resolves at the next window, slot or connection change; rejects when `signal` aborts. */
  #wait(signal?: AbortSignal): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener("abort", onAbort);
        this.#waiters.delete(wake);
        resolve();
      };
      const onAbort = () => {
        this.#waiters.delete(wake);
        reject(signal?.reason);
      };
      this.#waiters.add(wake);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #wakeAll(): void {
    for (const wake of [...this.#waiters]) wake();
  }

  /** Ends a stream: resolves with its response, or rejects with `err`. */
  #endStream(stream: Stream, err?: unknown, rejects = false): void {
    if (stream.done) return;
    stream.done = true;
    this.#streams.delete(stream.id);
    if (rejects) stream.reject(err);
    else stream.resolve(stream.response);
    this.#wakeAll();
    // A draining connection (GOAWAY, or stream ids used up) closes once its last stream ended:
    // nobody else would close it, as the CRI client moves on to a new connection.
    if (!this.usable && this.#streams.size === 0) this.close();
  }

  #unusableReason(): string {
    if (this.#closed) return this.#closeReason || "connection closed";
    if (this.#goAway) return "the connection is draining (GOAWAY received)";
    return "stream ids exhausted";
  }

  #send(frames: Uint8Array[]): void {
    if (this.#closed) return;
    this.#out.push(...frames);
    if (!this.#flushing) this.#flushed = this.#flush();
  }

  /** Frames the reader sends in answer to the peer; counted for the reader's throttle. */
  #reply(frames: Uint8Array[]): void {
    this.#queuedReplies += frames.length;
    this.#send(frames);
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#out.length > 0 && !this.#closed) {
        const bytes = concat(this.#out);
        this.#out = [];
        this.#queuedReplies = 0;
        // Through writeAll, so that closing can end a write the peer never reads (socket.ts).
        await writeAll(this.#conn, bytes);
      }
    } catch (err) {
      this.#fail(err);
    } finally {
      this.#flushing = false;
    }
  }

  /** Ends the connection: every open stream rejects with `err`, or sees `eof` when undefined. */
  #fail(err?: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeReason = err === undefined
      ? "connection closed by the server"
      : err instanceof Error
      ? err.message
      : String(err);
    this.#out = [];
    // Not close() alone: a write the peer does not read would keep the socket (socket.ts).
    abortConn(this.#conn);
    this.#ready.reject(err ?? new H2ConnectionClosedError("EOF before the server's SETTINGS"));
    for (const stream of [...this.#streams.values()]) {
      if (err === undefined) {
        stream.response.eof = true;
        this.#endStream(stream);
      } else {
        this.#endStream(stream, err, true);
      }
    }
    this.#wakeAll();
    this.#settled();
  }

  async #readLoop(): Promise<void> {
    try {
      const first = await this.#reader.next();
      if (!first || first.type !== FrameType.Settings || (first.flags & Flag.Ack) !== 0) {
        throw new H2ProtocolError("expected the server's SETTINGS");
      }
      this.#applySettings(first);
      this.#ready.resolve();
      for (;;) {
        const f = await this.#reader.next();
        if (!f) break;
        await this.#onFrame(f);
        if (this.#closed) return;
        // Stop reading while our replies cannot be written (the peer is not reading).
        if (this.#queuedReplies >= maxQueuedReplies && this.#flushing) await this.#flushed;
      }
      this.#fail();
    } catch (err) {
      // A protocol error closes the socket without a GOAWAY: the server sees the connection end.
      this.#fail(err);
    }
  }

  async #onFrame(f: Frame): Promise<void> {
    switch (f.type) {
      case FrameType.Headers:
        return this.#onHeaders(
          await this.#reader.readMetaHeaders(f, this.#decoder, { maxHeaderListSize }),
        );
      case FrameType.Data:
        return this.#onData(f);
      case FrameType.RstStream: {
        // Go's framer: RST_STREAM on stream 0 is a connection error, as is a wrong size.
        if (f.streamId === 0) throw connectionError(ErrorCode.ProtocolError);
        if (f.payload.length !== 4) throw new H2ProtocolError("RST_STREAM of wrong size");
        const stream = this.#streams.get(f.streamId);
        if (!stream) return;
        stream.response.rstCode = readUint32(f.payload, 0);
        return this.#endStream(stream);
      }
      case FrameType.Settings:
        if ((f.flags & Flag.Ack) === 0) this.#applySettings(f);
        return;
      case FrameType.Ping:
        if (f.streamId !== 0 || f.payload.length !== 8) throw new H2ProtocolError("malformed PING");
        if ((f.flags & Flag.Ack) === 0) {
          this.#reply([frame(FrameType.Ping, Flag.Ack, 0, f.payload)]);
        }
        return;
      case FrameType.GoAway:
        return this.#onGoAway(f);
      case FrameType.WindowUpdate:
        return this.#onWindowUpdate(f);
      case FrameType.PushPromise:
        throw new H2ProtocolError("PUSH_PROMISE although push is disabled");
      case FrameType.Continuation:
        throw new H2ProtocolError("CONTINUATION without HEADERS");
      default:
        // PRIORITY and unknown types are ignored (RFC 9113 §5.5).
        return;
    }
  }

  /** A decoded header block (grpc-go's operateHeaders, the HTTP/2 part). */
  #onHeaders(meta: MetaHeaders): void {
    const f = meta.frame;
    const stream = this.#streams.get(f.streamId);
    if (!stream) return;
    const { response } = stream;
    const endStream = (f.flags & Flag.EndStream) !== 0;
    if (meta.invalid !== undefined) {
      response.invalidHeader = meta.invalid;
      return this.#resetStream(stream, ErrorCode.ProtocolError);
    }
    if (meta.truncated) {
      response.headerListTooLarge = true;
      return this.#resetStream(stream, ErrorCode.FrameSizeError);
    }
    const isTrailers = stream.blocks > 0 || endStream;
    stream.blocks++;
    response.blocks.push({ fields: meta.fields, endStream });
    for (const [name, value] of meta.fields) {
      if (name === ":status") response.httpStatus = Number(value) || 0;
      else response.headers.set(name, value);
      if (isTrailers) response.trailerNames.add(name);
    }
    if (stream.rejectHeaders?.(response)) {
      response.headersRejected = true;
      return this.#resetStream(stream, ErrorCode.ProtocolError);
    }
    if (endStream) this.#endStream(stream);
  }

  #onData(f: Frame): void {
    if (f.streamId === 0) throw connectionError(ErrorCode.ProtocolError);
    // Flow control counts the whole payload, padding included, on closed streams too.
    this.#connUnacked += f.payload.length;
    const updates: Uint8Array[] = [];
    if (this.#connUnacked >= connectionReceiveWindow / 4) {
      updates.push(uint32Frame(FrameType.WindowUpdate, 0, this.#connUnacked));
      this.#connUnacked = 0;
    }
    const stream = this.#streams.get(f.streamId);
    if (stream) {
      const payload = stripPadding(f);
      appendData(stream.response, payload);
      stream.response.received += payload.length;
      stream.unacked += f.payload.length;
      if (stream.response.received > stream.maxData) {
        updates.push(uint32Frame(FrameType.RstStream, stream.id, ErrorCode.Cancel));
        this.#reply(updates);
        return this.#endStream(stream);
      }
      if (f.flags & Flag.EndStream) {
        this.#reply(updates);
        return this.#endStream(stream);
      }
      if (stream.unacked >= streamReceiveWindow / 4) {
        updates.push(uint32Frame(FrameType.WindowUpdate, stream.id, stream.unacked));
        stream.unacked = 0;
      }
    }
    if (updates.length > 0) this.#reply(updates);
  }

  /** A stream error on our side: RST_STREAM with `code`, and the stream ends with it. */
  #resetStream(stream: Stream, code: number): void {
    this.#reply([uint32Frame(FrameType.RstStream, stream.id, code)]);
    stream.response.rstCode ??= code;
    this.#endStream(stream);
  }

  #onGoAway(f: Frame): void {
    if (f.streamId !== 0 || f.payload.length < 8) throw new H2ProtocolError("malformed GOAWAY");
    const lastStreamId = readUint32(f.payload, 0) & 0x7fff_ffff;
    this.#goAway = true;
    // Streams above lastStreamId were not (and will not be) processed: callers may retry them.
    for (const stream of [...this.#streams.values()]) {
      if (stream.id > lastStreamId) {
        stream.response.refusedByGoAway = true;
        this.#endStream(stream);
      }
    }
    this.#wakeAll();
    if (this.#streams.size === 0) this.close();
  }

  #onWindowUpdate(f: Frame): void {
    if (f.payload.length !== 4) throw new H2ProtocolError("WINDOW_UPDATE of wrong size");
    const increment = readUint32(f.payload, 0) & 0x7fff_ffff;
    if (f.streamId === 0) {
      if (increment === 0) throw new H2ProtocolError("WINDOW_UPDATE of 0");
      this.#connSendWindow += increment;
      if (this.#connSendWindow > maxWindow) {
        throw new H2ProtocolError("FLOW_CONTROL_ERROR: the connection's send window overflowed");
      }
    } else {
      const stream = this.#streams.get(f.streamId);
      if (!stream) return;
      // Stream errors (RFC 9113 §6.9, §6.9.1): the connection carries on.
      if (increment === 0) return this.#resetStream(stream, ErrorCode.ProtocolError);
      stream.sendWindow += increment;
      if (stream.sendWindow > maxWindow) {
        return this.#resetStream(stream, ErrorCode.FlowControlError);
      }
    }
    this.#wakeAll();
  }

  #applySettings(f: Frame): void {
    for (const [id, value] of parseSettings(f)) {
      if (id === Setting.MaxFrameSize) {
        if (value < 16_384 || value > 16_777_215) throw new H2ProtocolError("bad MAX_FRAME_SIZE");
        this.#peerMaxFrameSize = value;
      } else if (id === Setting.InitialWindowSize) {
        if (value > 0x7fff_ffff) throw new H2ProtocolError("bad INITIAL_WINDOW_SIZE");
        // The change applies to every open stream's window (RFC 9113 §6.9.2); one pushed past
        // 2^31-1 is a connection error.
        const delta = value - this.#peerInitialWindow;
        for (const stream of this.#streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > maxWindow) {
            throw new H2ProtocolError(
              "FLOW_CONTROL_ERROR: SETTINGS_INITIAL_WINDOW_SIZE overflowed a stream's send window",
            );
          }
        }
        this.#peerInitialWindow = value;
      } else if (id === Setting.MaxConcurrentStreams) {
        this.#peerMaxConcurrentStreams = value;
      } else if (id === Setting.HeaderTableSize && value < this.#encoderTableSize) {
        // Our encoder never indexes, but its table's size must follow the peer's limit down and
        // say so (RFC 7541 §4.2; nghttp2 rejects a block without it).
        this.#encoderTableSize = value;
        this.#tableSizeUpdate = value;
      }
    }
    this.#reply([frame(FrameType.Settings, Flag.Ack, 0, new Uint8Array(0))]);
    this.#wakeAll();
  }
}

/**
 * Appends `payload` to the response's DATA: into the last array's spare room (arrays grow by
 * doubling, from 16 KiB), so the list holds O(log n) arrays however the bytes were framed.
 */
function appendData(response: H2Response, payload: Uint8Array): void {
  if (payload.length === 0) return;
  const { data } = response;
  const last = data.at(-1);
  if (last && last.byteOffset === 0 && last.length + payload.length <= last.buffer.byteLength) {
    const grown = new Uint8Array(last.buffer, 0, last.length + payload.length);
    grown.set(payload, last.length);
    data[data.length - 1] = grown;
    return;
  }
  const capacity = Math.max(16_384, payload.length, (last?.length ?? 0) * 2);
  const fresh = new Uint8Array(new ArrayBuffer(capacity), 0, payload.length);
  fresh.set(payload);
  data.push(fresh);
}
