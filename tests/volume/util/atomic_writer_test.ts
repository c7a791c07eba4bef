/**
 * Ports of kubelet's pkg/volume/util/atomic_writer_test.go: path validation, the paths an update
 * removes, and writes and updates checked on disk (the `..data` swap, user-visible symlinks, modes).
 * @module
 */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { join } from "node:path";
import {
  AtomicWriter,
  dataDirName,
  type FileProjection,
  validatePath,
  validatePayload,
} from "../../../src/volume/util/atomic_writer.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function file(text: string, mode = 0o644): FileProjection {
  return { data: enc.encode(text), mode };
}

function payloadOf(files: Record<string, string>, mode = 0o644): Record<string, FileProjection> {
  return Object.fromEntries(Object.entries(files).map(([k, v]) => [k, file(v, mode)]));
}

// What a reader of the volume sees: every regular file reached through the user-visible paths.
async function visibleFiles(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, prefix: string) => {
    for await (const e of Deno.readDir(d)) {
      if (prefix === "" && e.name.startsWith("..")) continue;
      const full = join(d, e.name);
      const rel = prefix === "" ? e.name : `${prefix}/${e.name}`;
      const info = await Deno.stat(full);
      if (info.isDirectory) await walk(full, rel);
      else out[rel] = dec.decode(await Deno.readFile(full));
    }
  };
  await walk(dir, "");
  return out;
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "atomic_writer_test" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("TestValidatePath", async (t) => {
  const long = (n: number) => "a".repeat(n);
  const cases: { name: string; path: string; valid: boolean }[] = [
    { name: "valid 1", path: "i/am/well/behaved.txt", valid: true },
    { name: "valid 2", path: "keepyourheaddownandfollowtherules.txt", valid: true },
    { name: "max path length", path: long(4096), valid: false },
    { name: "max file length", path: long(256), valid: false },
    { name: "absolute failure", path: "/dev/null", valid: false },
    { name: "reserved path", path: "..sneaky.txt", valid: false },
    {
      name: "contains doubledot 1",
      path: "hello/there/../../../../../../etc/passwd",
      valid: false,
    },
    { name: "contains doubledot 2", path: "hello/../etc/somethingbad", valid: false },
    { name: "empty", path: "", valid: false },
    {
      name: "a file named .. alone is not a reserved prefix but is a .. element",
      path: "..",
      valid: false,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      if (c.valid) validatePath(c.path);
      else throws(() => validatePath(c.path));
    });
  }
  await t.step("kubelet's messages", () => {
    throws(() => validatePath("/dev/null"), {
      message: "invalid path: must be relative path: /dev/null",
    });
    throws(() => validatePath("a/../b"), {
      message: "invalid path: must not contain '..': a/../b",
    });
    throws(() => validatePath("..x"), { message: "invalid path: must not start with '..': ..x" });
  });
});

Deno.test("TestValidatePayload cleans paths", () => {
  const clean = validatePayload({ "foo//bar": file("a"), "./baz/": file("b") });
  assertEquals([...clean.keys()].sort(), ["baz", "foo/bar"]);
});

