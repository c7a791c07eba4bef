/** Port of kubelet's pkg/volume/secret/secret_test.go: TestMakePayload. */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import type { KeyToPath, Secret } from "../../../src/api/core/v1/mod.ts";
import { makePayload } from "../../../src/volume/secret/secret.ts";

const dec = new TextDecoder();

Deno.test("TestMakePayload", async (t) => {
  const secret: Secret = { metadata: {}, data: { foo: btoa("foo"), bar: btoa("bar") } };
  const cases: {
    name: string;
    mappings?: KeyToPath[];
    mode: number;
    optional?: boolean;
    payload?: Record<string, [string, number]>;
    error?: string;
  }[] = [
    { name: "no overrides", mode: 0o644, payload: { foo: ["foo", 0o644], bar: ["bar", 0o644] } },
    {
      name: "basic 1",
      mappings: [{ key: "foo", path: "path/to/foo.txt" }],
      mode: 0o644,
      payload: { "path/to/foo.txt": ["foo", 0o644] },
    },
    {
      name: "setting a mode",
      mappings: [{ key: "foo", path: "foo.txt", mode: 0o400 }, { key: "bar", path: "bar.bin" }],
      mode: 0o644,
      payload: { "foo.txt": ["foo", 0o400], "bar.bin": ["bar", 0o644] },
    },
    {
      name: "non existent key",
      mappings: [{ key: "zab", path: "path/to/foo.txt" }],
      mode: 0o644,
      error: "secret references non-existent secret key: zab",
    },
    {
      name: "missing key with optional",
      mappings: [{ key: "zab", path: "path/to/foo.txt" }],
      mode: 0o644,
      optional: true,
      payload: {},
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      if (c.error) {
        throws(() => makePayload(c.mappings, secret, c.mode, c.optional ?? false), {
          message: c.error,
        });
        return;
      }
      const p = makePayload(c.mappings, secret, c.mode, c.optional ?? false);
      assertEquals(
        Object.fromEntries(Object.entries(p).map(([k, v]) => [k, [dec.decode(v.data), v.mode]])),
        c.payload,
      );
    });
  }
});
