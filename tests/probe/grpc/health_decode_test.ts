/**
 * The health response decoder against Go protobuf's behaviour: unknown fields (including groups and
 * field 1 with another wire type) are skipped, an enum is the low 32 bits of its varint, and any
 * malformed wire data gives Go protobuf's one error text.
 * @module
 */
import assert from "node:assert/strict";
import { decodeHealthCheckResponse } from "../../../src/probe/grpc/grpc.ts";

const serving = [0x08, 0x01];
const bad = "proto: cannot parse invalid wire-format data";

Deno.test("TestDecodeHealthCheckResponse", async (t) => {
  const ok: [string, number[], string][] = [
    ["empty message is UNKNOWN", [], "UNKNOWN"],
    ["SERVING", serving, "SERVING"],
    [
      "a bytes field before the status is skipped",
      [0x12, 0x03, 0x61, 0x62, 0x63, ...serving],
      "SERVING",
    ],
    ["field 1 as bytes is an unknown field", [0x0a, 0x01, 0x02, ...serving], "SERVING"],
    ["a group before the status is skipped", [0x1b, 0x08, 0x02, 0x1c, ...serving], "SERVING"],
    ["a nested group is skipped", [0x1b, 0x23, 0x24, 0x1c, ...serving], "SERVING"],
    ["fixed64 and fixed32 fields are skipped", [
      0x11,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0x15,
      0,
      0,
      0,
      0,
      ...serving,
    ], "SERVING"],
    ["the last status wins", [0x08, 0x02, ...serving], "SERVING"],
    ["a 10-byte negative enum prints as -1", [
      0x08,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0xff,
      0x01,
    ], "-1"],
    ["an enum without a name prints as its number", [0x08, 0x07], "7"],
  ];
  for (const [name, bytes, want] of ok) {
    await t.step(name, () => assert.equal(decodeHealthCheckResponse(new Uint8Array(bytes)), want));
  }
  const errors: [string, number[]][] = [
    ["field number 0", [0x00, 0x01]],
    ["a truncated varint", [0x08, 0x80]],
    ["a length past the end", [0x12, 0x05, 0x61]],
    ["an end-group tag without its start", [0x1c, ...serving]],
    ["a group ended by another field's end tag", [0x1b, 0x24]],
    ["an unterminated group", [0x1b, 0x08, 0x01]],
    ["wire type 6", [0x0e, ...serving]],
    ["a varint over 64 bits", [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]],
  ];
  for (const [name, bytes] of errors) {
    await t.step(name, () => {
      assert.throws(() => decodeHealthCheckResponse(new Uint8Array(bytes)), { message: bad });
    });
  }
});
