/**
 * The secure port's TLS listener. Deno's own `Deno.listenTls` cannot ask a client for its
 * certificate, which kubelet's x509 authentication needs, so the handshake is done by `node:tls`
 * (`requestCert`, the peer's chain through `getPeerCertificate(true)`) and each TLS socket is handed
 * to {@linkcode HttpServer} as a `Deno.Conn`, so the secure port shares the read-only port's
 * connection handling (header and write deadlines, connection limit). The chain is checked by the
 * authenticator (x509.ts), not by node:tls: a request without a certificate, or with one no CA
 * signed, still reaches the bearer-token and anonymous authenticators, as in Go's
 * `tls.VerifyClientCertIfGiven` minus the handshake failure for a bad certificate.
 * Mirrors the TLS part of kubelet's `ListenAndServeKubeletServer` (pkg/kubelet/server/server.go).
 * @module
 */
import tls from "node:tls";
import { X509Certificate } from "node:crypto";
import type { Buffer } from "node:buffer";
import type { ConnListener } from "./http_server.ts";
import * as log from "../../util/log.ts";
import type { TlsVersionName } from "../../util/flag/ciphersuites_flag.ts";

/** A TLS connection with the certificates its client presented (leaf first). */
export interface PeerCertificates {
  readonly peerCertificates: X509Certificate[];
}

/** True when `conn` came from a {@linkcode listenTls} listener. */
export function hasPeerCertificates(conn: Deno.Conn): conn is Deno.Conn & PeerCertificates {
  return "peerCertificates" in conn;
}

/** A serving certificate (chain, leaf first) and its key, PEM. */
export interface ServingCertificate {
  certPem: string;
  keyPem: string;
}

/** Options of {@linkcode listenTls}. */
export interface ListenTlsOptions {
  hostname: string;
  port: number;
  /**
   * The serving certificate; without one every handshake fails until
   * {@linkcode TlsConnListener.setCertificate} gives one (kubelet's `GetCertificate` answering
   * "no serving certificate available for the kubelet").
   */
  certificate?: ServingCertificate;
  /** Ask clients for a certificate (when a client CA is configured). */
  requestCert: boolean;
  /** Time a client has to finish its TLS handshake (default 10 s). */
  handshakeTimeoutMs?: number;
  /** Oldest TLS version accepted (default TLS 1.2, Go's default for servers). */
  minVersion?: TlsVersionName;
}

/** A TLS listener whose certificate can be replaced while it serves. */
export interface TlsConnListener extends ConnListener {
  /**
   * Serves `certificate` to connections accepted from now on (established ones keep theirs);
   * undefined makes new handshakes fail.
   */
  setCertificate(certificate: ServingCertificate | undefined): void;
}

/**
 * Listens on `hostname:port` with TLS; resolves once bound.
 *
 * @example
 * ```ts
 * import { HttpServer } from "./http_server.ts";
 *
 * declare const certPem: string;
 * declare const keyPem: string;
 * declare const handler: ConstructorParameters<typeof HttpServer>[1]["handler"];
 *
 * const listener = await listenTls({ hostname: "127.0.0.1", port: 0, certificate: { certPem, keyPem }, requestCert: true });
 * const server = new HttpServer(listener, { handler });
 * ```
 */
