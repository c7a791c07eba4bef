import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { parseQuantity } from "../../../src/api/resource/quantity.ts";

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
