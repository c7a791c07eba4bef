/**
 * CRI call latency: ContainerStatus and ExecSync through probelet's client, through a bare grpc-js
 * client on the same proto (no deadline handling, no conversion), and as containerd itself measures
 * them (its `grpc_server_handling_seconds` histogram, enabled by scripts/containerd.sh). The gap
 * between the client's and containerd's numbers is the client side: grpc-js, the unix socket, and
 * our wrapper.
 *
 *   bash scripts/containerd.sh up
 *   deno run -A bench/cri_latency.ts [--n 300] [--exec-n 150]
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fileURLToPath } from "node:url";
import { RuntimeCommandRunner } from "../src/kubelet/kuberuntime/kuberuntime_container.ts";
import {
  connectRuntime,
  criEndpoint,
  repoRoot,
  startTestSandbox,
} from "../tests/integration/helpers.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const statusN = flag("n", 300);
const execN = flag("exec-n", 150);

/** Percentile of sorted samples (nearest rank). */
function percentile(sorted: number[], q: number): number {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
}

interface Summary {
  n: number;
  median: number;
  p99: number;
  mean: number;
}

function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return { n: sorted.length, median: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), mean };
}

async function time(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn();
    out.push(performance.now() - start);
  }
  return out;
}

// ---- containerd's own view: grpc_server_handling_seconds for runtime.v1.RuntimeService ----

interface Histogram {
  count: number;
  sum: number;
  /** Cumulative counts by upper bound (seconds), ascending, ending with +Inf. */
  buckets: [number, number][];
}

async function scrape(addr: string, method: string): Promise<Histogram> {
  const text = await (await fetch(`http://${addr}/v1/metrics`)).text();
  const h: Histogram = { count: 0, sum: 0, buckets: [] };
  const sel = `grpc_method="${method}",grpc_service="runtime.v1.RuntimeService"`;
  for (const line of text.split("\n")) {
    if (!line.includes(sel)) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (line.startsWith("grpc_server_handling_seconds_count")) h.count = value;
    else if (line.startsWith("grpc_server_handling_seconds_sum")) h.sum = value;
    else if (line.startsWith("grpc_server_handling_seconds_bucket")) {
      const le = /le="([^"]+)"/.exec(line)![1];
      h.buckets.push([le === "+Inf" ? Infinity : Number(le), value]);
    }
  }
  h.buckets.sort((a, b) => a[0] - b[0]);
  return h;
}

function diff(after: Histogram, before: Histogram): Histogram {
  return {
    count: after.count - before.count,
    sum: after.sum - before.sum,
    buckets: after.buckets.map(([le, c], i) => [le, c - (before.buckets[i]?.[1] ?? 0)]),
  };
}

/** Prometheus' histogram_quantile: linear interpolation inside the bucket, in milliseconds. */
function bucketQuantile(h: Histogram, q: number): number {
  const rank = q * h.count;
  let lower = 0;
  let below = 0;
  for (const [le, cumulative] of h.buckets) {
    if (cumulative >= rank) {
      if (lower === 0) return NaN; // first bucket: only "below its bound" is known
      if (le === Infinity) return lower * 1000;
      const inBucket = cumulative - below;
      const frac = inBucket === 0 ? 0 : (rank - below) / inBucket;
      return (lower + (le - lower) * frac) * 1000;
    }
    lower = le;
    below = cumulative;
  }
  return NaN;
}

// ---- a bare grpc-js client on the same proto ----

function rawClient(endpoint: string) {
  const def = protoLoader.loadSync(
    fileURLToPath(new URL("../proto/runtime/v1/api.proto", import.meta.url)),
    { keepCase: false, longs: String, enums: String, defaults: true },
  );
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor } };
  };
  const client = new pkg.runtime.v1.RuntimeService(
    endpoint.replace(/^unix:\/\//, "unix://"),
    grpc.credentials.createInsecure(),
  ) as unknown as
    & Record<string, (req: unknown, cb: (err: unknown, res: unknown) => void) => void>
    & {
      close(): void;
    };
  const call = (method: string, req: unknown) =>
    new Promise((resolve, reject) =>
      client[method](req, (err: unknown, res: unknown) => (err ? reject(err) : resolve(res)))
    );
  return { call, close: () => client.close() };
}

