/**
 * Where probelet's resident memory goes (issue 20, item 4), printed as figures:
 *
 * - `modules`: RSS a bare Deno 2.9.3 process gains by importing the `node:` modules the agent
 *   imports (read from `deno info`) and what node:http or node:http2 would add, then each
 *   npm package the agent may load, one fresh process each, over those `node:` modules; then the
 *   agent's own module graph (src/cmd/probelet/app.ts) over all of them;
 * - `isolates`: RSS one extra V8 isolate costs: a probe-pool thread (started, one TCP probe run),
 *   the manifest-decoding worker (one manifest decoded), and what stays after each is terminated;
 * - `cri`: RSS the CRI client adds (src/cri_client/mod.ts imported, its two services made), over
 *   the `node:` modules;
 * - `agent`: the agent itself (runKubelet in a child process, with the flags `--vs-kubelet` gives
 *   probelet) at each `--slots` pod count on the local control plane and containerd: VmRSS, the
 *   anonymous and file-backed parts (/proc/self/smaps_rollup), threads, and V8's view
 *   (`node:v8` heap statistics: used and committed heap, its young and old generation, code,
 *   malloced, external), without forcing a GC (a full GC resizes the young generation), and its
 *   CPU (all threads' CPU seconds over `--cpu-window` seconds after the `--settle`, % of a core).
 *
 * Each figure is the median of `--repeat` runs (modules, isolates). Needs `--v8-flags=--expose-gc`
 * for the GC figures; `agent` needs `scripts/containerd.sh up` and `scripts/kube-apiserver.sh up`.
 *
 *   deno run -A --v8-flags=--expose-gc bench/memory_breakdown.ts [--sections modules,isolates,cri,agent]
 *     [--slots 0,30,100] [--settle S] [--cpu-window S] [--repeat N]
 *     [--probelet-flag=--probe-workers=0 ...]
 *     [--v8-flags F] (the agent's V8 flags, e.g. --max-semi-space-size=1)
 *     [--deno-flag=F ...] (the agent's `deno run` flags, e.g. --deno-flag=--no-code-cache)
 *     [--env=NAME=VALUE ...] (the agent's environment, e.g. --env=MALLOC_ARENA_MAX=2)
 *     [--gc-before-snapshot] (a full GC in the agent before each snapshot: live memory only)
 *     [--heap-snapshot-dir D] (a V8 heap snapshot of the agent at each pod count, into D)
 * @module
 */
import { join } from "node:path";
import { flagValue, lineReader, quantile } from "./proc_stats.ts";
import { type ApiTarget, realKubeApiServer } from "../tests/testing/apiserver_targets.ts";
import { createAndWaitReady, deleteAll, ensureServingCert, waitNodeReady } from "./vs_kubelet.ts";

const repo = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const childModule = new URL("./memory_breakdown_child.ts", import.meta.url).pathname;

/**
 * The `node:` modules the agent's static module graph imports (as code, not `import()` nor
 * types), read from `deno info`: the floor the npm packages are measured over.
 */
async function agentNodeModules(): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", join(repo, "src", "cmd", "probelet", "main.ts")],
    stdout: "piped",
    stderr: "null",
  }).output();
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string; dependencies?: { specifier: string; code?: unknown }[] }[];
  };
  const names = new Set<string>();
  for (const m of info.modules) {
    if (!m.specifier.startsWith("file:")) continue;
    for (const dep of m.dependencies ?? []) {
      const isDynamic = (dep as { isDynamic?: boolean }).isDynamic;
      if (dep.specifier.startsWith("node:") && dep.code && !isDynamic) names.add(dep.specifier);
    }
  }
  return [...names].sort();
}
/** The npm packages of deno.json the agent may load, each with what must load first. */
const packages: { name: string; before?: string[] }[] = [
  { name: "yaml" },
  { name: "@grpc/proto-loader" },
  { name: "@grpc/grpc-js" },
  { name: "@peculiar/x509", before: ["reflect-metadata"] },
];

// ------------------------------------------------------------------------------------------------
// The parent

/** The 1-, 5- and 15-minute load averages, printed beside every figure. */
function loadAverage(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
}

