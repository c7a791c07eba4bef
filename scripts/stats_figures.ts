/**
 * Figures of the stats paths, printed (not asserted): how long `/stats/summary` (whole and
 * `only_cpu_and_memory`), `/metrics` and `/metrics/resource` take for N pods of 2 containers
 * from an in-memory CRI runtime, with a real log file per container and an emptyDir of F files per
 * pod under a temporary root, the node's figures from the real /proc; and the agent's RSS before
 * and after. Run: `deno run -A --v8-flags=--expose-gc scripts/stats_figures.ts [pods=100] [files=20]
 * [rounds=20]`.
 * @module
 */
import { join } from "node:path";
import type { Container, PodSandbox } from "../src/cri_client/api.ts";
import type { ContainerStats } from "../src/cri_client/runtime_service.ts";
import { newStatsRoutes } from "../src/kubelet/server/stats/routes.ts";

const [pods = 100, files = 20, rounds = 20] = Deno.args.map(Number);
const root = await Deno.makeTempDir({ prefix: "probelet-stats-figures-" });
const sec = 1_000_000_000n;
const now = BigInt(Date.now()) * 1_000_000n;
const sandboxes: PodSandbox[] = [];
const containers: Container[] = [];
const stats: ContainerStats[] = [];
for (let p = 0; p < pods; p++) {
  const uid = `uid-${p}`;
  sandboxes.push({
    id: `s${p}`,
    metadata: { name: `pod-${p}`, namespace: "default", uid, attempt: 0 },
    state: "SANDBOX_READY",
    createdAt: now - 60n * sec,
    labels: {},
    annotations: {},
    runtimeHandler: "",
  });
  const cache = join(root, "pods", uid, "volumes", "kubernetes.io~empty-dir", "cache");
  await Deno.mkdir(cache, { recursive: true });
  for (let f = 0; f < files; f++) await Deno.writeTextFile(join(cache, `f${f}`), "x".repeat(4096));
  for (const name of ["app", "sidecar"]) {
    const id = `c-${p}-${name}`;
    containers.push({
      id,
      podSandboxId: `s${p}`,
      metadata: { name, attempt: 0 },
      imageRef: "",
      imageId: "",
      state: "CONTAINER_RUNNING",
      createdAt: now - 50n * sec,
      labels: {},
      annotations: {},
    });
    const logs = join(root, "pods", `default_pod-${p}_${uid}`, name);
    await Deno.mkdir(logs, { recursive: true });
    await Deno.writeTextFile(join(logs, "0.log"), "line\n".repeat(200));
    stats.push({
      id,
      name,
      labels: {
        "io.kubernetes.pod.name": `pod-${p}`,
        "io.kubernetes.pod.namespace": "default",
        "io.kubernetes.container.name": name,
      },
      cpu: { timestampNs: now, usageCoreNanoSeconds: BigInt(p) * sec },
      memory: { timestampNs: now, workingSetBytes: 1n << 20n },
      writableLayer: { timestampNs: now, usedBytes: 8192n, inodesUsed: 2n, mountpoint: root },
    });
  }
}
const runtime = {
  listPodSandbox: () => Promise.resolve(sandboxes),
  listContainers: () => Promise.resolve(containers),
  listContainerStats: () => Promise.resolve(stats),
  podSandboxStatus: () => Promise.resolve({ status: {}, info: {} }),
};
const route = newStatsRoutes(
  // deno-lint-ignore no-explicit-any
  { nodeName: "figures", pods: () => [], runtime: runtime as any },
  { readOnly: true, rootDir: root },
);

const rss = () => Deno.memoryUsage().rss / 2 ** 20;
const rssBefore = rss();
const heapBefore = Deno.memoryUsage().heapUsed / 2 ** 20;
async function measure(path: string): Promise<void> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    const res = await route(new Request(`http://x${path}`))!;
    bytes = (await res.arrayBuffer()).byteLength;
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(
    `${path}: median ${median.toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms, ` +
      `${(bytes / 1024).toFixed(0)} KiB`,
  );
}
console.log(`${pods} pods × 2 containers, ${files} files per emptyDir, ${rounds} rounds each`);
await measure("/stats/summary");
await measure("/stats/summary?only_cpu_and_memory=true");
await measure("/metrics");
await measure("/metrics/resource");
// With --v8-flags=--expose-gc, the heap once garbage is collected.
(globalThis as { gc?: () => void }).gc?.();
const heap = Deno.memoryUsage().heapUsed / 2 ** 20;
console.log(
  `RSS ${rssBefore.toFixed(0)} MiB before, ${rss().toFixed(0)} MiB after; ` +
    `heap in use after ${heap.toFixed(0)} MiB (heap before ${heapBefore.toFixed(0)} MiB)`,
);
await Deno.remove(root, { recursive: true });
