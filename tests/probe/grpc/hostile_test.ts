/**
 * The gRPC probe against hostile HTTP/2 servers on 127.0.0.1 (issue 21 rows 1, 4, 10 and 12):
 * each test asserts kubelet's verdict (grpc-go's behaviour) and that the work the probe does is
 * bounded: what it holds while a flood lasts, how far it lets an HPACK bomb get, how often it lets
 * timers run. Mirrors kubelet's pkg/probe/grpc/grpc.go texts and grpc-go's status texts.
 */
import assert from "node:assert/strict";
import { setImmediate } from "node:timers/promises";
import { newGrpcProber } from "../../../src/probe/grpc/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import {
  clientPreface,
  concat,
  encodeHeaderBlock,
  Flag,
  frame,
  FrameReader,
  FrameType,
  HeaderDecoder,
  settingsFrame,
} from "../../../src/util/h2/frame.ts";
import { grpcFrame } from "../../../src/util/h2/grpc.ts";
import { hpackBombFrames, repeated, startHostileServer } from "../../testing/hostile_h2_server.ts";

/** The server's end of one probe's connection, after the request's HEADERS arrived. */
interface Served {
  conn: Deno.Conn;
  reader: FrameReader;
  streamId: number;
  send(...frames: Uint8Array[]): Promise<void>;
}

/**
 * Runs one probe against a server on 127.0.0.1 whose first connection `script` drives once the
 * request's HEADERS arrived; the probe's `outcome` and whatever `script` returned.
 */
async function probeAgainst<T>(
  script: (served: Served) => Promise<T>,
  options: { timeoutMs?: number; clock?: FakeClock } = {},
): Promise<{ output: string; result: string; scripted: T }> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const conns: Deno.Conn[] = [];
  const served = (async () => {
    const conn = await listener.accept();
    conns.push(conn);
    const reader = new FrameReader(conn, { maxFrameSize: 16_777_215 });
    await reader.readExactly(clientPreface.length);
    const send = async (...frames: Uint8Array[]) => {
      const bytes = concat(frames);
      for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
    };
    await send(settingsFrame([]));
    let request;
    do request = await reader.next(); while (request && request.type !== FrameType.Headers);
    assert.ok(request, "the probe sent no request");
    return await script({ conn, reader, streamId: request.streamId, send });
  })();
  try {
    const outcome = await newGrpcProber({ clock: options.clock }).probe("127.0.0.1", {
      service: "",
      port,
      timeoutMs: options.timeoutMs ?? 5000,
    });
    return { output: outcome.output, result: outcome.result, scripted: await served };
  } finally {
    listener.close();
    for (const conn of conns) {
      try {
        conn.close();
      } catch {
        // closed by the script
      }
    }
  }
}

const grpcHeaders = encodeHeaderBlock([[":status", "200"], ["content-type", "application/grpc"]]);
/** HealthCheckResponse{status: SERVING}, framed. */
const serving = grpcFrame(Uint8Array.of(0x08, 0x01));
const okTrailers = encodeHeaderBlock([["grpc-status", "0"]]);
const failed = "error: health rpc probe failed: rpc error: code = ";

Deno.test("issue 21 row 1: endless empty CONTINUATION frames hold no memory; the deadline fails the probe as in kubelet", async () => {
  const clock = new FakeClock(0);
  // 2.5 million empty CONTINUATION frames (22.5 MB). Before, each one was kept (a frame object
  // and an empty array, ≥ 100 bytes): ≥ 180 MB of heap by the time the server's last write went
  // into the socket. Go decodes fragment by fragment and keeps nothing; neither do we now.
  const frames = 2_500_000;
  const chunk = repeated(frame(FrameType.Continuation, 0, 1, new Uint8Array(0)), 10_000);
  const { output, result, scripted } = await probeAgainst(async ({ send, streamId }) => {
    assert.equal(streamId, 1);
    const before = Deno.memoryUsage().heapUsed;
    // HEADERS without END_HEADERS: ":status: 200", then the flood.
    await send(frame(FrameType.Headers, 0, 1, Uint8Array.of(0x88)));
    for (let sent = 0; sent < frames; sent += 10_000) await send(chunk);
    // The sockets hold a few MB at most: the client has read nearly all of it by now.
    const grown = Deno.memoryUsage().heapUsed - before;
    // Go has no count limit on empty CONTINUATION frames: grpc-go reads them until the call's
    // deadline, and so does the probe.
    await clock.step(1000);
    return { grown };
  }, { timeoutMs: 1000, clock });
  assert.deepEqual({ result, output }, {
    result: "failure",
    output: "timeout: health rpc did not complete within 1s",
  });
  assert.ok(
    scripted.grown < 64 * 1024 * 1024,
    `the heap grew by ${(scripted.grown / 1048576).toFixed(0)} MiB during the flood`,
  );
});

