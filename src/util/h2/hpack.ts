/**
 * HPACK decoding (RFC 7541) for our HTTP/2 client: integers, string literals with the Huffman code,
 * the static and dynamic tables, fed one header block fragment at a time. Mirrors Go's
 * golang.org/x/net/http2/hpack Decoder as grpc-go's framer drives it: fields are handed to an
 * `emit` callback as they are decoded, emitting can be switched off once the header list is over
 * its limit (decoding goes on, so the dynamic table stays in step with the peer's, but no string
 * is materialised for a field that is not indexed), string literals longer than a limit are an
 * error, and nothing is kept between fragments but an unfinished field.
 *
 * Why not npm `hpack.js` (or `hpack`, the only other RFC 7541 package): both decode a whole block
 * into a list before the caller can look at it, so a 15 MiB block of one-byte references became
 * gigabytes of fields before any limit applied, and neither is maintained.
 * @module
 */
import { concat } from "../bytes.ts";

/** A header block the decoder cannot read: Go's hpack errors (a COMPRESSION_ERROR in HTTP/2). */
export class HpackDecodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HpackDecodingError";
  }
}

/** One decoded header field; strings hold one character per byte (latin1), as Go's do. */
export interface HeaderField {
  name: string;
  value: string;
  /** Set for a "never indexed" literal (RFC 7541 §6.2.3). */
  sensitive: boolean;
}

/**
 * Receives each decoded field (Go's emit func); positional, so a block of many fields allocates
 * nothing per field.
 */
export type EmitFunc = (name: string, value: string, sensitive: boolean) => void;

