/**
 * HTTP/2 framing (RFC 9113 §4, §6) and the header-block pieces our client needs: frame encoding, a
 * frame reader on a `Deno.Conn`, header blocks encoded as plain literals, and reading a HEADERS
 * frame with its CONTINUATION frames through the HPACK decoder (hpack.ts) as Go's
 * `Framer.readMetaFrame` does (golang.org/x/net/http2/frame.go): fragment by fragment, with the
 * header list's limit applied while decoding and the CVE-2023-45288 rule that ends the connection
 * when a peer keeps sending header bytes past it. Shared by the client connection (client_conn.ts)
 * and the tests' servers.
 * @module
 */
import { setImmediate } from "node:timers/promises";
import { goQuote } from "../go_format.ts";
import { HpackDecoder, HpackDecodingError } from "./hpack.ts";
import { concat } from "../bytes.ts";

export { concat };

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
  Compression: 0x9,
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

/**
 * A protocol violation by the peer; the connection is unusable after it. `code` is set where Go's
 * framer reports a bare `ConnectionError(code)` (its text is then "connection error: <CODE>").
 */
export class H2ProtocolError extends Error {
  constructor(message: string, readonly code?: number) {
    super(message);
    this.name = "H2ProtocolError";
  }
}

/** Go's `http2.ConnectionError(code)`: the connection ends, its text names only the code. */
export function connectionError(code: number): H2ProtocolError {
  return new H2ProtocolError(`connection error: ${errorCodeName(code)}`, code);
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
  // One buffer of the largest size the block can take (an integer takes at most 6 bytes here, a
  // UTF-16 unit at most 3 UTF-8 bytes), written in place and cut to what was written: no list of
  // numbers grown byte by byte for every request.
  let max = 6;
  for (const [name, value] of headers) max += 1 + 12 + 3 * (name.length + value.length);
  const out = new Uint8Array(max);
  let off = 0;
  if (options.tableSizeUpdate !== undefined) {
    off = writeInteger(out, off, options.tableSizeUpdate, 5, 0x20);
  }
  for (const [name, value] of headers) {
    out[off++] = 0x00;
    off = writeStringLiteral(out, off, name);
    off = writeStringLiteral(out, off, value);
  }
  return out.subarray(0, off);
}

/** The bytes an HPACK integer of `value` with an N-bit prefix takes (RFC 7541 §5.1). */
function integerLength(value: number, prefixBits: number): number {
  let rest = value - ((1 << prefixBits) - 1);
  if (rest < 0) return 1;
  let n = 2;
  while (rest >= 128) {
    rest = Math.floor(rest / 128);
    n++;
  }
  return n;
}

/** Writes an HPACK integer with an N-bit prefix at `off`; `high` holds the bits above it. */
function writeInteger(
  out: Uint8Array,
  off: number,
  value: number,
  prefixBits: number,
  high: number,
): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[off++] = high | value;
    return off;
  }
  out[off++] = high | max;
  let rest = value - max;
  while (rest >= 128) {
    out[off++] = (rest % 128) | 0x80;
    rest = Math.floor(rest / 128);
  }
  out[off++] = rest;
  return off;
}

/**
 * Writes a string literal without Huffman coding at `off`: its UTF-8 length as a 7-bit-prefix
 * integer, then its UTF-8 bytes. Other than ASCII, the bytes are encoded after room for the
 * longest length prefix and moved down when the prefix is shorter.
 */
function writeStringLiteral(out: Uint8Array, off: number, text: string): number {
  // ASCII (every header a CRI call or gRPC probe sends): one byte a character, written directly.
  let ascii = true;
  for (let i = 0; i < text.length && ascii; i++) ascii = text.charCodeAt(i) < 0x80;
  if (ascii) {
    off = writeInteger(out, off, text.length, 7, 0x00);
    for (let i = 0; i < text.length; i++) out[off++] = text.charCodeAt(i);
    return off;
  }
  const reserved = integerLength(3 * text.length, 7);
  const { written } = enc.encodeInto(text, out.subarray(off + reserved));
  const prefix = integerLength(written, 7);
  if (prefix < reserved) out.copyWithin(off + prefix, off + reserved, off + reserved + written);
  writeInteger(out, off, written, 7, 0x00);
  return off + prefix + written;
}

