/**
 * Raw hostile servers on 127.0.0.1 for the differential fuzzers: they serve a case's bytes exactly
 * as generated (no HTTP library in between), so both kubelet's handler and probelet's see the same
 * wire. An HTTP/1.1 server answers each request head with the case's script for that connection;
 * an HTTP/2 server speaks just enough of the connection protocol (SETTINGS, their ACK, PING ACKs)
 * to deliver a gRPC case's frames once the client's request stream has ended.
 * Mirrors nothing upstream: test tooling.
 * @module
 */

/** One step of a script: bytes to write, a stall (hold the connection open), or a close. */
export type Step = Uint8Array | "stall" | "close";

/** A running raw server. `close()` ends every connection it holds. */
export interface RawServer {
  /** The listening port on 127.0.0.1. */
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  /** Stops listening and closes every connection. */
  close(): void;
}

/** What an HTTP/1.1 case serves: `responses[i]` on the i-th connection (the last one repeats). */
export interface Http1Script {
  responses: Step[][];
}

/** What a gRPC case serves over one HTTP/2 connection. */
export interface H2Script {
  /** Written as soon as the connection is accepted (normally the server's SETTINGS). */
  onConnect: Step[];
  /** Written once the client's request stream (stream 1) has ended. */
  onRequest: Step[];
  /** ACK the client's SETTINGS frames (default behaviour of a server). */
  ackSettings: boolean;
}

const headEnd = new Uint8Array([13, 10, 13, 10]);

/**
 * Starts a raw HTTP/1.1 server: reads each request head (up to CRLFCRLF), then runs the script.
 * With `tls`, the same over TLS (no ALPN, so both clients speak HTTP/1.1).
 *
 * @example
 * ```ts
 * const server = startHttp1Server({ responses: [[new TextEncoder().encode("HTTP/1.1 200 OK\r\n\r\n"), "close"]] });
 * try { /* probe http://127.0.0.1:${server.port}/ *\/ } finally { server.close(); }
 * ```
 */
export function startHttp1Server(
  script: Http1Script,
  options: { tls?: { cert: string; key: string } } = {},
): RawServer {
  return serve(options.tls, async (conn, index, life) => {
    const received = await readUntil(conn, (bytes) => indexOf(bytes, headEnd) >= 0, life.alive);
    if (!received) return;
    const steps = script.responses[Math.min(index, script.responses.length - 1)];
    await runSteps(conn, steps, life);
  });
}

/**
 * Starts a raw HTTP/2 server for one gRPC call per connection.
 *
 * @example
 * ```ts
 * const server = startH2Server({ onConnect: [settingsFrame()], onRequest: frames, ackSettings: true });
 * ```
 */
export function startH2Server(script: H2Script): RawServer {
  return serve(undefined, async (conn, _index, life) => {
    const writer = serialWriter(conn);
    // Runs beside the read loop below; a failure here must not become an unhandled rejection.
    const connect = runSteps(conn, script.onConnect, life, writer).catch(() => {});
    let buffered: Uint8Array = new Uint8Array(0);
    let prefaceSeen = false;
    const buf = new Uint8Array(16 * 1024);
    for (;;) {
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch {
        return;
      }
      if (n === null || !life.alive()) return;
      buffered = concat(buffered, buf.subarray(0, n));
      if (!prefaceSeen) {
        if (buffered.length < 24) continue;
        buffered = buffered.subarray(24);
        prefaceSeen = true;
      }
      while (buffered.length >= 9) {
        const length = (buffered[0] << 16) | (buffered[1] << 8) | buffered[2];
        if (buffered.length < 9 + length) break;
        const type = buffered[3];
        const flags = buffered[4];
        const stream = ((buffered[5] & 0x7f) << 24 | buffered[6] << 16 | buffered[7] << 8 |
          buffered[8]) >>> 0;
        const payload = buffered.slice(9, 9 + length);
        buffered = buffered.subarray(9 + length);
        if (type === 4 && (flags & 1) === 0 && script.ackSettings) {
          await writer(frame({ type: 4, flags: 1, stream: 0 }, new Uint8Array(0)));
        } else if (type === 6 && (flags & 1) === 0) {
          await writer(frame({ type: 6, flags: 1, stream: 0 }, payload));
        } else if ((type === 0 || type === 1) && stream === 1 && (flags & 1) === 1) {
          await connect;
          await runSteps(conn, script.onRequest, life, writer);
          if (!life.alive()) return;
        }
      }
    }
  });
}