Deno.test("issue 21 row 4: an HPACK bomb stops decoding at the 16 MiB list limit (CVE-2023-45288 rule), Failure as in kubelet", async () => {
  // 15 MiB of one-byte references to a 60-byte static entry (900 MiB of header list), in 960
  // frames of 16 KiB written one at a time. The list is over 16 MiB at field 279,621 (in the
  // 18th frame); the next non-empty CONTINUATION ends the connection, as in Go.
  const bomb = hpackBombFrames(1, 15 * 1024 * 1024);
  const { output, result, scripted } = await probeAgainst(async ({ send }) => {
    let written = 0;
    try {
      for (const f of bomb) {
        await send(f);
        written++;
      }
    } catch {
      // The client closed the connection.
    }
    return { written };
  });
  assert.deepEqual({ result, output }, {
    result: "failure",
    output:
      `${failed}Unavailable desc = error reading from server: connection error: PROTOCOL_ERROR`,
  });
  // The client stopped reading long before the end: what the server wrote beyond the 19 frames
  // the client took is what the sockets' buffers took before the close.
  assert.ok(scripted.written < bomb.length, `the server wrote all ${bomb.length} frames`);
});

Deno.test("issue 21 row 4: decoding stops early: the bomb's reader consumes 19 of 960 frames", async () => {
  const bomb = concat(hpackBombFrames(1, 15 * 1024 * 1024));
  let consumed = 0;
  // A connection that hands out the bomb 16 KiB + 9 (one frame) per read.
  const conn = {
    read(buf: Uint8Array): Promise<number | null> {
      if (consumed >= bomb.length) return Promise.resolve(null);
      const n = Math.min(buf.length, 16_393, bomb.length - consumed);
      buf.set(bomb.subarray(consumed, consumed + n));
      consumed += n;
      return Promise.resolve(n);
    },
  } as unknown as Deno.Conn;
  const reader = new FrameReader(conn);
  const first = await reader.next();
  assert.ok(first);
  const decoder = new HeaderDecoder();
  await assert.rejects(
    reader.readMetaHeaders(first, decoder, { maxHeaderListSize: 16 << 20 }),
    /connection error: PROTOCOL_ERROR/,
  );
  // 18 frames take the list past 16 MiB (279,621 × 60 bytes); the 19th is refused undecoded.
  assert.equal(consumed, 19 * 16_393);
});