// RFC 7541 Appendix A.
const staticTable: [string, string][] = [
  [":authority", ""],
  [":method", "GET"],
  [":method", "POST"],
  [":path", "/"],
  [":path", "/index.html"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "200"],
  [":status", "204"],
  [":status", "206"],
  [":status", "304"],
  [":status", "400"],
  [":status", "404"],
  [":status", "500"],
  ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"],
  ["accept-language", ""],
  ["accept-ranges", ""],
  ["accept", ""],
  ["access-control-allow-origin", ""],
  ["age", ""],
  ["allow", ""],
  ["authorization", ""],
  ["cache-control", ""],
  ["content-disposition", ""],
  ["content-encoding", ""],
  ["content-language", ""],
  ["content-length", ""],
  ["content-location", ""],
  ["content-range", ""],
  ["content-type", ""],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["expect", ""],
  ["expires", ""],
  ["from", ""],
  ["host", ""],
  ["if-match", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["if-range", ""],
  ["if-unmodified-since", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["max-forwards", ""],
  ["proxy-authenticate", ""],
  ["proxy-authorization", ""],
  ["range", ""],
  ["referer", ""],
  ["refresh", ""],
  ["retry-after", ""],
  ["server", ""],
  ["set-cookie", ""],
  ["strict-transport-security", ""],
  ["transfer-encoding", ""],
  ["user-agent", ""],
  ["vary", ""],
  ["via", ""],
  ["www-authenticate", ""],
];

const staticEntries = staticTable.map(([name, value]) => ({ name, value }));

// deno-fmt-ignore
/**
 * The Huffman code's lengths in bits for symbols 0–255 and EOS (256), RFC 7541 Appendix B. The
 * code is canonical (codes of one length are consecutive, in symbol order, shorter codes first),
 * so the lengths determine every code; tests/util/h2/hpack_test.ts checks the derived codes
 * against npm hpack.js's table.
 */
export const huffmanCodeLengths: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
  28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7,
  7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21,
  23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24,
  21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/** The canonical Huffman codes: `[code, length]` per symbol, derived from the lengths. */
export function huffmanCodes(): [number, number][] {
  const symbols = huffmanCodeLengths.map((_, i) => i).sort((a, b) =>
    huffmanCodeLengths[a] - huffmanCodeLengths[b] || a - b
  );
  const codes: [number, number][] = new Array(symbols.length);
  let code = 0;
  let length = huffmanCodeLengths[symbols[0]];
  for (const symbol of symbols) {
    const next = huffmanCodeLengths[symbol];
    code *= 2 ** (next - length);
    length = next;
    codes[symbol] = [code, length];
    code++;
  }
  return codes;
}

/**
 * The decoding tree, 8 bits a level as Go builds it: `huffmanNodes[n * 256 + byte]` is 0 (no code
 * starts so), `-child` for a deeper node, or `(symbol << 8 | bits) + 1` for a leaf, `bits` being
 * what the code uses of that level's byte. EOS is left out: a string that holds it is invalid.
 */
const huffmanNodes: Int32Array = (() => {
  const nodes: number[] = new Array(256).fill(0);
  huffmanCodes().forEach(([code, length], symbol) => {
    if (symbol === 256) return;
    let node = 0;
    while (length > 8) {
      length -= 8;
      const i = node * 256 + Math.floor(code / 2 ** length) % 256;
      if (nodes[i] === 0) {
        nodes[i] = -(nodes.length / 256);
        for (let j = 0; j < 256; j++) nodes.push(0);
      }
      node = -nodes[i];
    }
    const shift = 8 - length;
    const start = (code % 2 ** length) << shift;
    for (let j = 0; j < 1 << shift; j++) {
      nodes[node * 256 + start + j] = ((symbol << 8) | length) + 1;
    }
  });
  return Int32Array.from(nodes);
})();

/** Huffman-decoded bytes of `src` as a latin1 string (Go's huffmanDecode). */
export function huffmanDecode(src: Uint8Array): string {
  const out = new Uint8Array(Math.ceil(src.length * 8 / 5));
  let n = 0;
  let node = 0;
  let cur = 0;
  let bits = 0;
  // Bits of the current code consumed at earlier levels: padding longer than 7 bits is invalid.
  let sbits = 0;
  for (const b of src) {
    cur = ((cur << 8) | b) & 0xffff;
    bits += 8;
    sbits += 8;
    while (bits >= 8) {
      const entry = huffmanNodes[node * 256 + ((cur >> (bits - 8)) & 0xff)];
      if (entry === 0) throw new HpackDecodingError("hpack: invalid Huffman-encoded data");
      if (entry < 0) {
        node = -entry;
        bits -= 8;
      } else {
        out[n++] = (entry - 1) >> 8;
        bits -= (entry - 1) & 0xff;
        node = 0;
        sbits = bits;
      }
    }
  }
  while (bits > 0) {
    const entry = huffmanNodes[node * 256 + ((cur << (8 - bits)) & 0xff)];
    if (entry === 0) throw new HpackDecodingError("hpack: invalid Huffman-encoded data");
    if (entry < 0 || ((entry - 1) & 0xff) > bits) break;
    out[n++] = (entry - 1) >> 8;
    bits -= (entry - 1) & 0xff;
    node = 0;
    sbits = bits;
  }
  if (sbits > 7) throw new HpackDecodingError("hpack: invalid Huffman-encoded data");
  const mask = (1 << bits) - 1;
  if ((cur & mask) !== mask) throw new HpackDecodingError("hpack: invalid Huffman-encoded data");
  return latin1(out.subarray(0, n));
}

/** Bytes as a string of one character per byte. */
function latin1(bytes: Uint8Array): string {
  let s = "";
  for (let off = 0; off < bytes.length; off += 8192) {
    s += String.fromCharCode(...bytes.subarray(off, off + 8192));
  }
  return s;
}

/** Thrown inside the parser when the fragment ends within a field; `need` bytes are missing. */
class NeedMore {
  constructor(readonly need: number) {}
}

/**
 * The HPACK decoder of one connection (Go's hpack.Decoder). Every header block the peer sends goes
 * through it, fragment by fragment, on any stream, or its dynamic table drifts from the peer's.
 *
 * @example
 * ```ts
 * const decoder = new HpackDecoder({ maxTableSize: 4096 });
 * const fields: HeaderField[] = [];
 * decoder.startBlock({ emit: (name, value) => fields.push({ name, value, sensitive: false }), maxStringLength: 0 });
 * decoder.write(new Uint8Array([0x88])); // indexed field 8: ":status: 200"
 * decoder.endBlock();
 * ```
 */
export class HpackDecoder {
  #dynamic: { name: string; value: string; size: number }[] = []; // newest first
  #dynamicSize = 0;
  #maxDynamicSize: number;
  #allowedMaxDynamicSize: number;
  #emit: EmitFunc = () => {};
  #emitEnabled = true;
  #maxStringLength = 0;
  #firstField = true;
  // An unfinished field from earlier fragments, and how many bytes it needs at least.
  #saved: Uint8Array[] = [];
  #savedLength = 0;
  #need = 0;

  /** `maxTableSize` is the SETTINGS_HEADER_TABLE_SIZE we announced (the most the peer may use). */
  constructor(options: { maxTableSize: number }) {
    this.#maxDynamicSize = options.maxTableSize;
    this.#allowedMaxDynamicSize = options.maxTableSize;
  }

  /** Bytes held for a field that a later fragment finishes (bounded by the string limit). */
  get savedBytes(): number {
    return this.#savedLength;
  }

  /** The dynamic table's size as RFC 7541 §4.1 counts it. */
  get dynamicTableSize(): number {
    return this.#dynamicSize;
  }

  /**
   * Starts a header block: decoded fields go to `emit` while emitting is enabled; a string literal
   * longer than `maxStringLength` (0: no limit) is an error.
   */
  startBlock(options: { emit: EmitFunc; maxStringLength: number }): void {
    this.#emit = options.emit;
    this.#emitEnabled = true;
    this.#maxStringLength = options.maxStringLength;
    this.#firstField = true;
  }

  /** Stops (or resumes) handing fields to `emit`; decoding, and table updates, go on. */
  setEmitEnabled(enabled: boolean): void {
    this.#emitEnabled = enabled;
  }

  /** Decodes one fragment of the current block; an unfinished last field waits for the next. */
  write(fragment: Uint8Array): void {
    if (this.#savedLength > 0) {
      if (fragment.length === 0) return;
      this.#saved.push(fragment);
      this.#savedLength += fragment.length;
      // Go bounds what it holds for an unfinished field by twice the string limit.
      if (this.#maxStringLength !== 0 && this.#savedLength > 2 * this.#maxStringLength) {
        throw new HpackDecodingError("hpack: string too long");
      }
      if (this.#savedLength < this.#need) return;
      fragment = concat(this.#saved);
      this.#saved = [];
      this.#savedLength = 0;
      this.#need = 0;
    }
    let off = 0;
    try {
      while (off < fragment.length) off = this.#field(fragment, off);
    } catch (err) {
      if (!(err instanceof NeedMore)) throw err;
      const rest = fragment.slice(off);
      this.#saved = [rest];
      this.#savedLength = rest.length;
      this.#need = rest.length + err.need;
    }
  }

  /** Ends the block: a field left unfinished is an error (Go's Decoder.Close). */
  endBlock(): void {
    const unfinished = this.#savedLength > 0;
    this.#saved = [];
    this.#savedLength = 0;
    this.#need = 0;
    this.#emit = () => {};
    if (unfinished) throw new HpackDecodingError("hpack: truncated headers");
  }

  /** Decodes the field at `off`; returns the offset after it. */
  #field(p: Uint8Array, off: number): number {
    const b = p[off];
    if (b & 0x80) return this.#indexed(p, off);
    if (b & 0x40) return this.#literal(p, off, 6, "incremental");
    if ((b & 0xe0) === 0x20) return this.#tableSizeUpdate(p, off);
    if (b & 0x10) return this.#literal(p, off, 4, "never");
    return this.#literal(p, off, 4, "none");
  }

  #indexed(p: Uint8Array, off: number): number {
    const index = readInteger(p, off, 7);
    const next = integerEnd;
    const entry = this.#at(index);
    if (!entry) {
      throw new HpackDecodingError(`hpack: invalid indexed representation index ${index}`);
    }
    this.#firstField = false;
    this.#callEmit(entry.name, entry.value, false);
    return next;
  }

  #literal(p: Uint8Array, off: number, prefix: number, indexing: string): number {
    const nameIndex = readInteger(p, off, prefix);
    let next = integerEnd;
    const indexed = indexing === "incremental";
    // Strings are decoded only when someone looks at them: the table, or the emit callback.
    const wantStrings = this.#emitEnabled || indexed;
    let name = "";
    if (nameIndex > 0) {
      const entry = this.#at(nameIndex);
      if (!entry) {
        throw new HpackDecodingError(`hpack: invalid indexed representation index ${nameIndex}`);
      }
      name = entry.name;
    } else {
      [name, next] = this.#string(p, next, wantStrings);
    }
    let value: string;
    [value, next] = this.#string(p, next, wantStrings);
    this.#firstField = false;
    if (indexed) this.#add(name, value);
    this.#callEmit(name, value, indexing === "never");
    return next;
  }

  #tableSizeUpdate(p: Uint8Array, off: number): number {
    // RFC 7541 §4.2: only at the start of a block.
    if (!this.#firstField && this.#dynamic.length > 0) {
      throw new HpackDecodingError(
        "hpack: dynamic table size update MUST occur at the beginning of a header block",
      );
    }
    const size = readInteger(p, off, 5);
    const next = integerEnd;
    if (size > this.#allowedMaxDynamicSize) {
      throw new HpackDecodingError("hpack: dynamic table size update too large");
    }
    this.#maxDynamicSize = size;
    this.#evict();
    return next;
  }

  /** A string literal at `off` (§5.2): its text (empty when not wanted) and the offset after it. */
  #string(p: Uint8Array, off: number, want: boolean): [string, number] {
    if (off >= p.length) throw new NeedMore(p.length - off + 1);
    const huffman = (p[off] & 0x80) !== 0;
    const length = readInteger(p, off, 7);
    const start = integerEnd;
    if (this.#maxStringLength !== 0 && length > this.#maxStringLength) {
      throw new HpackDecodingError("hpack: string too long");
    }
    const end = start + length;
    if (end > p.length) throw new NeedMore(end - p.length);
    if (!want) return ["", end];
    const bytes = p.subarray(start, end);
    if (!huffman) return [latin1(bytes), end];
    const text = huffmanDecode(bytes);
    if (this.#maxStringLength !== 0 && text.length > this.#maxStringLength) {
      throw new HpackDecodingError("hpack: string too long");
    }
    return [text, end];
  }

  #callEmit(name: string, value: string, sensitive: boolean): void {
    if (this.#emitEnabled) this.#emit(name, value, sensitive);
  }

  /** The static (1–61) or dynamic (62–) entry at `index`. */
  #at(index: number): { name: string; value: string } | undefined {
    if (index < 1) return undefined;
    if (index <= staticEntries.length) return staticEntries[index - 1];
    return this.#dynamic[index - staticEntries.length - 1];
  }

  #add(name: string, value: string): void {
    const size = name.length + value.length + 32;
    this.#dynamic.unshift({ name, value, size });
    this.#dynamicSize += size;
    this.#evict();
  }

  #evict(): void {
    while (this.#dynamicSize > this.#maxDynamicSize && this.#dynamic.length > 0) {
      this.#dynamicSize -= this.#dynamic.pop()!.size;
    }
  }
}

/** Where the integer `readInteger` read last ended (a second result, without an allocation). */
let integerEnd = 0;

/**
 * An HPACK integer with an N-bit prefix at `off` (§5.1); the offset after it is left in
 * `integerEnd`. Go
 * refuses integers above 2^63 as too long; we stop at 2^53, beyond any size a limit lets through.
 */
function readInteger(p: Uint8Array, off: number, prefix: number): number {
  const max = (1 << prefix) - 1;
  let value = p[off] & max;
  let i = off + 1;
  integerEnd = i;
  if (value < max) return value;
  let m = 1;
  for (;;) {
    if (i >= p.length) throw new NeedMore(1);
    const b = p[i++];
    value += (b & 0x7f) * m;
    m *= 128;
    if ((b & 0x80) === 0) {
      integerEnd = i;
      return value;
    }
    if (m > 2 ** 49) throw new HpackDecodingError("hpack: varint integer overflow");
  }
}
