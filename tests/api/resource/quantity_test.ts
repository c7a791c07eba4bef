import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  formatMilliQuantity,
  parseQuantity,
  quantityFormat,
  quantityMilliValue,
  quantityValue,
  scaledValue,
} from "../../../src/api/resource/quantity.ts";

Deno.test("parseQuantity", () => {
  assertEquals(parseQuantity("500m"), 0.5);
  assertEquals(parseQuantity("64Mi"), 64 * 2 ** 20);
  assertEquals(parseQuantity("1e3"), 1000);
  assertEquals(parseQuantity("100e6"), 100e6);
  assertEquals(parseQuantity("2"), 2);
  assertEquals(parseQuantity("1.5k"), 1500);
  assertEquals(parseQuantity("250u"), 250e-6);
  assertEquals(parseQuantity("lots"), NaN);
  assertEquals(parseQuantity(""), NaN);
});

Deno.test("scaledValue", async (t) => {
  const cases: [string, number, number][] = [
    ["100m", -3, 100],
    ["0.1", -3, 100],
    ["250m", -3, 250],
    ["2", -3, 2000],
    ["1e3", -3, 1000000],
    ["1n", -3, 1],
    ["64Mi", 0, 67108864],
    ["1.5Ki", 0, 1536],
    ["128M", 0, 128000000],
    ["1m", 0, 1],
    [".5", -3, 500],
  ];
  for (const [q, scale, want] of cases) {
    await t.step(`${q} at 10^${scale}`, () => assertEquals(scaledValue(q, scale), want));
  }
  await t.step("not a quantity: NaN", () => {
    assertEquals(scaledValue("x", 0), NaN);
    assertEquals(scaledValue(".", 0), NaN);
  });
  await t.step("Value and MilliValue", () => {
    assertEquals(quantityValue("1Gi"), 2 ** 30);
    assertEquals(quantityMilliValue("1.5"), 1500);
  });
});

Deno.test("TestQuantityString (Go's CanonicalizeBytes)", async (t) => {
  const cases: [number, "DecimalSI" | "BinarySI" | "DecimalExponent", string][] = [
    [0, "DecimalSI", "0"],
    [250, "DecimalSI", "250m"],
    [1000, "DecimalSI", "1"],
    [1500, "DecimalSI", "1500m"],
    [2_000_000_000, "DecimalSI", "2M"],
    [1_500_000_000, "DecimalSI", "1500k"],
    [134_217_728_000, "BinarySI", "128Mi"],
    [1_536_000, "BinarySI", "1536"], // not a whole number of Ki
    [512_000, "BinarySI", "512"], // below 1024: decimal
    [1_500, "BinarySI", "1500m"], // not whole: decimal
    [3_000_000, "DecimalExponent", "3e3"],
  ];
  for (const [milli, format, want] of cases) {
    await t.step(`${milli}m ${format} → ${want}`, () => {
      assertEquals(formatMilliQuantity(milli, format), want);
    });
  }
  assertEquals(
    ["64Mi", "100m", "1e3", "2"].map(quantityFormat),
    ["BinarySI", "DecimalSI", "DecimalExponent", "DecimalSI"],
  );
});
