/**
 * A SPDY/3.1 connection, server side: the peer opens streams (SYN_STREAM), each is accepted with
 * an empty SYN_REPLY or refused with RST_STREAM REFUSED_STREAM, and data flows both ways until each
 * side sends FIN; PINGs are echoed, GOAWAY ends the connection, and a connection idle for
 * `idleTimeoutMs` (no frame either way) has its streams reset and is closed.
 *
 * Mirrors `github.com/moby/spdystream` (connection.go, stream.go) as apimachinery's
 * `httpstream/spdy` drives it for a server (`NewServerConnection`, `newSpdyStreamHandler`):
 * kube-apiserver, kubelet and kubectl all speak through it.
 *
 * Flow control: spdystream implements none (it sends no WINDOW_UPDATE or SETTINGS and ignores
 * them), relying on TCP: its frame reader blocks until a stream's reader took the data. This
 * connection does the same on the receiving side (reading stops while a stream has more than
 * `maxBufferedBytes` unread) and also sends WINDOW_UPDATEs as data is read, which a SPDY/3.1 peer
 * that does flow control needs. When sending, it keeps to the peer's stream and session windows
 * once the peer has shown it does flow control (a SETTINGS or WINDOW_UPDATE frame); holding a
 * spdystream peer to a 64 KiB window it never reopens would stall every stream.
 * @module
 */
import { type Clock, type ClockTimer, RealClock } from "../../util/clock.ts";
import * as klog from "../../util/log.ts";
import { abortConn, writeAll } from "../../util/socket.ts";
import {
  ByteReader,
  concat,
  flagFin,
  flagUnidirectional,
  type Frame,
  Framer,
  goAwayStatus,
  rstStatus,
  settingsId,
  type SpdyHeaders,
  SpdyProtocolError,
} from "./frame.ts";

/** SPDY/3.1's initial stream and session window. */
export const defaultInitialWindowSize = 64 * 1024;
/** Largest data frame this side sends. */
export const maxDataFrameBytes = 32 * 1024;
/** Unread bytes a stream may hold before the connection stops reading (spdystream holds one frame). */
export const maxBufferedBytes = 256 * 1024;

/**
 * Decides whether to accept a stream the peer opened: `undefined` accepts it (an empty SYN_REPLY is
 * sent), a string refuses it (RST_STREAM REFUSED_STREAM) and is logged. `replySent` resolves once
 * the SYN_REPLY is on its way, as apimachinery's `replySent` channel closes.
 */
export type NewStreamHandler = (stream: SpdyStream, replySent: Promise<void>) => string | undefined;

/** Options of {@linkcode SpdyConnection}. */
export interface SpdyConnectionOptions {
  /** Called for each stream the peer opens. */
  onStream: NewStreamHandler;
  /** Bytes read past the HTTP upgrade request, which belong to the SPDY connection. */
  initial?: Uint8Array;
  /** For the idle timeout. */
  clock?: Clock;
  /** No frame in either direction for this long closes the connection (0: never). */
  idleTimeoutMs?: number;
}

/**
 * One stream of a {@linkcode SpdyConnection}: `read` what the peer sends (null after its FIN),
 * `write` to it, `close` to send FIN, `reset` to abort it (RST_STREAM CANCEL).
 */
export class SpdyStream {
  /** The stream's id (odd: opened by the client). */
  readonly id: number;
  /** The headers of its SYN_STREAM. */
  readonly headers: SpdyHeaders;
  #conn: SpdyConnection;
  #queue: Uint8Array[] = [];
  #queuedBytes = 0;
  #remoteClosed = false;
  #localClosed = false;
  #reset = false;
  #readWaiter: (() => void) | undefined;
  #drainWaiters: (() => void)[] = [];
  #unacked = 0;
  /** @internal The peer's window for this stream (bytes this side may still send). */
  sendWindow: number;

  /** @internal Built by the connection for each SYN_STREAM. */
  constructor(conn: SpdyConnection, id: number, headers: SpdyHeaders, sendWindow: number) {
    this.#conn = conn;
    this.id = id;
    this.headers = headers;
    this.sendWindow = sendWindow;
  }

