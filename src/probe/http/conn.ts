/**
 * A minimal HTTP/1.1 client exchange over `Deno.connect` for HTTP probes: one connection (TLS over
 * it for HTTPS, see tls_conn.ts), the request bytes written as given, the response head parsed as
 * Go's `http.ReadResponse` does, and the body framed by `Transfer-Encoding: chunked`,
 * `Content-Length` or the end of the connection. About half the CPU of a `node:http` request in
 * Deno (measured in the README's Benchmarks).
 * Error texts are those of Go's transport (`EOF`, `malformed HTTP response "..."`,
 * `read tcp a->b: read: connection reset by peer`).
 * @module
 */
import { dialErrorText } from "../tcp/tcp.ts";
import { goQuote } from "../../util/go_format.ts";
import { joinHostPort } from "./url.ts";

/** Go's default `Transport.MaxResponseHeaderBytes`. */
export const maxResponseHeaderBytes = 10 << 20;

const transportBroken = "net/http: HTTP/1.x transport connection broken: ";

/** Something that aborts a pending connect or read: the probe's deadline. */
export interface ExchangeDeadline {
  /** True once the deadline passed. */
  readonly expired: boolean;
  /** Runs `fn` at expiry; returns the unsubscribe. */
  watch(fn: () => void): () => void;
}

/** The byte stream an exchange runs on: the TCP connection itself, or TLS over it. */
export interface ByteConn {
  /** Reads into `p`; the number of bytes read, or null at the end of the stream. */
  read(p: Uint8Array): Promise<number | null>;
  /** Writes `p`; the number of bytes written. */
  write(p: Uint8Array): Promise<number>;
  /** Releases the stream (and the connection under it). */
  close(): void;
}

/** Both ends of a TCP connection as `host:port`, for Go's `read tcp a->b: ...` texts. */
export interface ConnPeers {
  local: string;
  remote: string;
}

/** An error whose message is already the text Go shows after `Get "<url>": `. */
export class GoConnError extends Error {
  /** `message` is used as is. */
  constructor(message: string) {
    super(message);
    this.name = "GoConnError";
  }
}

/**
 * Go's `read tcp a->b: read: <errno text>` (or `write ...`) for a failed socket operation; a
 * `GoConnError` keeps its own text.
 *
 * @example
 * ```ts
 * ioErrorText("read", new Deno.errors.ConnectionReset("reset"), { local: "a:1", remote: "b:2" });
 * // "read tcp a:1->b:2: read: connection reset by peer"
 * ```
 */
export function ioErrorText(op: "read" | "write", err: unknown, peers: ConnPeers): string {
  if (err instanceof GoConnError) return err.message;
  const code = (err as { code?: string })?.code;
  const prefix = `${op} tcp ${peers.local}->${peers.remote}: ${op}: `;
  if (code === "ECONNRESET" || err instanceof Deno.errors.ConnectionReset) {
    return `${prefix}connection reset by peer`;
  }
  if (code === "EPIPE" || err instanceof Deno.errors.BrokenPipe) return `${prefix}broken pipe`;
  const message = err instanceof Error ? err.message : String(err);
  return `${prefix}${message.replace(/ \(os error \d+\)$/, "").toLowerCase()}`;
}

/**
 * Turns the connected TCP socket into the stream the request travels on (the TLS handshake for
 * HTTPS). Rejects with a `GoConnError`; closing `tcp` must abort it.
 */
export type Upgrade = (tcp: Deno.TcpConn, peers: ConnPeers) => Promise<ByteConn>;

/** The response of one exchange: status, headers, and the body still on the connection. */
export interface ConnResponse {
  statusCode: number;
  /** Header values by lower-case name, in order received. */
  headers: Map<string, string[]>;
}

const enc = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/**
 * One request/response on its own TCP connection. `send` connects, writes and reads the response
 * head; `readBody` then reads up to a limit; `close` releases the socket (always call it).
 */
