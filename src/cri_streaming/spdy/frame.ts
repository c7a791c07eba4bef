/**
 * SPDY/3.1 frames: reading them from a byte stream and writing them, with the header blocks
 * compressed by zlib and SPDY/3's dictionary (one compression context per direction for the whole
 * connection, each block ending with a sync flush).
 *
 * Mirrors `github.com/moby/spdystream/spdy` (types.go, read.go, write.go), the framer under
 * apimachinery's `httpstream/spdy` and so under every kube-apiserver, kubelet and CRI streaming
 * server; the wire format is the SPDY/3.1 draft's. Header names travel lowercased (spdystream
 * lowercases them when writing and refuses others when reading); a value holding several values
 * separates them with NUL.
 * @module
 */
import zlib from "node:zlib";

/** The SPDY version this framer speaks. */
export const spdyVersion = 3;
/** The largest payload a frame's 24-bit length can carry (spdystream's `MaxDataLength`). */
export const maxDataLength = (1 << 24) - 1;

/** Control frame types (SPDY/3 §2.6; 5, NOOP, is gone in SPDY/3). */
export const controlFrameType = {
  synStream: 1,
  synReply: 2,
  rstStream: 3,
  settings: 4,
  ping: 6,
  goAway: 7,
  headers: 8,
  windowUpdate: 9,
} as const;

/** FLAG_FIN: the sender's half of the stream is closed after this frame. */
export const flagFin = 0x01;
/** FLAG_UNIDIRECTIONAL on SYN_STREAM: the receiver may not send on the stream. */
export const flagUnidirectional = 0x02;

/** RST_STREAM status codes (SPDY/3.1 §2.6.3). The numbers are the wire's. */
export const rstStatus = {
  protocolError: 1,
  invalidStream: 2,
  refusedStream: 3,
  unsupportedVersion: 4,
  cancel: 5,
  internalError: 6,
  flowControlError: 7,
  streamInUse: 8,
  streamAlreadyClosed: 9,
  frameTooLarge: 11,
} as const;

/** GOAWAY status codes. */
export const goAwayStatus = { ok: 0, protocolError: 1, internalError: 11 } as const;

/** SETTINGS ids this implementation reads (SPDY/3.1 §2.6.4). */
export const settingsId = { initialWindowSize: 7 } as const;

/**
 * A header block: lowercase names to their values (Go's `http.Header` after spdystream read it,
 * whose `Get` returns the first value).
 */
export type SpdyHeaders = Record<string, string[]>;

/** The first value of header `name` (any case), or "" as Go's `http.Header.Get` answers. */
export function headerValue(headers: SpdyHeaders, name: string): string {
  return headers[name.toLowerCase()]?.[0] ?? "";
}

/** One SPDY/3.1 frame, decoded. */
export type Frame =
  | { type: "data"; streamId: number; flags: number; data: Uint8Array }
  | {
    type: "synStream";
    streamId: number;
    associatedToStreamId: number;
    priority: number;
    flags: number;
    headers: SpdyHeaders;
  }
  | { type: "synReply"; streamId: number; flags: number; headers: SpdyHeaders }
  | { type: "rstStream"; streamId: number; status: number }
  | { type: "settings"; flags: number; entries: { flags: number; id: number; value: number }[] }
  | { type: "ping"; id: number }
  | { type: "goAway"; lastGoodStreamId: number; status: number }
  | { type: "headers"; streamId: number; flags: number; headers: SpdyHeaders }
  | { type: "windowUpdate"; streamId: number; deltaWindowSize: number }
  | { type: "unknown"; frameType: number; flags: number };

/** A frame that breaks the protocol: the connection cannot go on. */
export class SpdyProtocolError extends Error {
  /** The stream the error is about, 0 for the session. */
  readonly streamId: number;
  /** Builds the error; `streamId` is 0 when the session itself is at fault. */
  constructor(message: string, streamId = 0) {
    super(message);
    this.name = "SpdyProtocolError";
    this.streamId = streamId;
  }
}