/** A header block read whole: its fields, or why the stream must be reset. */
export interface MetaHeaders {
  /** The HEADERS frame (its stream and END_STREAM flag). */
  frame: Frame;
  /** The fields kept, in order (those within the list limit). */
  fields: [string, string][];
  /** The header list went over the limit: later fields were decoded but dropped. */
  truncated: boolean;
  /**
   * Set when a field is not valid HTTP/2 (Go's framer answers with a stream error): the text Go
   * reports, e.g. `invalid header field name "X-A"`.
   */
  invalid?: string;
}

/**
 * The HPACK decoder of one connection with our SETTINGS_HEADER_TABLE_SIZE (4096). Every header
 * block the peer sends must pass through it, on any stream, or its dynamic table drifts from the
 * peer's.
 *
 * @example
 * ```ts
 * new HeaderDecoder().decode(new Uint8Array([0x88])); // [[":status", "200"]]
 * ```
 */
export class HeaderDecoder {
  /** The connection's decoder, for `FrameReader.readMetaHeaders`. */
  readonly hpack: HpackDecoder = new HpackDecoder({ maxTableSize: 4096 });

  /** The fields of one complete header block, in order, without limits (tests' servers). */
  decode(block: Uint8Array): [string, string][] {
    const fields: [string, string][] = [];
    this.hpack.startBlock({
      emit: (name, value) => fields.push([name, value]),
      maxStringLength: 0,
    });
    try {
      this.hpack.write(block);
      this.hpack.endBlock();
    } catch (err) {
      if (err instanceof HpackDecodingError) throw connectionError(ErrorCode.Compression);
      throw err;
    }
    return fields;
  }
}

/**
 * Frames, or bytes, a reader hands out before it lets timers and other I/O run: a socket that
 * always has data makes every read complete at once, so a flood of small frames (or of empty
 * CONTINUATION frames inside one header block) would otherwise hold the event loop for as long as
 * it lasts.
 */
const maxFramesPerTurn = 256;
const maxBytesPerTurn = 64 * 1024;

/**
 * Reads whole frames from a connection, yielding to the event loop every 256 frames or 64 KiB.
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 *
 * const reader = new FrameReader(conn);
 * for (let f = await reader.next(); f; f = await reader.next()) console.log(f.type);
 * ```
 */