/** An HTTP/2 frame header's fields. */
export interface FrameHead {
  type: number;
  flags: number;
  stream: number;
}

/**
 * An HTTP/2 frame: the 9-byte header (length, type, flags, stream) and the payload.
 *
 * @example
 * ```ts
 * const settingsAck = frame({ type: 4, flags: 1, stream: 0 }, new Uint8Array(0));
 * ```
 */
export function frame(head: FrameHead, payload: Uint8Array): Uint8Array {
  const { type, flags, stream } = head;
  const out = new Uint8Array(9 + payload.length);
  out[0] = (payload.length >>> 16) & 0xff;
  out[1] = (payload.length >>> 8) & 0xff;
  out[2] = payload.length & 0xff;
  out[3] = type;
  out[4] = flags;
  out[5] = (stream >>> 24) & 0x7f;
  out[6] = (stream >>> 16) & 0xff;
  out[7] = (stream >>> 8) & 0xff;
  out[8] = stream & 0xff;
  out.set(payload, 9);
  return out;
}

/**
 * Concatenates byte arrays.
 *
 * @example
 * ```ts
 * concat(new Uint8Array([1]), new Uint8Array([2, 3])); // Uint8Array [1, 2, 3]
 * ```
 */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Whether the server still runs, and a promise that settles when it is closed. */
interface Life {
  alive(): boolean;
  closed: Promise<void>;
}

type ConnHandler = (conn: Deno.Conn, index: number, life: Life) => Promise<void>;

function serve(tls: { cert: string; key: string } | undefined, handle: ConnHandler): RawServer {
  const listener = tls
    ? Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: tls.cert, key: tls.key })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let accepted = 0;
  let closed = false;
  const { promise: closedPromise, resolve: resolveClosed } = Promise.withResolvers<void>();
  const life: Life = { alive: () => !closed, closed: closedPromise };
  (async () => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        // Closed by close(); otherwise one failed accept must not stop the next connection.
        if (closed) return;
        continue;
      }
      if (closed) {
        conn.close();
        return;
      }
      const index = accepted++;
      open.add(conn);
      handle(conn, index, life).catch(() => {}).finally(() => {
        if (!open.delete(conn)) return;
        try {
          conn.close();
        } catch { /* closed by a step */ }
      });
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    connections: () => accepted,
    close() {
      if (closed) return;
      closed = true;
      resolveClosed();
      listener.close();
      for (const conn of open) {
        try {
          conn.close();
        } catch { /* already closed */ }
      }
      open.clear();
    },
  };
}

async function readUntil(
  conn: Deno.Conn,
  done: (bytes: Uint8Array) => boolean,
  alive: () => boolean,
): Promise<boolean> {
  let bytes: Uint8Array = new Uint8Array(0);
  const buf = new Uint8Array(16 * 1024);
  while (!done(bytes)) {
    let n: number | null;
    try {
      n = await conn.read(buf);
    } catch {
      return false;
    }
    if (n === null || !alive()) return false;
    bytes = concat(bytes, buf.subarray(0, n));
  }
  return true;
}

type Writer = (bytes: Uint8Array) => Promise<void>;

// Writes in order even when PING/SETTINGS acks and a script's steps interleave.
function serialWriter(conn: Deno.Conn): Writer {
  let tail = Promise.resolve();
  return (bytes) => {
    tail = tail.then(async () => {
      let off = 0;
      while (off < bytes.length) off += await conn.write(bytes.subarray(off));
    }).catch(() => {});
    return tail;
  };
}

async function runSteps(
  conn: Deno.Conn,
  steps: Step[],
  life: Life,
  writer: Writer = serialWriter(conn),
): Promise<void> {
  for (const step of steps) {
    if (!life.alive()) return;
    if (step === "stall") {
      // Held, unread beyond what the handler reads itself, until the case's servers close.
      await life.closed;
      return;
    }
    if (step === "close") {
      await writer(new Uint8Array(0));
      try {
        conn.close();
      } catch { /* the client left first and the handler closed it */ }
      return;
    }
    await writer(step);
  }
}

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
