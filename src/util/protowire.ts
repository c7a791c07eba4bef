/**
 * The protobuf wire format, read and written by hand: varints (32 and 64 bits), fixed32/64,
 * length-delimited fields, tags, and unknown fields skipped (groups included). The generated CRI
 * codec (src/cri_client/codec_gen.ts) is built on it. Mirrors Go's
 * google.golang.org/protobuf/encoding/protowire, with the errors Go's decoder reports.
 * @module
 */

import { Buffer } from "node:buffer";

/** Go protobuf's one text for any malformed wire data (`protoimpl`'s errDecode). */
export const invalidWireFormat = "proto: cannot parse invalid wire-format data";

/** Wire types of a tag's low three bits. */
export const WireType = {
  Varint: 0,
  Fixed64: 1,
  Bytes: 2,
  StartGroup: 3,
  EndGroup: 4,
  Fixed32: 5,
} as const;

const two32 = 4294967296;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The short ASCII strings decoded last, by a hash of their bytes (one per slot, the newest wins).
 * A relist decodes the same ids, names, labels and annotations every second; taking them from
 * here saves allocating each again and lets every answer share one copy. Bounded: 4096 slots of
 * strings up to 128 bytes (image references with their digest fit), at most ~0.6 MiB.
 */
const recentStrings: string[] = new Array(4096).fill("");
const maxRecentLength = 128;
const utf8Encoder = new TextEncoder();

/**
 * Reads protobuf wire data from one buffer, advancing `pos`. Every read checks its bounds and
 * throws `invalidWireFormat` on truncated or malformed data; strings are checked for UTF-8 as
 * Go's proto3 decoder does.
 *
 * @example
 * ```ts
 * const r = new ProtoReader(new Uint8Array([0x08, 0x96, 0x01]));
 * r.tag(); // 8: field 1, varint
 * r.uint32(); // 150
 * ```
 */
export class ProtoReader {
  /** The wire data. */
  readonly buf: Uint8Array;
  /** The offset of the next byte to read. */
  pos = 0;
  /** The low and high 32 bits of the last 64-bit varint (`varint64`). */
  #lo = 0;
  #hi = 0;

  constructor(buf: Uint8Array) {
    this.buf = buf;
  }

