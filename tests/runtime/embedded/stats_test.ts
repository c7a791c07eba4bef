/**
 * The embedded runtime's container stats from a fake cgroup folder and a fake /proc: CPU from
 * `cpu.stat`, memory as cAdvisor's working set with the memory controller, the processes' resident
 * memory without it, and a container without a cgroup read from its main process.
 * @module
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { join } from "node:path";
import { readContainerUsage } from "../../../src/runtime/embedded/stats.ts";

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeTextFile(path, text);
}

Deno.test("readContainerUsage", async (t) => {
  const dir = await Deno.makeTempDir();
  const proc = join(dir, "proc");
  const cgroup = join(dir, "cg", "c1");
  try {
    await write(join(cgroup, "cpu.stat"), "usage_usec 2500000\nuser_usec 2000000\n");
    await write(join(cgroup, "cgroup.procs"), "101\n");
    await write(join(cgroup, "exec-1", "cgroup.procs"), "102\n");
    await write(join(proc, "101", "status"), "Name:\tsh\nVmRSS:\t    1024 kB\n");
    await write(join(proc, "102", "status"), "Name:\tsh\nVmRSS:\t     512 kB\n");
    await write(
      join(proc, "101", "stat"),
      "101 (sh -c x) S 1 101 101 0 -1 0 0 0 0 0 150 50 30 20 20 0 1 0\n",
    );

    await t.step("no memory controller: CPU from cpu.stat, RSS of every process", async () => {
      assertEquals(await readContainerUsage({ cgroup, pid: 101 }, proc), {
        usageCoreNanoSeconds: 2_500_000_000n,
        workingSetBytes: 1536n * 1024n,
        usageBytes: 1536n * 1024n,
        rssBytes: 1536n * 1024n,
      });
    });
    await t.step("memory controller: usage minus inactive file", async () => {
      await write(join(cgroup, "memory.current"), "10000000\n");
      await write(join(cgroup, "memory.stat"), "anon 6000000\ninactive_file 3000000\n");
      assertEquals(await readContainerUsage({ cgroup, pid: 101 }, proc), {
        usageCoreNanoSeconds: 2_500_000_000n,
        workingSetBytes: 7_000_000n,
        usageBytes: 10_000_000n,
        rssBytes: 6_000_000n,
      });
    });
    await t.step("no cgroup: the main process and its reaped children", async () => {
      // utime 150 + stime 50 + cutime 30 + cstime 20 = 250 ticks = 2.5 s.
      assertEquals(await readContainerUsage({ pid: 101 }, proc), {
        usageCoreNanoSeconds: 2_500_000_000n,
        workingSetBytes: 1024n * 1024n,
        usageBytes: 1024n * 1024n,
        rssBytes: 1024n * 1024n,
      });
    });
    await t.step("gone: undefined", async () => {
      assertEquals(
        await readContainerUsage({ cgroup: join(dir, "none"), pid: 999 }, proc),
        undefined,
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
