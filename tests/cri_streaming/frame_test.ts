/**
 * SPDY/3.1 frames: every type written and read back between two framers (whose header
 * compression contexts span the connection), the dictionary, and malformed input.
 * Cases after spdystream's spdy_test.go.
 * @module
 */
import assert from "node:assert/strict";
import zlib from "node:zlib";
import {
  ByteReader,
  type Frame,
  Framer,
  headerDictionary,
  SpdyProtocolError,
} from "../../src/cri_streaming/spdy/frame.ts";

// Feeds `bytes` to a reader in chunks of `chunk` bytes, as a socket would.
function readerOf(bytes: Uint8Array, chunk = 7): ByteReader {
  let off = 0;
  return new ByteReader((buf) => {
    if (off >= bytes.length) return Promise.resolve(null);
    const n = Math.min(chunk, buf.length, bytes.length - off);
    buf.set(bytes.subarray(off, off + n));
    off += n;
    return Promise.resolve(n);
  });
}

function adler32(bytes: Uint8Array): number {
  let a = 1;
  let b = 0;
  for (const x of bytes) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

Deno.test("TestHeaderDictionary", () => {
  // SPDY/3's dictionary: 1423 bytes whose zlib dictionary id (adler32) peers check.
  assert.equal(headerDictionary.length, 1423);
  assert.equal(adler32(headerDictionary), 0xe3c6a7c2);
});

Deno.test("TestCreateParseFrames", async (t) => {
  const frames: Frame[] = [
    {
      type: "synStream",
      streamId: 1,
      associatedToStreamId: 0,
      priority: 3,
      flags: 0,
      headers: { streamtype: ["error"], port: ["8080"], multi: ["a", "b"] },
    },
    { type: "synReply", streamId: 1, flags: 0, headers: {} },
    {
      type: "synStream",
      streamId: 3,
      associatedToStreamId: 0,
      priority: 0,
      flags: 1,
      headers: { streamtype: ["stdin"] },
    },
    { type: "headers", streamId: 3, flags: 1, headers: { "x-y": ["z"] } },
    { type: "data", streamId: 3, flags: 1, data: new Uint8Array([1, 2, 3]) },
    { type: "data", streamId: 5, flags: 0, data: new Uint8Array(70_000).fill(9) },
    { type: "rstStream", streamId: 5, status: 5 },
    {
      type: "settings",
      flags: 0,
      entries: [{ flags: 1, id: 7, value: 1000 }, { flags: 0, id: 4, value: 100 }],
    },
    { type: "ping", id: 0xfffffffe },
    { type: "goAway", lastGoodStreamId: 7, status: 0 },
    { type: "windowUpdate", streamId: 0, deltaWindowSize: 0x7fffffff },
  ];
  const writer = new Framer();
  const reader = new Framer();
  try {
    const encoded: Uint8Array[] = [];
    for (const f of frames) encoded.push(await writer.encode(f));
    const all = new Uint8Array(encoded.reduce((n, e) => n + e.length, 0));
    let off = 0;
    for (const e of encoded) {
      all.set(e, off);
      off += e.length;
    }
    const source = readerOf(all, 1000);
    for (const f of frames) {
      await t.step(`${f.type}`, async () => {
        assert.deepEqual(await reader.readFrame(source), f);
      });
    }
    await t.step("clean end after the last frame", async () => {
      assert.equal(await reader.readFrame(source), null);
    });
  } finally {
    writer.close();
    reader.close();
  }
});

Deno.test("TestFrameWireFormat", async (t) => {
  const framer = new Framer();
  try {
    await t.step("data frame: stream id, flags, 24-bit length", async () => {
      const bytes = await framer.encode({
        type: "data",
        streamId: 3,
        flags: 1,
        data: new Uint8Array([0xaa]),
      });
      assert.deepEqual([...bytes], [0, 0, 0, 3, 1, 0, 0, 1, 0xaa]);
    });
    await t.step("ping: control bit, version 3, type 6", async () => {
      const bytes = await framer.encode({ type: "ping", id: 1 });
      assert.deepEqual([...bytes], [0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]);
    });
    await t.step("window update: type 9, stream, delta", async () => {
      const bytes = await framer.encode({
        type: "windowUpdate",
        streamId: 1,
        deltaWindowSize: 0x10000,
      });
      assert.deepEqual([...bytes], [0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 1, 0, 1, 0, 0]);
    });
  } finally {
    framer.close();
  }
});

Deno.test("TestMalformedFrames", async (t) => {
  await t.step("SPDY/2 control frame: unsupported version", async () => {
    const framer = new Framer();
    try {
      const bytes = new Uint8Array([0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]);
      await assert.rejects(framer.readFrame(readerOf(bytes)), /unsupported SPDY version 2/);
    } finally {
      framer.close();
    }
  });
  await t.step("unknown control frame type: read and ignored", async () => {
    const framer = new Framer();
    try {
      const bytes = new Uint8Array([0x80, 3, 0, 0x0a, 0, 0, 0, 2, 9, 9]);
      assert.deepEqual(await framer.readFrame(readerOf(bytes)), {
        type: "unknown",
        frameType: 10,
        flags: 0,
      });
    } finally {
      framer.close();
    }
  });
  await t.step("connection ends inside a frame", async () => {
    const framer = new Framer();
    try {
      const bytes = new Uint8Array([0, 0, 0, 1, 0, 0, 0, 10, 1, 2]);
      await assert.rejects(framer.readFrame(readerOf(bytes)), SpdyProtocolError);
    } finally {
      framer.close();
    }
  });
  await t.step("header block with an uppercase name or a duplicate: protocol error", async () => {
    for (
      const [names, want] of [[["streamType"], /not lowercased/], [
        ["port", "port"],
        /same name/,
      ]] as const
    ) {
      const framer = new Framer();
      try {
        // A header block compressed as a peer would, with names this framer never writes.
        const enc = new TextEncoder();
        const parts: number[] = [0, 0, 0, names.length];
        for (const n of names) parts.push(0, 0, 0, n.length, ...enc.encode(n), 0, 0, 0, 1, 0x31);
        const deflate = zlib.createDeflate({
          dictionary: headerDictionary,
          flush: zlib.constants.Z_SYNC_FLUSH,
        });
        const compressed = await new Promise<Uint8Array>((resolve) => {
          const out: Uint8Array[] = [];
          deflate.on("data", (c: Uint8Array) => out.push(c));
          deflate.write(
            new Uint8Array(parts),
            () => resolve(Uint8Array.from(out.flatMap((c) => [...c]))),
          );
        });
        deflate.destroy();
        const body = new Uint8Array(4 + compressed.length);
        body.set([0, 0, 0, 1]);
        body.set(compressed, 4);
        const head = [0x80, 3, 0, 2, 0, 0, (body.length >> 8) & 0xff, body.length & 0xff];
        await assert.rejects(framer.readFrame(readerOf(new Uint8Array([...head, ...body]))), want);
      } finally {
        framer.close();
      }
    }
  });
  await t.step("a header block that is not zlib: protocol error", async () => {
    const framer = new Framer();
    try {
      const bytes = new Uint8Array([0x80, 3, 0, 2, 0, 0, 0, 8, 0, 0, 0, 1, 1, 2, 3, 4]);
      await assert.rejects(framer.readFrame(readerOf(bytes)), SpdyProtocolError);
    } finally {
      framer.close();
    }
  });
});
