import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import {
  DefaultEvictionHard,
  getThresholdQuantity,
  parseThresholdStatements,
} from "../../../src/kubelet/eviction/helpers.ts";

Deno.test("TestParseThresholdConfig", async (t) => {
  await t.step("kubelet's Linux defaults", () => {
    const thresholds = parseThresholdStatements(DefaultEvictionHard);
    assertEquals(
      thresholds.find((th) => th.signal === "memory.available")?.value,
      { quantity: 100 * 1024 * 1024 },
    );
    // Go's float32 0.1, not JavaScript's 0.1.
    assertEquals(
      thresholds.find((th) => th.signal === "nodefs.available")?.value,
      { percentage: Math.fround(0.1) },
    );
    assertEquals(thresholds.length, 5);
  });
  await t.step("0% and 100% are ignored", () => {
    assertEquals(
      parseThresholdStatements({ "nodefs.available": "0%", "imagefs.available": "100%" }),
      [],
    );
  });
  await t.step("an unknown signal or bad value is kubelet's error", () => {
    assertThrows(
      () => parseThresholdStatements({ "disk.available": "1Gi" }),
      /unsupported eviction signal disk\.available/,
    );
    assertThrows(
      () => parseThresholdStatements({ "nodefs.available": "110%" }),
      /must be <= 100%/,
    );
  });
});

Deno.test("TestGetThresholdQuantity", async (t) => {
  const cases: [string, Parameters<typeof getThresholdQuantity>[0], number, number][] = [
    ["an absolute quantity", { quantity: 1048576 }, 8 << 30, 1048576],
    // kubelet v1.36.3 on this host reported 267847642337 allocatable of 270553174016 at 1 %.
    ["1 % in float32, truncated", { percentage: Math.fround(0.01) }, 270553174016, 2705531679],
    ["10 %", { percentage: Math.fround(0.1) }, 1000, 100],
  ];
  for (const [name, value, capacity, expected] of cases) {
    await t.step(name, () => assertEquals(getThresholdQuantity(value, capacity), expected));
  }
});
