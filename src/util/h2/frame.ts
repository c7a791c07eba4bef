/**
 * HTTP/2 framing (RFC 9113 §4, §6) and the HPACK pieces our client needs: frame encoding, a frame
 * reader on a `Deno.Conn`, header blocks encoded as plain literals, and decoding with npm `hpack.js`
 * (RFC 7541 with the Huffman code and the dynamic table; the spec is frozen, so an old, widely used
 * package is fine). Shared by the client connection (client_conn.ts) and the tests' servers.
 * @module
 */
import hpack from "hpack.js";

/** Frame types (RFC 9113 §6). */
export const FrameType = {
  Data: 0x0,
  Headers: 0x1,
  Priority: 0x2,
  RstStream: 0x3,
  Settings: 0x4,
  PushPromise: 0x5,
  Ping: 0x6,
  GoAway: 0x7,
  WindowUpdate: 0x8,
  Continuation: 0x9,
} as const;

/** Frame flags. ACK shares END_STREAM's bit (on SETTINGS and PING). */
export const Flag = {
  EndStream: 0x1,
  Ack: 0x1,
  EndHeaders: 0x4,
  Padded: 0x8,
  Priority: 0x20,
} as const;

/** SETTINGS identifiers (RFC 9113 §6.5.2). */
export const Setting = {
  HeaderTableSize: 0x1,
  EnablePush: 0x2,
  MaxConcurrentStreams: 0x3,
  InitialWindowSize: 0x4,
  MaxFrameSize: 0x5,
} as const;

/** Error codes of RST_STREAM and GOAWAY (RFC 9113 §7). */
export const ErrorCode = {
  NoError: 0x0,
  ProtocolError: 0x1,
  FlowControlError: 0x3,
  FrameSizeError: 0x6,
  RefusedStream: 0x7,
  Cancel: 0x8,
} as const;

/** The flow-control window every stream and the connection start with. */
export const defaultWindow = 65_535;
/** The largest frame payload either side may send before SETTINGS say otherwise. */
export const defaultMaxFrameSize = 16_384;
/** What a client sends first (RFC 9113 §3.4). */
export const clientPreface: Uint8Array = new TextEncoder().encode(
  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
);

/** One received frame. */
export interface Frame {
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

/** Encodes one frame. */
export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array,
): Uint8Array {
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

/** A SETTINGS frame with `settings` as [identifier, value] pairs. */
export function settingsFrame(settings: [number, number][]): Uint8Array {
  const payload = new Uint8Array(settings.length * 6);
  const view = new DataView(payload.buffer);
  settings.forEach(([id, value], i) => {
    view.setUint16(i * 6, id);
    view.setUint32(i * 6 + 2, value);
  });
  return frame(FrameType.Settings, 0, 0, payload);
}

/** The [identifier, value] pairs of a SETTINGS frame's payload. */
export function parseSettings(f: Frame): [number, number][] {
  if (f.streamId !== 0) throw new H2ProtocolError("SETTINGS on a stream");
  if (f.payload.length % 6 !== 0) throw new H2ProtocolError("SETTINGS of wrong size");
  const out: [number, number][] = [];
  for (let off = 0; off < f.payload.length; off += 6) {
    out.push([(f.payload[off] << 8) | f.payload[off + 1], readUint32(f.payload, off + 2)]);
  }
  return out;
}

/** A frame whose payload is one 32-bit number: WINDOW_UPDATE (increment), RST_STREAM (code). */
export function uint32Frame(type: number, streamId: number, value: number): Uint8Array {
  const payload = new Uint8Array(4);
  new DataView(payload.buffer).setUint32(0, value);
  return frame(type, 0, streamId, payload);
}

/** GOAWAY with the last stream the sender processes (or will) and an error code. */
export function goAwayFrame(lastStreamId: number, code: number, debug = ""): Uint8Array {
  const text = new TextEncoder().encode(debug);
  const payload = new Uint8Array(8 + text.length);
  const view = new DataView(payload.buffer);
  view.setUint32(0, lastStreamId);
  view.setUint32(4, code);
  payload.set(text, 8);
  return frame(FrameType.GoAway, 0, 0, payload);
}

/** HEADERS then CONTINUATION frames carrying `block`, each within `maxFrameSize`. */
export function headerFrames(
  streamId: number,
  block: Uint8Array,
  options: { maxFrameSize: number; endStream: boolean },
): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let off = 0; off === 0 || off < block.length;) {
    const chunk = block.subarray(off, off + options.maxFrameSize);
    off += chunk.length;
    const first = frames.length === 0;
    let flags = off >= block.length ? Flag.EndHeaders : 0;
    if (first && options.endStream) flags |= Flag.EndStream;
    frames.push(
      frame(first ? FrameType.Headers : FrameType.Continuation, flags, streamId, chunk),
    );
    if (off >= block.length) break;
  }
  return frames;
}

const enc = new TextEncoder();

/**
 * HPACK "literal header field without indexing — new name", no Huffman (RFC 7541 §6.2.2).
 * `tableSizeUpdate` starts the block with a dynamic table size update (§6.3), which an encoder owes
 * the peer after the peer lowered SETTINGS_HEADER_TABLE_SIZE below the table's size (§4.2).
 */
