/** Port of kubelet's pkg/volume/hostpath/host_path_test.go: TestOSFileTypeChecker / checkType. */
import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import { join } from "node:path";
import { checkType } from "../../../src/volume/hostpath/host_path.ts";

Deno.test("TestOSFileTypeChecker", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "host_path_test" });
  try {
    const file = join(dir, "file");
    await Deno.writeTextFile(file, "x");
    const sock = join(dir, "sock");
    const listener = Deno.listen({ transport: "unix", path: sock });
    try {
      const ok: [string, string][] = [
        [dir, ""],
        [dir, "Directory"],
        [dir, "DirectoryOrCreate"],
        [file, "File"],
        [file, "FileOrCreate"],
        [sock, "Socket"],
        ["/dev/null", "CharDevice"],
        ["/nonexistent/anything", ""],
      ];
      for (const [path, type] of ok) {
        await t.step(`${type || "unset"} ${path}`, () => checkType(path, type));
      }
      const bad: [string, string, string][] = [
        [file, "Directory", `hostPath type check failed: ${file} is not a directory`],
        [dir, "File", `hostPath type check failed: ${dir} is not a file`],
        [file, "Socket", `hostPath type check failed: ${file} is not a socket file`],
        [file, "CharDevice", `hostPath type check failed: ${file} is not a character device`],
        ["/dev/null", "BlockDevice", "hostPath type check failed: /dev/null is not a block device"],
        [
          join(dir, "missing"),
          "Directory",
          `hostPath type check failed: ${dir}/missing is not a directory`,
        ],
        [dir, "Bogus", "Bogus is an invalid volume type"],
      ];
      for (const [path, type, message] of bad) {
        await t.step(`${type} ${path} fails`, () => rejects(checkType(path, type), { message }));
      }
      await t.step("DirectoryOrCreate creates 0755", async () => {
        const created = join(dir, "made/deep");
        const old = Deno.umask(0);
        try {
          await checkType(created, "DirectoryOrCreate");
        } finally {
          Deno.umask(old);
        }
        assertEquals((await Deno.stat(created)).mode! & 0o777, 0o755);
      });
      await t.step("FileOrCreate creates 0644", async () => {
        const created = join(dir, "made.txt");
        const old = Deno.umask(0);
        try {
          await checkType(created, "FileOrCreate");
        } finally {
          Deno.umask(old);
        }
        const info = await Deno.stat(created);
        assertEquals([info.isFile, info.mode! & 0o777], [true, 0o644]);
      });
    } finally {
      listener.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
