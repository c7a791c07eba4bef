/**
 * The open-file limit is raised to the hard limit as Go's runtime does, and the state folder lock
 * cannot be taken twice.
 */
import { deepStrictEqual as assertEquals, ok as assert, throws } from "node:assert/strict";
import { join } from "node:path";
import { LockHeldError, tryLockFile } from "../../src/util/flock.ts";
import { openFileLimit, raiseOpenFileLimit, setOpenFileSoftLimit } from "../../src/util/rlimit.ts";

Deno.test("raiseOpenFileLimit lifts a lowered soft limit to the hard limit", () => {
  const before = openFileLimit();
  assert(before, "the limit can be read");
  try {
    assert(setOpenFileSoftLimit(256));
    assertEquals(openFileLimit()!.soft, 256);
    const raised = raiseOpenFileLimit();
    assertEquals(raised.before, { soft: 256, hard: before.hard });
    const expected = before.hard === Infinity
      ? Number(Deno.readTextFileSync("/proc/sys/fs/nr_open").trim())
      : before.hard;
    assertEquals(raised.after, { soft: expected, hard: before.hard });
  } finally {
    setOpenFileSoftLimit(before.soft);
  }
});

Deno.test("tryLockFile: a second lock fails naming the holder; released, it can be taken", async () => {
  const dir = await Deno.makeTempDir({ prefix: "probelet-lock-" });
  const path = join(dir, "probelet.lock");
  try {
    const first = tryLockFile(path);
    assertEquals(Deno.readTextFileSync(path), `${Deno.pid}\n`);
    throws(() => tryLockFile(path), (e: unknown) => {
      assert(e instanceof LockHeldError);
      assertEquals(e.holderPid, Deno.pid);
      assertEquals(e.message, `${path} is locked by another process (pid ${Deno.pid})`);
      return true;
    });
    // Another process sees the lock too.
    const other = await new Deno.Command("flock", { args: ["-n", path, "true"] }).output();
    assertEquals(other.code, 1, "flock(1) in another process could take the lock");
    first.release();
    const again = tryLockFile(path);
    again.release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