// SPDY/3's header compression dictionary (SPDY/3 §2.6.10.1): these names, each as a 32-bit
// big-endian length and its bytes, then a run of common header values.
const dictionaryWords = [
  "options",
  "head",
  "post",
  "put",
  "delete",
  "trace",
  "accept",
  "accept-charset",
  "accept-encoding",
  "accept-language",
  "accept-ranges",
  "age",
  "allow",
  "authorization",
  "cache-control",
  "connection",
  "content-base",
  "content-encoding",
  "content-language",
  "content-length",
  "content-location",
  "content-md5",
  "content-range",
  "content-type",
  "date",
  "etag",
  "expect",
  "expires",
  "from",
  "host",
  "if-match",
  "if-modified-since",
  "if-none-match",
  "if-range",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "pragma",
  "proxy-authenticate",
  "proxy-authorization",
  "range",
  "referer",
  "retry-after",
  "server",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "user-agent",
  "vary",
  "via",
  "warning",
  "www-authenticate",
  "method",
  "get",
  "status",
  "200 OK",
  "version",
  "HTTP/1.1",
  "url",
  "public",
  "set-cookie",
  "keep-alive",
  "origin",
]; // deno-fmt-ignore
const dictionaryTail = "100101201202205206300302303304305306307402405406407408409410411412" +
  "413414415416417502504505203 Non-Authoritative Information204 No Content301 Moved Permanently" +
  "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error" +
  "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec" +
  " 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg," +
  "image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,public" +
  "privatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

/** SPDY/3's zlib dictionary for header blocks (1423 bytes). */
export const headerDictionary: Uint8Array = (() => {
  const enc = new TextEncoder();
  const parts: number[] = [];
  for (const word of dictionaryWords) {
    const bytes = enc.encode(word);
    parts.push(0, 0, 0, bytes.length, ...bytes);
  }
  parts.push(...enc.encode(dictionaryTail));
  return new Uint8Array(parts);
})();

/** Largest decompressed header block accepted (spdystream bounds names and values alike). */
export const maxHeaderBlockBytes = 1 << 20;
/** Most header pairs in one block (spdystream's `defaultMaxHeaderCount`). */
export const maxHeaderCount = 1000;

// One zlib stream kept across the connection; each chunk is sync-flushed so the block is whole.
class ZlibContext {
  #stream: zlib.Deflate | zlib.Inflate;
  #out: Uint8Array[] = [];
  #outBytes = 0;
  #failed: Error | undefined;

  constructor(stream: zlib.Deflate | zlib.Inflate) {
    this.#stream = stream;
    stream.on("data", (chunk: Uint8Array) => {
      this.#out.push(chunk);
      this.#outBytes += chunk.length;
    });
    stream.on("error", (err: Error) => this.#failed = err);
  }

  process(chunk: Uint8Array): Promise<Uint8Array> {
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      this.#stream.write(chunk, (err) => {
        const out = concat(this.#out, this.#outBytes);
        this.#out = [];
        this.#outBytes = 0;
        if (err || this.#failed) reject(err ?? this.#failed);
        else resolve(out);
      });
    });
  }

  close(): void {
    this.#stream.destroy();
  }
}