export class FrameReader {
  #conn: Deno.Conn;
  #buf = new Uint8Array(0);
  #chunk = new Uint8Array(64 * 1024);
  #maxFrameSize: number;
  #framesThisTurn = 0;
  #bytesThisTurn = 0;

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
    if (this.#framesThisTurn >= maxFramesPerTurn || this.#bytesThisTurn >= maxBytesPerTurn) {
      this.#framesThisTurn = 0;
      this.#bytesThisTurn = 0;
      // A macrotask turn: due timers and I/O run, but no 1 ms wait as setTimeout(0) has (that cost
      // 1-2 ms every 256 frames). node:timers/promises: fake timers in tests leave it alone.
      await setImmediate();
    }
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
          this.#framesThisTurn++;
          this.#bytesThisTurn += 9 + length;
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
   * The header block that `first` (HEADERS) starts, read through `decoder` fragment by fragment as
   * Go's `Framer.readMetaFrame` does: fields are kept while the list (name + value + 32 each)
   * stays within `maxHeaderListSize`; past it decoding goes on (the dynamic table must stay in
   * step) but drops them. Nothing is held between fragments but an unfinished field, so a run of
   * empty CONTINUATION frames costs no memory. CVE-2023-45288: a fragment longer than twice
   * what the list may still take (so any non-empty one once it is over) ends the connection
   * (PROTOCOL_ERROR), as does a fragment after an invalid field; bad HPACK is COMPRESSION_ERROR.
   */
  async readMetaHeaders(
    first: Frame,
    decoder: HeaderDecoder,
    options: { maxHeaderListSize: number },
  ): Promise<MetaHeaders> {
    let payload = stripPadding(first);
    if (first.flags & Flag.Priority) {
      if (payload.length < 5) throw new H2ProtocolError("HEADERS frame too short for priority");
      payload = payload.subarray(5);
    }
    const meta: MetaHeaders = { frame: first, fields: [], truncated: false };
    const hpack = decoder.hpack;
    let remain = options.maxHeaderListSize;
    let sawRegular = false;
    hpack.startBlock({
      maxStringLength: options.maxHeaderListSize,
      emit: (name, value) => {
        meta.invalid = fieldError(name, value, sawRegular);
        if (!name.startsWith(":")) sawRegular = true;
        if (meta.invalid !== undefined) return hpack.setEmitEnabled(false);
        const size = name.length + value.length + 32;
        if (size > remain) {
          hpack.setEmitEnabled(false);
          meta.truncated = true;
          remain = 0;
          return;
        }
        remain -= size;
        meta.fields.push([name, value]);
      },
    });
    let fragment = payload;
    let flags = first.flags;
    try {
      for (;;) {
        if (fragment.length > 2 * remain) throw connectionError(ErrorCode.ProtocolError);
        if (meta.invalid !== undefined) throw connectionError(ErrorCode.ProtocolError);
        hpack.write(fragment);
        if (flags & Flag.EndHeaders) break;
        const next = await this.next();
        if (!next) throw new H2ProtocolError("unexpected EOF");
        if (next.type !== FrameType.Continuation || next.streamId !== first.streamId) {
          throw connectionError(ErrorCode.ProtocolError);
        }
        fragment = next.payload;
        flags = next.flags;
      }
      hpack.endBlock();
    } catch (err) {
      if (err instanceof HpackDecodingError) throw connectionError(ErrorCode.Compression);
      throw err;
    }
    meta.invalid ??= pseudoHeaderError(meta.fields);
    return meta;
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

/**
 * Why Go's framer refuses a field (its emit callback's checks), or undefined: a value with control
 * bytes, a name that is not a lower-case token, a pseudo-header after a regular one.
 */
function fieldError(name: string, value: string, sawRegular: boolean): string | undefined {
  // Go checks the value first; a name or order error found after it replaces it.
  if (name.startsWith(":")) {
    if (sawRegular) return "pseudo header field after regular";
  } else if (!validWireHeaderFieldName(name)) {
    return `invalid header field name ${goQuote(name)}`;
  }
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) {
      return `invalid header field value for ${goQuote(name)}`;
    }
  }
  return undefined;
}

/** The characters of an HTTP token without upper-case letters, by char code. */
const lowerTokenChar: boolean[] = (() => {
  const table = new Array<boolean>(128).fill(false);
  for (const ch of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz") {
    table[ch.charCodeAt(0)] = true;
  }
  return table;
})();

/** Go's validWireHeaderFieldName: a non-empty token without upper-case letters. */
function validWireHeaderFieldName(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) if (!lowerTokenChar[name.charCodeAt(i)]) return false;
  return true;
}

/** Go's MetaHeadersFrame.checkPseudos on the kept fields. */
function pseudoHeaderError(fields: [string, string][]): string | undefined {
  let request = false;
  let response = false;
  const seen = new Set<string>();
  for (const [name] of fields) {
    if (!name.startsWith(":")) break;
    if (name === ":status") response = true;
    else if ([":method", ":path", ":scheme", ":authority"].includes(name)) request = true;
    else return `invalid pseudo-header ${goQuote(name)}`;
    if (seen.has(name)) return `duplicate pseudo-header ${goQuote(name)}`;
    seen.add(name);
  }
  if (request && response) return "mix of request and response pseudo headers";
  return undefined;
}
