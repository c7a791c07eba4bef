import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { metav1Time } from "../../../../src/api/meta/v1/mod.ts";

Deno.test("metav1Time: RFC 3339 in UTC, fractions of a second dropped (Time.MarshalJSON)", () => {
  assertEquals(metav1Time(Date.UTC(2026, 10, 23, 4, 50, 0)), "2026-11-23T04:50:00Z");
  assertEquals(metav1Time(Date.UTC(2026, 10, 23, 4, 50, 0, 999)), "2026-11-23T04:50:00Z");
  assertEquals(metav1Time(0), "1970-01-01T00:00:00Z");
});