/** Concatenates `chunks` (of `total` bytes together). */
export function concat(chunks: Uint8Array[], total?: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total ?? chunks.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/**
 * Reads exact byte counts from a byte source (a `Deno.Conn`'s `read`), keeping what it read ahead.
 */
export class ByteReader {
  #read: (buf: Uint8Array) => Promise<number | null>;
  #buf: Uint8Array = new Uint8Array(0);
  #off = 0;

  /** Reads through `read`; `initial` is data already read (what followed an HTTP request head). */
  constructor(read: (buf: Uint8Array) => Promise<number | null>, initial?: Uint8Array) {
    this.#read = read;
    if (initial) this.#buf = initial;
  }

  /**
   * Exactly `n` bytes; `null` when the source ended before the first of them; throws when it ended
   * in their middle.
   */
  async readExact(n: number): Promise<Uint8Array | null> {
    while (this.#buf.length - this.#off < n) {
      const chunk = new Uint8Array(Math.max(16 * 1024, n - (this.#buf.length - this.#off)));
      const got = await this.#read(chunk);
      if (got === null) {
        if (this.#buf.length === this.#off) return null;
        throw new SpdyProtocolError("connection ended inside a frame");
      }
      const rest = this.#buf.subarray(this.#off);
      const next = new Uint8Array(rest.length + got);
      next.set(rest);
      next.set(chunk.subarray(0, got), rest.length);
      this.#buf = next;
      this.#off = 0;
    }
    const out = this.#buf.slice(this.#off, this.#off + n);
    this.#off += n;
    return out;
  }
}

/**
 * Reads and writes SPDY/3.1 frames for one connection. Frames must be encoded in the order they
 * are sent and decoded in the order they arrive: the header compression contexts span the
 * connection.
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 * const framer = new Framer();
 * const bytes = await framer.encode({ type: "ping", id: 1 });
 * const frame = await framer.readFrame(new ByteReader(conn.read.bind(conn)));
 * ```
 */
export class Framer {
  #deflate = new ZlibContext(
    zlib.createDeflate({
      dictionary: headerDictionary,
      level: zlib.constants.Z_BEST_COMPRESSION,
      // A 2 KiB window and the smallest hash (9 KiB instead of zlib's 256 KiB per connection):
      // a handful of small header blocks go out per connection; any inflater reads them.
      windowBits: 11,
      memLevel: 1,
      flush: zlib.constants.Z_SYNC_FLUSH,
    }),
  );
  #inflate = new ZlibContext(
    zlib.createInflate({ dictionary: headerDictionary, flush: zlib.constants.Z_SYNC_FLUSH }),
  );

  /** The next frame from `reader`; `null` at a clean end of the stream. */
  async readFrame(reader: ByteReader): Promise<Frame | null> {
    const head = await reader.readExact(8);
    if (head === null) return null;
    const view = new DataView(head.buffer, head.byteOffset, 8);
    const flags = head[4];
    const length = view.getUint32(4) & 0xffffff;
    const payload = length === 0 ? new Uint8Array(0) : await reader.readExact(length);
    if (payload === null) throw new SpdyProtocolError("connection ended inside a frame");
    if ((head[0] & 0x80) === 0) {
      return { type: "data", streamId: view.getUint32(0) & 0x7fffffff, flags, data: payload };
    }
    const version = view.getUint16(0) & 0x7fff;
    if (version !== spdyVersion) {
      throw new SpdyProtocolError(`unsupported SPDY version ${version}`);
    }
    return await this.#parseControl(view.getUint16(2), flags, payload);
  }

  async #parseControl(frameType: number, flags: number, p: Uint8Array): Promise<Frame> {
    const v = new DataView(p.buffer, p.byteOffset, p.byteLength);
    const need = (n: number) => {
      if (p.length < n) {
        throw new SpdyProtocolError(`control frame ${frameType} too short (${p.length} bytes)`);
      }
    };
    switch (frameType) {
      case controlFrameType.synStream: {
        need(10);
        const streamId = v.getUint32(0) & 0x7fffffff;
        return {
          type: "synStream",
          streamId,
          associatedToStreamId: v.getUint32(4) & 0x7fffffff,
          priority: p[8] >> 5,
          flags,
          headers: await this.#readHeaders(p.subarray(10), streamId),
        };
      }
      case controlFrameType.synReply:
      case controlFrameType.headers: {
        need(4);
        const streamId = v.getUint32(0) & 0x7fffffff;
        const headers = await this.#readHeaders(p.subarray(4), streamId);
        return frameType === controlFrameType.synReply
          ? { type: "synReply", streamId, flags, headers }
          : { type: "headers", streamId, flags, headers };
      }
      case controlFrameType.rstStream:
        need(8);
        return { type: "rstStream", streamId: v.getUint32(0) & 0x7fffffff, status: v.getUint32(4) };
      case controlFrameType.settings: {
        need(4);
        const count = v.getUint32(0);
        need(4 + count * 8);
        const entries = [];
        for (let i = 0; i < count; i++) {
          const at = 4 + i * 8;
          entries.push({
            flags: p[at],
            id: v.getUint32(at) & 0xffffff,
            value: v.getUint32(at + 4),
          });
        }
        return { type: "settings", flags, entries };
      }
      case controlFrameType.ping:
        need(4);
        return { type: "ping", id: v.getUint32(0) };
      case controlFrameType.goAway:
        need(8);
        return {
          type: "goAway",
          lastGoodStreamId: v.getUint32(0) & 0x7fffffff,
          status: v.getUint32(4),
        };
      case controlFrameType.windowUpdate:
        need(8);
        return {
          type: "windowUpdate",
          streamId: v.getUint32(0) & 0x7fffffff,
          deltaWindowSize: v.getUint32(4) & 0x7fffffff,
        };
      default:
        // SPDY/3: an unknown control frame is ignored.
        return { type: "unknown", frameType, flags };
    }
  }

  async #readHeaders(compressed: Uint8Array, streamId: number): Promise<SpdyHeaders> {
    let block: Uint8Array;
    try {
      block = await this.#inflate.process(compressed);
    } catch (err) {
      throw new SpdyProtocolError(`header block: ${(err as Error).message}`, streamId);
    }
    if (block.length > maxHeaderBlockBytes) {
      throw new SpdyProtocolError(`header block of ${block.length} bytes`, streamId);
    }
    const v = new DataView(block.buffer, block.byteOffset, block.byteLength);
    const dec = new TextDecoder();
    let off = 0;
    const u32 = () => {
      if (off + 4 > block.length) throw new SpdyProtocolError("header block truncated", streamId);
      off += 4;
      return v.getUint32(off - 4);
    };
    const str = () => {
      const n = u32();
      if (off + n > block.length) throw new SpdyProtocolError("header block truncated", streamId);
      off += n;
      return dec.decode(block.subarray(off - n, off));
    };
    const count = u32();
    if (count > maxHeaderCount) {
      throw new SpdyProtocolError(`${count} headers: more than ${maxHeaderCount}`, streamId);
    }
    const headers: SpdyHeaders = {};
    for (let i = 0; i < count; i++) {
      const name = str();
      const value = str();
      if (name !== name.toLowerCase()) {
        throw new SpdyProtocolError(`header was not lowercased: ${name}`, streamId);
      }
      if (Object.hasOwn(headers, name)) {
        throw new SpdyProtocolError(`multiple headers with same name: ${name}`, streamId);
      }
      headers[name] = value.split("\0");
    }
    return headers;
  }

  /** The bytes of `frame` (header blocks compressed in the connection's context). */
  async encode(frame: Frame): Promise<Uint8Array> {
    switch (frame.type) {
      case "data": {
        if (frame.data.length > maxDataLength) throw new RangeError("data frame too large");
        const out = new Uint8Array(8 + frame.data.length);
        const v = new DataView(out.buffer);
        v.setUint32(0, frame.streamId & 0x7fffffff);
        v.setUint32(4, frame.data.length);
        out[4] = frame.flags;
        out.set(frame.data, 8);
        return out;
      }
      case "synStream": {
        const block = await this.#writeHeaders(frame.headers);
        const body = new Uint8Array(10 + block.length);
        const v = new DataView(body.buffer);
        v.setUint32(0, frame.streamId & 0x7fffffff);
        v.setUint32(4, frame.associatedToStreamId & 0x7fffffff);
        body[8] = (frame.priority & 7) << 5;
        body.set(block, 10);
        return control(controlFrameType.synStream, frame.flags, body);
      }
      case "synReply":
      case "headers": {
        const block = await this.#writeHeaders(frame.headers);
        const body = new Uint8Array(4 + block.length);
        new DataView(body.buffer).setUint32(0, frame.streamId & 0x7fffffff);
        body.set(block, 4);
        const t = frame.type === "synReply" ? controlFrameType.synReply : controlFrameType.headers;
        return control(t, frame.flags, body);
      }
      case "rstStream":
        return control(controlFrameType.rstStream, 0, words(frame.streamId, frame.status));
      case "settings": {
        const body = new Uint8Array(4 + frame.entries.length * 8);
        const v = new DataView(body.buffer);
        v.setUint32(0, frame.entries.length);
        frame.entries.forEach((e, i) => {
          v.setUint32(4 + i * 8, e.id & 0xffffff);
          body[4 + i * 8] = e.flags;
          v.setUint32(8 + i * 8, e.value);
        });
        return control(controlFrameType.settings, frame.flags, body);
      }
      case "ping":
        return control(controlFrameType.ping, 0, words(frame.id));
      case "goAway":
        return control(controlFrameType.goAway, 0, words(frame.lastGoodStreamId, frame.status));
      case "windowUpdate":
        return control(
          controlFrameType.windowUpdate,
          0,
          words(frame.streamId, frame.deltaWindowSize),
        );
      case "unknown":
        throw new TypeError(`cannot encode control frame type ${frame.frameType}`);
    }
  }

  async #writeHeaders(headers: SpdyHeaders): Promise<Uint8Array> {
    const enc = new TextEncoder();
    const pairs = Object.entries(headers).map(([name, values]) => [
      enc.encode(name.toLowerCase()),
      enc.encode(values.join("\0")),
    ]);
    const size = pairs.reduce((n, [k, val]) => n + 8 + k.length + val.length, 4);
    const block = new Uint8Array(size);
    const v = new DataView(block.buffer);
    v.setUint32(0, pairs.length);
    let off = 4;
    for (const [k, val] of pairs) {
      v.setUint32(off, k.length);
      block.set(k, off + 4);
      off += 4 + k.length;
      v.setUint32(off, val.length);
      block.set(val, off + 4);
      off += 4 + val.length;
    }
    return await this.#deflate.process(block);
  }

  /** Releases the compression contexts. */
  close(): void {
    this.#deflate.close();
    this.#inflate.close();
  }
}

function words(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const v = new DataView(out.buffer);
  values.forEach((n, i) => v.setUint32(i * 4, n >>> 0));
  return out;
}

function control(frameType: number, flags: number, body: Uint8Array): Uint8Array {
  if (body.length > maxDataLength) throw new RangeError("control frame too large");
  const out = new Uint8Array(8 + body.length);
  const v = new DataView(out.buffer);
  v.setUint16(0, 0x8000 | spdyVersion);
  v.setUint16(2, frameType);
  v.setUint32(4, body.length);
  out[4] = flags;
  out.set(body, 8);
  return out;
}