export function encodeHeaderBlock(
  headers: [string, string][],
  options: { tableSizeUpdate?: number } = {},
): Uint8Array {
  const parts: number[] = [];
  if (options.tableSizeUpdate !== undefined) pushInteger(parts, options.tableSizeUpdate, 5, 0x20);
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

/**
 * The HPACK decoder of one connection. Every header block the peer sends must pass through it, on
 * any stream, or its dynamic table drifts from the peer's.
 */
export class HeaderDecoder {
  #decoder = hpack.decompressor.create({ table: { maxSize: 4096 } });

  /** The fields of one complete header block, in order. */
  decode(block: Uint8Array): [string, string][] {
    return this.decodeList(block, Infinity).fields;
  }

  /**
   * The fields of one complete header block, keeping at most `maxListSize` bytes of them (each
   * field counted as name + value + 32, RFC 9113 §6.5.2). Past it the rest of the block is still
   * decoded, so the dynamic table stays in step, but dropped, and `truncated` is set.
   */
  decodeList(
    block: Uint8Array,
    maxListSize: number,
  ): { fields: [string, string][]; truncated: boolean } {
    let error: unknown;
    const onError = (err: unknown) => error = err;
    this.#decoder.once("error", onError);
    this.#decoder.write(block);
    this.#decoder.execute();
    this.#decoder.removeListener("error", onError);
    if (error) throw new H2ProtocolError(`HPACK: ${(error as Error).message ?? error}`);
    const fields: [string, string][] = [];
    let size = 0;
    let truncated = false;
    for (;;) {
      const field = this.#decoder.read() as { name: string; value: string } | null;
      if (field === null) break;
      size += field.name.length + field.value.length + 32;
      if (size > maxListSize) truncated = true;
      if (!truncated) fields.push([field.name, field.value]);
    }
    return { fields, truncated };
  }
}

/** Reads whole frames from a connection. */
export class FrameReader {
  #conn: Deno.Conn;
  #buf = new Uint8Array(0);
  #chunk = new Uint8Array(64 * 1024);
  #maxFrameSize: number;

  constructor(conn: Deno.Conn, options: { maxFrameSize?: number } = {}) {
    this.#conn = conn;
    this.#maxFrameSize = options.maxFrameSize ?? defaultMaxFrameSize;
  }

  /** Exactly `n` bytes (the server side reads the client preface this way). */
  async readExactly(n: number): Promise<Uint8Array> {
    while (this.#buf.length < n) {
      if (!await this.#fill()) throw new Error("unexpected EOF");
    }
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  /** The next frame, or null at a clean end of the connection between frames. */
  async next(): Promise<Frame | null> {
    for (;;) {
      if (this.#buf.length >= 9) {
        const length = (this.#buf[0] << 16) | (this.#buf[1] << 8) | this.#buf[2];
        if (length > this.#maxFrameSize) throw new H2ProtocolError("frame too large");
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
      if (!await this.#fill()) {
        if (this.#buf.length === 0) return null;
        throw new Error("unexpected EOF");
      }
    }
  }

  /**
   * The header block of `first` plus any CONTINUATION frames, padding and priority removed. A
   * block above `maxSize` bytes is a connection error: a peer sending CONTINUATION without end
   * would otherwise grow it without bound.
   */
  async headerBlock(first: Frame, options: { maxSize?: number } = {}): Promise<Uint8Array> {
    const maxSize = options.maxSize ?? Infinity;
    let payload = stripPadding(first);
    if (first.flags & Flag.Priority) payload = payload.subarray(5);
    const parts = [payload];
    let size = payload.length;
    let flags = first.flags;
    while ((flags & Flag.EndHeaders) === 0) {
      if (size > maxSize) throw new H2ProtocolError(`header block larger than ${maxSize} bytes`);
      const next = await this.next();
      if (!next) throw new H2ProtocolError("EOF inside a header block");
      if (next.type !== FrameType.Continuation || next.streamId !== first.streamId) {
        throw new H2ProtocolError("expected CONTINUATION");
      }
      parts.push(next.payload);
      size += next.payload.length;
      flags = next.flags;
    }
    if (size > maxSize) throw new H2ProtocolError(`header block larger than ${maxSize} bytes`);
    return concat(parts);
  }

  async #fill(): Promise<boolean> {
    const n = await this.#conn.read(this.#chunk);
    if (n === null) return false;
    if (this.#buf.length === 0) {
      this.#buf = this.#chunk.slice(0, n);
    } else {
      const joined = new Uint8Array(this.#buf.length + n);
      joined.set(this.#buf);
      joined.set(this.#chunk.subarray(0, n), this.#buf.length);
      this.#buf = joined;
    }
    return true;
  }
}

/** A big-endian unsigned 32-bit number at `off`. */
export function readUint32(bytes: Uint8Array, off: number): number {
  return ((bytes[off] << 24) >>> 0) + ((bytes[off + 1] << 16) | (bytes[off + 2] << 8) |
    bytes[off + 3]);
}

/** A DATA or HEADERS payload without its padding. */
export function stripPadding(f: Frame): Uint8Array {
  if ((f.flags & Flag.Padded) === 0) return f.payload;
  const padLength = f.payload[0] ?? 0;
  if (padLength + 1 > f.payload.length) throw new H2ProtocolError("padding too long");
  return f.payload.subarray(1, f.payload.length - padLength);
}

/** The bytes of `parts` in one array (the part itself when there is one). */
export function concat(parts: Uint8Array[]): Uint8Array {
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

const errorCodeNames = [
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

/** An error code's name as Go's http2 package prints it. */
export function errorCodeName(code: number): string {
  return errorCodeNames[code] ?? `unknown error code 0x${code.toString(16)}`;
}
