/**
 * Tests of image name parsing. Ports kubernetes pkg/util/parsers/parsers_test.go
 * (TestParseImageName).
 * @module
 */
import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import { parseImageName } from "../../../src/util/parsers/parsers.ts";

Deno.test("TestParseImageName", async (t) => {
  const digest = "sha256:e0f1bb84c2c6ab0e7a3e3e0a2a4b0b9d9b4ad4d5a1d7b1d3e2f3c4b5a6978899";
  const cases: [string, string, string, string][] = [
    ["docker.io/library/busybox", "docker.io/library/busybox", "latest", ""],
    ["docker.io/busybox", "docker.io/library/busybox", "latest", ""],
    ["busybox", "docker.io/library/busybox", "latest", ""],
    ["busybox:1.0", "docker.io/library/busybox", "1.0", ""],
    ["index.docker.io/busybox", "docker.io/library/busybox", "latest", ""],
    ["registry.k8s.io/pause:3.10", "registry.k8s.io/pause", "3.10", ""],
    ["localhost/app", "localhost/app", "latest", ""],
    ["localhost:5000/app:v1", "localhost:5000/app", "v1", ""],
    ["127.0.0.1:5000/probelet/busybox:1", "127.0.0.1:5000/probelet/busybox", "1", ""],
    [`busybox@${digest}`, "docker.io/library/busybox", "", digest],
    [`busybox:1.0@${digest}`, "docker.io/library/busybox", "1.0", digest],
  ];
  for (const [input, repo, tag, dig] of cases) {
    await t.step(input, () => {
      assertEquals(parseImageName(input), { repoToPull: repo, tag, digest: dig });
    });
  }
  for (
    const bad of [
      "FAILED_IMAGE",
      "http://url",
      "busybox:1.0:1.0",
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      "",
    ]
  ) {
    await t.step(`invalid: ${JSON.stringify(bad)}`, () => {
      assertThrows(() => parseImageName(bad), /^Error: couldn't parse image name/);
    });
  }
});