  /** The next data the peer sent; `null` once it closed its side (FIN), reset, or went away. */
  async read(): Promise<Uint8Array | null> {
    while (this.#queue.length === 0) {
      if (this.#remoteClosed || this.#reset) return null;
      await new Promise<void>((resolve) => this.#readWaiter = resolve);
    }
    const chunk = this.#queue.shift()!;
    this.#queuedBytes -= chunk.length;
    if (this.#queuedBytes <= maxBufferedBytes) this.#wakeDrain();
    this.#unacked += chunk.length;
    if (this.#unacked >= defaultInitialWindowSize / 2 && !this.#remoteClosed) {
      this.#conn.windowConsumed(this.id, this.#unacked);
      this.#unacked = 0;
    }
    return chunk;
  }

  /** Everything the peer sends until its FIN, as one array (for small streams: resize, errors). */
  async readAll(): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    for (let c = await this.read(); c !== null; c = await this.read()) chunks.push(c);
    return concat(chunks);
  }

  /** Sends `data` on the stream; rejects when the stream or connection is gone. */
  async write(data: Uint8Array): Promise<void> {
    if (this.#localClosed || this.#reset) throw new Error(`stream ${this.id} is closed`);
    await this.#conn.sendData(this, data);
  }

  /** Sends FIN (an empty data frame), as spdystream's `Close`; later calls do nothing. */
  async close(): Promise<void> {
    if (this.#localClosed || this.#reset) return;
    this.#localClosed = true;
    await this.#conn.sendData(this, new Uint8Array(0), flagFin).catch(() => {});
  }

  /** Aborts the stream both ways (RST_STREAM CANCEL), as spdystream's `Reset`. */
  reset(): void {
    if (this.#reset) return;
    this.#conn.sendReset(this.id, rstStatus.cancel);
    this.remoteReset();
  }

  /** True once neither side can send. */
  get isFinished(): boolean {
    return this.#reset || (this.#localClosed && this.#remoteClosed);
  }

  /** @internal Data from the peer; resolves when the connection may read on. */
  async deliver(data: Uint8Array, fin: boolean): Promise<void> {
    if (this.#reset || this.#remoteClosed) return;
    if (data.length > 0) {
      this.#queue.push(data);
      this.#queuedBytes += data.length;
    }
    if (fin) this.#remoteClosed = true;
    this.#wakeRead();
    while (this.#queuedBytes > maxBufferedBytes && !this.#reset) {
      await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
    }
  }

  /** @internal The peer closed its side without data. */
  remoteClose(): void {
    this.#remoteClosed = true;
    this.#wakeRead();
  }

  /** @internal The stream was reset (by the peer, or as the connection ended). */
  remoteReset(): void {
    this.#reset = true;
    this.#remoteClosed = true;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#wakeRead();
    this.#wakeDrain();
    this.#conn.forget(this.id);
  }

  #wakeRead(): void {
    const w = this.#readWaiter;
    this.#readWaiter = undefined;
    w?.();
  }

  #wakeDrain(): void {
    const waiters = this.#drainWaiters;
    this.#drainWaiters = [];
    for (const w of waiters) w();
  }
}

/**
 * The server side of a SPDY/3.1 connection over an upgraded TCP connection.
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 * const spdy = new SpdyConnection(conn, {
 *   onStream: (stream) => (stream.headers.streamtype ? undefined : "streamtype header is required"),
 * });
 * await spdy.serve(); // until the peer goes away or spdy.close()
 * ```
 */
export class SpdyConnection {
  #conn: Deno.Conn;
  #options: SpdyConnectionOptions;
  #framer = new Framer();
  #clock: Clock;
  #streams = new Map<number, SpdyStream>();
  #lastStreamId = 0;
  #writeTail: Promise<void> = Promise.resolve();
  #closed = false;
  #closedResolve!: () => void;
  #idleTimer: ClockTimer | undefined;
  #peerFlowControl = false;
  #peerInitialWindow = defaultInitialWindowSize;
  #sessionSendWindow = defaultInitialWindowSize;
  #windowWaiters: (() => void)[] = [];
  #sessionUnacked = 0;
  /** Resolves once the connection is closed (by either side, an error, or the idle timeout). */
  readonly closed: Promise<void>;

  /** Wraps `conn`; nothing is read until {@linkcode serve}. */
  constructor(conn: Deno.Conn, options: SpdyConnectionOptions) {
    this.#conn = conn;
    this.#options = options;
    this.#clock = options.clock ?? new RealClock();
    this.closed = new Promise((resolve) => this.#closedResolve = resolve);
    this.#resetIdle();
  }

  /** Reads frames until the peer goes away or the connection is closed; never rejects. */
  async serve(): Promise<void> {
    const reader = new ByteReader((buf) => this.#conn.read(buf), this.#options.initial);
    try {
      while (!this.#closed) {
        const frame = await this.#framer.readFrame(reader);
        if (frame === null) break;
        this.#resetIdle();
        if (frame.type === "goAway") break;
        await this.#handle(frame);
      }
    } catch (err) {
      if (!this.#closed) {
        klog.V(4).info("SPDY connection read failed", { err: (err as Error).message });
        if (err instanceof SpdyProtocolError) {
          this.#send({
            type: "goAway",
            lastGoodStreamId: this.#lastStreamId,
            status: goAwayStatus.protocolError,
          });
        }
      }
    }
    await this.#shutdown();
  }

  async #handle(frame: Frame): Promise<void> {
    switch (frame.type) {
      case "synStream": {
        // Streams the client opens have odd, increasing ids (spdystream's validateStreamId).
        if (frame.streamId % 2 === 0 || frame.streamId <= this.#lastStreamId) {
          this.sendReset(frame.streamId, rstStatus.protocolError);
          return;
        }
        this.#lastStreamId = frame.streamId;
        const stream = new SpdyStream(this, frame.streamId, frame.headers, this.#peerInitialWindow);
        this.#streams.set(stream.id, stream);
        if (frame.flags & flagFin) stream.remoteClose();
        let replied!: () => void;
        const replySent = new Promise<void>((resolve) => replied = resolve);
        const refusal = this.#options.onStream(stream, replySent);
        if (refusal !== undefined) {
          klog.V(4).info("SPDY stream refused", { stream: stream.id, reason: refusal });
          this.#streams.delete(stream.id);
          this.sendReset(stream.id, rstStatus.refusedStream);
          return;
        }
        const flags = frame.flags & flagUnidirectional ? flagFin : 0;
        this.#send({ type: "synReply", streamId: stream.id, flags, headers: {} }).then(replied);
        return;
      }
      case "data": {
        this.#sessionUnacked += frame.data.length;
        if (this.#sessionUnacked >= defaultInitialWindowSize / 2) {
          this.#send({ type: "windowUpdate", streamId: 0, deltaWindowSize: this.#sessionUnacked });
          this.#sessionUnacked = 0;
        }
        const stream = this.#streams.get(frame.streamId);
        if (stream) await stream.deliver(frame.data, (frame.flags & flagFin) !== 0);
        return;
      }
      case "headers":
        if (frame.flags & flagFin) this.#streams.get(frame.streamId)?.remoteClose();
        return;
      case "rstStream":
        this.#streams.get(frame.streamId)?.remoteReset();
        return;
      case "ping":
        // Pings the client started have odd ids; echo them (spdystream's handlePingFrame).
        if (frame.id % 2 === 1) this.#send(frame);
        return;
      case "settings":
        this.#peerFlowControl = true;
        for (const e of frame.entries) {
          if (e.id !== settingsId.initialWindowSize) continue;
          const delta = e.value - this.#peerInitialWindow;
          this.#peerInitialWindow = e.value;
          for (const s of this.#streams.values()) s.sendWindow += delta;
        }
        this.#wakeWindow();
        return;
      case "windowUpdate":
        this.#peerFlowControl = true;
        if (frame.streamId === 0) this.#sessionSendWindow += frame.deltaWindowSize;
        else {
          const s = this.#streams.get(frame.streamId);
          if (s) s.sendWindow += frame.deltaWindowSize;
        }
        this.#wakeWindow();
        return;
      default:
        return; // SYN_REPLY to a stream this side never opens, unknown frames: ignored
    }
  }

  /** @internal Sends `data` on `stream` in frames, within the peer's windows when it keeps them. */
  async sendData(stream: SpdyStream, data: Uint8Array, flags = 0): Promise<void> {
    let off = 0;
    do {
      if (this.#closed) throw new Error("SPDY connection closed");
      let n = Math.min(data.length - off, maxDataFrameBytes);
      if (this.#peerFlowControl && n > 0) {
        while (!this.#closed && (stream.sendWindow <= 0 || this.#sessionSendWindow <= 0)) {
          await new Promise<void>((resolve) => this.#windowWaiters.push(resolve));
        }
        if (this.#closed) throw new Error("SPDY connection closed");
        n = Math.min(n, stream.sendWindow, this.#sessionSendWindow);
        stream.sendWindow -= n;
        this.#sessionSendWindow -= n;
      }
      const last = off + n >= data.length;
      await this.#send({
        type: "data",
        streamId: stream.id,
        flags: last ? flags : 0,
        data: data.subarray(off, off + n),
      });
      off += n;
    } while (off < data.length);
  }

  /** @internal The reader of stream `id` consumed `bytes`: the peer may send that much more. */
  windowConsumed(id: number, bytes: number): void {
    if (this.#streams.has(id)) {
      this.#send({ type: "windowUpdate", streamId: id, deltaWindowSize: bytes });
    }
  }

  /** @internal Sends RST_STREAM for `id` (errors ignored: the connection may be going). */
  sendReset(id: number, status: number): void {
    this.#send({ type: "rstStream", streamId: id, status }).catch(() => {});
  }

  /** @internal Drops a finished stream. */
  forget(id: number): void {
    this.#streams.delete(id);
  }

  /** Forgets streams the caller is done with (apimachinery's `RemoveStreams`). */
  removeStreams(...streams: (SpdyStream | undefined)[]): void {
    for (const s of streams) if (s) this.#streams.delete(s.id);
  }

  // Frames are encoded and written one at a time, in order: the header compression context spans
  // the connection.
  #send(frame: Frame): Promise<void> {
    const run = this.#writeTail.then(async () => {
      if (this.#closed) throw new Error("SPDY connection closed");
      const bytes = await this.#framer.encode(frame);
      this.#resetIdle();
      await writeAll(this.#conn, bytes);
    });
    this.#writeTail = run.catch(() => {});
    run.catch((err) => {
      if (!this.#closed) {
        klog.V(4).info("SPDY connection write failed", { err: (err as Error).message });
        this.#shutdown();
      }
    });
    return run;
  }

  #resetIdle(): void {
    const ms = this.#options.idleTimeoutMs ?? 0;
    if (ms <= 0 || this.#closed) return;
    this.#idleTimer?.stop();
    this.#idleTimer = this.#clock.afterFunc(ms, () => {
      klog.V(4).info("SPDY connection idle, closing", { idleTimeoutMs: ms });
      for (const s of [...this.#streams.values()]) s.reset();
      this.close();
    });
  }

  #wakeWindow(): void {
    const waiters = this.#windowWaiters;
    this.#windowWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Sends GOAWAY after what is queued, then closes the connection: streams still open end
   * (spdystream's `Close`, which does not wait for the peer).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#send({
      type: "goAway",
      lastGoodStreamId: this.#lastStreamId,
      status: goAwayStatus.ok,
    })
      .catch(() => {});
    await this.#shutdown();
  }

  async #shutdown(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#idleTimer?.stop();
    for (const s of [...this.#streams.values()]) s.remoteReset();
    this.#wakeWindow();
    await this.#writeTail;
    abortConn(this.#conn);
    this.#framer.close();
    this.#closedResolve();
  }
}
