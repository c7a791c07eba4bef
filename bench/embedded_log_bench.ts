/**
 * What the embedded runtime's container log costs, for `deno bench --allow-all
 * bench/embedded_log_bench.ts`: the shim's CRI-log writer (one 64 KiB chunk of short or long
 * lines, with and without rotation at 1 MiB), and a container printing 20 MB through a real shim
 * (start, pipe, log, rotation, exit). Prints figures only; the flood test asserts the bounds.
 * @module
 */
import { ContainerLog } from "../src/runtime/embedded/log.ts";
import { EmbeddedRuntimeService } from "../src/runtime/embedded/runtime.ts";

const dir = await Deno.makeTempDir({ prefix: "probelet-log-bench-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch {
    // removed already
  }
});
const clock = { now: () => Date.now() };
const chunkOf = (line: string) => new TextEncoder().encode(line.repeat(65536 / line.length));
const yesChunk = chunkOf("y\n");
const longChunk = chunkOf("x".repeat(1023) + "\n");

let n = 0;
for (
  const [name, chunk, maxSizeBytes] of [
    ["64 KiB of 2-byte lines (yes)", yesChunk, 0],
    ["64 KiB of 2-byte lines, rotating at 1 MiB", yesChunk, 1 << 20],
    ["64 KiB of 1 KiB lines", longChunk, 0],
    ["64 KiB of 1 KiB lines, rotating at 1 MiB", longChunk, 1 << 20],
  ] as const
) {
  const log = await ContainerLog.open(`${dir}/log-${n++}.log`, clock, {
    maxSizeBytes,
    maxFiles: 3,
  });
  Deno.bench({ name, group: "log writer", n: 200 }, async () => {
    await log.write("stdout", chunk);
  });
}

Deno.bench({ name: "20 MB of 1 KiB lines through a shim", group: "shim", n: 3 }, async () => {
  const runtime = new EmbeddedRuntimeService({
    rootDir: `${dir}/runtime-${n++}`,
    containerLogMaxSizeBytes: 1 << 20,
    containerLogMaxFiles: 3,
  });
  const sandbox = await runtime.runPodSandbox({
    metadata: { name: "bench", uid: "bench", namespace: "default" },
  });
  const id = await runtime.createContainer(sandbox, {
    metadata: { name: "flood" },
    image: { image: "none" },
    command: [
      "sh",
      "-c",
      "l=$(head -c 1023 /dev/zero | tr '\\0' x); yes \"$l\" | head -c 20000000",
    ],
  });
  await runtime.startContainer(id);
  while ((await runtime.containerStatus(id)).status.state === "CONTAINER_RUNNING") {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await runtime.shutdown();
});
