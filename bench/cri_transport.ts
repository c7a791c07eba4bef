/**
 * The CRI client's transport: latency of sequential Version and ListContainers calls through
 * `RemoteRuntimeService` (one long-lived connection), the same calls 16 at a time, and the heap and
 * RSS after every block of calls (a transport that leaks shows a slope).
 *
 *   bash scripts/containerd.sh up
 *   deno run -A --v8-flags=--expose-gc bench/cri_transport.ts [--n 1000] [--blocks 10]
 * @module
 */
import { criEndpoint } from "../tests/integration/helpers.ts";
import { newRemoteRuntimeService } from "../src/cri_client/mod.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const n = flag("n", 1000);
const blocks = flag("blocks", 10);

function percentile(sorted: number[], q: number): number {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
}

function row(name: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  const f = (v: number) => v.toFixed(3).padStart(8);
  return `${name.padEnd(28)} n=${String(sorted.length).padStart(5)} p50=${
    f(percentile(sorted, 0.5))
  } ` +
    `p99=${f(percentile(sorted, 0.99))} mean=${f(mean)} ms`;
}

async function time(count: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await fn();
    out.push(performance.now() - start);
  }
  return out;
}

const gc = (globalThis as { gc?: () => void }).gc;
function memory(): string {
  gc?.();
  const m = Deno.memoryUsage();
  return `heapUsed=${(m.heapUsed / 2 ** 20).toFixed(2)} MiB rss=${
    (m.rss / 2 ** 20).toFixed(1)
  } MiB`;
}

const runtime = await newRemoteRuntimeService(criEndpoint());
try {
  const containers = await runtime.listContainers();
  console.log(
    `endpoint=${criEndpoint()} containers=${containers.length} load=${
      Deno.loadavg().map((l) => l.toFixed(2)).join(",")
    }`,
  );
  // Warm-up: JIT and the connection.
  await time(200, () => runtime.version());
  await time(200, () => runtime.listContainers());
  console.log(row("Version", await time(n, () => runtime.version())));
  console.log(row("ListContainers", await time(n, () => runtime.listContainers())));
  const parallel: number[] = [];
  for (let i = 0; i < n / 16; i++) {
    const start = performance.now();
    await Promise.all(Array.from({ length: 16 }, () => runtime.version()));
    parallel.push(performance.now() - start);
  }
  console.log(row("16 concurrent Version", parallel));
  console.log(`memory before blocks: ${memory()}`);
  for (let b = 1; b <= blocks; b++) {
    await time(n, () => runtime.listContainers());
    console.log(`after block ${b} (${b * n} ListContainers): ${memory()}`);
  }
} finally {
  runtime.close();
}
