/**
 * The live view's log file (`<root-dir>/probelet.log`) is bounded (issue 21 row 14): it rotates
 * as kubelet rotates container logs (`<log>.<YYYYMMDD-hhmmss>[-n]`, at most `maxFiles` files with
 * the live one), where it used to grow without end.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { openLiveViewLog } from "../../../src/cmd/probelet/main.ts";
import * as log from "../../../src/util/log.ts";
import { defaultLogFileMaxFiles, rotatedLogFiles } from "../../../src/util/log_file.ts";

Deno.test("TestLiveViewLogIsRotated", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "probelet-live-log-" });
  const previous = log.setLogSink(() => {});
  const path = join(dir, "probelet.log");
  const now = Date.UTC(2026, 10, 27, 4, 15, 0);
  const file = openLiveViewLog(path, { maxSizeBytes: 4096, maxFiles: 3, now: () => now });
  try {
    await t.step("the log goes to the file and stays under its size limit", () => {
      for (let i = 0; i < 1000; i++) log.info("SyncLoop UPDATE", { source: "api", n: i });
      const live = Deno.statSync(path).size;
      assert.ok(live > 0 && live <= 4096, `live file is ${live} bytes`);
    });
    await t.step("at most maxFiles files, rotated ones named as kubelet names them", () => {
      const rotated = rotatedLogFiles(path);
      assert.equal(rotated.length, 2);
      const suffixes = rotated.map((f) => f.slice(path.length));
      for (const suffix of suffixes) assert.match(suffix, /^\.20261127-041500(-\d+)?$/);
      // The two newest rotations of that second, in order.
      const n = suffixes.map((s) => Number(s.split("-")[2]));
      assert.ok(n[0] > 1 && n[1] === n[0] + 1, suffixes.join(" "));
      const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
      assert.equal(names.length, 3);
      let total = 0;
      for (const name of names) total += Deno.statSync(join(dir, name)).size;
      assert.ok(total <= 3 * 4096, `${total} bytes on disk`);
    });
    await t.step("the newest lines are in the live file, whole", () => {
      const lines = Deno.readTextFileSync(path).trimEnd().split("\n");
      assert.match(lines.at(-1)!, /"SyncLoop UPDATE" source="api" n=999$/);
      for (const line of lines) {
        assert.match(line, /^I\d{4} .*"SyncLoop UPDATE" source="api" n=\d+$/);
      }
    });
  } finally {
    file.close();
    log.setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  }
  assert.equal(defaultLogFileMaxFiles, 5);
});
