/**
 * Log rotation against containerd: the log manager renames a running container's full log,
 * containerd reopens it on ReopenContainerLog and goes on writing to the new file, the older
 * rotated file is gzipped at the next rotation, and `clean` removes them all.
 */
import assert from "node:assert/strict";
import { basename, dirname } from "node:path";
import type { RuntimeService } from "../../src/cri_client/mod.ts";
import { ContainerLogManager, getAllLogs } from "../../src/kubelet/logs/container_log_manager.ts";
import { FakeClock } from "../../src/util/clock.ts";
import {
  connectRuntime,
  eventually,
  integrationSkipReason,
  integrationTest,
  startTestSandbox,
} from "./helpers.ts";

const skip = await integrationSkipReason();
if (skip) console.error(`container_log_rotation_test: skipped: ${skip}`);

async function size(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch {
    return 0;
  }
}

async function readLog(path: string): Promise<string> {
  if (!path.endsWith(".gz")) return await Deno.readTextFile(path);
  const file = await Deno.open(path);
  return await new Response(file.readable.pipeThrough(new DecompressionStream("gzip"))).text();
}

integrationTest("container log rotation on containerd (ReopenContainerLog)", skip, async (t) => {
  const runtime: RuntimeService = await connectRuntime();
  const sandbox = await startTestSandbox(runtime, "log-rotation");
  try {
    // A burst past the size, then a line every 100 ms so the reopened file fills again.
    const id = await sandbox.startContainer("chatty", {
      command: [
        "sh",
        "-c",
        "i=0; while [ $i -lt 200 ]; do echo burst-$i-xxxxxxxxxxxxxxxx; i=$((i+1)); done; " +
        "while :; do echo tick; sleep 0.1; done",
      ],
    });
    const logPath = (await runtime.containerStatus(id)).status.logPath;
    assert.ok(logPath.startsWith("/"), `absolute log path: ${logPath}`);
    // The clock only names rotated files here: one second between rotations keeps names apart.
    const clock = new FakeClock(Date.now());
    const m = new ContainerLogManager({
      runtime: {
        listContainers: (filter) => runtime.listContainers(filter),
        containerStatus: (cid) => runtime.containerStatus(cid),
        reopenContainerLog: (cid) => runtime.reopenContainerLog!(cid),
      },
      clock,
      maxSizeBytes: 2048,
      maxFiles: 3,
    });

    await t.step("a full log is renamed and containerd writes a new one", async () => {
      await eventually(
        "the burst in the log",
        async () => (await size(logPath)) >= 2048 || undefined,
      );
      await m.processContainer(id);
      const files = await getAllLogs(logPath);
      assert.equal(files.length, 2, files.join(" "));
      assert.match(basename(files[0]), /^0\.log\.\d{8}-\d{6}$/);
      assert.match(await readLog(files[0]), /burst-0-/);
      await eventually(
        "new lines in the reopened log",
        async () => (await Deno.readTextFile(logPath)).includes("stdout F tick") || undefined,
      );
      assert.ok(!(await Deno.readTextFile(logPath)).includes("burst-0-"));
    });

    await t.step("the next rotation gzips the older file; maxFiles 3 keeps three", async () => {
      await eventually(
        "the new log past the size",
        async () => (await size(logPath)) >= 2048 || undefined,
        30_000,
      );
      await clock.step(1_000);
      await m.processContainer(id);
      const files = await getAllLogs(logPath);
      assert.equal(files.length, 3, files.join(" "));
      assert.ok(files[0].endsWith(".gz"), files[0]);
      assert.match(await readLog(files[0]), /burst-0-/);
      assert.match(await readLog(files[1]), /stdout F tick/);
    });

    await t.step("clean removes every log of the container", async () => {
      await runtime.stopContainer(id, { timeoutMs: 0 });
      await m.clean(id);
      const left: string[] = [];
      for await (const e of Deno.readDir(dirname(logPath))) left.push(e.name);
      assert.deepEqual(left, []);
    });
  } finally {
    await sandbox.remove();
    runtime.close();
  }
});