function settle(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function runChild(args: string[]): Promise<Record<string, number>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", childModule, ...args],
    cwd: repo,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim().split("\n").pop() ?? "";
  if (!out.success || !text.startsWith("{")) {
    throw new Error(`child ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(text);
}

function median(values: number[]): number {
  return quantile(values.toSorted((a, b) => a - b), 0.5);
}

async function modules(repeat: number): Promise<string[]> {
  const rows = [
    "| imported | + RSS (MiB) |",
    "|---|--:|",
  ];
  const measure = async (floor: string[], measured: string[]) => {
    const runs = [];
    for (let i = 0; i < repeat; i++) {
      runs.push(
        await runChild(["--child-import", JSON.stringify(floor), JSON.stringify(measured)]),
      );
    }
    return {
      bare: median(runs.map((r) => r.bare)),
      floor: median(runs.map((r) => r.before - r.bare)),
      delta: median(runs.map((r) => r.after - r.before)),
    };
  };
  const nodeFloor = await agentNodeModules();
  const base = await measure(nodeFloor, []);
  rows.push(`| nothing: a bare Deno 2.9.3 process | ${base.bare.toFixed(1)} (total) |`);
  rows.push(`| the agent's node: modules (${nodeFloor.join(", ")}) | ${base.floor.toFixed(1)} |`);
  // Most of their cost is the Node compatibility layer they share, loaded by whichever comes
  // first; what one more module adds is within the noise (±0.5 MiB) but for these two.
  for (const name of ["node:http", "node:http2"]) {
    const more = await measure([...nodeFloor, name], []);
    rows.push(`| ${name} (not imported) over them | ${(more.floor - base.floor).toFixed(1)} |`);
  }
  for (const pkg of packages) {
    const r = await measure(nodeFloor, [...(pkg.before ?? []), pkg.name]);
    rows.push(
      `| ${[...(pkg.before ?? []), pkg.name].join(" + ")}, over the node: modules | ${
        r.delta.toFixed(1)
      } |`,
    );
  }
  const all = packages.flatMap((p) => [...(p.before ?? []), p.name]);
  const r = await measure(nodeFloor, all);
  rows.push(`| all of these packages together, over the node: modules | ${r.delta.toFixed(1)} |`);
  const app = new URL("../src/cmd/probelet/app.ts", import.meta.url).href;
  const own = await measure([...nodeFloor, ...all], [app]);
  rows.push(
    `| probelet's own modules (src/cmd/probelet/app.ts), over all of that | ${
      own.delta.toFixed(1)
    } |`,
  );
  const graph = await measure([], [app]);
  rows.push(
    `| the agent's static graph as loaded today (app.ts alone) | ${graph.delta.toFixed(1)} |`,
  );
  return rows;
}

async function isolates(repeat: number): Promise<string[]> {
  const rows = [
    "| isolate | + RSS while alive (MiB) | left after terminate (MiB) |",
    "|---|--:|--:|",
  ];
  for (const kind of ["pool-thread", "decode-worker"]) {
    const alive: number[] = [];
    const left: number[] = [];
    for (let i = 0; i < repeat; i++) {
      const r = await runChild(["--child-isolate", kind]);
      alive.push(r.alive - r.before);
      left.push(r.after - r.before);
    }
    rows.push(`| ${kind} | ${median(alive).toFixed(1)} | ${median(left).toFixed(1)} |`);
  }
  return rows;
}

/**
 * The agent's command line for the local control plane and this checkout's containerd, as the
 * CLI would be run on a node (`--vs-kubelet`'s flags for probelet), with its state under
 * `.run/<stateName>`; makes the serving certificate there once.
 */
export async function agentCommandLine(
  api: ApiTarget,
  stateName: string,
  extraFlags: string[],
): Promise<string[]> {
  const state = join(repo, ".run", stateName);
  const env = Object.fromEntries(
    new TextDecoder().decode(
      (await new Deno.Command("bash", {
        args: [join(repo, "scripts", "kube-apiserver.sh"), "env"],
        stdout: "piped",
      }).output()).stdout,
    ).trim().split("\n").map((l) => l.split("=", 2) as [string, string]),
  );
  const nodeIP = env.PROBELET_NODE_IP ?? "10.88.99.1";
  await Deno.mkdir(join(state, "pki"), { recursive: true });
  await ensureServingCert(state, api.nodeName, nodeIP);
  return [
    "--kubeconfig",
    api.nodeKubeconfig,
    "--node-name",
    api.nodeName,
    "--container-runtime-endpoint",
    `unix://${join(repo, ".run", "containerd", "containerd.sock")}`,
    "--node-ip",
    nodeIP,
    "--address",
    nodeIP,
    "--client-ca-file",
    env.PROBELET_KUBE_KUBELET_CLIENT_CA,
    "--authorization-mode",
    "Webhook",
    "--authentication-token-webhook",
    "--root-dir",
    state,
    "--live-view",
    "never",
    ...extraFlags,
  ];
}

async function agent(options: {
  slots: number[];
  settleS: number;
  cpuWindowS: number;
  probeletFlags: string[];
  v8Flags?: string;
  denoFlags: string[];
  env: Record<string, string>;
  gcBeforeSnapshot?: boolean;
  heapSnapshotDir?: string;
}): Promise<string[]> {
  const api = await realKubeApiServer();
  if (typeof api === "string") return [`agent: skipped (${api})`];
  const args = await agentCommandLine(api, "memory-breakdown", options.probeletFlags);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--v8-flags=--expose-gc${options.v8Flags ? `,${options.v8Flags}` : ""}`,
      ...options.denoFlags,
      childModule,
      "--child-agent",
      JSON.stringify(args),
    ],
    cwd: repo,
    env: {
      ...options.env,
      ...(options.gcBeforeSnapshot ? { MEMORY_BREAKDOWN_GC: "1" } : {}),
      ...(options.heapSnapshotDir
        ? { MEMORY_BREAKDOWN_HEAP_SNAPSHOTS: options.heapSnapshotDir }
        : {}),
    },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const nextLine = lineReader(child.stdout);
  const columns = [
    "cpuPercent",
    "rss",
    "anonymous",
    "fileBacked",
    "denoBinary",
    "mallocHeap",
    "mallocArenas",
    "threadStacks",
    "threads",
    "heapCommitted",
    "heapUsed",
    "newSpace",
    "newSpaceUsed",
    "newLargeObject",
    "oldSpace",
    "codeSpace",
    "codeAndMetadata",
    "malloced",
    "external",
  ];
  const rows = [
    `| pods | ${columns.join(" | ")} | load |`,
    `|--:|${columns.map(() => "--:").join("|")}|--|`,
  ];
  try {
    await waitNodeReady(api, api.nodeName, 120_000, () => child.pid);
    let pods = 0;
    for (const slot of options.slots) {
      if (slot > pods) await createAndWaitReady(api, api.nodeName, { from: pods, to: slot });
      pods = slot;
      await settle(options.settleS * 1000);
      // CPU over a window after the settle: the agent's own CPU seconds (all its threads).
      child.kill("SIGUSR2");
      const first = JSON.parse(await nextLine());
      await settle(options.cpuWindowS * 1000);
      child.kill("SIGUSR2");
      const snap = JSON.parse(await nextLine());
      snap.cpuPercent = (snap.cpuSeconds - first.cpuSeconds) * 100 /
        ((snap.atMs - first.atMs) / 1000);
      rows.push(
        `| ${pods} | ${
          columns.map((c) => c === "threads" ? String(snap[c]) : snap[c].toFixed(1)).join(" | ")
        } | ${loadAverage()} |`,
      );
    }
  } finally {
    await deleteAll(api, api.nodeName).catch(() => {});
    child.kill("SIGTERM");
    await child.status;
    await api.close();
  }
  rows.push(
    "",
    "MiB except threads and cpuPercent (the agent's CPU seconds over the window after the settle,",
    "as % of one core). anonymous: private memory (V8 heaps, malloc, stacks); fileBacked: pages of",
    "mapped files; denoBinary: of them, the deno executable's; mallocHeap: glibc's main heap;",
    "mallocArenas: glibc's per-thread arenas; threadStacks: anonymous mappings after a guard page;",
    "heapCommitted: V8 heap pages of the main isolate (pool threads and workers are isolates of",
    "their own); newSpace/oldSpace: its young and old generation (newSpaceUsed: live bytes in it);",
    "newLargeObject: the young generation's large-object space (objects over ~128 KiB).",
  );
  return rows;
}

async function cri(repeat: number): Promise<string[]> {
  const deltas: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const r = await runChild(["--child-cri"]);
    deltas.push(r.after - r.before);
  }
  return [
    "| imported | + RSS (MiB) |",
    "|---|--:|",
    `| src/cri_client/mod.ts + a RemoteRuntimeService and a RemoteImageService, over the node: modules | ${
      median(deltas).toFixed(1)
    } (${deltas.map((d) => d.toFixed(1)).join(", ")}) |`,
  ];
}

async function main(args: string[]): Promise<void> {
  const get = (name: string) => flagValue(args, name);
  const sections = (get("sections") ?? "modules,isolates,cri,agent").split(",");
  const repeat = Number(get("repeat") ?? 3);
  const out: string[] = [`memory breakdown, ${new Date().toISOString()}, load ${loadAverage()}`];
  if (sections.includes("modules")) out.push("", ...(await modules(repeat)));
  if (sections.includes("isolates")) out.push("", ...(await isolates(repeat)));
  if (sections.includes("cri")) out.push("", ...(await cri(repeat)));
  if (sections.includes("agent")) {
    out.push(
      "",
      ...(await agent({
        slots: (get("slots") ?? "0,30,100").split(",").map(Number),
        settleS: Number(get("settle") ?? 20),
        cpuWindowS: Number(get("cpu-window") ?? 30),
        env: Object.fromEntries(
          args.filter((a) => a.startsWith("--env=")).map((a) => {
            const [k, ...v] = a.slice("--env=".length).split("=");
            return [k, v.join("=")];
          }),
        ),
        v8Flags: get("v8-flags"),
        denoFlags: args.filter((a) => a.startsWith("--deno-flag=")).map((a) =>
          a.slice("--deno-flag=".length)
        ),
        gcBeforeSnapshot: args.includes("--gc-before-snapshot"),
        heapSnapshotDir: get("heap-snapshot-dir"),
        probeletFlags: args.filter((a) => a.startsWith("--probelet-flag=")).map((a) =>
          a.slice("--probelet-flag=".length)
        ),
      })),
    );
  }
  console.log(out.join("\n"));
}

if (import.meta.main) await main(Deno.args);
