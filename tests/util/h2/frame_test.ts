/**
 * The header blocks our HTTP/2 client sends (src/util/h2/frame.ts encodeHeaderBlock): literal
 * fields without indexing, new name, no Huffman coding (RFC 7541 §6.2.2), read back by our HPACK
 * decoder, with length prefixes at the edges of their 7-bit prefix and non-ASCII text.
 */
import assert from "node:assert/strict";
import { encodeHeaderBlock } from "../../../src/util/h2/frame.ts";
import { HpackDecoder } from "../../../src/util/h2/hpack.ts";

/** The block written out byte by byte, straight from RFC 7541 §5.1, §5.2 and §6.2.2. */
function expectedBlock(headers: [string, string][], tableSizeUpdate?: number): number[] {
  const out: number[] = [];
  const integer = (value: number, prefixBits: number, high: number) => {
    const max = 2 ** prefixBits - 1;
    if (value < max) return out.push(high | value);
    out.push(high | max);
    let rest = value - max;
    for (; rest >= 128; rest = Math.floor(rest / 128)) out.push(0x80 + rest % 128);
    out.push(rest);
  };
  if (tableSizeUpdate !== undefined) integer(tableSizeUpdate, 5, 0x20);
  for (const [name, value] of headers) {
    out.push(0);
    for (const text of [name, value]) {
      const bytes = new TextEncoder().encode(text);
      integer(bytes.length, 7, 0);
      out.push(...bytes);
    }
  }
  return out;
}

function decoded(block: Uint8Array): [string, string][] {
  const decoder = new HpackDecoder({ maxTableSize: 4096 });
  const fields: [string, string][] = [];
  decoder.startBlock({ emit: (name, value) => fields.push([name, value]), maxStringLength: 0 });
  decoder.write(block);
  decoder.endBlock();
  return fields;
}

// The decoder hands strings over as one character per byte, as Go's do.
const latin1 = (text: string) =>
  Array.from(new TextEncoder().encode(text), (b) => String.fromCharCode(b)).join("");

Deno.test("TestEncodeHeaderBlock", async (t) => {
  const cases: { name: string; headers: [string, string][]; tableSizeUpdate?: number }[] = [
    {
      name: "a CRI call's headers",
      headers: [
        [":method", "POST"],
        [":scheme", "http"],
        [":path", "/runtime.v1.RuntimeService/ListContainers"],
        [":authority", "localhost"],
        ["content-type", "application/grpc"],
        ["user-agent", "probelet/v1.36.3 grpc-go/1.72.0"],
        ["te", "trailers"],
        ["grpc-timeout", "120000m"],
      ],
    },
    { name: "no headers", headers: [] },
    { name: "empty name and value", headers: [["", ""]] },
    { name: "length 126 (one prefix byte)", headers: [["x", "a".repeat(126)]] },
    { name: "length 127 (two prefix bytes)", headers: [["x", "a".repeat(127)]] },
    { name: "length 128", headers: [["x", "a".repeat(128)]] },
    { name: "length 20000 (four prefix bytes)", headers: [["x", "b".repeat(20_000)]] },
    {
      name: "non-ASCII: 2-, 3- and 4-byte UTF-8",
      headers: [["x-é", "✓ caf\u00e9 \u{1f600}"], ["y", "\u00e9".repeat(70)]],
    },
    {
      name: "non-ASCII whose bound needs a longer prefix than its length",
      headers: [["x", "\u00e9".repeat(60)]],
    },
    { name: "table size update 0", headers: [["a", "b"]], tableSizeUpdate: 0 },
    { name: "table size update 4096", headers: [["a", "b"]], tableSizeUpdate: 4096 },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const block = encodeHeaderBlock(c.headers, { tableSizeUpdate: c.tableSizeUpdate });
      assert.deepEqual([...block], expectedBlock(c.headers, c.tableSizeUpdate));
      assert.deepEqual(
        decoded(block),
        c.headers.map(([name, value]) => [latin1(name), latin1(value)]),
      );
    });
  }
});
