import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
} from "../../src/util/validation/validation.ts";

Deno.test("TestIsQualifiedName", async (t) => {
  for (
    const good of ["simple", "now-with-dashes", "1-starts-with-num", "example.com/MyName", "a"]
  ) {
    await t.step(`valid ${good}`, () => assertEquals(isQualifiedName(good), []));
  }
  await t.step("empty prefix", () => {
    assertEquals(isQualifiedName("/name"), ["prefix part must be non-empty"]);
  });
  await t.step("empty name", () => {
    assertEquals(isQualifiedName("example.com/")[0], "name part must be non-empty");
  });
  await t.step("too long", () => {
    assertEquals(isQualifiedName("a".repeat(64)), ["name part must be no more than 63 characters"]);
  });
  await t.step("two slashes", () => assertEquals(isQualifiedName("a/b/c").length, 1));
  await t.step("leading dash", () => assertEquals(isQualifiedName("-a").length, 1));
});

Deno.test("TestIsValidLabelValue", () => {
  assertEquals(isValidLabelValue(""), []);
  assertEquals(isValidLabelValue("true"), []);
  assertEquals(isValidLabelValue("a_b.c-d"), []);
  assertEquals(isValidLabelValue("a b").length, 1);
  assertEquals(isValidLabelValue("x".repeat(64))[0], "must be no more than 63 characters");
});

Deno.test("TestIsDNS1123Subdomain", () => {
  assertEquals(isDNS1123Subdomain("example.com"), []);
  assertEquals(isDNS1123Subdomain("Example.com").length, 1);
});
