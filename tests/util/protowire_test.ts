/**
 * The hand-written protobuf wire reader and writer (src/util/protowire.ts): varints at their
 * edges, length prefixes longer than one byte, and the cache of recent short strings, which must
 * never hand back a string whose bytes differ.
 */
import assert from "node:assert/strict";
import { DecodeMemo, ProtoReader, ProtoWriter } from "../../src/util/protowire.ts";

function written(fill: (w: ProtoWriter) => void): ProtoReader {
  const w = new ProtoWriter();
  fill(w);
  return new ProtoReader(w.finish());
}

Deno.test("TestVarint", async (t) => {
  await t.step("int64 round trips, Go's encodings", () => {
    const cases: [bigint, number[]][] = [
      [0n, [0]],
      [1n, [1]],
      [300n, [0xac, 0x02]],
      [-1n, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
      [-9223372036854775808n, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
      [9223372036854775807n, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]],
      [2n ** 35n, [0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
    ];
    for (const [value, bytes] of cases) {
      const w = new ProtoWriter();
      w.int64(value);
      assert.deepEqual([...w.finish()], bytes, String(value));
      assert.equal(new ProtoReader(new Uint8Array(bytes)).int64(), value, String(value));
    }
  });
  await t.step("uint64 max, and numbers given for int64", () => {
    const r = written((w) => {
      w.int64(18446744073709551615n);
      w.int64(2 ** 53 - 1);
      w.int64(-5);
      w.int32(-5);
    });
    assert.equal(r.uint64(), 18446744073709551615n);
    assert.equal(r.int64(), 9007199254740991n);
    assert.equal(r.int64(), -5n);
    assert.equal(r.int32(), -5);
  });
  await t.step("int32 and uint32 keep the low 32 bits of a wider varint, as Go does", () => {
    const bytes = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    assert.equal(new ProtoReader(new Uint8Array(bytes)).int32(), -1);
    assert.equal(new ProtoReader(new Uint8Array(bytes)).uint32(), 4294967295);
  });
});

Deno.test("TestLengthDelimited", async (t) => {
  for (const length of [0, 127, 128, 16_383, 16_384, 300_000]) {
    await t.step(`a nested value of ${length} bytes`, () => {
      const text = "a".repeat(length);
      const r = written((w) => {
        w.uint32(10);
        const at = w.fork();
        w.uint32(10);
        w.bytes(new TextEncoder().encode(text));
        w.join(at);
        w.uint32(16);
        w.uint32(7);
      });
      assert.equal(r.tag(), 10);
      const end = r.end();
      assert.equal(r.tag(), 10);
      assert.equal(r.string("f"), text);
      r.expectEnd(end);
      assert.equal(r.tag(), 16);
      assert.equal(r.uint32(), 7);
      assert.equal(r.pos, r.buf.length);
    });
  }
  await t.step("bytes are copied out, as a plain Uint8Array", () => {
    const r = new ProtoReader(new Uint8Array([2, 9, 8]));
    const out = r.bytes();
    assert.deepEqual(out, new Uint8Array([9, 8]));
    assert.notEqual(out.buffer, r.buf.buffer);
  });
});

Deno.test("TestRecentStrings", async (t) => {
  const decode = (text: string) => {
    const r = written((w) => w.string(text));
    return r.string("f");
  };
  await t.step("the same bytes give the same string, twice", () => {
    assert.equal(decode("io.kubernetes.pod.name"), "io.kubernetes.pod.name");
    assert.equal(decode("io.kubernetes.pod.name"), "io.kubernetes.pod.name");
  });
  await t.step("strings sharing a slot never stand in for each other", () => {
    // 20,000 distinct strings of one length over 4096 slots: every slot is shared many times.
    const texts = Array.from({ length: 20_000 }, (_, i) => `pod-${String(i).padStart(8, "0")}`);
    for (let round = 0; round < 2; round++) {
      for (const text of texts) assert.equal(decode(text), text);
    }
  });
  await t.step("non-ASCII and long strings take the decoder", () => {
    for (const text of ["é", "日本語", "x".repeat(129), "x".repeat(128), ""]) {
      assert.equal(decode(text), text);
      assert.equal(decode(text), text);
    }
  });
});

Deno.test("TestDecodeMemo", async (t) => {
  // A message of one string (field 1) and one varint (field 2), as a relist's entries are.
  const message = (id: string, state: number) => {
    const w = new ProtoWriter();
    w.uint32(10); // field 1, length-delimited
    w.string(id);
    w.uint32(16); // field 2, varint
    w.uint32(state);
    return w.finish();
  };
  let decodes = 0;
  const read = (r: ProtoReader, end: number) => {
    decodes++;
    const m = { id: "", state: 0, labels: {} as Record<string, string> };
    while (r.pos < end) {
      const tag = r.tag();
      if (tag === 10) m.id = r.string("id");
      else if (tag === 16) m.state = r.uint32();
      else r.skip(tag);
    }
    r.expectEnd(end);
    return m;
  };
  const memo = new DecodeMemo<ReturnType<typeof read>>();
  const readOnce = (bytes: Uint8Array) => {
    const r = new ProtoReader(bytes);
    const value = memo.read(r, bytes.length, read);
    assert.equal(r.pos, bytes.length, "the reader is left at the message's end");
    return value;
  };
  await t.step("the same bytes give the same frozen value, decoded once", () => {
    decodes = 0;
    const a = readOnce(message("c1", 1));
    const b = readOnce(message("c1", 1));
    assert.equal(a, b);
    assert.equal(decodes, 1);
    assert.ok(Object.isFrozen(a) && Object.isFrozen(a.labels));
    assert.throws(() => {
      (a as { state: number }).state = 2;
    }, TypeError);
  });
  await t.step("one byte changed is decoded again", () => {
    decodes = 0;
    const running = readOnce(message("c1", 1));
    const exited = readOnce(message("c1", 2));
    assert.equal(decodes, 1);
    assert.equal(running.state, 1);
    assert.equal(exited.state, 2);
  });
  await t.step("messages sharing a sample hash never stand in for each other", () => {
    // Same length, same first 16 and last 8 bytes: only the middle differs.
    const ids = Array.from(
      { length: 50 },
      (_, i) => `${"a".repeat(16)}${String(i).padStart(2, "0")}${"b".repeat(8)}`,
    );
    decodes = 0;
    for (let round = 0; round < 2; round++) {
      for (const id of ids) assert.equal(readOnce(message(id, 1)).id, id);
    }
    assert.equal(decodes, ids.length, "each decoded once, then found by its bytes");
  });
  await t.step("entries no longer listed are dropped", () => {
    const fresh = new DecodeMemo<ReturnType<typeof read>>();
    const list = (n: number, from: number) => {
      for (let i = from; i < from + n; i++) {
        const bytes = message(`container-${i}`, 1);
        fresh.read(new ProtoReader(bytes), bytes.length, read);
      }
    };
    list(100, 0);
    // Relists of 10 other containers: after two generations the first 100 are gone.
    for (let i = 0; i < 100; i++) list(10, 1000);
    assert.ok(fresh.size <= 20, `kept ${fresh.size}`);
    assert.ok(fresh.size >= 10, `kept ${fresh.size}`);
  });
});