Deno.test("issue 21 row 10: unary answers grpc-go refuses are failures with grpc-go's texts", async (t) => {
  const cases: { name: string; frames: (id: number) => Uint8Array[]; output: string }[] = [
    {
      name: "text/html content-type with grpc-status 0 and a SERVING message",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders,
          id,
          encodeHeaderBlock([[":status", "200"], ["content-type", "text/html"]]),
        ),
        frame(FrameType.Data, 0, id, serving),
        frame(FrameType.Headers, Flag.EndHeaders | Flag.EndStream, id, okTrailers),
      ],
      output:
        `${failed}Unknown desc = unexpected HTTP status code received from server: 200 (OK); ` +
        `transport: received unexpected content-type "text/html"`,
    },
    {
      name: "two messages on a unary call",
      frames: (id) => [
        frame(FrameType.Headers, Flag.EndHeaders, id, grpcHeaders),
        frame(FrameType.Data, 0, id, concat([serving, serving])),
        frame(FrameType.Headers, Flag.EndHeaders | Flag.EndStream, id, okTrailers),
      ],
      output: `${failed}Internal desc = cardinality violation: expected <EOF> for non ` +
        "server-streaming RPCs, but received another message",
    },
    {
      name: "no message and grpc-status 0",
      frames: (id) => [
        frame(FrameType.Headers, Flag.EndHeaders, id, grpcHeaders),
        frame(FrameType.Headers, Flag.EndHeaders | Flag.EndStream, id, okTrailers),
      ],
      output: `${failed}Internal desc = cardinality violation: received no response message ` +
        "from non-server-streaming RPC",
    },
    {
      name: ":status 503 with a text/plain content-type",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders | Flag.EndStream,
          id,
          encodeHeaderBlock([[":status", "503"], ["content-type", "text/plain"]]),
        ),
      ],
      output: `${failed}Unavailable desc = unexpected HTTP status code received from server: 503 ` +
        `(Service Unavailable); transport: received unexpected content-type "text/plain"`,
    },
    {
      // With a gRPC content-type grpc-go does not look at :status at all.
      name: ":status 503 with a gRPC content-type and grpc-status 0, no message",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders | Flag.EndStream,
          id,
          encodeHeaderBlock([
            [":status", "503"],
            ["content-type", "application/grpc"],
            ["grpc-status", "0"],
          ]),
        ),
      ],
      output: `${failed}Internal desc = cardinality violation: received no response message ` +
        "from non-server-streaming RPC",
    },
    {
      name: "trailers-only without content-type",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders | Flag.EndStream,
          id,
          encodeHeaderBlock([[":status", "200"], ["grpc-status", "0"]]),
        ),
      ],
      output: `${failed}Unknown desc = unexpected HTTP status code received from server: 200 ` +
        "(OK); malformed header: missing HTTP content-type",
    },
    {
      name: "a 100 Continue block that ends the stream",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders | Flag.EndStream,
          id,
          encodeHeaderBlock([[":status", "100"]]),
        ),
      ],
      output:
        `${failed}Internal desc = protocol error: informational header with status code 100 ` +
        "must not have END_STREAM set",
    },
    {
      // grpc-go decodes the %XX it can and keeps the rest; the bytes are UTF-8.
      name: "grpc-message with valid and invalid percent escapes and raw UTF-8",
      frames: (id) => [
        frame(FrameType.Headers, Flag.EndHeaders, id, grpcHeaders),
        frame(
          FrameType.Headers,
          Flag.EndHeaders | Flag.EndStream,
          id,
          encodeHeaderBlock([["grpc-status", "14"], ["grpc-message", "caf%C3%A9 100%zz é"]]),
        ),
      ],
      output: `${failed}Unavailable desc = café 100%zz é`,
    },
    {
      name: "binary metadata that is not base64",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders,
          id,
          encodeHeaderBlock([
            [":status", "200"],
            ["content-type", "application/grpc"],
            ["x-trace-bin", "ab!d"],
          ]),
        ),
      ],
      output: `${failed}Internal desc = transport: malformed x-trace-bin: illegal base64 data ` +
        "at input byte 2",
    },
    {
      name: "neither :status nor content-type",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders | Flag.EndStream,
          id,
          encodeHeaderBlock([["grpc-status", "0"]]),
        ),
      ],
      output: `${failed}Internal desc = malformed header: missing HTTP status; malformed header: ` +
        "missing HTTP content-type",
    },
    {
      name: "trailers without grpc-status",
      frames: (id) => [
        frame(FrameType.Headers, Flag.EndHeaders, id, grpcHeaders),
        frame(FrameType.Data, 0, id, serving),
        frame(FrameType.Headers, Flag.EndHeaders | Flag.EndStream, id, encodeHeaderBlock([])),
      ],
      output: `${failed}Unknown desc = `,
    },
    {
      name: "grpc-status that is not a number",
      frames: (id) => [
        frame(FrameType.Headers, Flag.EndHeaders, id, grpcHeaders),
        frame(
          FrameType.Headers,
          Flag.EndHeaders | Flag.EndStream,
          id,
          encodeHeaderBlock([["grpc-status", "OK"]]),
        ),
      ],
      output: `${failed}Unknown desc = transport: malformed grpc-status: strconv.ParseInt: ` +
        `parsing "OK": invalid syntax`,
    },
    {
      name: "compressed flag without grpc-encoding",
      frames: (id) => [
        frame(FrameType.Headers, Flag.EndHeaders, id, grpcHeaders),
        frame(FrameType.Data, 0, id, Uint8Array.of(1, 0, 0, 0, 2, 0x08, 0x01)),
        frame(FrameType.Headers, Flag.EndHeaders | Flag.EndStream, id, okTrailers),
      ],
      output: `${failed}Internal desc = grpc: compressed flag set with identity or empty encoding`,
    },
    {
      name: "a second HEADERS without END_STREAM",
      frames: (id) => [
        frame(FrameType.Headers, Flag.EndHeaders, id, grpcHeaders),
        frame(FrameType.Headers, Flag.EndHeaders, id, okTrailers),
      ],
      output: `${failed}Internal desc = a HEADERS frame cannot appear in the middle of a stream`,
    },
    {
      name: "an upper-case header name (Go's framer: a stream error)",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders,
          id,
          encodeHeaderBlock([[":status", "200"], ["Content-Type", "application/grpc"]]),
        ),
      ],
      output: `${failed}Internal desc = invalid header field name "Content-Type"`,
    },
    {
      // grpc-go refuses the headers as they arrive; before, the probe waited for the stream's
      // end and so reported the deadline.
      name: "text/html headers and a stream that never ends",
      frames: (id) => [
        frame(
          FrameType.Headers,
          Flag.EndHeaders,
          id,
          encodeHeaderBlock([[":status", "200"], ["content-type", "text/html"]]),
        ),
      ],
      output:
        `${failed}Unknown desc = unexpected HTTP status code received from server: 200 (OK); ` +
        `transport: received unexpected content-type "text/html"`,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      // The wall clock with a deadline no passing case reaches: a client that waited for the
      // stream's end (as ours did) reports the timeout instead of hanging the test.
      const { output, result } = await probeAgainst(async ({ send, streamId, reader }) => {
        await send(...c.frames(streamId));
        // Keep the connection open until the client closes it.
        while (await reader.next().catch(() => null));
      }, { timeoutMs: 10_000 });
      assert.deepEqual({ result, output }, { result: "failure", output: c.output });
    });
  }
});

