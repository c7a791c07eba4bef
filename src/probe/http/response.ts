/**
 * Reading an HTTP/1.x response as Go's client does: the buffered reader under the transport
 * (bufio.Reader with the persistConn read limit), the response head (net/http response.go and
 * net/textproto reader.go), the body framing (transfer.go) and the chunked coding with its trailer
 * (net/http/internal/chunked.go and the trailer part of transfer.go's body).
 * Every error text is the one Go produces for the same bytes; conn.ts adds the transport's prefix.
 * Head reading is linear in the bytes received: each byte is scanned for a line end once.
 * Mirrors Go 1.26 (the toolchain kubelet v1.36.3 is built with).
 * @module
 */
import { goQuote, goQuoteBytes } from "../../util/go_format.ts";
import { canonicalHeaderKey } from "./header.ts";
import { concat } from "../../util/bytes.ts";

/** `bufio.defaultBufSize`: Go's socket reads for a response, and its chunk-line and trailer windows. */
export const defaultBufSize = 4096;

/** Go's default `Transport.MaxResponseHeaderBytes`: all heads of one response, 1xx included. */
export const maxResponseHeaderBytes = 10 << 20;

/** The most non-data bytes (chunk lines beyond 16 per chunk) Go's chunked reader accepts. */
const maxChunkedExcess = 16 * 1024;

const CR = 13;
const LF = 10;
const SP = 32;
const HT = 9;
const COLON = 58;

const latin1Decoder = new TextDecoder("latin1");

// Bytes as a string of the same code units; short ones without a native call.
function latin1(bytes: Uint8Array): string {
  if (bytes.length > 64) return latin1Decoder.decode(bytes);
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += String.fromCharCode(bytes[i]);
  return out;
}

/** Go's `io.EOF`: the stream ended. A value, compared by identity as Go does. */
export const errEOF: Error = new Error("EOF");

/** Reads into `p`; the number of bytes read, or null at the end of the stream. Throws Go's text. */
export type ReadFn = (p: Uint8Array) => Promise<number | null>;

/**
 * Go's `bufio.Reader` over a connection, growing where Go's fixed 4 KiB buffer would have the
 * caller append line fragments. Socket reads are at most `defaultBufSize` bytes and never beyond
 * `readLimit` (persistConn's limit on response heads). A read error or the end of the stream is
 * kept and returned to every later read that needs more bytes, after the buffered ones.
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 *
 * const br = new BufReader((p) => conn.read(p));
 * const line = await br.readLine(); // the status line, without its CRLF
 * ```
 */
export class BufReader {
  /** Bytes the connection may still deliver; reads past it fail as persistConn's do. */
  readLimit: number = Number.POSITIVE_INFINITY;
  #read: ReadFn;
  #buf = new Uint8Array(defaultBufSize);
  #r = 0;
  #w = 0;
  #err: Error | undefined;
  // Buffered bytes before #r + #scanned hold no LF (so a line search resumes there).
  #scanned = 0;

  /** `read` is the connection's read; its errors must carry Go's text. */
  constructor(read: ReadFn) {
    this.#read = read;
  }

  /** The error that ended reading (`errEOF` at the end of the stream), if any. */
  get error(): Error | undefined {
    return this.#err;
  }

  /** Number of bytes buffered and not yet consumed (Go's `Buffered`). */
  buffered(): number {
    return this.#w - this.#r;
  }

