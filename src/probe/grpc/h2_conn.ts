/**
 * A minimal HTTP/2 client over `Deno.connect` for exactly one request per connection, enough for
 * one gRPC unary call: the connection preface and SETTINGS, one HEADERS block (+CONTINUATION), the
 * request body as DATA, then the response headers, DATA and trailers of stream 1, answering PING
 * and SETTINGS and honouring RST_STREAM and GOAWAY on the way.
 *
 * Why not `node:http2`: in Deno 2.9.3 every destroyed `node:http2` client session keeps 2–6 KiB of
 * heap (scripts/http2_session_retention.ts), so a probe per second grew the agent without bound.
 *
 * HPACK decoding uses npm `hpack.js` (RFC 7541 with the Huffman code and dynamic table; the spec is
 * frozen, so an old, widely used package is fine). Requests are encoded here as literals without
 * indexing and without Huffman, which every decoder accepts.
 * @module
 */
import hpack from "hpack.js";

/** Something that ends a pending connect or read: the probe's deadline. */
export interface H2Deadline {
  /** True once the deadline passed. */
  readonly expired: boolean;
  /** Runs `fn` at expiry; returns the unsubscribe. */
  watch(fn: () => void): () => void;
}

/** What the server sent on the request's stream. */
export interface H2Response {
  /** `:status` of the response headers; 0 when none arrived. */
  httpStatus: number;
  /** Response headers then trailers, by lower-case name (a trailer replaces a header). */
  headers: Map<string, string>;
  /** Names that arrived in the trailers (or a trailers-only response). */
  trailerNames: Set<string>;
  /** The DATA payloads, in order. */
  data: Uint8Array[];
  /** The RST_STREAM error code, when the server reset the stream. */
  rstCode?: number;
  /** Set when the server's GOAWAY did not cover the stream. */
  refusedByGoAway?: boolean;
  /** Set when the connection ended before the stream did. */
  eof?: boolean;
}

const frameData = 0x0;
const frameHeaders = 0x1;
const frameRstStream = 0x3;
const frameSettings = 0x4;
const framePushPromise = 0x5;
const framePing = 0x6;
const frameGoAway = 0x7;
const frameWindowUpdate = 0x8;
const frameContinuation = 0x9;

const flagEndStream = 0x1;
const flagAck = 0x1;
const flagEndHeaders = 0x4;
const flagPadded = 0x8;
const flagPriority = 0x20;

const settingHeaderTableSize = 0x1;
const settingEnablePush = 0x2;
const settingInitialWindowSize = 0x4;
const settingMaxFrameSize = 0x5;

/** The largest frame payload we accept (the HTTP/2 default; we do not raise it). */
const ourMaxFrameSize = 16_384;
/** The receive window we grant: the largest gRPC message a client takes (4 MiB) plus framing. */
const receiveWindow = 4 * 1024 * 1024 + 64 * 1024;
const defaultWindow = 65_535;

const preface = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const enc = new TextEncoder();

/** One received frame. */
interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Uint8Array;
}

/** A protocol violation by the peer; the connection is unusable after it. */
export class H2ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "H2ProtocolError";
  }
}

/**
 * One HTTP/2 connection that carries one request (stream 1). Create it with `H2Conn.dial`; always
 * call `close`.
 */
export class H2Conn {
  #conn: Deno.TcpConn;
  #buf = new Uint8Array(0);
  #readChunk = new Uint8Array(16_384 + 9);
  #closed = false;
  // Bytes to send with the next write (the SETTINGS ACK), to save a write per probe.
  #pending: Uint8Array[] = [];
  #peerMaxFrameSize = ourMaxFrameSize;
  #peerInitialWindow = defaultWindow;
  #decoder = hpack.decompressor.create({ table: { maxSize: 4096 } });

  private constructor(conn: Deno.TcpConn) {
    this.#conn = conn;
  }