Deno.test("TestPathsToRemove", async (t) => {
  const cases: {
    name: string;
    payload1: Record<string, string>;
    payload2: Record<string, string>;
    expected: string[];
  }[] = [
    {
      name: "simple",
      payload1: { foo: "foo", bar: "bar" },
      payload2: { foo: "foo" },
      expected: ["bar"],
    },
    {
      name: "simple 2",
      payload1: { "foo/bar.txt": "foo", "zip/zap/zup/fop.txt": "zap" },
      payload2: { "foo/bar.txt": "zap" },
      expected: ["zip", "zip/zap", "zip/zap/zup", "zip/zap/zup/fop.txt"],
    },
    {
      name: "subdirs 1",
      payload1: { "foo/bar/baz.txt": "foo", "zip/zap/zup/fop.txt": "zap" },
      payload2: { "foo/bar/baz.txt": "zap" },
      expected: ["zip", "zip/zap", "zip/zap/zup", "zip/zap/zup/fop.txt"],
    },
    {
      name: "subdirs 2",
      payload1: { "foo/bar/baz.txt": "foo", "foo/bar/zap.txt": "zap" },
      payload2: { "foo/bar/baz.txt": "zap" },
      expected: ["foo/bar/zap.txt"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () =>
      withTempDir(async (dir) => {
        const writer = new AtomicWriter(dir, "test");
        await writer.write(payloadOf(c.payload1));
        const oldTsDir = join(dir, await Deno.readLink(join(dir, dataDirName)));
        const removed = await writer.pathsToRemove(
          validatePayload(payloadOf(c.payload2)),
          oldTsDir,
        );
        assertEquals([...removed].sort(), c.expected);
      }));
  }
});

Deno.test("TestWriteOnce", async (t) => {
  const cases: { name: string; payload: Record<string, string>; success: boolean }[] = [
    { name: "invalid payload 1", payload: { foo: "foo", "..bar": "bar" }, success: false },
    { name: "invalid payload 2", payload: { "foo/../bar": "foo" }, success: false },
    { name: "basic 1", payload: { foo: "foo", bar: "bar" }, success: true },
    { name: "dotfiles", payload: { ".dotfile": "foo", ".dotfile.file": "bar" }, success: true },
    {
      name: "subdirectories 1",
      payload: { "foo/bar.txt": "foo", "bar/zab.txt": "bar" },
      success: true,
    },
    {
      name: "subdirectories 2",
      payload: { "foo//bar.txt": "foo", "bar/zab.txt": "bar", "foo/blaz/bar.txt": "foo" },
      success: true,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () =>
      withTempDir(async (dir) => {
        const writer = new AtomicWriter(dir, "test");
        if (!c.success) {
          let threw = false;
          await writer.write(payloadOf(c.payload)).catch(() => threw = true);
          assertEquals(threw, true);
          assertEquals([...Deno.readDirSync(dir)].length, 0, "nothing written");
          return;
        }
        await writer.write(payloadOf(c.payload));
        const expected = Object.fromEntries(
          [...validatePayload(payloadOf(c.payload))].map(([k, v]) => [k, dec.decode(v.data)]),
        );
        assertEquals(await visibleFiles(dir), expected);
        // Each user-visible top-level name is a symlink into ..data.
        for (const top of new Set(Object.keys(expected).map((p) => p.split("/")[0]))) {
          assertEquals(await Deno.readLink(join(dir, top)), join(dataDirName, top));
        }
        assertEquals((await Deno.readLink(join(dir, dataDirName))).startsWith(".."), true);
      }));
  }
});

Deno.test("TestUpdate", async (t) => {
  const cases: {
    name: string;
    first: Record<string, string>;
    next: Record<string, string>;
  }[] = [
    { name: "update", first: { foo: "foo", bar: "bar" }, next: { foo: "foo2", bar: "bar2" } },
    { name: "no update", first: { foo: "foo", bar: "bar" }, next: { foo: "foo", bar: "bar" } },
    { name: "add file", first: { foo: "foo" }, next: { foo: "foo", bar: "bar" } },
    { name: "remove file", first: { foo: "foo", bar: "bar" }, next: { foo: "foo" } },
    {
      name: "subdirectory update",
      first: { "foo/bar.txt": "foo", "bar/zab.txt": "bar" },
      next: { "foo/bar.txt": "foo2", "zip/zap.txt": "zip" },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () =>
      withTempDir(async (dir) => {
        const writer = new AtomicWriter(dir, "test");
        await writer.write(payloadOf(c.first));
        const before = await Deno.readLink(join(dir, dataDirName));
        await writer.write(payloadOf(c.next));
        assertEquals(await visibleFiles(dir), c.next);
        const after = await Deno.readLink(join(dir, dataDirName));
        const unchanged = JSON.stringify(c.first) === JSON.stringify(c.next);
        assertEquals(after === before, unchanged, "..data swapped only for a change");
        // Only the current timestamped folder stays.
        const tsDirs = [...Deno.readDirSync(dir)].filter((e) =>
          e.name.startsWith("..") && e.name !== dataDirName
        );
        assertEquals(tsDirs.map((e) => e.name), [after]);
      }));
  }
});

Deno.test("TestMultipleUpdates", () =>
  withTempDir(async (dir) => {
    const writer = new AtomicWriter(dir, "test");
    const versions: Record<string, string>[] = [
      { foo: "1", "a/b": "1" },
      { foo: "2", "c/d/e": "2" },
      { bar: "3" },
      { foo: "4", bar: "4", "a/b": "4" },
    ];
    for (const v of versions) {
      await writer.write(payloadOf(v));
      assertEquals(await visibleFiles(dir), v);
    }
  }));

Deno.test("TestWriteOnce modes ignore the umask", () =>
  withTempDir(async (dir) => {
    const old = Deno.umask(0o077);
    try {
      const writer = new AtomicWriter(dir, "test");
      await writer.write({ a: file("x", 0o644), "s/b": file("y", 0o400) });
      assertEquals((await Deno.stat(join(dir, "a"))).mode! & 0o777, 0o644);
      assertEquals((await Deno.stat(join(dir, "s/b"))).mode! & 0o777, 0o400);
      const ts = join(dir, await Deno.readLink(join(dir, dataDirName)));
      assertEquals((await Deno.stat(ts)).mode! & 0o777, 0o755);
    } finally {
      Deno.umask(old);
    }
  }));
