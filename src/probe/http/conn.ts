/**
 * A minimal HTTP/1.1 client exchange over `Deno.connect` for HTTP probes: one connection (TLS over
 * it for HTTPS, see tls_conn.ts), the request bytes written as given, and the response read as
 * Go's persistConn does (response.ts parses heads and bodies): 1xx answers skipped, all heads of
 * one response within `MaxResponseHeaderBytes`. About half the CPU of a `node:http` request in
 * Deno (measured in docs/benchmarks/).
 * Error texts are those of Go's transport (`EOF`, `net/http: HTTP/1.x transport connection broken:
 * malformed HTTP response "..."`, `read tcp a->b: read: connection reset by peer`).
 * @module
 */
import { dialErrorText } from "../tcp/tcp.ts";
import { abortConn, writeAll } from "../../util/socket.ts";
import { joinHostPort } from "./url.ts";
import {
  type BodyReader,
  BufReader,
  errEOF,
  maxResponseHeaderBytes,
  newBodyReader,
  readResponse,
} from "./response.ts";
import { errorText } from "../../util/errors.ts";

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
  const message = errorText(err);
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
  /** Header values by Go's canonical name (`Location`), in order received. */
  headers: Map<string, string[]>;
}

const enc = new TextEncoder();

/**
 * One request/response on its own TCP connection. `send` connects, writes and reads the response
 * head; `readBody` then reads up to a limit; `close` releases the socket (always call it).
 */
export class ConnExchange {
  #tcp: Deno.TcpConn | undefined;
  #conn: ByteConn | undefined;
  #upgrade: Upgrade | undefined;
  #closed = false;
  #peers: ConnPeers = { local: "", remote: "" };
  #body: BodyReader | undefined;
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
   * the final response head (1xx answers other than 101 are skipped, as Go does, however many).
   * Throws Error with Go's text.
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
        // Plain TCP through writeAll, so that the deadline's abortConn can end a write the server
        // never reads (TLS writes go through it in tls_conn.ts).
        if (conn === tcp) await writeAll(tcp, bytes);
        else for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
      } catch (err) {
        if (deadline.expired) throw new Error(errors.timeout);
        throw new Error(ioErrorText("write", err, this.#peers));
      }
      return await this.#readResponse(deadline, errors.timeout);
    } finally {
      unwatch();
    }
  }

  /**
   * Reads the body up to `limit` bytes. Stopping at the limit is not an error; a connection that
   * ends before the framing says it should is `unexpected EOF`, a malformed chunked body or
   * trailer is Go's text for it; the deadline gives `timeoutText`. A chunked body is complete
   * only with its trailer, read within the same deadline.
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
      // io.LimitedReader under utilio.ReadAtMost: no read once the limit is reached.
      while (length < limit && !this.#bodyDone) {
        const chunk = await this.#body!.read(limit - length);
        if (chunk === null) {
          this.#bodyDone = true;
          break;
        }
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
    // A TLS connection is closed over its socket; a plain one is the socket itself, closed once
    // by abortConn below (closing it twice threw, and built, an error on every probe).
    if (this.#conn !== undefined && this.#conn !== this.#tcp) {
      try {
        this.#conn.close();
      } catch {
        // Already closed by a failed read or write.
      }
    }
    // Not close() alone: a write the server does not read would keep the socket (util/socket.ts).
    if (this.#tcp) abortConn(this.#tcp);
  }

  // ---- reading ----

  // The connection's read for the buffered reader, failing with Go's texts.
  async #read(p: Uint8Array): Promise<number | null> {
    if (!this.#conn || this.#closed) throw new Error("use of closed network connection");
    try {
      const n = await this.#conn.read(p);
      // Closed by us (the deadline): TLS reports that as its stream's end, not the server's EOF.
      if (n === null && this.#closed) throw new Error("use of closed network connection");
      return n;
    } catch (err) {
      if (this.#closed) throw new Error("use of closed network connection");
      throw new Error(ioErrorText("read", err, this.#peers));
    }
  }

  // persistConn's readLoop and readResponse: the heads of one response share the 10 MiB limit;
  // 1xx heads other than 101 are skipped.
  async #readResponse(deadline: ExchangeDeadline, timeoutText: string): Promise<ConnResponse> {
    const br = new BufReader((p) => this.#read(p));
    br.readLimit = maxResponseHeaderBytes;
    // Nothing at all: Go's transport reports the bare error of its first read (`EOF`).
    if ((await br.peek(1)).length === 0) {
      if (deadline.expired) throw new Error(timeoutText);
      throw br.error === errEOF ? new Error("EOF") : br.error!;
    }
    for (;;) {
      let head;
      try {
        head = await readResponse(br);
      } catch (err) {
        if (deadline.expired) throw new Error(timeoutText);
        const text = br.readLimit <= 0
          ? `net/http: server response headers exceeded ${maxResponseHeaderBytes} bytes; aborted`
          : (err as Error).message;
        throw new Error(`${transportBroken}${text}`);
      }
      if (head.statusCode >= 100 && head.statusCode <= 199 && head.statusCode !== 101) continue;
      br.readLimit = Number.POSITIVE_INFINITY;
      this.#body = newBodyReader(br, head.framing);
      return { statusCode: head.statusCode, headers: head.header };
    }
  }
}
