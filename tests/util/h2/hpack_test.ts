/**
 * Our HPACK decoder (src/util/h2/hpack.ts) against npm hpack.js as the encoder (Huffman strings,
 * the dynamic table, table size updates), fed whole and in every split into fragments, and the
 * errors Go's decoder reports. Mirrors the cases of Go's hpack_test.go that a client meets.
 */
import assert from "node:assert/strict";
import hpack from "hpack.js";
import {
  type HeaderField,
  HpackDecoder,
  HpackDecodingError,
  huffmanCodes,
  huffmanDecode,
} from "../../../src/util/h2/hpack.ts";

/** Decodes `fragments` as one block; the fields as [name, value] pairs. */
function decodeBlock(
  decoder: HpackDecoder,
  fragments: Uint8Array[],
  maxStringLength = 0,
): [string, string][] {
  const fields: [string, string][] = [];
  decoder.startBlock({ emit: (name, value) => fields.push([name, value]), maxStringLength });
  for (const f of fragments) decoder.write(f);
  decoder.endBlock();
  return fields;
}

function encoderFor(): { encode(fields: [string, string][], huffman: boolean): Uint8Array } {
  const compressor = hpack.compressor.create({ table: { maxSize: 4096 } });
  return {
    encode(fields, huffman) {
      compressor.write(fields.map(([name, value]) => ({ name, value, huffman })));
      const parts: Uint8Array[] = [];
      for (let p = compressor.read(); p !== null; p = compressor.read()) parts.push(p);
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let off = 0;
      for (const p of parts) {
        out.set(p, off);
        off += p.length;
      }
      return out;
    },
  };
}

Deno.test("TestHuffmanCodes: the codes derived from the lengths are RFC 7541 Appendix B's", async () => {
  // hpack.js ships the table as [bits, code] per symbol.
  const shipped = await import("hpack.js/lib/hpack/huffman.js");
  const table = (shipped.default ?? shipped).encode as [number, number][];
  assert.equal(table.length, 257);
  assert.deepEqual(huffmanCodes().map(([code, bits]) => [bits, code]), table);
});

Deno.test("TestDecoder: blocks from a Huffman and dynamic-table encoder decode, whole and split anywhere", async (t) => {
  const blocks: [string, string][][] = [
    [[":status", "200"], ["content-type", "application/grpc"], ["grpc-encoding", "identity"]],
    [["grpc-status", "0"], ["grpc-message", "all good: ünïcode%20bytes"]],
    // Repeats: indexed from the dynamic table now.
    [[":status", "200"], ["content-type", "application/grpc"], ["x-long", "v".repeat(3000)]],
    [["x-long", "v".repeat(3000)], ["x-bin", "\u0000\u00ff\u007f"]],
  ];
  for (const huffman of [false, true]) {
    await t.step(huffman ? "Huffman strings" : "plain strings", () => {
      const encoder = encoderFor();
      const whole = new HpackDecoder({ maxTableSize: 4096 });
      const split = new HpackDecoder({ maxTableSize: 4096 });
      for (const fields of blocks) {
        // hpack.js writes each character as one byte, as our fields hold them.
        const asBytes = fields;
        const block = encoder.encode(fields, huffman);
        assert.deepEqual(decodeBlock(whole, [block]), asBytes);
        // One fragment per byte: every field crosses a fragment boundary somewhere.
        const bytes = [...block].map((b) => Uint8Array.of(b));
        assert.deepEqual(decodeBlock(split, bytes), asBytes);
        assert.equal(split.dynamicTableSize, whole.dynamicTableSize);
      }
    });
  }
});

Deno.test("TestDecoderErrors: Go's hpack errors", async (t) => {
  const cases: [string, number[], RegExp][] = [
    ["index 0", [0x80], /invalid indexed representation index 0/],
    ["index past the tables", [0x80 | 70], /invalid indexed representation index 70/],
    ["table size update above SETTINGS_HEADER_TABLE_SIZE", [0x3f, 0xe2, 0x1f], /too large/],
    ["a field cut off at the end of the block", [0x00, 0x05, 0x61], /truncated headers/],
    // "a" is 00011 (5 bits); padding with 0s instead of 1s is invalid.
    ["Huffman padding of zeros", [0x00, 0x81, 0x61, 0x81, 0x00], /invalid Huffman/],
    // 0xff 0xff 0xff 0xff is 30 ones (EOS) and more.
    ["Huffman EOS", [0x00, 0x81, 0x61, 0x84, 0xff, 0xff, 0xff, 0xff], /invalid Huffman/],
    ["Huffman padding longer than 7 bits", [0x00, 0x81, 0x61, 0x82, 0x1f, 0xff], /invalid Huffman/],
  ];
  for (const [name, bytes, error] of cases) {
    await t.step(name, () => {
      const decoder = new HpackDecoder({ maxTableSize: 4096 });
      assert.throws(
        () => decodeBlock(decoder, [Uint8Array.from(bytes)]),
        (e) => e instanceof HpackDecodingError && error.test(e.message),
      );
    });
  }
  await t.step("a string longer than the limit, refused before its bytes arrive", () => {
    const decoder = new HpackDecoder({ maxTableSize: 4096 });
    decoder.startBlock({ emit: () => {}, maxStringLength: 100 });
    // Literal, new name of 101 bytes: only the length has arrived.
    assert.throws(() => decoder.write(Uint8Array.of(0x00, 0x7f, 0x26)), /string too long/);
  });
});

Deno.test("TestDecoderEmitDisabled: decoding goes on for the table, no field is handed out", () => {
  const decoder = new HpackDecoder({ maxTableSize: 4096 });
  const seen: HeaderField[] = [];
  decoder.startBlock({
    emit: (name, value, sensitive) => {
      seen.push({ name, value, sensitive });
      decoder.setEmitEnabled(false);
    },
    maxStringLength: 0,
  });
  // :status 200, then a literal with incremental indexing "b: x", then a never-indexed literal.
  decoder.write(Uint8Array.of(0x88, 0x40, 0x01, 0x62, 0x01, 0x78, 0x10, 0x01, 0x63, 0x01, 0x79));
  decoder.endBlock();
  assert.deepEqual(seen, [{ name: ":status", value: "200", sensitive: false }]);
  // The entry was still added: index 62 is "b: x".
  assert.deepEqual(decodeBlock(decoder, [Uint8Array.of(0x80 | 62)]), [["b", "x"]]);
});

Deno.test("TestHuffmanDecode: RFC 7541 C.4.1", () => {
  const bytes = Uint8Array.from([
    0xf1,
    0xe3,
    0xc2,
    0xe5,
    0xf2,
    0x3a,
    0x6b,
    0xa0,
    0xab,
    0x90,
    0xf4,
    0xff,
  ]);
  assert.equal(huffmanDecode(bytes), "www.example.com");
});

Deno.test("TestDecoderEmptyFragments: a run of empty fragments inside a field holds nothing more", () => {
  const decoder = new HpackDecoder({ maxTableSize: 4096 });
  const fields: string[] = [];
  decoder.startBlock({
    emit: (name, value) => fields.push(`${name}: ${value}`),
    maxStringLength: 0,
  });
  decoder.write(Uint8Array.of(0x00, 0x01, 0x61, 0x03)); // "a", then a 3-byte value begins
  const held = decoder.savedBytes;
  for (let i = 0; i < 100_000; i++) decoder.write(new Uint8Array(0));
  assert.equal(decoder.savedBytes, held);
  decoder.write(new TextEncoder().encode("xyz"));
  decoder.endBlock();
  assert.deepEqual(fields, ["a: xyz"]);
});