export async function listenTls(options: ListenTlsOptions): Promise<TlsConnListener> {
  const accepted: Deno.Conn[] = [];
  const waiting: Array<{ resolve: (c: Deno.Conn) => void; reject: (e: Error) => void }> = [];
  let closed = false;
  const minVersion = options.minVersion ?? "TLSv1.2";
  let hasCertificate = options.certificate !== undefined;
  const server = tls.createServer({
    ...(options.certificate
      ? { cert: options.certificate.certPem, key: options.certificate.keyPem }
      : {}),
    requestCert: options.requestCert,
    rejectUnauthorized: false,
    minVersion,
    // A client that never finishes its handshake is not yet the server's connection: node:tls
    // drops it after this long (Go counts the handshake in ReadHeaderTimeout).
    handshakeTimeout: options.handshakeTimeoutMs ?? 10_000,
  }, (socket) => {
    // The Deno.Conn subset HttpServer and abortConn use; the web streams (`readable`,
    // `writable`) are not provided.
    const conn = new TlsSocketConn(socket) as unknown as Deno.Conn;
    const w = waiting.shift();
    if (w) w.resolve(conn);
    else accepted.push(conn);
  });
  server.on("tlsClientError", (err: Error, socket: tls.TLSSocket) => {
    // A failed handshake is the client's problem (Go logs it, not as an error).
    const why = hasCertificate ? err.message : "no serving certificate available for the kubelet";
    log.V(4).info(
      `http: TLS handshake error from ${socket.remoteAddress}:${socket.remotePort}: ${why}`,
      {},
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address() as { address: string; port: number };
  const addr: Deno.NetAddr = { transport: "tcp", hostname: bound.address, port: bound.port };
  return {
    addr,
    setCertificate(certificate: ServingCertificate | undefined): void {
      hasCertificate = certificate !== undefined;
      server.setSecureContext({
        ...(certificate ? { cert: certificate.certPem, key: certificate.keyPem } : {}),
        minVersion,
      });
    },
    accept(): Promise<Deno.Conn> {
      if (closed) return Promise.reject(new Deno.errors.BadResource("listener closed"));
      const conn = accepted.shift();
      if (conn) return Promise.resolve(conn);
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
    close(): void {
      if (closed) return;
      closed = true;
      server.close();
      for (const c of accepted.splice(0)) c.close();
      for (const w of waiting.splice(0)) w.reject(new Deno.errors.BadResource("listener closed"));
    },
  };
}

// Reads queue up to this much before the socket is paused.
const highWaterBytes = 64 * 1024;

// A node:tls socket seen as the `Deno.Conn` subset HttpServer uses (read, write, close, addresses).
class TlsSocketConn implements PeerCertificates {
  readonly peerCertificates: X509Certificate[];
  readonly localAddr: Deno.NetAddr;
  readonly remoteAddr: Deno.NetAddr;
  #socket: tls.TLSSocket;
  #queue: Uint8Array[] = [];
  #queued = 0;
  #ended = false;
  #error: Error | undefined;
  #closed = false;
  #wake: (() => void) | undefined;

  constructor(socket: tls.TLSSocket) {
    this.#socket = socket;
    this.localAddr = {
      transport: "tcp",
      hostname: socket.localAddress ?? "",
      port: socket.localPort ?? 0,
    };
    this.remoteAddr = {
      transport: "tcp",
      hostname: socket.remoteAddress ?? "",
      port: socket.remotePort ?? 0,
    };
    this.peerCertificates = peerChain(socket);
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.#queue.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.#queued += chunk.byteLength;
      if (this.#queued > highWaterBytes) socket.pause();
      this.#notify();
    });
    socket.on("end", () => {
      this.#ended = true;
      this.#notify();
    });
    socket.on("error", (e: Error) => {
      this.#error = e;
      this.#notify();
    });
    socket.on("close", () => {
      this.#ended = true;
      this.#notify();
    });
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async read(p: Uint8Array): Promise<number | null> {
    while (this.#queue.length === 0) {
      // As a Deno.Conn's: a read pending when this side closes fails, it does not see an end.
      if (this.#closed) throw new Deno.errors.BadResource("closed");
      if (this.#error) throw this.#error;
      if (this.#ended) return null;
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
    const head = this.#queue[0];
    const n = Math.min(p.length, head.length);
    p.set(head.subarray(0, n));
    if (n === head.length) this.#queue.shift();
    else this.#queue[0] = head.subarray(n);
    this.#queued -= n;
    if (this.#queued <= highWaterBytes && this.#socket.isPaused()) this.#socket.resume();
    return n;
  }

  write(p: Uint8Array): Promise<number> {
    if (this.#socket.destroyed) return Promise.reject(new Deno.errors.BrokenPipe("closed"));
    return new Promise((resolve, reject) => {
      this.#socket.write(p, (err?: Error | null) => err ? reject(err) : resolve(p.length));
    });
  }

  closeWrite(): Promise<void> {
    // The close_notify alert and a FIN; settles once written, or once the socket is gone.
    if (this.#closed || this.#socket.destroyed) {
      return Promise.reject(new Deno.errors.BadResource("closed"));
    }
    return new Promise((resolve) => {
      this.#socket.once("close", () => resolve());
      this.#socket.end(() => resolve());
    });
  }

  /** TCP keep-alive, probing after `delayMs` idle (Go's 15 s for a long-lived stream). */
  setKeepAlive(on: boolean, delayMs?: number): void {
    this.#socket.setKeepAlive(on, delayMs);
  }

  ref(): void {}

  unref(): void {}

  close(): void {
    if (this.#closed) throw new Deno.errors.BadResource("closed");
    this.#closed = true;
    this.#socket.destroy();
    this.#notify();
  }
}

function peerChain(socket: tls.TLSSocket): X509Certificate[] {
  const chain: X509Certificate[] = [];
  let cert = socket.getPeerCertificate(true) as tls.DetailedPeerCertificate | undefined;
  const seen = new Set<string>();
  while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(new X509Certificate(cert.raw));
    cert = cert.issuerCertificate;
  }
  return chain;
}
