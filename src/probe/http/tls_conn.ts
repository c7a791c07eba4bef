/**
 * TLS for HTTPS probes: a client handshake over a TCP connection the probe already opened with
 * `Deno.connect`, without verifying the server (kubelet's `InsecureSkipVerify`), returned as the
 * same read/write/close connection the plain-HTTP exchange uses (conn.ts).
 *
 * The TLS engine is `node:tls` (Deno's own `connectTls`/`startTls` always verify the certificate
 * chain), run over a small stream that carries the TCP bytes, so that the server's first five
 * bytes are seen: Go names a non-TLS answer by them (`http: server gave HTTP response to HTTPS
 * client`, `tls: first record does not look like a TLS handshake`), and the TLS library reports
 * all of these with one error. Going through `tls.connect` directly instead of `node:https`'s
 * agent and client request costs about a third less CPU per probe (docs/benchmarks/).
 * Known difference: `node:tls` is rustls, which refuses any handshake message over 64 KiB, so a
 * certificate chain between 64 and 256 KiB (Go's `maxHandshakeCertificateMsg`) fails here and
 * passes in kubelet; no option lifts it (docs/hardening/http1.md).
 * @module
 */
import { Duplex } from "node:stream";
import * as tls from "node:tls";
import { type ByteConn, type ConnPeers, GoConnError, ioErrorText } from "./conn.ts";
import { abortConn, writeAll } from "../../util/socket.ts";

// crypto/tls's maxCiphertext: the largest record body a TLS 1.2 peer may send.
const maxCiphertext = 16384 + 2048;

/**
 * Go's crypto/tls checks of the first record header, with net/http's special case for a plain
 * HTTP answer; undefined when the header looks like TLS (then the TLS library's error stands).
 *
 * @example
 * ```ts
 * recordHeaderError(new TextEncoder().encode("HTTP/")); // "http: server gave HTTP response to HTTPS client"
 * ```
 */
export function recordHeaderError(header: Uint8Array): string | undefined {
  if (header.length < 5) return undefined;
  if (new TextDecoder().decode(header) === "HTTP/") {
    return "http: server gave HTTP response to HTTPS client";
  }
  const type = header[0];
  if (type === 0x80) return "tls: unsupported SSLv2 handshake received";
  const version = (header[1] << 8) | header[2];
  // 21 = alert, 22 = handshake; a version ≥ 16.0 is not a real TLS version.
  if ((type !== 21 && type !== 22) || version >= 0x1000) {
    return "tls: first record does not look like a TLS handshake";
  }
  const length = (header[3] << 8) | header[4];
  if (length > maxCiphertext) return `tls: oversized record received with length ${length}`;
  return undefined;
}

/** The TCP side of a TLS connection: what it saw, for error texts. */
class Wire {
  /** The first five bytes the server sent, once seen. */
  header: Uint8Array | undefined;
  #seen = new Uint8Array(0);
  /** Bytes received in all. */
  received = 0;
  /** The first failed TCP read or write, if any. */
  error: unknown;
  /** Which operation failed first. */
  errorOp: "read" | "write" = "read";
  /** The server closed its side. */
  eof = false;
  /** The TCP connection is closed. */
  closed = false;
  /** Closes the TCP connection once. */
  closeTcp: () => void = () => {};