// ---- run ----

// Quantiles inside containerd's first bucket (0–5 ms) carry no information beyond "< 5 ms".
const fmt = (ms: number) => (Number.isNaN(ms) ? "<5" : ms.toFixed(2)).padStart(8);
const rows: string[] = [];
function row(
  call: string,
  path: string,
  s: { n: number; median: number; p99: number; mean: number },
) {
  rows.push(
    `${call.padEnd(16)} ${path.padEnd(34)} ${String(s.n).padStart(5)} ${fmt(s.median)} ${
      fmt(s.p99)
    } ${fmt(s.mean)}`,
  );
}

const metricsAddr =
  (await Deno.readTextFile(`${repoRoot}/.run/containerd/metrics.addr`).catch(() => "")).trim();
const runtime = await connectRuntime();
const raw = rawClient(criEndpoint());
const sandbox = await startTestSandbox(runtime, "bench");
try {
  const id = await sandbox.startContainer("app", { command: ["sleep", "3600"] });
  const runner = new RuntimeCommandRunner(runtime);
  const cid = { type: "containerd", id };
  const execCmd = ["true"];

  // Warm up both channels and containerd's caches.
  await time(20, () => runtime.containerStatus(id));
  await time(20, () => raw.call("ContainerStatus", { containerId: id }));
  await time(5, () => runner.runInContainer(cid, execCmd, { timeoutMs: 5000 }));

  // Client and bare calls alternate, so both see the same machine load; containerd's histogram
  // covers both (the server does the same work for either).
  const phases: [string, number, () => Promise<unknown>, () => Promise<unknown>, string][] = [
    [
      "ContainerStatus",
      statusN,
      () => runtime.containerStatus(id),
      () => raw.call("ContainerStatus", { containerId: id }),
      "probelet client",
    ],
    [
      "ExecSync",
      execN,
      () => runner.runInContainer(cid, execCmd, { timeoutMs: 5000 }),
      () => raw.call("ExecSync", { containerId: id, cmd: execCmd, timeout: "5" }),
      "probelet runner (RunInContainer)",
    ],
  ];
  for (const [method, n, ours, bare, label] of phases) {
    const before = metricsAddr ? await scrape(metricsAddr, method) : undefined;
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < n; i++) {
      a.push(...await time(1, ours));
      b.push(...await time(1, bare));
    }
    row(method, label, summarize(a));
    row(method, "bare grpc-js, same proto", summarize(b));
    if (before) {
      const h = diff(await scrape(metricsAddr, method), before);
      row(method, "containerd handling (histogram)", {
        n: h.count,
        median: bucketQuantile(h, 0.5),
        p99: bucketQuantile(h, 0.99),
        mean: (h.sum / h.count) * 1000,
      });
    }
  }
} finally {
  await sandbox.remove();
  raw.close();
  runtime.close();
}

console.log(`CRI latency against ${criEndpoint()}, milliseconds. containerd's medians and p99 are`);
console.log("interpolated inside its histogram buckets (5/10/25/50/100 ms; <5 = first bucket);");
console.log("its means are exact. Its counts include any other client's calls during the run.");
console.log(
  `${"call".padEnd(16)} ${"path".padEnd(34)} ${"n".padStart(5)} ${"median".padStart(8)} ${
    "p99".padStart(8)
  } ${"mean".padStart(8)}`,
);
for (const r of rows) console.log(r);
if (!metricsAddr) {
  console.log("(no .run/containerd/metrics.addr: containerd's own timings skipped)");
}
Deno.exit(0);
