/**
 * Our HTTP/2 client connection (src/util/h2/client_conn.ts) against a server scripted frame by
 * frame on a unix socket: the protocol limits a well-behaved gRPC server never reaches (window
 * overflows, header blocks without end, HPACK bombs, table size changes), and the waits a call can
 * be stuck in.
 */
import assert from "node:assert/strict";
import { setImmediate } from "node:timers/promises";
import hpack from "hpack.js";
import {
  clientPreface,
  concat,
  ErrorCode,
  Flag,
  type Frame,
  frame,
  FrameReader,
  FrameType,
  HeaderDecoder,
  headerFrames,
  Setting,
  settingsFrame,
  uint32Frame,
} from "../../../src/util/h2/frame.ts";
import { H2ClientConn, H2ConnectionClosedError } from "../../../src/util/h2/client_conn.ts";
import { unaryResult } from "../../../src/util/h2/grpc.ts";
import { GrpcStatus } from "../../../src/util/grpc_codes.ts";

/** The server end of one connection, written by the test. */
class Peer {
  readonly reader: FrameReader;
  #compressor = hpack.compressor.create({ table: { maxSize: 4096 } });
  readonly decoder = new HeaderDecoder();

  constructor(readonly conn: Deno.Conn) {
    this.reader = new FrameReader(conn, { maxFrameSize: 16_777_215 });
  }

  async send(...frames: Uint8Array[]): Promise<void> {
    const bytes = concat(frames);
    for (let off = 0; off < bytes.length;) off += await this.conn.write(bytes.subarray(off));
  }

  /** The next frame of `type`, skipping the others (SETTINGS ACKs, WINDOW_UPDATEs, ...). */
  async next(type: number): Promise<Frame> {
    for (;;) {
      const f = await this.reader.next();
      if (!f) throw new Error(`EOF before a frame of type ${type}`);
      if (f.type === type) return f;
    }
  }

