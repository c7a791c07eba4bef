/**
 * Tests for Go's `Duration.String()` and `%q` as kubelet's texts use them.
 * @module
 */
import assert from "node:assert/strict";
import { goArch, goDuration, goOS, goQuote } from "../../src/util/go_format.ts";

Deno.test("TestGoDuration", async (t) => {
  const cases: [ms: number, want: string][] = [
    [0, "0s"],
    [1e-6, "1ns"],
    [999e-6, "999ns"],
    [0.0015, "1.5µs"],
    [0.001, "1µs"],
    [1, "1ms"],
    [500, "500ms"],
    [1.5, "1.5ms"],
    [1000, "1s"],
    [1500, "1.5s"],
    [2000, "2s"],
    [59_999, "59.999s"],
    [60_000, "1m0s"],
    [90_000, "1m30s"],
    [3_600_000, "1h0m0s"],
    [7_384_500, "2h3m4.5s"],
    [-1000, "-1s"],
    [-90_000, "-1m30s"],
  ];
  for (const [ms, want] of cases) {
    await t.step(`${ms} ms → ${want}`, () => {
      assert.equal(goDuration(ms), want);
    });
  }
});

Deno.test("TestGoQuote", async (t) => {
  const cases: [name: string, input: string, want: string][] = [
    ["plain", "hello", '"hello"'],
    ["empty", "", '""'],
    ["spaces kept", "/bin/sh -c sleep 10", '"/bin/sh -c sleep 10"'],
    ["double quote", 'say "hi"', '"say \\"hi\\""'],
    ["single quote kept", "it's", `"it's"`],
    ["backslash", "a\\b", '"a\\\\b"'],
    ["newline", "a\nb", '"a\\nb"'],
    ["tab", "a\tb", '"a\\tb"'],
    ["carriage return", "\r", '"\\r"'],
    ["bell, backspace, form feed, vertical tab", "\x07\b\f\v", '"\\a\\b\\f\\v"'],
    ["NUL", "\x00", '"\\x00"'],
    ["other control", "\x1b", '"\\x1b"'],
    ["DEL", "\x7f", '"\\x7f"'],
    ["C1 control", "\u0080", '"\\u0080"'],
    ["printable unicode kept", "héllo 世界", '"héllo 世界"'],
    ["emoji kept", "😀", '"😀"'],
    ["no-break space escaped", "\u00a0", '"\\u00a0"'],
    ["byte order mark escaped", "\ufeff", '"\\ufeff"'],
    ["line separator escaped", "\u2028", '"\\u2028"'],
    ["host and port", ":32", '":32"'],
  ];
  for (const [name, input, want] of cases) {
    await t.step(name, () => {
      assert.equal(goQuote(input), want);
    });
  }
});

Deno.test("goArch/goOS: Go's GOARCH and GOOS names for Deno's", () => {
  assert.equal(goArch("x86_64"), "amd64");
  assert.equal(goArch("aarch64"), "arm64");
  assert.equal(goArch("riscv64"), "riscv64");
  assert.equal(goOS("linux"), "linux");
});