  note(chunk: Uint8Array): void {
    this.received += chunk.length;
    if (this.header !== undefined) return;
    const joined = new Uint8Array(this.#seen.length + chunk.length);
    joined.set(this.#seen);
    joined.set(chunk, this.#seen.length);
    if (joined.length >= 5) {
      this.header = joined.slice(0, 5);
      this.#seen = new Uint8Array(0);
    } else {
      this.#seen = joined;
    }
  }
}

/**
 * The byte stream node:tls runs over: reads from the TCP connection as TLS asks for more (so a
 * server that floods is not buffered without bound), writes straight to it.
 */
function wireStream(tcp: Deno.TcpConn, wire: Wire): Duplex {
  let wanted: (() => void) | undefined;
  const closeTcp = () => {
    if (wire.closed) return;
    wire.closed = true;
    // Ends a write the server does not read too (util/socket.ts).
    abortConn(tcp);
  };
  wire.closeTcp = closeTcp;
  const stream = new Duplex({
    read() {
      const resume = wanted;
      wanted = undefined;
      resume?.();
    },
    write(chunk: Uint8Array, _encoding, callback) {
      writeAll(tcp, chunk).then(() => callback(), (err) => {
        if (wire.error === undefined) {
          wire.error = err;
          wire.errorOp = "write";
        }
        callback(err);
      });
    },
    final(callback) {
      callback();
    },
    destroy(err, callback) {
      closeTcp();
      callback(err);
    },
  });
  (async () => {
    const buf = new Uint8Array(16 * 1024 + 512);
    for (;;) {
      let n: number | null;
      try {
        n = await tcp.read(buf);
      } catch (err) {
        if (wire.error === undefined) wire.error = err;
        stream.destroy(err as Error);
        return;
      }
      if (n === null) {
        wire.eof = true;
        stream.push(null);
        return;
      }
      const chunk = buf.slice(0, n);
      wire.note(chunk);
      if (!stream.push(chunk)) await new Promise<void>((resolve) => wanted = resolve);
      if (stream.destroyed) return;
    }
  })();
  return stream;
}

// One context for every probe connection: building it per connection cost ~5 % of a probe's CPU.
let secureContext: tls.SecureContext | undefined;

/**
 * Runs a TLS client handshake over `tcp` without verifying the server, offering ALPN `http/1.1`
 * and, for a host name (not an IP literal), SNI. Resolves once the handshake is done; rejects with
 * a `GoConnError` carrying Go's text. Closing `tcp` aborts it (the probe's deadline does that).
 *
 * @example
 * ```ts
 * const tcp = await Deno.connect({ hostname: "127.0.0.1", port: 8443 });
 * const conn = await startTls(tcp, { peers: { local: "127.0.0.1:50000", remote: "127.0.0.1:8443" } });
 * ```
 */
export function startTls(
  tcp: Deno.TcpConn,
  options: { servername?: string; peers: ConnPeers },
): Promise<ByteConn> {
  const wire = new Wire();
  const { peers } = options;
  secureContext ??= tls.createSecureContext({
    // No verification, so no trust roots: without an explicit list Deno's node:tls loads the
    // system root store for every connection (~2.5 ms of CPU each).
    ca: [],
  });
  const socket = tls.connect({
    socket: wireStream(tcp, wire),
    rejectUnauthorized: false,
    secureContext,
    servername: options.servername,
    ALPNProtocols: ["http/1.1"],
  });
  return new Promise<ByteConn>((resolve, reject) => {
    const fail = (err?: Error) => {
      socket.destroy();
      reject(new GoConnError(handshakeErrorText(err, wire, peers)));
    };
    socket.once("secureConnect", () => {
      socket.off("error", fail);
      socket.off("close", onClose);
      resolve(new TlsByteConn(socket, wire, peers));
    });
    const onClose = () => fail(undefined);
    socket.once("error", fail);
    socket.once("close", onClose);
  });
}

function handshakeErrorText(err: Error | undefined, wire: Wire, peers: ConnPeers): string {
  if (wire.error !== undefined) return ioErrorText(wire.errorOp, wire.error, peers);
  const fromHeader = wire.header && recordHeaderError(wire.header);
  if (fromHeader) return fromHeader;
  // The server hung up mid-handshake: crypto/tls reads EOF, or a cut record.
  if (wire.eof) return wire.received === 0 || wire.header === undefined ? "EOF" : "unexpected EOF";
  return `tls: ${err?.message ?? "handshake aborted"}`;
}

/** A finished TLS client connection as a pull-style byte stream. */
class TlsByteConn implements ByteConn {
  #socket: tls.TLSSocket;
  #wire: Wire;
  #peers: ConnPeers;
  #chunks: Uint8Array[] = [];
  #ended = false;
  #error: Error | undefined;
  #waiting: (() => void) | undefined;

  constructor(socket: tls.TLSSocket, wire: Wire, peers: ConnPeers) {
    this.#socket = socket;
    this.#wire = wire;
    this.#peers = peers;
    const wake = () => {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting?.();
    };
    socket.on("data", (chunk: Uint8Array) => {
      this.#chunks.push(chunk);
      // Read one chunk ahead at most: the exchange stops at the body cap.
      if (this.#chunks.length > 1) socket.pause();
      wake();
    });
    socket.on("end", () => {
      this.#ended = true;
      wake();
    });
    socket.on("error", (err: Error) => {
      this.#error ??= new GoConnError(
        this.#wire.error !== undefined
          ? ioErrorText(this.#wire.errorOp, this.#wire.error, this.#peers)
          : `tls: ${err.message}`,
      );
      wake();
    });
    socket.on("close", () => {
      this.#ended = true;
      wake();
    });
  }

  async read(p: Uint8Array): Promise<number | null> {
    while (this.#chunks.length === 0) {
      if (this.#error) throw this.#error;
      if (this.#ended) return null;
      await new Promise<void>((resolve) => this.#waiting = resolve);
    }
    const chunk = this.#chunks[0];
    const n = Math.min(chunk.length, p.length);
    p.set(chunk.subarray(0, n));
    if (n === chunk.length) this.#chunks.shift();
    else this.#chunks[0] = chunk.subarray(n);
    if (this.#chunks.length <= 1) this.#socket.resume();
    return n;
  }

  write(p: Uint8Array): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#socket.write(p, (err?: Error | null) => {
        if (!err) return resolve(p.length);
        reject(
          new GoConnError(
            ioErrorText(
              "write",
              this.#wire.error !== undefined ? this.#wire.error : err,
              this.#peers,
            ),
          ),
        );
      });
    });
  }

  close(): void {
    this.#socket.destroy();
    // Not left to the stream's teardown, which may come a turn later.
    this.#wire.closeTcp();
  }
}
