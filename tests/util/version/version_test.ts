/**
 * Version parsing as apimachinery's util/version: TestSemanticVersions / TestGenericVersions
 * cases that node status depends on (the runtime's version), and the errors.
 */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { parseGeneric, parseSemantic } from "../../../src/util/version/version.ts";

Deno.test("TestSemanticVersions", async (t) => {
  const good: [string, string][] = [
    ["0.1.0", "0.1.0"],
    ["v1.6.20", "1.6.20"],
    ["1.0.0-alpha.1", "1.0.0-alpha.1"],
    ["1.0.0-rc.1+build.1", "1.0.0-rc.1+build.1"],
    ["1.6.20 ", "1.6.20"],
  ];
  for (const [input, want] of good) {
    await t.step(`${input} → ${want}`, () => assertEquals(parseSemantic(input).toString(), want));
  }
  for (const bad of ["1.6", "1.6.20~ds1", "01.2.3", "1.02.3", "1.2.3-01", "1.2.3.4", "x"]) {
    await t.step(`${bad} is not semantic`, () => throws(() => parseSemantic(bad)));
  }
});

Deno.test("TestGenericVersions", async (t) => {
  const good: [string, string][] = [
    ["1.6.20~ds1", "1.6.20"],
    ["1.7", "1.7"],
    ["1.2.3.4", "1.2.3.4"],
    ["v2.0.0-beta.1", "2.0.0"],
    ["1.02.3", "1.2.3"],
  ];
  for (const [input, want] of good) {
    await t.step(`${input} → ${want}`, () => assertEquals(parseGeneric(input).toString(), want));
  }
  for (const bad of ["1", "01.2", "", "containerd"]) {
    await t.step(`${JSON.stringify(bad)} is not a version`, () => throws(() => parseGeneric(bad)));
  }
});