Deno.test("issue 21 row 10: a 100 Continue block is skipped, as grpc-go does", async () => {
  const { output, result } = await probeAgainst(async ({ send, streamId, reader }) => {
    await send(
      frame(FrameType.Headers, Flag.EndHeaders, streamId, encodeHeaderBlock([[":status", "100"]])),
      frame(FrameType.Headers, Flag.EndHeaders, streamId, grpcHeaders),
      frame(FrameType.Data, 0, streamId, serving),
      frame(FrameType.Headers, Flag.EndHeaders | Flag.EndStream, streamId, okTrailers),
    );
    while (await reader.next().catch(() => null));
  }, { timeoutMs: 10_000 });
  assert.deepEqual({ result, output }, { result: "success", output: "service healthy" });
});

Deno.test("issue 21 row 12: a flood of small frames lets the event loop turn (the reader yields every 256 frames)", async () => {
  // A connection that always has frames ready: every read completes at once, as on a socket a
  // flooding peer keeps full. 100,000 PRIORITY frames, then EOF.
  const flood = repeated(frame(FrameType.Priority, 0, 1, new Uint8Array(5)), 100_000);
  let off = 0;
  const conn = {
    read(buf: Uint8Array): Promise<number | null> {
      if (off >= flood.length) return Promise.resolve(null);
      const n = Math.min(buf.length, flood.length - off);
      buf.set(flood.subarray(off, off + n));
      off += n;
      return Promise.resolve(n);
    },
  } as unknown as Deno.Conn;
  const reader = new FrameReader(conn);
  let reading = true;
  let turns = 0;
  // A chain of macrotasks: each one that runs is a turn of the event loop (where due timers and
  // I/O run) that the reader let happen.
  const ticking = (async () => {
    while (reading) {
      await setImmediate();
      turns++;
    }
  })();
  let frames = 0;
  while (await reader.next()) frames++;
  reading = false;
  await ticking;
  assert.equal(frames, 100_000);
  // 100,000 frames of 14 bytes: a turn every 256 frames (390); before, none at all.
  assert.ok(turns >= 300, `the event loop turned ${turns} times while 100,000 frames were read`);
});

Deno.test("issue 21 row 12: floods of PING, SETTINGS, WINDOW_UPDATE, PRIORITY and empty DATA end at the deadline with kubelet's verdict", async (t) => {
  for (
    const scenario of [
      "ping-flood",
      "settings-flood",
      "window-update-flood",
      "priority-flood",
      "empty-data-flood",
    ] as const
  ) {
    await t.step(scenario, async () => {
      // 8 MB of frames, then the server stops writing (and, for PINGs, never reads).
      await using server = startHostileServer(scenario, { maxFloodBytes: 8_000_000 });
      const clock = new FakeClock(0);
      const probe = newGrpcProber({ clock }).probe("127.0.0.1", {
        service: "",
        port: server.port,
        timeoutMs: 1000,
      });
      // Until the flood has been written (or is stuck because the client stopped reading it).
      const chunkBytes = 60_000;
      let stuck = 0;
      let last = -1;
      while (server.bytesWritten < 8_000_000 && stuck < 50) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        stuck = server.bytesWritten === last ? stuck + 1 : 0;
        last = server.bytesWritten;
      }
      assert.ok(server.bytesWritten > chunkBytes, "the flood never started");
      await clock.step(1000);
      const outcome = await probe;
      assert.deepEqual(
        { result: outcome.result, output: outcome.output },
        { result: "failure", output: "timeout: health rpc did not complete within 1s" },
      );
    });
  }
});