  /** HPACK with the dynamic table, as real servers send. */
  encode(fields: [string, string][]): Uint8Array {
    this.#compressor.write(fields.map(([name, value]) => ({ name, value, huffman: true })));
    const parts: Uint8Array[] = [];
    for (let p = this.#compressor.read(); p !== null; p = this.#compressor.read()) parts.push(p);
    return concat(parts);
  }

  /** A whole response: headers, one DATA frame, trailers. */
  async respond(streamId: number, body: Uint8Array): Promise<void> {
    await this.send(
      ...headerFrames(streamId, this.encode([[":status", "200"]]), {
        maxFrameSize: 16_384,
        endStream: false,
      }),
      frame(FrameType.Data, 0, streamId, body),
      ...headerFrames(streamId, this.encode([["grpc-status", "0"]]), {
        maxFrameSize: 16_384,
        endStream: true,
      }),
    );
  }

  /** True when the client closed the connection (EOF or reset). */
  async closedByClient(): Promise<boolean> {
    try {
      for (;;) if (!await this.reader.next()) return true;
    } catch {
      return true;
    }
  }
}

/**
 * A client connected to a scripted server: `settings` are the server's SETTINGS. The test gets the
 * client and the server's end after the handshake (the client's preface and SETTINGS read).
 */
async function connected(
  settings: [number, number][] = [],
  options: { firstStreamId?: number } = {},
): Promise<{ h2: H2ClientConn; peer: Peer; [Symbol.asyncDispose](): Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "probelet-h2c-" });
  const path = `${dir}/s.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  const accepted = listener.accept();
  const clientConn = await Deno.connect({ transport: "unix", path });
  const peer = new Peer(await accepted);
  listener.close();
  const handshake = H2ClientConn.handshake(clientConn, options);
  const preface = await peer.reader.readExactly(clientPreface.length);
  assert.deepEqual(preface, clientPreface);
  await peer.send(settingsFrame(settings));
  const h2 = await handshake;
  return {
    h2,
    peer,
    async [Symbol.asyncDispose]() {
      h2.close();
      try {
        peer.conn.close();
      } catch {
        // closed by the test
      }
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const post: [string, string][] = [[":method", "POST"], [":path", "/x.Y/Z"]];

Deno.test("h2 client: a stream WINDOW_UPDATE past 2^31-1 resets the stream with FLOW_CONTROL_ERROR", async () => {
  await using c = await connected();
  const { h2, peer } = c;
  const pending = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const headers = await peer.next(FrameType.Headers);
  // 65,535 + 2^31-1 overflows the stream's send window (RFC 9113 §6.9.1).
  await peer.send(uint32Frame(FrameType.WindowUpdate, headers.streamId, 0x7fff_ffff));
  const reset = await peer.next(FrameType.RstStream);
  assert.equal(reset.streamId, headers.streamId);
  assert.equal(new DataView(reset.payload.buffer).getUint32(0), ErrorCode.FlowControlError);
  const response = await pending;
  assert.equal(response.rstCode, ErrorCode.FlowControlError);
  // A stream error: the connection carries on.
  assert.equal(h2.usable, true);
  const next = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const second = await peer.next(FrameType.Headers);
  await peer.respond(second.streamId, new Uint8Array([0, 0, 0, 0, 0]));
  assert.equal((await next).received, 5);
});

Deno.test("h2 client: SETTINGS_INITIAL_WINDOW_SIZE pushing an open stream's window past 2^31-1 is a connection error", async () => {
  await using c = await connected();
  const { h2, peer } = c;
  const pending = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const headers = await peer.next(FrameType.Headers);
  // The stream's window becomes 2^31-1 (legal); raising the initial size by 1 overflows it.
  await peer.send(uint32Frame(FrameType.WindowUpdate, headers.streamId, 0x7fff_ffff - 65_535));
  await peer.send(settingsFrame([[Setting.InitialWindowSize, 65_536]]));
  await assert.rejects(pending, /window/);
  assert.equal(h2.usable, false);
  assert.ok(await peer.closedByClient());
});

Deno.test("h2 client: a header block growing past the limit (CONTINUATION without end) ends the connection", async () => {
  await using c = await connected();
  const { h2, peer } = c;
  const pending = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const headers = await peer.next(FrameType.Headers);
  const fragment = new Uint8Array(16_384);
  // HEADERS without END_HEADERS, then 17 MiB of CONTINUATION: more than any header list we take.
  const sending = (async () => {
    await peer.send(frame(FrameType.Headers, 0, headers.streamId, fragment));
    for (let i = 0; i < 17 * 64; i++) {
      await peer.send(frame(FrameType.Continuation, 0, headers.streamId, fragment));
    }
  })().catch(() => "stopped by the client");
  await assert.rejects(pending, /connection error: PROTOCOL_ERROR/);
  assert.equal(h2.usable, false);
  // The client closed before the server had sent it all.
  assert.equal(await sending, "stopped by the client");
});

Deno.test("h2 client: a header list decoding past 16 MiB (HPACK bomb) fails the stream, not the connection", async () => {
  await using c = await connected();
  const { h2, peer } = c;
  const pending = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const headers = await peer.next(FrameType.Headers);
  // One 4,000-byte entry in the dynamic table (index 62), then 4,500 one-byte references to it:
  // an 8 KiB block that decodes to 18 MB.
  const value = "v".repeat(4_000);
  const block = [0x40, 0x01, 0x62, 0x7f, 0xa1, 0x1e]; // literal, incremental: "b" = 4000 bytes
  const bytes = new Uint8Array([...block, ...new TextEncoder().encode(value)]);
  const refs = new Uint8Array(4_500).fill(0x80 | 62);
  const bomb = concat([new Uint8Array([0x88]), bytes, refs]); // :status 200 first
  await peer.send(
    ...headerFrames(headers.streamId, bomb, { maxFrameSize: 16_384, endStream: true }),
  );
  const response = await pending;
  assert.equal(response.headerListTooLarge, true);
  const reset = await peer.next(FrameType.RstStream);
  assert.equal(new DataView(reset.payload.buffer).getUint32(0), ErrorCode.FrameSizeError);
  // grpc-go's status for it.
  assert.deepEqual(unaryResult(response, { maxReceiveMessageLength: 1024 }), {
    code: GrpcStatus.Internal,
    details: "peer header list size exceeded limit",
  });
  // The table stayed in step: a later response that refers to the entry decodes.
  const next = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const second = await peer.next(FrameType.Headers);
  await peer.send(
    ...headerFrames(second.streamId, new Uint8Array([0x88, 0x80 | 62]), {
      maxFrameSize: 16_384,
      endStream: true,
    }),
  );
  assert.equal((await next).headers.get("b"), value);
});

Deno.test("h2 client: a smaller SETTINGS_HEADER_TABLE_SIZE is acknowledged by a table size update in the next header block", async () => {
  await using c = await connected([[Setting.HeaderTableSize, 0]]);
  const { h2, peer } = c;
  const pending = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const headers = await peer.next(FrameType.Headers);
  // RFC 7541 §4.2: the block starts with "dynamic table size update" to at most 0 (0x20).
  assert.equal(headers.payload[0], 0x20);
  assert.deepEqual(peer.decoder.decode(headers.payload), post);
  await peer.respond(headers.streamId, new Uint8Array(5));
  await pending;
  // Only once.
  const next = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const second = await peer.next(FrameType.Headers);
  assert.notEqual(second.payload[0], 0x20);
  await peer.respond(second.streamId, new Uint8Array(5));
  await next;
});

Deno.test("h2 client: a call whose signal aborts while it waits for a stream slot is never sent", async () => {
  await using c = await connected([[Setting.MaxConcurrentStreams, 1]]);
  const { h2, peer } = c;
  const first = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const headers = await peer.next(FrameType.Headers);
  const controller = new AbortController();
  const queued = h2.request(post, new Uint8Array(0), { maxData: 1024, signal: controller.signal });
  const reason = new Error("deadline");
  controller.abort(reason);
  await assert.rejects(queued, (e) => e === reason);
  await peer.respond(headers.streamId, new Uint8Array(5));
  await first;
  // The next stream the server sees is a new call's, stream 3: the aborted one took no id.
  const next = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  assert.equal((await peer.next(FrameType.Headers)).streamId, 3);
  await peer.respond(3, new Uint8Array(5));
  await next;
  assert.equal(h2.activeStreams, 0);
});

Deno.test("h2 client: padding counts against flow control; a raised INITIAL_WINDOW_SIZE lets a waiting body go on", async () => {
  await using c = await connected([[Setting.InitialWindowSize, 10]]);
  const { h2, peer } = c;
  const body = new Uint8Array(25).fill(7);
  const pending = h2.request(post, body, { maxData: 4 << 20 });
  const headers = await peer.next(FrameType.Headers);
  const first = await peer.next(FrameType.Data);
  assert.equal(first.payload.length, 10); // the stream's window
  await peer.send(settingsFrame([[Setting.InitialWindowSize, 100]])); // +90 for the open stream
  const rest = await peer.next(FrameType.Data);
  assert.equal(rest.payload.length, 15);
  assert.equal(rest.flags & Flag.EndStream, Flag.EndStream);
  // Padded DATA: 16,000-byte frames carrying 15,744 bytes. The client acknowledges a stream's bytes
  // once 1 MiB arrived: at the 66th frame when padding counts (1,056,000), the 67th if not.
  const padded = new Uint8Array(16_000);
  padded[0] = 255;
  for (let i = 0; i < 67; i++) {
    await peer.send(frame(FrameType.Data, Flag.Padded, headers.streamId, padded));
  }
  let update: Frame;
  do update = await peer.next(FrameType.WindowUpdate); while (update.streamId !== headers.streamId);
  assert.equal(new DataView(update.payload.buffer).getUint32(0), 66 * 16_000);
  h2.close();
  await assert.rejects(pending, H2ConnectionClosedError);
});

Deno.test("h2 client: a connection whose stream ids ran out closes when its last stream ends", async () => {
  await using c = await connected([], { firstStreamId: 0x7fff_fffd });
  const { h2, peer } = c;
  const first = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  const last = h2.request(post, new Uint8Array(0), { maxData: 1024 });
  assert.equal(h2.usable, false); // 2^31-1 was the last id
  const a = await peer.next(FrameType.Headers);
  const b = await peer.next(FrameType.Headers);
  assert.deepEqual([a.streamId, b.streamId], [0x7fff_fffd, 0x7fff_ffff]);
  await assert.rejects(
    h2.request(post, new Uint8Array(0), { maxData: 1024 }),
    H2ConnectionClosedError,
  );
  await peer.respond(a.streamId, new Uint8Array(5));
  await first;
  await peer.respond(b.streamId, new Uint8Array(5));
  await last;
  // Unusable and idle: the client closes the socket (the CRI client has moved to a new one).
  assert.ok(await peer.closedByClient());
});

Deno.test("h2 client: a server that floods PINGs and reads nothing is not read further (replies stay bounded)", async () => {
  await using c = await connected();
  const { h2, peer } = c;
  // 300,000 PINGs (5.1 MB) written while the server reads nothing. A client that kept reading
  // would queue 5.1 MB of PING ACKs it cannot send; one that stops reading while its replies are
  // stuck holds the server's write instead (grpc-go throttles its reader the same way).
  const count = 300_000;
  const ping = frame(FrameType.Ping, 0, 0, new Uint8Array(8));
  const flood = new Uint8Array(ping.length * count);
  for (let i = 0; i < count; i++) flood.set(ping, i * ping.length);
  let written = false;
  const writing = peer.send(flood).then(() => written = true);
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  await new Promise<void>((resolve) => {
    watchdog = setTimeout(resolve, 500);
    writing.then(() => resolve(), () => resolve());
  });
  clearTimeout(watchdog);
  assert.equal(written, false, `the client read the whole flood and queued its replies`);
  assert.ok(h2.queuedBytes <= 64 * 1024, `queued ${h2.queuedBytes} bytes`);
  // Once the server reads again, every PING is answered and the flood goes through.
  let acks = 0;
  while (acks < count) {
    const f = await peer.next(FrameType.Ping);
    if (f.flags & Flag.Ack) acks++;
  }
  await writing;
  assert.equal(h2.usable, true);
});

Deno.test("h2 client: a frame above our SETTINGS_MAX_FRAME_SIZE, or EOF inside a frame, ends the connection and its streams", async (t) => {
  await t.step("DATA of 16,385 bytes (we never raise the 16,384 default)", async () => {
    await using c = await connected();
    const { h2, peer } = c;
    const pending = h2.request(post, new Uint8Array(0), { maxData: 1 << 20 });
    const headers = await peer.next(FrameType.Headers);
    await peer.send(frame(FrameType.Data, 0, headers.streamId, new Uint8Array(16_385)));
    await assert.rejects(pending, /frame too large/);
    assert.equal(h2.usable, false);
    assert.ok(await peer.closedByClient());
  });
  await t.step("the connection ends half-way through a frame", async () => {
    await using c = await connected();
    const { h2, peer } = c;
    const pending = h2.request(post, new Uint8Array(0), { maxData: 1 << 20 });
    const headers = await peer.next(FrameType.Headers);
    const data = frame(FrameType.Data, 0, headers.streamId, new Uint8Array(100));
    await peer.send(data.subarray(0, 50));
    peer.conn.close();
    await assert.rejects(pending, /unexpected EOF/);
    assert.equal(h2.usable, false);
    assert.equal(h2.activeStreams, 0);
  });
});

Deno.test("h2 client: a flood of empty and 1-byte DATA frames is gathered into a few arrays (issue 21 row 12)", async () => {
  await using c = await connected();
  const { h2, peer } = c;
  const pending = h2.request(post, new Uint8Array(0), { maxData: 1 << 20 });
  const headers = await peer.next(FrameType.Headers);
  const id = headers.streamId;
  // 200,000 empty DATA frames and 100,000 of one byte: before, one array per frame (300,000).
  const empty = frame(FrameType.Data, 0, id, new Uint8Array(0));
  const one = frame(FrameType.Data, 0, id, Uint8Array.of(7));
  await peer.send(
    ...headerFrames(id, peer.encode([[":status", "200"]]), {
      maxFrameSize: 16_384,
      endStream: false,
    }),
  );
  for (let i = 0; i < 100; i++) {
    await peer.send(
      concat(new Array(2_000).fill(empty)),
      concat(new Array(1_000).fill(one)),
    );
  }
  await peer.send(
    ...headerFrames(id, peer.encode([["grpc-status", "0"]]), {
      maxFrameSize: 16_384,
      endStream: true,
    }),
  );
  const response = await pending;
  assert.equal(response.received, 100_000);
  assert.deepEqual(concat(response.data), new Uint8Array(100_000).fill(7));
  assert.ok(response.data.length <= 8, `${response.data.length} arrays`);
});

Deno.test("h2 client: a server that floods SETTINGS and reads nothing gets its ACKs queued only up to the throttle (issue 21 row 12)", async () => {
  await using c = await connected();
  const { h2, peer } = c;
  // 300,000 empty SETTINGS (2.7 MB), each owed an ACK, written while the server reads nothing.
  const count = 300_000;
  const flood = concat(new Array(count).fill(settingsFrame([])));
  let written = false;
  const writing = peer.send(flood).then(() => written = true);
  // Many turns of the event loop (no wall-clock wait): the client reads while it can.
  for (let i = 0; i < 5_000 && !written; i++) await setImmediate();
  assert.equal(written, false, "the client read the whole flood and queued its ACKs");
  // What the writer holds plus the throttle's 64: a few KiB, not 2.7 MB of ACKs.
  assert.ok(h2.queuedBytes <= 64 * 9 * 2, `queued ${h2.queuedBytes} bytes`);
  let acks = 0;
  while (acks < count) {
    const f = await peer.next(FrameType.Settings);
    if (f.flags & Flag.Ack) acks++;
  }
  await writing;
  assert.equal(h2.usable, true);
});