  /**
   * Connects, sends the preface and our SETTINGS, and waits for the server's SETTINGS (the
   * connection is "ready" then, as grpc-go requires). Undefined when anything failed or the
   * deadline passed; no socket is left open then.
   */
  static async dial(
    hostname: string,
    port: number,
    deadline: H2Deadline,
  ): Promise<H2Conn | undefined> {
    if (deadline.expired) return undefined;
    const controller = new AbortController();
    let h2: H2Conn | undefined;
    const unwatch = deadline.watch(() => {
      controller.abort();
      h2?.close();
    });
    try {
      let conn: Deno.TcpConn;
      try {
        conn = await Deno.connect({ hostname, port, signal: controller.signal });
      } catch {
        return undefined;
      }
      h2 = new H2Conn(conn);
      if (deadline.expired) {
        h2.close();
        return undefined;
      }
      try {
        await h2.#write([
          preface,
          settingsFrame(),
          windowUpdateFrame(0, receiveWindow - defaultWindow),
        ]);
        const first = await h2.#readFrame();
        if (!first || first.type !== frameSettings || (first.flags & flagAck) !== 0) {
          throw new H2ProtocolError("expected the server's SETTINGS");
        }
        h2.#applySettings(first);
      } catch {
        h2.close();
        return undefined;
      }
      if (deadline.expired) {
        h2.close();
        return undefined;
      }
      return h2;
    } finally {
      unwatch();
    }
  }

  /** Releases the socket; a pending read or write then fails. Safe to call twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch {
      // Already closed by the runtime.
    }
  }

  /**
   * Sends one request on stream 1 (`headers` in order, pseudo-headers first; `body` ends the
   * stream) and reads until the stream ends. Throws on a connection error (the socket broke or the
   * peer broke the protocol); the deadline closes the connection, so the caller checks it first.
   * `maxData` bounds the DATA bytes kept: past it the read stops and `data` holds more than it.
   */
  async request(
    headers: [string, string][],
    body: Uint8Array,
    options: { maxData: number },
  ): Promise<H2Response> {
    if (body.length > Math.min(defaultWindow, this.#peerInitialWindow)) {
      throw new H2ProtocolError("request body larger than the flow-control window");
    }
    const out = [...this.#pending];
    this.#pending = [];
    out.push(...headerFrames(encodeHeaderBlock(headers), this.#peerMaxFrameSize));
    for (let off = 0; off < body.length || off === 0;) {
      const chunk = body.subarray(off, off + this.#peerMaxFrameSize);
      off += chunk.length;
      const last = off >= body.length;
      out.push(frame(frameData, last ? flagEndStream : 0, 1, chunk));
      if (last) break;
    }
    await this.#write(out);

    const response: H2Response = {
      httpStatus: 0,
      headers: new Map(),
      trailerNames: new Set(),
      data: [],
    };
    let received = 0;
    let blocks = 0;
    for (;;) {
      const f = await this.#readFrame();
      if (!f) {
        response.eof = true;
        return response;
      }
      switch (f.type) {
        case frameHeaders: {
          if (f.streamId !== 1) throw new H2ProtocolError("HEADERS on an unknown stream");
          const block = await this.#readHeaderBlock(f);
          const fields = this.#decodeHeaderBlock(block);
          const status = fields.find(([name]) => name === ":status");
          // 1xx informational headers carry nothing for gRPC.
          if (status && status[1].startsWith("1") && (f.flags & flagEndStream) === 0) break;
          const isTrailers = blocks > 0 || (f.flags & flagEndStream) !== 0;
          blocks++;
          for (const [name, value] of fields) {
            if (name === ":status") response.httpStatus = Number(value) || 0;
            else response.headers.set(name, value);
            if (isTrailers) response.trailerNames.add(name);
          }
          if (f.flags & flagEndStream) return response;
          break;
        }
        case frameData: {
          if (f.streamId !== 1) throw new H2ProtocolError("DATA on an unknown stream");
          const payload = stripPadding(f);
          response.data.push(payload);
          received += payload.length;
          if (received > options.maxData) return response;
          if (f.flags & flagEndStream) return response;
          break;
        }
        case frameRstStream: {
          if (f.streamId !== 1) break;
          if (f.payload.length !== 4) throw new H2ProtocolError("RST_STREAM of wrong size");
          response.rstCode = readUint32(f.payload, 0);
          return response;
        }
        case frameSettings: {
          if (f.streamId !== 0) throw new H2ProtocolError("SETTINGS on a stream");
          if ((f.flags & flagAck) === 0) {
            this.#applySettings(f);
            await this.#write([...this.#takePending()]);
          }
          break;
        }
        case framePing: {
          if (f.streamId !== 0 || f.payload.length !== 8) {
            throw new H2ProtocolError("malformed PING");
          }
          if ((f.flags & flagAck) === 0) {
            await this.#write([frame(framePing, flagAck, 0, f.payload)]);
          }
          break;
        }
        case frameGoAway: {
          if (f.payload.length < 8) throw new H2ProtocolError("GOAWAY of wrong size");
          const lastStreamId = readUint32(f.payload, 0) & 0x7fff_ffff;
          // Stream 1 was not (and will not be) processed: the call can be retried elsewhere.
          if (lastStreamId < 1) {
            response.refusedByGoAway = true;
            return response;
          }
          break;
        }
        case framePushPromise:
          throw new H2ProtocolError("PUSH_PROMISE although push is disabled");
        case frameContinuation:
          throw new H2ProtocolError("CONTINUATION without HEADERS");
        default:
          // WINDOW_UPDATE (our body is within the window), PRIORITY and unknown types.
          break;
      }
    }
  }

  #takePending(): Uint8Array[] {
    const out = this.#pending;
    this.#pending = [];
    return out;
  }

  #applySettings(f: Frame): void {
    if (f.payload.length % 6 !== 0) throw new H2ProtocolError("SETTINGS of wrong size");
    for (let off = 0; off < f.payload.length; off += 6) {
      const id = (f.payload[off] << 8) | f.payload[off + 1];
      const value = readUint32(f.payload, off + 2);
      if (id === settingMaxFrameSize) {
        if (value < 16_384 || value > 16_777_215) throw new H2ProtocolError("bad MAX_FRAME_SIZE");
        this.#peerMaxFrameSize = value;
      } else if (id === settingInitialWindowSize) {
        if (value > 0x7fff_ffff) throw new H2ProtocolError("bad INITIAL_WINDOW_SIZE");
        this.#peerInitialWindow = value;
      }
      // HEADER_TABLE_SIZE limits the peer's decoder; our encoder never indexes.
    }
    this.#pending.push(frame(frameSettings, flagAck, 0, new Uint8Array(0)));
  }

  /** The header block of `first` plus any CONTINUATION frames, padding and priority removed. */
  async #readHeaderBlock(first: Frame): Promise<Uint8Array> {
    let payload = stripPadding(first);
    if (first.flags & flagPriority) payload = payload.subarray(5);
    const parts = [payload];
    let flags = first.flags;
    while ((flags & flagEndHeaders) === 0) {
      const next = await this.#readFrame();
      if (!next) throw new H2ProtocolError("EOF inside a header block");
      if (next.type !== frameContinuation || next.streamId !== first.streamId) {
        throw new H2ProtocolError("expected CONTINUATION");
      }
      parts.push(next.payload);
      flags = next.flags;
    }
    return concat(parts);
  }

  #decodeHeaderBlock(block: Uint8Array): [string, string][] {
    let error: unknown;
    const onError = (err: unknown) => error = err;
    this.#decoder.once("error", onError);
    this.#decoder.write(block);
    this.#decoder.execute();
    this.#decoder.removeListener("error", onError);
    if (error) throw new H2ProtocolError(`HPACK: ${(error as Error).message ?? error}`);
    const fields: [string, string][] = [];
    for (;;) {
      const field = this.#decoder.read() as { name: string; value: string } | null;
      if (field === null) break;
      fields.push([field.name, field.value]);
    }
    return fields;
  }

  async #write(parts: Uint8Array[]): Promise<void> {
    const bytes = parts.length === 1 ? parts[0] : concat(parts);
    for (let off = 0; off < bytes.length;) off += await this.#conn.write(bytes.subarray(off));
  }

  /** The next frame, or null at a clean end of the connection between frames. */
  async #readFrame(): Promise<Frame | null> {
    for (;;) {
      if (this.#buf.length >= 9) {
        const length = (this.#buf[0] << 16) | (this.#buf[1] << 8) | this.#buf[2];
        if (length > ourMaxFrameSize) throw new H2ProtocolError("frame too large");
        if (this.#buf.length >= 9 + length) {
          const f: Frame = {
            type: this.#buf[3],
            flags: this.#buf[4],
            streamId: readUint32(this.#buf, 5) & 0x7fff_ffff,
            payload: this.#buf.slice(9, 9 + length),
          };
          this.#buf = this.#buf.subarray(9 + length);
          return f;
        }
      }
      const n = await this.#conn.read(this.#readChunk);
      if (n === null) {
        if (this.#buf.length === 0) return null;
        throw new Error("unexpected EOF");
      }
      const joined = new Uint8Array(this.#buf.length + n);
      joined.set(this.#buf);
      joined.set(this.#readChunk.subarray(0, n), this.#buf.length);
      this.#buf = joined;
    }
  }
}

function readUint32(bytes: Uint8Array, off: number): number {
  return ((bytes[off] << 24) >>> 0) + ((bytes[off + 1] << 16) | (bytes[off + 2] << 8) |
    bytes[off + 3]);
}

function frame(type: number, flags: number, streamId: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  out[0] = payload.length >>> 16;
  out[1] = (payload.length >>> 8) & 0xff;
  out[2] = payload.length & 0xff;
  out[3] = type;
  out[4] = flags;
  new DataView(out.buffer).setUint32(5, streamId);
  out.set(payload, 9);
  return out;
}

// Push off; a window large enough for the largest message we accept; we keep 4096 for HPACK.
function settingsFrame(): Uint8Array {
  const settings: [number, number][] = [
    [settingEnablePush, 0],
    [settingInitialWindowSize, receiveWindow],
    [settingHeaderTableSize, 4096],
  ];
  const payload = new Uint8Array(settings.length * 6);
  const view = new DataView(payload.buffer);
  settings.forEach(([id, value], i) => {
    view.setUint16(i * 6, id);
    view.setUint32(i * 6 + 2, value);
  });
  return frame(frameSettings, 0, 0, payload);
}

function windowUpdateFrame(streamId: number, increment: number): Uint8Array {
  const payload = new Uint8Array(4);
  new DataView(payload.buffer).setUint32(0, increment);
  return frame(frameWindowUpdate, 0, streamId, payload);
}

/** HEADERS then CONTINUATION frames for stream 1, each within the peer's frame size. */
function headerFrames(block: Uint8Array, maxFrameSize: number): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let off = 0; off === 0 || off < block.length;) {
    const chunk = block.subarray(off, off + maxFrameSize);
    off += chunk.length;
    const flags = off >= block.length ? flagEndHeaders : 0;
    frames.push(frame(frames.length === 0 ? frameHeaders : frameContinuation, flags, 1, chunk));
    if (off >= block.length) break;
  }
  return frames;
}

/** HPACK "literal header field without indexing — new name", no Huffman (RFC 7541 §6.2.2). */
export function encodeHeaderBlock(headers: [string, string][]): Uint8Array {
  const parts: number[] = [];
  for (const [name, value] of headers) {
    parts.push(0x00);
    for (const s of [name, value]) {
      const bytes = enc.encode(s);
      pushInteger(parts, bytes.length, 7, 0x00);
      for (const b of bytes) parts.push(b);
    }
  }
  return Uint8Array.from(parts);
}

/** An HPACK integer with an N-bit prefix (RFC 7541 §5.1); `high` holds the bits above it. */
function pushInteger(out: number[], value: number, prefixBits: number, high: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(high | value);
    return;
  }
  out.push(high | max);
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
}

function stripPadding(f: Frame): Uint8Array {
  if ((f.flags & flagPadded) === 0) return f.payload;
  const padLength = f.payload[0] ?? 0;
  if (padLength + 1 > f.payload.length) throw new H2ProtocolError("padding too long");
  return f.payload.subarray(1, f.payload.length - padLength);
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