export class ConnExchange {
  #tcp: Deno.TcpConn | undefined;
  #conn: ByteConn | undefined;
  #upgrade: Upgrade | undefined;
  #buf = new Uint8Array(0);
  #closed = false;
  #peers: ConnPeers = { local: "", remote: "" };
  #response: ConnResponse | undefined;
  // Body framing once the head is read.
  #chunked = false;
  #remaining = -1; // bytes of a Content-Length body left; -1 = until EOF
  #chunkLeft = 0; // bytes left in the current chunk
  #bodyDone = false;

  /** `upgrade` runs once the TCP connection is up, before the request is written (HTTPS). */
  constructor(
    readonly hostname: string,
    readonly port: number,
    options: { upgrade?: Upgrade } = {},
  ) {
    this.#peers.remote = joinHostPort(hostname, String(port));
    this.#upgrade = options.upgrade;
  }

  /**
   * Connects, writes `head` (the request line and headers, ending with an empty line) and reads
   * the final response head (1xx answers are skipped, as Go does). Throws Error with Go's text.
   */
  async send(head: string, deadline: ExchangeDeadline, errors: { timeout: string }): Promise<
    ConnResponse
  > {
    const controller = new AbortController();
    const unwatch = deadline.watch(() => {
      controller.abort();
      this.close();
    });
    try {
      let tcp: Deno.TcpConn;
      try {
        tcp = await Deno.connect({
          hostname: this.hostname,
          port: this.port,
          signal: controller.signal,
        });
      } catch (err) {
        if (deadline.expired) throw new Error(errors.timeout);
        throw new Error(dialErrorText(this.#peers.remote, this.hostname, err, false));
      }
      this.#tcp = tcp;
      if (this.#closed) {
        tcp.close();
        throw new Error(errors.timeout);
      }
      const local = tcp.localAddr as Deno.NetAddr;
      const remote = tcp.remoteAddr as Deno.NetAddr;
      this.#peers = {
        local: joinHostPort(local.hostname, String(local.port)),
        remote: joinHostPort(remote.hostname, String(remote.port)),
      };
      let conn: ByteConn = tcp;
      if (this.#upgrade) {
        try {
          conn = await this.#upgrade(tcp, this.#peers);
        } catch (err) {
          if (deadline.expired) throw new Error(errors.timeout);
          throw new Error(ioErrorText("read", err, this.#peers));
        }
        if (this.#closed) {
          conn.close();
          throw new Error(errors.timeout);
        }
      }
      this.#conn = conn;
      const bytes = enc.encode(head);
      try {
        for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
      } catch (err) {
        if (deadline.expired) throw new Error(errors.timeout);
        throw new Error(ioErrorText("write", err, this.#peers));
      }
      for (let informational = 0;; informational++) {
        const response = await this.#readHead(deadline, errors.timeout, informational === 0);
        // Go skips 1xx answers other than 101 (at most 5 of them).
        if (
          response.statusCode >= 100 && response.statusCode < 200 &&
          response.statusCode !== 101 && informational < 5
        ) {
          continue;
        }
        this.#response = response;
        this.#frameBody(response);
        return response;
      }
    } finally {
      unwatch();
    }
  }

  /**
   * Reads the body up to `limit` bytes. Stopping at the limit is not an error; a connection that
   * ends before the framing says it should is `unexpected EOF`; the deadline gives `timeoutText`.
   */
  async readBody(
    limit: number,
    deadline: ExchangeDeadline,
    timeoutText: string,
  ): Promise<{ body: Uint8Array; error?: Error }> {
    const parts: Uint8Array[] = [];
    let length = 0;
    const body = () => {
      const out = new Uint8Array(Math.min(length, limit));
      let off = 0;
      for (const p of parts) {
        const take = p.subarray(0, out.length - off);
        out.set(take, off);
        off += take.length;
        if (off >= out.length) break;
      }
      return out;
    };
    if (deadline.expired) return { body: body(), error: new Error(timeoutText) };
    const unwatch = deadline.watch(() => this.close());
    try {
      while (length < limit && !this.#bodyDone) {
        const chunk = await this.#nextBodyBytes(limit - length);
        if (chunk === null) break;
        parts.push(chunk);
        length += chunk.length;
      }
      return { body: body() };
    } catch (err) {
      if (deadline.expired) return { body: body(), error: new Error(timeoutText) };
      return { body: body(), error: err instanceof Error ? err : new Error(String(err)) };
    } finally {
      unwatch();
    }
  }

  /** Releases the connection. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      // The TLS layer closes the connection under it; before it exists, the TCP one is closed.
      (this.#conn ?? this.#tcp)?.close();
    } catch {
      // Already closed by a failed read or write.
    }
  }

  // ---- reading ----

  // Reads more bytes into the buffer; false at EOF.
  async #fill(): Promise<boolean> {
    if (!this.#conn || this.#closed) throw new Error("use of closed network connection");
    const chunk = new Uint8Array(4096);
    let n: number | null;
    try {
      n = await this.#conn.read(chunk);
    } catch (err) {
      if (this.#closed) throw new Error("use of closed network connection");
      throw new Error(ioErrorText("read", err, this.#peers));
    }
    if (n === null) return false;
    if (this.#buf.length === 0) {
      this.#buf = chunk.subarray(0, n);
    } else {
      const joined = new Uint8Array(this.#buf.length + n);
      joined.set(this.#buf);
      joined.set(chunk.subarray(0, n), this.#buf.length);
      this.#buf = joined;
    }
    return true;
  }

  async #readHead(
    deadline: ExchangeDeadline,
    timeoutText: string,
    first: boolean,
  ): Promise<ConnResponse> {
    let end = -1;
    let scanned = 0;
    for (;;) {
      end = indexOfHeadEnd(this.#buf, Math.max(0, scanned - 3));
      if (end >= 0) break;
      scanned = this.#buf.length;
      if (scanned > maxResponseHeaderBytes) {
        throw new Error(
          `net/http: server response headers exceeded ${maxResponseHeaderBytes} bytes; aborted`,
        );
      }
      let more: boolean;
      try {
        more = await this.#fill();
      } catch (err) {
        if (deadline.expired) throw new Error(timeoutText);
        throw err;
      }
      if (!more) {
        // Nothing at all: Go's transport reports the bare EOF of its first read.
        if (this.#buf.length === 0 && first) throw new Error("EOF");
        throw new Error(`${transportBroken}unexpected EOF`);
      }
    }
    const head = latin1.decode(this.#buf.subarray(0, end));
    this.#buf = this.#buf.subarray(end + 4);
    return parseHead(head);
  }

  #frameBody(response: ConnResponse): void {
    const status = response.statusCode;
    const te = (response.headers.get("transfer-encoding") ?? []).join(",").toLowerCase();
    if (status === 204 || status === 304 || (status >= 100 && status < 200)) {
      this.#bodyDone = true;
    } else if (te.split(",").map((t) => t.trim()).includes("chunked")) {
      this.#chunked = true;
    } else {
      const cl = response.headers.get("content-length")?.[0];
      if (cl !== undefined && /^\d+$/.test(cl.trim())) {
        this.#remaining = Number(cl.trim());
        if (this.#remaining === 0) this.#bodyDone = true;
      }
    }
  }

  // The next body bytes (at most `max`), or null at the end of the body.
  async #nextBodyBytes(max: number): Promise<Uint8Array | null> {
    if (this.#chunked) return await this.#nextChunkBytes(max);
    if (this.#buf.length === 0) {
      const more = await this.#fill();
      if (!more) {
        this.#bodyDone = true;
        if (this.#remaining > 0) throw new Error("unexpected EOF");
        return null;
      }
    }
    let take = Math.min(this.#buf.length, max);
    if (this.#remaining >= 0) take = Math.min(take, this.#remaining);
    const out = this.#buf.subarray(0, take);
    this.#buf = this.#buf.subarray(take);
    if (this.#remaining >= 0) {
      this.#remaining -= take;
      if (this.#remaining === 0) this.#bodyDone = true;
    }
    return out;
  }

  async #nextChunkBytes(max: number): Promise<Uint8Array | null> {
    while (this.#chunkLeft === 0) {
      const line = await this.#readLine();
      const size = parseInt(line.split(";")[0].trim(), 16);
      if (!/^[0-9a-fA-F]+$/.test(line.split(";")[0].trim()) || !Number.isFinite(size)) {
        throw new Error("invalid byte in chunk length");
      }
      if (size === 0) {
        // Trailers up to the empty line; a connection that ends here is still a complete body.
        for (;;) {
          const trailer = await this.#readLine().catch(() => "");
          if (trailer === "") break;
        }
        this.#bodyDone = true;
        return null;
      }
      this.#chunkLeft = size;
    }
    if (this.#buf.length === 0 && !(await this.#fill())) throw new Error("unexpected EOF");
    const take = Math.min(this.#buf.length, max, this.#chunkLeft);
    const out = this.#buf.subarray(0, take);
    this.#buf = this.#buf.subarray(take);
    this.#chunkLeft -= take;
    if (this.#chunkLeft === 0) {
      // The CRLF after the chunk data.
      while (this.#buf.length < 2) {
        if (!(await this.#fill())) throw new Error("unexpected EOF");
      }
      if (this.#buf[0] !== 13 || this.#buf[1] !== 10) throw new Error("malformed chunked encoding");
      this.#buf = this.#buf.subarray(2);
    }
    return out;
  }

  async #readLine(): Promise<string> {
    for (;;) {
      const nl = this.#buf.indexOf(10);
      if (nl >= 0) {
        const line = latin1.decode(this.#buf.subarray(0, nl)).replace(/\r$/, "");
        this.#buf = this.#buf.subarray(nl + 1);
        return line;
      }
      if (this.#buf.length > 4096) throw new Error("http chunk length too large");
      if (!(await this.#fill())) throw new Error("unexpected EOF");
    }
  }
}

function indexOfHeadEnd(buf: Uint8Array, from: number): number {
  for (let i = buf.indexOf(13, from); i >= 0 && i + 3 < buf.length; i = buf.indexOf(13, i + 1)) {
    if (buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
  }
  return -1;
}

/**
 * Parses a response head (status line and header lines, without the final empty line) as Go's
 * `http.ReadResponse`; throws with the transport's text when it is malformed.
 *
 * @example
 * ```ts
 * parseHead("HTTP/1.1 200 OK\r\nContent-Length: 2").statusCode; // 200
 * ```
 */
export function parseHead(head: string): ConnResponse {
  const lines = head.split("\r\n");
  const statusLine = lines[0];
  const sp = statusLine.indexOf(" ");
  if (sp < 0) throw new Error(`${transportBroken}malformed HTTP response ${goQuote(statusLine)}`);
  const proto = statusLine.slice(0, sp);
  const rest = statusLine.slice(sp + 1).replace(/^ +/, "");
  const codeText = rest.split(" ")[0];
  if (!/^HTTP\/\d\.\d$/.test(proto)) {
    throw new Error(`${transportBroken}malformed HTTP version ${goQuote(proto)}`);
  }
  if (!/^\d{3}$/.test(codeText)) {
    throw new Error(`${transportBroken}malformed HTTP status code ${goQuote(codeText)}`);
  }
  const headers = new Map<string, string[]>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    if (colon <= 0 || /[ \t]/.test(line.slice(0, colon))) {
      throw new Error(`${transportBroken}malformed MIME header line: ${goQuote(line)}`);
    }
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const values = headers.get(name);
    if (values) values.push(value);
    else headers.set(name, [value]);
  }
  return { statusCode: Number(codeText), headers };
}