  /**
   * A field's tag (`fieldNumber << 3 | wireType`), as an unsigned number. A field number of 0 or
   * above 2^29 - 1 is malformed.
   */
  tag(): number {
    const buf = this.buf;
    const pos = this.pos;
    // One- and two-byte tags: field numbers below 2048.
    if (pos < buf.length && buf[pos] < 0x80) {
      const key = buf[pos];
      this.pos = pos + 1;
      if (key < 8) throw new Error(invalidWireFormat);
      return key;
    }
    this.varint64();
    // Field numbers above 2^29 - 1 need more than 32 bits.
    if (this.#hi !== 0 || this.#lo < 8) throw new Error(invalidWireFormat);
    return this.#lo;
  }

  /** A varint's low 32 bits as an unsigned number (uint32 fields; enum values go through `int32`). */
  uint32(): number {
    const buf = this.buf;
    const pos = this.pos;
    if (pos < buf.length && buf[pos] < 0x80) {
      this.pos = pos + 1;
      return buf[pos];
    }
    this.varint64();
    return this.#lo;
  }

  /** A varint's low 32 bits as a signed number (int32 and enum fields, as Go truncates them). */
  int32(): number {
    return this.uint32() | 0;
  }

  /** A varint as a signed 64-bit integer (int64 fields). */
  int64(): bigint {
    const buf = this.buf;
    const pos = this.pos;
    if (pos < buf.length && buf[pos] < 0x80) {
      this.pos = pos + 1;
      return BigInt(buf[pos]);
    }
    this.varint64();
    if (this.#hi === 0) return BigInt(this.#lo);
    if (this.#hi < 0x200000) return BigInt(this.#hi * two32 + this.#lo);
    return BigInt.asIntN(64, (BigInt(this.#hi) << 32n) | BigInt(this.#lo));
  }

  /** A varint as an unsigned 64-bit integer (uint64 fields). */
  uint64(): bigint {
    this.varint64();
    if (this.#hi === 0) return BigInt(this.#lo);
    if (this.#hi < 0x200000) return BigInt(this.#hi * two32 + this.#lo);
    return (BigInt(this.#hi) << 32n) | BigInt(this.#lo);
  }

  /** A varint as a bool: any value but 0 is true. */
  bool(): boolean {
    this.varint64();
    return (this.#lo | this.#hi) !== 0;
  }

  /** A length prefix; returns the offset where the length-delimited value ends. */
  end(): number {
    const length = this.uint32Checked();
    if (length > this.buf.length - this.pos) throw new Error(invalidWireFormat);
    return this.pos + length;
  }

  /** Throws unless the value that was to end at `end` ended exactly there. */
  expectEnd(end: number): void {
    if (this.pos !== end) throw new Error(invalidWireFormat);
  }

  /**
   * A length-delimited string; `field` names it in the UTF-8 error, as Go's does. Short ASCII
   * strings come from a small cache of recent ones when the bytes match (see `recentStrings`).
   */
  string(field: string): string {
    const end = this.end();
    const buf = this.buf;
    const pos = this.pos;
    this.pos = end;
    const n = end - pos;
    if (n === 0) return "";
    if (n <= maxRecentLength) {
      // FNV-1a over the bytes, and whether all are ASCII, in one pass.
      let hash = 0x811c9dc5;
      let bits = 0;
      for (let i = pos; i < end; i++) {
        const b = buf[i];
        bits |= b;
        hash = Math.imul(hash ^ b, 0x01000193);
      }
      if (bits < 0x80) {
        const slot = (hash ^ (hash >>> 16)) & (recentStrings.length - 1);
        const recent = recentStrings[slot];
        if (recent.length === n) {
          let i = 0;
          while (i < n && recent.charCodeAt(i) === buf[pos + i]) i++;
          if (i === n) return recent;
        }
        const text = utf8.decode(buf.subarray(pos, end));
        recentStrings[slot] = text;
        return text;
      }
    }
    try {
      return utf8.decode(buf.subarray(pos, end));
    } catch {
      throw new Error(`proto: field ${field} contains invalid UTF-8`);
    }
  }

  /** A length-delimited bytes value, copied out of the buffer (as Go's decoder copies it). */
  bytes(): Uint8Array {
    const end = this.end();
    // A plain copy, also when `buf` is a Node Buffer (whose slice() is a view).
    const out = new Uint8Array(this.buf.subarray(this.pos, end));
    this.pos = end;
    return out;
  }

  /** Four bytes, little-endian, unsigned (fixed32). */
  fixed32(): number {
    if (this.buf.length - this.pos < 4) throw new Error(invalidWireFormat);
    const b = this.buf;
    const p = this.pos;
    this.pos = p + 4;
    return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
  }

  /** Eight bytes, little-endian, as an unsigned 64-bit integer (fixed64). */
  fixed64(): bigint {
    const lo = this.fixed32();
    const hi = this.fixed32();
    return (BigInt(hi) << 32n) | BigInt(lo);
  }

  /**
   * Skips the value of an unknown field whose tag was just read; a group runs to its matching
   * end-group tag. An end-group tag with no group open is malformed.
   */
  skip(tag: number): void {
    switch (tag & 7) {
      case WireType.Varint:
        this.varint64();
        return;
      case WireType.Fixed64:
        this.advance(8);
        return;
      case WireType.Bytes:
        this.pos = this.end();
        return;
      case WireType.Fixed32:
        this.advance(4);
        return;
      case WireType.StartGroup: {
        const field = Math.floor(tag / 8);
        for (;;) {
          if (this.pos >= this.buf.length) throw new Error(invalidWireFormat);
          const inner = this.tag();
          if ((inner & 7) === WireType.EndGroup) {
            if (Math.floor(inner / 8) !== field) throw new Error(invalidWireFormat);
            return;
          }
          this.skip(inner);
        }
      }
      default:
        throw new Error(invalidWireFormat);
    }
  }

  /**
   * One `map<string, string>` entry (a message of key = 1, value = 2, either may be missing) into
   * `map`; a later entry with the same key replaces an earlier one. `keyField` and `valueField`
   * name the entry's fields for the UTF-8 error (`runtime.v1.Container.LabelsEntry.key`).
   */
  stringMapEntry(map: Record<string, string>, keyField: string, valueField: string): void {
    const end = this.end();
    let key = "";
    let value = "";
    while (this.pos < end) {
      const tag = this.tag();
      if (tag === 10) key = this.string(keyField);
      else if (tag === 18) value = this.string(valueField);
      else this.skip(tag);
    }
    this.expectEnd(end);
    if (key === "__proto__") {
      Object.defineProperty(map, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      map[key] = value;
    }
  }

  advance(n: number): void {
    if (this.buf.length - this.pos < n) throw new Error(invalidWireFormat);
    this.pos += n;
  }

  // A length or count: a varint that must fit 31 bits.
  uint32Checked(): number {
    this.varint64();
    if (this.#hi !== 0 || this.#lo > 0x7fffffff) throw new Error(invalidWireFormat);
    return this.#lo;
  }

  // Reads a varint of up to ten bytes into #lo and #hi; more than 64 bits is malformed.
  varint64(): void {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    let b: number;
    let shift = 0;
    // Bytes 1-4: bits 0-27.
    for (; shift < 28; shift += 7) {
      if (pos >= buf.length) throw new Error(invalidWireFormat);
      b = buf[pos++];
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = pos;
        this.#lo = lo >>> 0;
        this.#hi = 0;
        return;
      }
    }
    // Byte 5: bits 28-34, split between the halves.
    if (pos >= buf.length) throw new Error(invalidWireFormat);
    b = buf[pos++];
    lo |= (b & 0x0f) << 28;
    hi = (b & 0x7f) >> 4;
    if (b >= 0x80) {
      // Bytes 6-10: bits 35-63.
      for (shift = 3;; shift += 7) {
        if (pos >= buf.length) throw new Error(invalidWireFormat);
        b = buf[pos++];
        if (shift === 31) {
          // The tenth byte holds bit 63 only.
          if (b > 1) throw new Error(invalidWireFormat);
          hi |= b << 31;
          break;
        }
        hi |= (b & 0x7f) << shift;
        if (b < 0x80) break;
      }
    }
    this.pos = pos;
    this.#lo = lo >>> 0;
    this.#hi = hi >>> 0;
  }
}

/**
 * Writes protobuf wire data into a growing buffer. A length-delimited value is written in place:
 * `fork()` reserves one byte for its length and `join()` writes the length, moving the value when
 * it needs more than one byte.
 *
 * @example
 * ```ts
 * const w = new ProtoWriter();
 * w.uint32(10); // field 1, length-delimited
 * w.string("hi");
 * w.finish(); // Uint8Array [10, 2, 104, 105]
 * ```
 */
export class ProtoWriter {
  #buf = new Uint8Array(256);
  #pos = 0;

  /** A varint of an unsigned 32-bit value (tags, uint32 fields, lengths). */
  uint32(value: number): void {
    this.#reserve(5);
    const buf = this.#buf;
    let v = value >>> 0;
    while (v >= 0x80) {
      buf[this.#pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[this.#pos++] = v;
  }

  /** An int32 or enum value: negative ones take ten bytes, sign-extended to 64 bits, as in Go. */
  int32(value: number): void {
    if (value >= 0) this.uint32(value);
    else this.#varint64((value | 0) >>> 0, 0xffffffff);
  }

  /** An int64 or uint64 value (a number is truncated to an integer first). */
  int64(value: bigint | number): void {
    if (typeof value === "number") {
      const v = Math.trunc(value);
      if (v >= 0 && v <= 0xffffffff) return this.uint32(v);
      if (Number.isSafeInteger(v) && v > 0) {
        return this.#varint64(v % two32, Math.floor(v / two32));
      }
      value = BigInt(v);
    }
    const u = BigInt.asUintN(64, value);
    this.#varint64(Number(u & 0xffffffffn), Number(u >> 32n));
  }

  /** A bool as a one-byte varint. */
  bool(value: boolean): void {
    this.#reserve(1);
    this.#buf[this.#pos++] = value ? 1 : 0;
  }

  /** A string's UTF-8 bytes, length-prefixed. */
  string(value: string): void {
    const n = value.length;
    // ASCII needs no encoder; the length is then the string's.
    let ascii = n < 128;
    if (ascii) {
      for (let i = 0; i < n; i++) {
        if (value.charCodeAt(i) >= 0x80) {
          ascii = false;
          break;
        }
      }
    }
    if (ascii) {
      this.#reserve(1 + n);
      const buf = this.#buf;
      buf[this.#pos++] = n;
      for (let i = 0; i < n; i++) buf[this.#pos++] = value.charCodeAt(i);
      return;
    }
    this.bytes(utf8Encoder.encode(value));
  }

  /** Bytes, length-prefixed. */
  bytes(value: Uint8Array): void {
    this.uint32(value.length);
    this.#reserve(value.length);
    this.#buf.set(value, this.#pos);
    this.#pos += value.length;
  }

  /** Starts a length-delimited value; returns where, for `join`. */
  fork(): number {
    this.#reserve(1);
    return this.#pos++;
  }

  /** Ends the length-delimited value `fork` started at `at`, writing its length before it. */
  join(at: number): void {
    const length = this.#pos - at - 1;
    if (length < 0x80) {
      this.#buf[at] = length;
      return;
    }
    let extra = 0;
    for (let v = length >>> 7; v > 0; v >>>= 7) extra++;
    this.#reserve(extra);
    const buf = this.#buf;
    buf.copyWithin(at + 1 + extra, at + 1, this.#pos);
    this.#pos += extra;
    let v = length;
    for (let i = at; v >= 0x80; i++) {
      buf[i] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[at + extra] = v;
  }

  /** The bytes written. */
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#pos);
  }

  #varint64(lo: number, hi: number): void {
    this.#reserve(10);
    const buf = this.#buf;
    while (hi > 0 || lo >= 0x80) {
      buf[this.#pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    buf[this.#pos++] = lo;
  }

  #reserve(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#pos + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#buf.subarray(0, this.#pos));
    this.#buf = grown;
  }
}

/**
 * Decoded messages kept by their exact bytes, for the lists a runtime answers again and again
 * with mostly the same entries: a PLEG relist asks for every container and sandbox each second,
 * and an entry whose bytes equal those of one decoded before is that object again, not decoded
 * again (at 100 pods decoding them was a third of the agent's main-thread CPU once V8's
 * optimizing compilers are off). The bytes are compared in full, natively (`Buffer.compare`), so
 * an entry is reused only when the runtime sent exactly the same message; a hash of a few of its
 * bytes only picks the candidates. Shared values are deep-frozen: whoever wants to change one
 * copies it first.
 *
 * Bounded by generations: an entry not asked for during two generations (a generation ends after
 * four lookups per entry it holds, at least 64) is dropped, so what stays is about what the
 * runtime still lists.
 *
 * @example
 * ```ts
 * const memo = new DecodeMemo<{ n: number }>();
 * const bytes = new Uint8Array([0x08, 0x07]);
 * const read = (r: ProtoReader, end: number) => {
 *   r.tag();
 *   const n = r.uint32();
 *   r.expectEnd(end);
 *   return { n };
 * };
 * const a = memo.read(new ProtoReader(bytes), bytes.length, read);
 * memo.read(new ProtoReader(bytes), bytes.length, read) === a; // true
 * ```
 */
export class DecodeMemo<T extends object> {
  #current = new Map<number, { bytes: Uint8Array; value: T }[]>();
  #previous = new Map<number, { bytes: Uint8Array; value: T }[]>();
  #currentSize = 0;
  #lookups = 0;

  /**
   * The message in `r.buf` from `r.pos` to `end`: the frozen value decoded before from the same
   * bytes, or `decode`'s (frozen, kept). Leaves `r.pos` at `end` either way.
   */
  read(r: ProtoReader, end: number, decode: (r: ProtoReader, end: number) => T): T {
    const bytes = r.buf.subarray(r.pos, end);
    const key = sampleHash(bytes);
    if (++this.#lookups >= Math.max(64, 4 * this.#currentSize)) this.#rotate();
    let found = take(this.#current, key, bytes, false);
    if (!found) {
      // Asked for again: it moves into the current generation.
      found = take(this.#previous, key, bytes, true);
      if (found) this.#add(key, found);
    }
    if (found) {
      r.pos = end;
      return found.value;
    }
    const value = deepFreeze(decode(r, end));
    this.#add(key, { bytes: bytes.slice(), value });
    return value;
  }

  /** How many decoded messages are kept (for tests). */
  get size(): number {
    let n = 0;
    for (const bucket of this.#current.values()) n += bucket.length;
    for (const bucket of this.#previous.values()) n += bucket.length;
    return n;
  }

  #add(key: number, entry: { bytes: Uint8Array; value: T }): void {
    const bucket = this.#current.get(key);
    if (bucket) bucket.push(entry);
    else this.#current.set(key, [entry]);
    this.#currentSize++;
  }

  #rotate(): void {
    this.#previous = this.#current;
    this.#current = new Map();
    this.#currentSize = 0;
    this.#lookups = 0;
  }
}

// The entry of `map` under `key` whose bytes equal `bytes`; removed from `map` when `remove`.
function take<T>(
  map: Map<number, { bytes: Uint8Array; value: T }[]>,
  key: number,
  bytes: Uint8Array,
  remove: boolean,
): { bytes: Uint8Array; value: T } | undefined {
  const bucket = map.get(key);
  if (!bucket) return undefined;
  for (let i = 0; i < bucket.length; i++) {
    const entry = bucket[i];
    if (entry.bytes.length !== bytes.length || Buffer.compare(entry.bytes, bytes) !== 0) continue;
    if (remove) {
      bucket.splice(i, 1);
      if (bucket.length === 0) map.delete(key);
    }
    return entry;
  }
  return undefined;
}

// FNV-1a over the length and up to 24 bytes from the start and the end: a container's or
// sandbox's id (its first field) makes the start distinct.
function sampleHash(bytes: Uint8Array): number {
  let hash = Math.imul(0x811c9dc5 ^ bytes.length, 0x01000193);
  const n = bytes.length;
  const head = Math.min(n, 16);
  for (let i = 0; i < head; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193);
  for (let i = Math.max(head, n - 8); i < n; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193);
  return hash >>> 0;
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}