  /**
   * Up to `n` bytes without consuming them, reading until there are `n` or the stream ended
   * (Go's `Peek`, without its buffer-size bound).
   */
  async peek(n: number): Promise<Uint8Array> {
    while (this.buffered() < n && await this.#fill());
    return this.#buf.subarray(this.#r, this.#r + Math.min(n, this.buffered()));
  }

  /** Consumes `n` buffered bytes. */
  discard(n: number): void {
    this.#consume(Math.min(n, this.buffered()));
  }

  /**
   * Go's `ReadLine` joined over its fragments: the next line without its LF or CRLF (a copy). A
   * last line without a line end is returned as a line; after it, the read error is thrown.
   */
  async readLine(): Promise<Uint8Array> {
    for (;;) {
      const line = this.tryLine();
      if (line) return line.slice();
      if (!(await this.#fill())) {
        if (this.buffered() === 0) throw this.#err!;
        const last = this.#buf.slice(this.#r, this.#w);
        this.#consume(this.buffered());
        return last;
      }
    }
  }

  /**
   * The next line (as `readLine`) if it is already buffered with its line end, else undefined
   * and nothing consumed. Never reads: the common case of a head that arrived whole costs no
   * promise. The line is a view of the buffer, valid until the next read: copy it to keep it.
   */
  tryLine(): Uint8Array | undefined {
    const nl = this.#indexOfLF(this.buffered());
    if (nl < 0) return undefined;
    const end = nl > 0 && this.#buf[this.#r + nl - 1] === CR ? nl - 1 : nl;
    const line = this.#buf.subarray(this.#r, this.#r + end);
    this.#consume(nl + 1);
    return line;
  }

  /** The next byte if one is buffered, else -1; never reads or consumes. */
  bufferedByte(): number {
    return this.buffered() > 0 ? this.#buf[this.#r] : -1;
  }

  /**
   * The buffered bytes up to and including the first LF, if one is among the first `window`
   * bytes; reads until it is, the window is full, or the stream ended (then undefined). Not
   * consumed. Go's `ReadSlice('\n')` on a `window`-byte buffer.
   */
  async peekLine(window: number): Promise<Uint8Array | undefined> {
    for (;;) {
      const nl = this.#indexOfLF(Math.min(window, this.buffered()));
      if (nl >= 0) return this.#buf.subarray(this.#r, this.#r + nl + 1);
      if (this.buffered() >= window || !(await this.#fill())) return undefined;
    }
  }

  /** Whether a LF is among the buffered bytes; never reads. */
  bufferedHasLF(): boolean {
    return this.#indexOfLF(this.buffered()) >= 0;
  }

  /**
   * Whether `pattern` starts among the buffered bytes and ends within the first `window` of them,
   * reading as needed (transfer.go's `seeUpcomingDoubleCRLF`).
   */
  async seeUpcoming(pattern: Uint8Array, window: number): Promise<boolean> {
    let from = 0;
    for (;;) {
      const end = Math.min(window, this.buffered());
      const at = indexOfBytes(this.#buf.subarray(this.#r, this.#r + end), pattern, from);
      if (at >= 0) return true;
      from = Math.max(0, end - pattern.length + 1);
      if (this.buffered() >= window || !(await this.#fill())) return false;
    }
  }

  /**
   * Up to `max` bytes: the buffered ones, or else one read (Go's `Read`); null at the end of the
   * stream. Throws the read error.
   */
  async read(max: number): Promise<Uint8Array | null> {
    if (this.buffered() === 0 && !(await this.#fill())) {
      if (this.#err === errEOF) return null;
      throw this.#err!;
    }
    const n = Math.min(max, this.buffered());
    const out = this.#buf.slice(this.#r, this.#r + n);
    this.#consume(n);
    return out;
  }

  #consume(n: number): void {
    this.#r += n;
    this.#scanned = Math.max(0, this.#scanned - n);
    if (this.#r === this.#w) this.#r = this.#w = this.#scanned = 0;
  }

  // The offset of the first LF among the first `end` buffered bytes, or -1; each byte once.
  #indexOfLF(end: number): number {
    if (this.#scanned >= end) return -1;
    let at = -1;
    if (end - this.#scanned <= 256) {
      // Short lines, the usual case: a loop costs less than a subarray and a native search.
      for (let i = this.#r + this.#scanned; i < this.#r + end; i++) {
        if (this.#buf[i] === LF) {
          at = i - this.#r;
          break;
        }
      }
    } else {
      at = this.#buf.subarray(this.#r, this.#r + end).indexOf(LF, this.#scanned);
    }
    this.#scanned = at >= 0 ? at : end;
    return at;
  }

  // One read into the buffer; false when the stream has ended (the error kept in #err).
  async #fill(): Promise<boolean> {
    if (this.#err) return false;
    if (this.readLimit <= 0) {
      this.#err = new Error(`read limit of ${maxResponseHeaderBytes} bytes exhausted`);
      return false;
    }
    if (this.#buf.length - this.#w < defaultBufSize) this.#makeRoom();
    const room = Math.min(defaultBufSize, this.readLimit);
    let n: number | null;
    try {
      n = await this.#read(this.#buf.subarray(this.#w, this.#w + room));
    } catch (err) {
      this.#err = err instanceof Error ? err : new Error(String(err));
      return false;
    }
    if (n === null) {
      this.#err = errEOF;
      return false;
    }
    this.#w += n;
    this.readLimit -= n;
    return true;
  }

  // Slides the unread bytes to the front, or doubles the buffer when they would fill more than
  // half of it: a slide is paid for by the half-buffer of reads before the next one, so each
  // byte is copied a bounded number of times on average.
  #makeRoom(): void {
    const unread = this.buffered();
    if (unread + defaultBufSize > this.#buf.length / 2) {
      const grown = new Uint8Array(Math.max(this.#buf.length * 2, unread + defaultBufSize));
      grown.set(this.#buf.subarray(this.#r, this.#w));
      this.#buf = grown;
    } else {
      this.#buf.copyWithin(0, this.#r, this.#w);
    }
    this.#r = 0;
    this.#w = unread;
  }
}

function indexOfBytes(hay: Uint8Array, needle: Uint8Array, from: number): number {
  for (let i = hay.indexOf(needle[0], from); i >= 0; i = hay.indexOf(needle[0], i + 1)) {
    if (i + needle.length > hay.length) return -1;
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** Header values by Go's canonical key (`textproto.MIMEHeader`), in the order received. */
export type MIMEHeader = Map<string, string[]>;

/** A parsed response head with its body framing. */
export interface ResponseHead {
  statusCode: number;
  /** Headers by canonical name; Transfer-Encoding is removed as Go's readTransfer does. */
  header: MIMEHeader;
  /** How the body is delimited. */
  framing: BodyFraming;
}

/** Go's body cases in readTransfer: none, a Content-Length, chunked, or until the connection ends. */
export type BodyFraming =
  | { kind: "none" }
  | { kind: "length"; length: number }
  | { kind: "chunked" }
  | { kind: "eof" };

/**
 * Reads one response head and decides its framing, as Go's `http.ReadResponse` (the body is
 * left on the reader). Throws Go's error texts (`malformed HTTP status code "2x0"`,
 * `bad Content-Length "abc"`, `unexpected EOF`, ...) without the transport's prefix.
 *
 * @example
 * ```ts
 * declare const br: BufReader;
 * const head = await readResponse(br);
 * head.statusCode; // 200
 * ```
 */
export async function readResponse(br: BufReader): Promise<ResponseHead> {
  let line = br.tryLine();
  try {
    line ??= await br.readLine();
  } catch (err) {
    throw err === errEOF ? new Error("unexpected EOF") : err;
  }
  const text = latin1(line);
  const sp = text.indexOf(" ");
  if (sp < 0) throw new Error(`malformed HTTP response ${goQuoteBytes(line)}`);
  const proto = text.slice(0, sp);
  const status = text.slice(sp + 1).replace(/^ +/, "");
  const codeText = status.split(" ")[0];
  // strconv.Atoi: an optional sign, then digits; a negative code is refused.
  if (codeText.length !== 3 || !/^[+-]?[0-9]+$/.test(codeText) || Number(codeText) < 0) {
    throw new Error(`malformed HTTP status code ${quoteLatin1(codeText)}`);
  }
  const version = parseHTTPVersion(proto);
  if (!version) throw new Error(`malformed HTTP version ${quoteLatin1(proto)}`);
  let header: MIMEHeader;
  try {
    header = await readMIMEHeader(br);
  } catch (err) {
    throw err === errEOF ? new Error("unexpected EOF") : err;
  }
  const statusCode = Math.abs(Number(codeText));
  return { statusCode, header, framing: readTransfer(statusCode, version, header) };
}

// Go's ParseHTTPVersion: "HTTP/" and one digit each side of a dot.
function parseHTTPVersion(proto: string): [number, number] | undefined {
  if (proto === "HTTP/1.1") return [1, 1];
  const m = /^HTTP\/([0-9])\.([0-9])$/.exec(proto);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function quoteLatin1(s: string): string {
  return goQuoteBytes(Uint8Array.from(s, (ch) => ch.charCodeAt(0)));
}

/**
 * Reads header lines up to the empty line as Go's `textproto.Reader.ReadMIMEHeader`: LF or CRLF
 * line ends, obs-fold continuation lines joined with one space, names with spaces accepted but
 * not canonicalised, values checked byte by byte. Throws `errEOF` when the stream ends first.
 *
 * @example
 * ```ts
 * declare const br: BufReader;
 * const header = await readMIMEHeader(br);
 * header.get("Content-Length"); // ["2"]
 * ```
 */
export async function readMIMEHeader(br: BufReader): Promise<MIMEHeader> {
  const m: MIMEHeader = new Map();
  const first = br.buffered() > 0 ? br.bufferedByte() : ((await br.peek(1))[0] ?? -1);
  if (first === SP || first === HT) {
    // Go quotes at most 80 bytes of it; a longer line is "message too large".
    if (!(await br.peekLine(defaultBufSize)) && br.buffered() >= defaultBufSize) {
      throw new Error("message too large");
    }
    const line = await br.readLine();
    if (line.length > 80) throw new Error("message too large");
    throw new Error(`malformed MIME header initial line: ${goQuoteBytes(line)}`);
  }
  for (;;) {
    // Without a continuation line already in sight, the line is complete as buffered.
    const line = br.tryLine();
    const next = br.bufferedByte();
    const kv =
      line !== undefined && (line.length === 0 || (next >= 0 && next !== SP && next !== HT))
        ? firstLine(line)
        : await readContinuedLine(br, line?.slice());
    if (kv.length === 0) return m;
    const colon = kv.indexOf(COLON);
    const key = canonicalMIMEHeaderKey(kv.subarray(0, colon));
    if (key === undefined) throw new Error(`malformed MIME header line: ${goQuoteBytes(kv)}`);
    const value = kv.subarray(colon + 1);
    if (!validHeaderValue(value)) {
      // Go canonicalised the name in the line's own bytes before looking at the value.
      const line = concat([Uint8Array.from(key, (ch) => ch.charCodeAt(0)), kv.subarray(colon)]);
      throw new Error(`malformed MIME header line: ${goQuoteBytes(line)}`);
    }
    let start = 0;
    while (start < value.length && (value[start] === SP || value[start] === HT)) start++;
    const values = m.get(key);
    const v = latin1(value.subarray(start));
    if (values) values.push(v);
    else m.set(key, [v]);
  }
}

// textproto's readContinuedLineSlice: one header line with its continuation lines, trimmed; empty
// at the end of the header. The first line must hold a colon.
// `line` is the first line when it was already taken from the reader.
async function readContinuedLine(br: BufReader, line?: Uint8Array): Promise<Uint8Array> {
  const first = firstLine(line ?? await br.readLine());
  if (first.length === 0) return first;
  const parts = [first];
  while (await skipSpace(br) > 0) {
    parts.push(new Uint8Array([SP]));
    let next: Uint8Array;
    try {
      next = await br.readLine();
    } catch {
      break;
    }
    parts.push(trim(next));
  }
  return parts.length === 1 ? parts[0] : concat(parts);
}

// The first line of a header field, trimmed; it must hold a colon (the name is on one line).
function firstLine(line: Uint8Array): Uint8Array {
  if (line.length === 0) return line;
  if (line.indexOf(COLON) < 0) {
    throw new Error(`malformed MIME header: missing colon: ${goQuoteBytes(line)}`);
  }
  return trim(line);
}

async function skipSpace(br: BufReader): Promise<number> {
  let n = 0;
  for (;;) {
    const peeked = await br.peek(1);
    if (peeked.length === 0 || (peeked[0] !== SP && peeked[0] !== HT)) return n;
    br.discard(1);
    n++;
  }
}

function trim(s: Uint8Array): Uint8Array {
  let i = 0;
  let j = s.length;
  while (i < j && (s[i] === SP || s[i] === HT)) i++;
  while (j > i && (s[j - 1] === SP || s[j - 1] === HT)) j--;
  return s.subarray(i, j);
}

// RFC 9110 tchar, the bytes Go allows in a header name.
const tokenByte = new Uint8Array(256);
for (const ch of "!#$%&'*+-.^_`|~0123456789") tokenByte[ch.charCodeAt(0)] = 1;
for (let c = 65; c <= 90; c++) tokenByte[c] = tokenByte[c + 32] = 1;

// textproto's canonicalMIMEHeaderKey: undefined when the name is empty or holds a byte that is
// neither a token byte nor a space; a name with a space is kept as received.
function canonicalMIMEHeaderKey(name: Uint8Array): string | undefined {
  if (name.length === 0) return undefined;
  let space = false;
  for (let i = 0; i < name.length; i++) {
    const c = name[i];
    if (c === SP) space = true;
    else if (!tokenByte[c]) return undefined;
  }
  if (space) return latin1(name);
  return commonHeader(name) ?? canonicalHeaderKey(latin1(name));
}

// Go's textproto commonHeader: usual names are answered with one shared string, so reading them
// builds none. Grouped by length.
const commonHeaders: string[][] = [];
for (
  const name of [
    "Accept",
    "Accept-Charset",
    "Accept-Encoding",
    "Accept-Language",
    "Accept-Ranges",
    "Cache-Control",
    "Cc",
    "Connection",
    "Content-Id",
    "Content-Language",
    "Content-Length",
    "Content-Transfer-Encoding",
    "Content-Type",
    "Cookie",
    "Date",
    "Dkim-Signature",
    "Etag",
    "Expires",
    "From",
    "Host",
    "If-Modified-Since",
    "If-None-Match",
    "In-Reply-To",
    "Last-Modified",
    "Location",
    "Message-Id",
    "Mime-Version",
    "Pragma",
    "Received",
    "Return-Path",
    "Server",
    "Set-Cookie",
    "Subject",
    "To",
    "User-Agent",
    "Via",
    "X-Forwarded-For",
    "X-Imforwards",
    "X-Powered-By",
  ]
) (commonHeaders[name.length] ??= []).push(name);

// The common name whose canonical form the token bytes `name` have, if any.
function commonHeader(name: Uint8Array): string | undefined {
  for (const candidate of commonHeaders[name.length] ?? []) {
    let upper = true;
    let i = 0;
    for (; i < name.length; i++) {
      let c = name[i];
      if (upper && c >= 0x61 && c <= 0x7a) c -= 0x20;
      else if (!upper && c >= 0x41 && c <= 0x5a) c += 0x20;
      if (c !== candidate.charCodeAt(i)) break;
      upper = c === 0x2d;
    }
    if (i === name.length) return candidate;
  }
  return undefined;
}

// Every byte VCHAR, SP, HTAB or obs-text (0x80-0xFF): other control bytes are refused. A plain
// loop: a callback per byte costs 15 times as much on a 9 MB value.
function validHeaderValue(value: Uint8Array): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if ((c < 0x20 && c !== HT) || c === 0x7f) return false;
  }
  return true;
}

// textproto.TrimString: ASCII space, tab, CR and LF at both ends.
function trimString(s: string): string {
  return s.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "");
}

function quoteList(values: string[]): string {
  return `[${values.map(quoteLatin1).join(" ")}]`;
}

/**
 * Go's `readTransfer` for a response to GET: Transfer-Encoding (HTTP/1.1 and later, exactly one
 * value, `chunked` in any case), Content-Length (repeated values must agree; digits only, at most
 * 2^63-1), the Trailer keys Go refuses, and no body for 1xx, 204 and 304. Removes
 * Transfer-Encoding from `header`. Throws Go's texts.
 *
 * @example
 * ```ts
 * readTransfer(200, [1, 1], new Map([["Content-Length", ["2"]]])); // { kind: "length", length: 2 }
 * ```
 */
export function readTransfer(
  statusCode: number,
  version: [number, number],
  header: MIMEHeader,
): BodyFraming {
  let [major, minor] = version;
  if (major === 0 && minor === 0) [major, minor] = [1, 1];
  let chunked = false;
  const te = header.get("Transfer-Encoding");
  if (te) {
    header.delete("Transfer-Encoding");
    if (major > 1 || (major === 1 && minor >= 1)) {
      if (te.length !== 1) throw new Error(`too many transfer encodings: ${quoteList(te)}`);
      // ascii.EqualFold: only ASCII letters fold.
      if (te[0].replace(/[A-Z]/g, (c) => c.toLowerCase()) !== "chunked") {
        throw new Error(`unsupported transfer encoding: ${quoteLatin1(te[0])}`);
      }
      chunked = true;
    }
  }
  const length = fixLength(statusCode, header, chunked);
  fixTrailer(header, chunked);
  const bodyAllowed = !(statusCode >= 100 && statusCode <= 199) && statusCode !== 204 &&
    statusCode !== 304;
  if (chunked) return bodyAllowed ? { kind: "chunked" } : { kind: "none" };
  if (length === 0) return { kind: "none" };
  if (length > 0) return { kind: "length", length };
  return { kind: "eof" };
}

// transfer.go's fixLength: the body length, -1 for "until the connection ends".
function fixLength(statusCode: number, header: MIMEHeader, chunked: boolean): number {
  let contentLens = header.get("Content-Length") ?? [];
  if (contentLens.length > 1) {
    const first = trimString(contentLens[0]);
    if (contentLens.slice(1).some((cl) => trimString(cl) !== first)) {
      throw new Error(
        `http: message cannot contain multiple Content-Length headers; got ${
          quoteList(contentLens)
        }`,
      );
    }
    contentLens = [first];
    header.set("Content-Length", contentLens);
  }
  let n = -1;
  if (contentLens.length > 0) {
    const cl = trimString(contentLens[0]);
    if (cl === "") throw new Error(`invalid empty Content-Length ${goQuote(cl)}`);
    if (!/^[0-9]+$/.test(cl) || BigInt(cl) > 0x7fffffffffffffffn) {
      throw new Error(`bad Content-Length ${quoteLatin1(cl)}`);
    }
    n = Number(cl);
  }
  if (Math.floor(statusCode / 100) === 1 || statusCode === 204 || statusCode === 304) return 0;
  if (chunked) {
    header.delete("Content-Length");
    return -1;
  }
  return n;
}

// transfer.go's fixTrailer: a chunked response may not announce these as trailers.
function fixTrailer(header: MIMEHeader, chunked: boolean): void {
  const trailer = header.get("Trailer");
  if (!trailer || !chunked) return;
  for (const value of trailer) {
    for (const element of value.split(",")) {
      const key = canonicalHeaderKey(trimString(element));
      if (key === "Transfer-Encoding" || key === "Trailer" || key === "Content-Length") {
        throw new Error(`bad trailer key ${quoteLatin1(key)}`);
      }
    }
  }
}

/** A response body: `read(max)` gives up to `max` bytes, or null once the body has ended. */
export interface BodyReader {
  /**
   * The next body bytes (at most `max`, at least one), or null at the end of the body. Throws Go's
   * text when the body is malformed or the connection fails.
   */
  read(max: number): Promise<Uint8Array | null>;
}

/**
 * The body reader for a framing, over the reader the head was read from.
 *
 * @example
 * ```ts
 * declare const br: BufReader;
 * const head = await readResponse(br);
 * const body = newBodyReader(br, head.framing);
 * const bytes = await body.read(10240);
 * ```
 */
export function newBodyReader(br: BufReader, framing: BodyFraming): BodyReader {
  switch (framing.kind) {
    case "none":
      return { read: () => Promise.resolve(null) };
    case "eof":
      return { read: (max) => br.read(max) };
    case "length":
      return new LengthReader(br, framing.length);
    case "chunked":
      return new ChunkedReader(br);
  }
}

// io.LimitReader under transfer.go's body: an early end is "unexpected EOF".
class LengthReader implements BodyReader {
  #left: number;
  constructor(readonly br: BufReader, length: number) {
    this.#left = length;
  }

  async read(max: number): Promise<Uint8Array | null> {
    if (this.#left <= 0) return null;
    const chunk = await this.br.read(Math.min(max, this.#left));
    if (chunk === null) throw new Error("unexpected EOF");
    this.#left -= chunk.length;
    return chunk;
  }
}

const doubleCRLF = new Uint8Array([CR, LF, CR, LF]);

/**
 * Go's `chunkedReader` plus the trailer read of transfer.go's `body`. Like Go's `Read`, once a
 * call has data it stops rather than wait for the CRLF after a chunk or the next chunk line; what
 * is already buffered is still checked, and a last chunk found that way has its trailer read.
 */
class ChunkedReader implements BodyReader {
  #n = 0; // unread bytes of the current chunk
  #checkEnd = false; // the CRLF after a chunk's data is still to be read
  #excess = 0; // chunk-line bytes beyond what the data justifies
  #done = false;

  constructor(readonly br: BufReader) {}

  async read(max: number): Promise<Uint8Array | null> {
    if (this.#done) return null;
    const parts: Uint8Array[] = [];
    let n = 0;
    for (;;) {
      if (this.#checkEnd) {
        if (n > 0 && this.br.buffered() < 2) break;
        const end = await this.br.peek(2);
        if (end.length < 2) throw this.#eofIsUnexpected();
        if (end[0] !== CR || end[1] !== LF) throw new Error("malformed chunked encoding");
        this.br.discard(2);
        this.#checkEnd = false;
      }
      if (this.#n === 0) {
        if (n > 0 && !this.#chunkHeaderAvailable()) break;
        if (await this.#beginChunk()) {
          await this.#readTrailer();
          this.#done = true;
          break;
        }
        continue;
      }
      if (n === max) break;
      const data = await this.br.read(Math.min(max - n, this.#n));
      if (data === null) throw new Error("unexpected EOF");
      parts.push(data);
      n += data.length;
      this.#n -= data.length;
      if (this.#n === 0) this.#checkEnd = true;
    }
    if (n === 0) return null;
    return parts.length === 1 ? parts[0] : concat(parts);
  }

  #eofIsUnexpected(): Error {
    const err = this.br.error;
    return !err || err === errEOF ? new Error("unexpected EOF") : err;
  }

  // Whether a whole chunk line is already buffered (Go's chunkHeaderAvailable): never reads.
  #chunkHeaderAvailable(): boolean {
    return this.br.bufferedHasLF();
  }

  // Reads a chunk-size line; true at the last chunk.
  async #beginChunk(): Promise<boolean> {
    const raw = await this.br.peekLine(defaultBufSize);
    if (raw === undefined) {
      if (this.br.buffered() >= defaultBufSize) throw new Error("header line too long");
      throw this.#eofIsUnexpected();
    }
    this.br.discard(raw.length);
    const cr = raw.indexOf(CR);
    if (cr < 0) throw new Error("chunked line ends with bare LF");
    if (cr !== raw.length - 2) throw new Error("invalid CR in chunked line");
    let line = raw.subarray(0, raw.length - 2);
    if (line.length >= defaultBufSize) throw new Error("header line too long");
    this.#excess += line.length + 2;
    let end = line.length;
    while (end > 0 && (line[end - 1] === SP || line[end - 1] === HT)) end--;
    line = line.subarray(0, end);
    const semi = line.indexOf(59);
    if (semi >= 0) line = line.subarray(0, semi);
    this.#n = parseHexUint(line);
    this.#excess = Math.max(0, this.#excess - 16 - 2 * this.#n);
    if (this.#excess > maxChunkedExcess) {
      throw new Error("chunked encoding contains too much non-data");
    }
    return this.#n === 0;
  }

  // transfer.go's body.readTrailer: an empty line, or header lines whose blank line ends within
  // the reader's 4 KiB.
  async #readTrailer(): Promise<void> {
    const start = await this.br.peek(2);
    if (start.length === 2 && start[0] === CR && start[1] === LF) {
      this.br.discard(2);
      return;
    }
    if (start.length < 2) throw new Error("http: unexpected EOF reading trailer");
    if (!(await this.br.seeUpcoming(doubleCRLF, defaultBufSize))) {
      throw new Error("http: suspiciously long trailer after chunked body");
    }
    try {
      await readMIMEHeader(this.br);
    } catch (err) {
      throw err === errEOF ? new Error("http: unexpected EOF reading trailer") : err;
    }
  }
}

// internal/chunked.go's parseHexUint: at most 16 hex digits.
function parseHexUint(v: Uint8Array): number {
  if (v.length === 0) throw new Error("empty hex number for chunk length");
  let n = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    let d: number;
    if (c >= 48 && c <= 57) d = c - 48;
    else if (c >= 97 && c <= 102) d = c - 87;
    else if (c >= 65 && c <= 70) d = c - 55;
    else throw new Error("invalid byte in chunk length");
    if (i === 16) throw new Error("http chunk length too large");
    n = n * 16 + d;
  }
  return n;
}
