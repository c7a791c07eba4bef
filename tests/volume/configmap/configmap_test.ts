/** Port of kubelet's pkg/volume/configmap/configmap_test.go: TestMakePayload. */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import type { ConfigMap, KeyToPath } from "../../../src/api/core/v1/mod.ts";
import { makePayload } from "../../../src/volume/configmap/configmap.ts";

const dec = new TextDecoder();
const b64 = (s: string) => btoa(s);

function show(p: ReturnType<typeof makePayload>): Record<string, [string, number]> {
  return Object.fromEntries(
    Object.entries(p).map(([k, v]) => [k, [dec.decode(v.data), v.mode]]),
  );
}

Deno.test("TestMakePayload", async (t) => {
  const cm = (data: Record<string, string>, binaryData?: Record<string, string>): ConfigMap => ({
    metadata: {},
    data,
    binaryData,
  });
  const cases: {
    name: string;
    mappings?: KeyToPath[];
    configMap: ConfigMap;
    mode?: number;
    optional?: boolean;
    payload?: Record<string, [string, number]>;
    error?: string;
  }[] = [
    {
      name: "no overrides",
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o644,
      payload: { foo: ["foo", 0o644], bar: ["bar", 0o644] },
    },
    {
      name: "no overrides binary data",
      configMap: cm({}, { foo: b64("foo"), bar: b64("bar") }),
      mode: 0o644,
      payload: { foo: ["foo", 0o644], bar: ["bar", 0o644] },
    },
    {
      name: "no overrides mixed data",
      configMap: cm({ foo: "foo" }, { bar: b64("bar") }),
      mode: 0o644,
      payload: { foo: ["foo", 0o644], bar: ["bar", 0o644] },
    },
    {
      name: "basic 1",
      mappings: [{ key: "foo", path: "path/to/foo.txt" }],
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o644,
      payload: { "path/to/foo.txt": ["foo", 0o644] },
    },
    {
      name: "subdirs",
      mappings: [{ key: "foo", path: "path/to/1/2/3/foo.txt" }],
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o644,
      payload: { "path/to/1/2/3/foo.txt": ["foo", 0o644] },
    },
    {
      name: "subdirs 2",
      mappings: [{ key: "foo", path: "path/to/1/2/3/foo.txt" }, {
        key: "bar",
        path: "another/path/to/1/2/3/bar.txt",
      }],
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o644,
      payload: {
        "path/to/1/2/3/foo.txt": ["foo", 0o644],
        "another/path/to/1/2/3/bar.txt": ["bar", 0o644],
      },
    },
    {
      name: "setting a mode",
      mappings: [{ key: "foo", path: "foo.txt", mode: 0o400 }, { key: "bar", path: "bar.bin" }],
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o644,
      payload: { "foo.txt": ["foo", 0o400], "bar.bin": ["bar", 0o644] },
    },
    {
      name: "setting a different default mode",
      mappings: [{ key: "foo", path: "foo.txt" }, { key: "bar", path: "bar.bin" }],
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o400,
      payload: { "foo.txt": ["foo", 0o400], "bar.bin": ["bar", 0o400] },
    },
    {
      name: "non existent key",
      mappings: [{ key: "zab", path: "path/to/foo.txt" }],
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o644,
      error: "configmap references non-existent config key: zab",
    },
    {
      name: "missing key with optional",
      mappings: [{ key: "zab", path: "path/to/foo.txt" }],
      configMap: cm({ foo: "foo", bar: "bar" }),
      mode: 0o644,
      optional: true,
      payload: {},
    },
    {
      name: "no defaultMode",
      configMap: cm({ foo: "foo" }),
      error: "no defaultMode used, not even the default value for it",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      if (c.error) {
        throws(() => makePayload(c.mappings, c.configMap, c.mode, c.optional ?? false), {
          message: c.error,
        });
        return;
      }
      assertEquals(
        show(makePayload(c.mappings, c.configMap, c.mode, c.optional ?? false)),
        c.payload,
      );
    });
  }
});
