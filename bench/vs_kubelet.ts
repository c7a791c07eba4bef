/**
 * `deno task bench -- --vs-kubelet`: the footprint and start-up of probelet beside the real kubelet
 * v1.36.3, in one run (issue 20, items 4 and 5). Each agent in turn (never both at once: the
 * machine's load is shared), `--passes` times, interleaved, is a node of the local control plane
 * (`scripts/kube-apiserver.sh up`); the same pods are bound to it: busybox httpd with an HTTP
 * readiness and a TCP liveness probe, periods 10 s. For each agent and pass:
 *
 * - RSS (VmRSS of the agent's process, every `--sample` s over `--window` s after `--settle` s)
 *   and CPU (% of one core, utime + stime over the window) at 0, 30 and 100 pods;
 * - start-up: 30 pods created at once, each pod's create → Ready (seen by polling the API every
 *   250 ms), p50 / p99, the time until all were Ready, and the agent's CPU seconds from the first
 *   create until all were Ready, per pod (where each pod's time goes: bench/startup_timeline.ts
 *   on the agents' logs, kept in `.run/vs-kubelet/<agent>/`; PROBELET_KUBELET_V=4 and
 *   `--probelet-flag=--v=4` make them detailed enough);
 * - the 1-minute load average beside every figure (its range over the window).
 *
 * kubelet runs through `scripts/kubelet.sh up|down` (its own containerd; the script builds or
 * reuses the pinned binary); probelet from `--probelet-repo` (default this checkout) on
 * `scripts/containerd.sh`'s containerd. probelet's serving certificate is made before its first
 * start and kept across passes (`--first-start` makes it at start instead: see
 * docs/benchmarks/memory.md). Prints a table on stdout and writes the JSON report to `--json`
 * (default `.run/vs-kubelet/report-<time>.json`).
 *
 *   --passes N           passes per agent (default 2)
 *   --agents LIST        kubelet,probelet (default both, in that order each pass)
 *   --slots LIST         pod counts to measure at (default 0,30,100; the second is the start-up
 *                        batch)
 *   --settle S --window S --sample S   (default 30, 60, 5)
 *   --probelet-repo DIR  the checkout whose src/cmd/probelet/main.ts runs
 *   --before-repo DIR    also run that checkout's probelet ("probelet-before"), interleaved, for
 *                        before/after tables in one run
 *   --probelet-flag F    an extra probelet flag (repeatable), e.g. --probelet-flag=--probe-workers=0
 *   --probelet-deno-flag F  an extra `deno run` flag of probelet (repeatable), e.g.
 *                        --probelet-deno-flag=--cpu-prof-dir=.run/prof
 *   --probelet-v8-flags F  the V8 flags probelet runs with (default: those of the checkout's
 *                        `deno task start`, as users start it; `--probelet-v8-flags=` for none)
 *   --probelet-env NAME=VALUE  an environment variable of probelet (repeatable; default: those
 *                        the checkout's `start` task sets; `--probelet-env=` for none)
 *   --json FILE          where the report goes;  --render FILE prints a saved report's table
 * @module
 */
import { dirname, join } from "node:path";
import { quantile } from "./proc_stats.ts";
import { type ApiTarget, realKubeApiServer } from "../tests/testing/apiserver_targets.ts";
import { generateSelfSignedCertKey } from "../src/util/cert/cert.ts";
import { startTaskDenoFlags } from "../tests/testing/start_task.ts";

const repo = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const namespace = "default";
const benchLabel = "probelet.io/bench";
const CLOCK_TICKS_PER_SECOND = 100;

/** The options of one run. */
export interface VsKubeletFlags {
  passes: number;
  agents: AgentName[];
  slots: number[];
  settleS: number;
  windowS: number;
  sampleS: number;
  probeletRepo: string;
  /** A checkout to run as "probelet-before" (the same figures before a change). */
  beforeRepo?: string;
  probeletFlags: string[];
  /** Extra `deno run` flags of the probelet process, e.g. `--cpu-prof-dir=DIR`. */
  probeletDenoFlags: string[];
  /**
   * V8 flags of the probelet process (`--v8-flags=`), e.g. --max-semi-space-size=2; when unset,
   * those of the checkout's `start` task (tests/testing/start_task.ts).
   */
  probeletV8Flags?: string;
  /**
   * Environment variables of the probelet process (e.g. MALLOC_ARENA_MAX=2); when unset, those
   * the checkout's `start` task sets before its command (startTaskEnv).
   */
  probeletEnv?: Record<string, string>;
  firstStart: boolean;
  json: string;
}

/** The agents: kubelet, probelet, and with `--before-repo` probelet from another checkout. */
export type AgentName = "kubelet" | "probelet" | "probelet-before";

/** One measurement window at a pod count. */
export interface Footprint {
  pods: number;
  /** VmRSS samples' median, min and max (MiB). */
  rssMiB: { median: number; min: number; max: number };
  /** utime + stime over the window, % of one core. */
  cpuPercent: number;
  /** The 1-minute load average's range over the window. */
  load: [number, number];
  /** Threads of the agent's process at the window's end. */
  threads: number;
}

/** A batch of pods created at once. */
export interface Startup {
  pods: number;
  /** Each pod's create → Ready (ms), p50 and p99, and until the last one. */
  p50Ms: number;
  p99Ms: number;
  allReadyMs: number;
  /**
   * The agent's CPU seconds (utime + stime) from the first create until all were Ready, per pod:
   * a start-up cost that does not depend on the machine's load.
   */
  cpuSecondsPerPod?: number;
  load: [number, number];
}

/** One agent's pass. */
export interface AgentRun {
  agent: AgentName;
  pass: number;
  version?: string;
  footprints: Footprint[];
  startup?: Startup;
  error?: string;
}

/** The report. */
export interface VsKubeletReport {
  meta: { startedAt: string; finishedAt: string; cpus: number; flags: VsKubeletFlags };
  runs: AgentRun[];
  skipped: { agent: AgentName; reason: string }[];
}

/** Parses the command line (the flags after `--vs-kubelet`). */
export function parseVsKubeletFlags(args: string[]): VsKubeletFlags {
  const get = (name: string): string | undefined => {
    const i = args.indexOf(`--${name}`);
    if (i >= 0 && i + 1 < args.length && !args[i + 1].startsWith("--")) return args[i + 1];
    return args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  };
  const list = (v: string | undefined, d: string) => (v ?? d).split(",").filter((x) => x !== "");
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return {
    passes: Number(get("passes") ?? 2),
    agents: list(
      get("agents"),
      get("before-repo") ? "kubelet,probelet-before,probelet" : "kubelet,probelet",
    ) as AgentName[],
    slots: list(get("slots"), "0,30,100").map(Number),
    settleS: Number(get("settle") ?? 30),
    windowS: Number(get("window") ?? 60),
    sampleS: Number(get("sample") ?? 5),
    probeletRepo: get("probelet-repo") ?? repo,
    beforeRepo: get("before-repo"),
    probeletFlags: args.filter((a) => a.startsWith("--probelet-flag=")).map((a) =>
      a.slice("--probelet-flag=".length)
    ),
    probeletDenoFlags: args.filter((a) => a.startsWith("--probelet-deno-flag=")).map((a) =>
      a.slice("--probelet-deno-flag=".length)
    ),
    probeletV8Flags: get("probelet-v8-flags"),
    probeletEnv: probeletEnv(args),
    firstStart: args.includes("--first-start"),
    json: get("json") ?? join(repo, ".run", "vs-kubelet", `report-${stamp}.json`),
  };
}

// ------------------------------------------------------------------------------------------------
// The agents

interface RunningAgent {
  pid: number;
  nodeName: string;
  version?: string;
  stop(): Promise<void>;
}

interface Agent {
  name: AgentName;
  /** Why it cannot run here, if so. */
  missing(): Promise<string | undefined>;
  start(api: ApiTarget): Promise<RunningAgent>;
}

function say(line: string): void {
  console.error(`vs-kubelet: ${line}`);
}

async function run(cmd: string[], options: { env?: Record<string, string> } = {}) {
  const out = await new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    stdout: "piped",
    stderr: "piped",
    env: options.env,
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { ok: out.success, text };
}

/** `key=value` pairs of a script's output lines (later lines win). */
function keyValues(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(?:^|\s)([a-z_]+)=(\S+)/g)) out[m[1]] = m[2];
  return out;
}

const kubeletAgent: Agent = {
  name: "kubelet",
  async missing() {
    try {
      await Deno.stat(join(repo, "scripts", "kubelet.sh"));
    } catch {
      return "scripts/kubelet.sh is not in this checkout (branch kubelet-oracle; `git merge main`)";
    }
    return undefined;
  },
  async start() {
    const up = await run(["bash", join(repo, "scripts", "kubelet.sh"), "up"]);
    const kv = keyValues(up.text);
    if (!up.ok || !kv.pid) throw new Error(`scripts/kubelet.sh up failed:\n${up.text}`);
    return {
      pid: Number(kv.pid),
      nodeName: kv.node ?? "kubelet-oracle",
      version: kv.version,
      stop: async () => {
        // `down` removes kubelet's state: its log is kept beside probelet's, one per start.
        if (kv.log) {
          const keep = join(repo, ".run", "vs-kubelet", "kubelet");
          await Deno.mkdir(keep, { recursive: true });
          await Deno.copyFile(kv.log, join(keep, `kubelet-${Date.now()}.log`)).catch(() => {});
        }
        const down = await run(["bash", join(repo, "scripts", "kubelet.sh"), "down"]);
        if (!down.ok) say(`scripts/kubelet.sh down failed:\n${down.text}`);
      },
    };
  },
};

// `--probelet-env=NAME=VALUE` (repeatable; `--probelet-env=` alone: none), or undefined.
function probeletEnv(args: string[]): Record<string, string> | undefined {
  const given = args.filter((a) => a.startsWith("--probelet-env=")).map((a) =>
    a.slice("--probelet-env=".length)
  );
  if (given.length === 0) return undefined;
  return Object.fromEntries(
    given.filter((g) => g !== "").map((g) => {
      const i = g.indexOf("=");
      return [g.slice(0, i), g.slice(i + 1)];
    }),
  );
}

/**
 * The environment variables `deno task start` in the checkout at `repoDir` sets before its
 * command (`NAME=value deno run ...`, as `deno task` accepts): probelet is measured as users
 * start it.
 *
 * @example
 * ```ts
 * const env = await startTaskEnv("."); // {} or e.g. { MALLOC_ARENA_MAX: "2" }
 * ```
 */
export async function startTaskEnv(repoDir: string): Promise<Record<string, string>> {
  const config = JSON.parse(await Deno.readTextFile(join(repoDir, "deno.json")));
  return leadingAssignments(config.tasks?.start ?? "");
}

/**
 * The `NAME=value` words a shell command line starts with.
 *
 * @example
 * ```ts
 * leadingAssignments("MALLOC_ARENA_MAX=2 deno run main.ts"); // { MALLOC_ARENA_MAX: "2" }
 * ```
 */
export function leadingAssignments(command: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const word of command.trim().split(/\s+/)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(word);
    if (!m) break;
    env[m[1]] = m[2];
  }
  return env;
}

function probeletAgent(
  flags: VsKubeletFlags,
  which: { name: AgentName; repo: string },
): Agent {
  const state = join(repo, ".run", "vs-kubelet", which.name);
  const socket = join(repo, ".run", "containerd", "containerd.sock");
  return {
    name: which.name,
    async missing() {
      try {
        await Deno.stat(socket);
      } catch {
        return `no containerd at ${socket} (run \`bash scripts/containerd.sh up\`)`;
      }
      return undefined;
    },
    async start(api) {
      const env = keyValues(
        (await run(["bash", join(repo, "scripts", "kube-apiserver.sh"), "env"]))
          .text.replaceAll(/^PROBELET_/gm, "").toLowerCase(),
      );
      const nodeIP = env.node_ip ?? "10.88.99.1";
      const caFile = env.kube_kubelet_client_ca ??
        join(dirname(api.adminKubeconfig), "pki", "ca.crt");
      await Deno.mkdir(join(state, "pki"), { recursive: true });
      if (!flags.firstStart) await ensureServingCert(state, api.nodeName, nodeIP);
      else await Deno.remove(join(state, "pki"), { recursive: true }).catch(() => {});
      // The start task's `deno run` flags, as users run it; --probelet-v8-flags replaces its V8 ones.
      const startFlags = startTaskDenoFlags(which.repo);
      const v8Flags = flags.probeletV8Flags ??
        startFlags.find((f) => f.startsWith("--v8-flags="))?.slice("--v8-flags=".length) ?? "";
      say(`${which.name}: V8 flags ${v8Flags === "" ? "none" : v8Flags}`);
      const taskFlags = startFlags.filter((f) => !f.startsWith("--v8-flags="));
      say(`${which.name}: deno run flags ${taskFlags.length === 0 ? "none" : taskFlags.join(" ")}`);
      const agentEnv = flags.probeletEnv ?? await startTaskEnv(which.repo);
      const envText = Object.entries(agentEnv).map(([k, v]) => `${k}=${v}`).join(" ");
      say(`${which.name}: environment ${envText === "" ? "as the bench's" : envText}`);
      const log = await Deno.open(join(state, "probelet.log"), {
        create: true,
        append: true,
        write: true,
      });
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          ...(v8Flags ? [`--v8-flags=${v8Flags}`] : []),
          ...taskFlags,
          ...flags.probeletDenoFlags,
          join(which.repo, "src", "cmd", "probelet", "main.ts"),
          "--kubeconfig",
          api.nodeKubeconfig,
          "--node-name",
          api.nodeName,
          "--container-runtime-endpoint",
          `unix://${socket}`,
          "--node-ip",
          nodeIP,
          "--address",
          nodeIP,
          "--client-ca-file",
          caFile,
          "--authorization-mode",
          "Webhook",
          "--authentication-token-webhook",
          "--root-dir",
          state,
          "--live-view",
          "never",
          // As scripts/kubelet.sh configures kubelet: without them every sandbox adds two
          // MissingClusterDNS events.
          "--cluster-dns",
          "10.96.0.10",
          "--cluster-domain",
          "cluster.local",
          ...flags.probeletFlags,
        ],
        cwd: which.repo,
        env: agentEnv,
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // Both go to a file (kept for a look after the run).
      const stdout = await Deno.open(join(state, "probelet.stdout"), {
        create: true,
        append: true,
        write: true,
      });
      const drain = Promise.all([
        child.stderr.pipeTo(log.writable),
        child.stdout.pipeTo(stdout.writable),
      ]).catch(() => {});
      await waitNodeReady(api, api.nodeName, 120_000, () => child.pid);
      return {
        pid: child.pid,
        nodeName: api.nodeName,
        stop: async () => {
          try {
            child.kill("SIGTERM");
          } catch { /* gone */ }
          const timer = setTimeout(() => {
            try {
              child.kill("SIGKILL");
            } catch { /* gone */ }
          }, 60_000);
          await child.status;
          clearTimeout(timer);
          await drain;
        },
      };
    },
  };
}

/**
 * probelet's self-signed pair in `<root>/pki`, made as its first start would and kept across
 * passes.
 */
export async function ensureServingCert(
  root: string,
  nodeName: string,
  nodeIP: string,
): Promise<void> {
  const crt = join(root, "pki", "kubelet.crt");
  try {
    await Deno.stat(crt);
    return;
  } catch { /* make it */ }
  const pair = await generateSelfSignedCertKey(nodeName, { alternateIPs: [nodeIP] });
  await Deno.writeTextFile(crt, pair.certPem, { mode: 0o644 });
  await Deno.writeTextFile(join(root, "pki", "kubelet.key"), pair.keyPem, { mode: 0o600 });
}

// ------------------------------------------------------------------------------------------------
// The API server's view

/** Waits until node `nodeName` is Ready; fails early if process `pid()` exits. */
export async function waitNodeReady(
  api: ApiTarget,
  nodeName: string,
  timeoutMs: number,
  pid: () => number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      Deno.statSync(`/proc/${pid()}`);
    } catch {
      throw new Error(`the agent (pid ${pid()}) exited before its node was Ready`);
    }
    const { status, body } = await api.admin("GET", `/api/v1/nodes/${nodeName}`);
    const ready = status === 200 &&
      // deno-lint-ignore no-explicit-any
      (body.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True");
    if (ready) return;
    await delay(500);
  }
  throw new Error(`node ${nodeName} not Ready within ${timeoutMs / 1000} s`);
}

/** The bench's pod `name` bound to `nodeName`. */
export function benchPod(name: string, nodeName: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: { [benchLabel]: nodeName } },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 2,
      tolerations: [{ operator: "Exists" }],
      containers: [{
        name: "web",
        image: "probelet.local/busybox:1",
        imagePullPolicy: "Never",
        command: [
          "sh",
          "-c",
          "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www",
        ],
        readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 10 },
        livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 10 },
      }],
    },
  };
}

/**
 * Creates the bench's pods `fp-<from>`..`fp-<to - 1>` on `nodeName` at once; resolves with each
 * one's create → Ready (ms).
 */
export async function createAndWaitReady(
  api: ApiTarget,
  nodeName: string,
  range: { from: number; to: number },
): Promise<number[]> {
  const names = Array.from({ length: range.to - range.from }, (_, i) => `fp-${range.from + i}`);
  const created = new Map<string, number>();
  await Promise.all(names.map(async (name) => {
    created.set(name, performance.now());
    const { status, body } = await api.admin("POST", `/api/v1/namespaces/${namespace}/pods`, {
      body: benchPod(name, nodeName),
    });
    if (status !== 201) throw new Error(`creating pod ${name}: ${status} ${JSON.stringify(body)}`);
  }));
  const ready = new Map<string, number>();
  const deadline = Date.now() + 300_000;
  while (ready.size < names.length) {
    if (Date.now() > deadline) {
      throw new Error(`${names.length - ready.size} pods not Ready within 300 s`);
    }
    const { body } = await api.admin(
      "GET",
      `/api/v1/namespaces/${namespace}/pods?labelSelector=${
        encodeURIComponent(`${benchLabel}=${nodeName}`)
      }`,
    );
    const now = performance.now();
    for (const pod of body.items ?? []) {
      const name = pod.metadata.name as string;
      if (!created.has(name) || ready.has(name)) continue;
      // deno-lint-ignore no-explicit-any
      const isReady = (pod.status?.conditions ?? []).some((c: any) =>
        c.type === "Ready" && c.status === "True"
      );
      if (isReady) ready.set(name, now - created.get(name)!);
    }
    await delay(250);
  }
  return [...ready.values()];
}

/** Deletes the bench's pods of `nodeName` and waits until the API server has none left. */
export async function deleteAll(api: ApiTarget, nodeName: string): Promise<void> {
  const selector = encodeURIComponent(`${benchLabel}=${nodeName}`);
  await api.admin("DELETE", `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`);
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const { body } = await api.admin(
      "GET",
      `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`,
    );
    if ((body.items ?? []).length === 0) return;
    await delay(1000);
  }
  // Left behind (an agent that stopped first): removed without waiting for a kubelet.
  await api.admin(
    "DELETE",
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}&gracePeriodSeconds=0`,
  );
}

// ------------------------------------------------------------------------------------------------
// /proc

function procRssMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
}

function procThreads(pid: number): number {
  return Number(/Threads:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`))?.[1]);
}

function procCpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

function load1(): number {
  return Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function measure(pid: number, pods: number, flags: VsKubeletFlags): Promise<Footprint> {
  await delay(flags.settleS * 1000);
  const rss: number[] = [];
  const loads: number[] = [];
  const cpu0 = procCpuSeconds(pid);
  const t0 = performance.now();
  const end = t0 + flags.windowS * 1000;
  while (true) {
    rss.push(procRssMiB(pid));
    loads.push(load1());
    const next = Math.min(end, performance.now() + flags.sampleS * 1000);
    if (next >= end && performance.now() >= end) break;
    await delay(Math.max(0, next - performance.now()));
  }
  const cpu = procCpuSeconds(pid) - cpu0;
  const seconds = (performance.now() - t0) / 1000;
  const sorted = rss.toSorted((a, b) => a - b);
  return {
    pods,
    rssMiB: { median: quantile(sorted, 0.5), min: sorted[0], max: sorted[sorted.length - 1] },
    cpuPercent: (cpu / seconds) * 100,
    load: [Math.min(...loads), Math.max(...loads)],
    threads: procThreads(pid),
  };
}

// ------------------------------------------------------------------------------------------------
// A pass

async function runAgent(
  agent: Agent,
  api: ApiTarget,
  flags: VsKubeletFlags,
  pass: number,
): Promise<AgentRun> {
  const result: AgentRun = { agent: agent.name, pass, footprints: [] };
  say(`pass ${pass}: starting ${agent.name}`);
  const running = await agent.start(api);
  result.version = running.version;
  try {
    let pods = 0;
    for (const slot of flags.slots) {
      if (slot > pods) {
        const loadBefore = load1();
        say(`${agent.name}: ${slot - pods} pods at once (${pods} → ${slot})`);
        const start = performance.now();
        const cpuBefore = procCpuSeconds(running.pid);
        const latencies = await createAndWaitReady(api, running.nodeName, {
          from: pods,
          to: slot,
        });
        const allReadyMs = performance.now() - start;
        const cpuSeconds = procCpuSeconds(running.pid) - cpuBefore;
        // The first batch, from no pods, is the start-up figure.
        if (pods === 0) {
          const sorted = latencies.toSorted((a, b) => a - b);
          result.startup = {
            pods: slot - pods,
            p50Ms: quantile(sorted, 0.5),
            p99Ms: quantile(sorted, 0.99),
            allReadyMs,
            cpuSecondsPerPod: cpuSeconds / (slot - pods),
            load: [Math.min(loadBefore, load1()), Math.max(loadBefore, load1())],
          };
        }
        pods = slot;
      }
      const f = await measure(running.pid, pods, flags);
      say(
        `${agent.name} at ${pods} pods: RSS ${f.rssMiB.median.toFixed(1)} MiB, CPU ` +
          `${f.cpuPercent.toFixed(2)} %, load ${f.load[0]}–${f.load[1]}`,
      );
      result.footprints.push(f);
    }
  } catch (e) {
    result.error = e instanceof Error ? e.message : String(e);
    say(`${agent.name}: ${result.error}`);
  } finally {
    await deleteAll(api, running.nodeName).catch((e) => say(`deleting pods: ${e}`));
    await running.stop();
  }
  return result;
}

/**
 * Runs the comparison and writes the report; resolves with it.
 *
 * @example
 * ```ts
 * const report = await runVsKubelet(parseVsKubeletFlags(["--passes", "1"]));
 * console.log(formatVsKubelet(report));
 * ```
 */
export async function runVsKubelet(flags: VsKubeletFlags): Promise<VsKubeletReport> {
  const report: VsKubeletReport = {
    meta: {
      startedAt: new Date().toISOString(),
      finishedAt: "",
      cpus: navigator.hardwareConcurrency,
      flags,
    },
    runs: [],
    skipped: [],
  };
  const api = await realKubeApiServer();
  if (typeof api === "string") throw new Error(api);
  try {
    const agents: Agent[] = [];
    for (const name of flags.agents) {
      const agent = name === "kubelet" ? kubeletAgent : probeletAgent(flags, {
        name,
        repo: name === "probelet" ? flags.probeletRepo : flags.beforeRepo ?? "",
      });
      const missing = await agent.missing();
      if (missing) {
        say(`${name} skipped: ${missing}`);
        report.skipped.push({ agent: name, reason: missing });
      } else agents.push(agent);
    }
    for (let pass = 1; pass <= flags.passes; pass++) {
      for (const agent of agents) {
        report.runs.push(await runAgent(agent, api, flags, pass));
        await writeReport(report, flags.json);
      }
    }
  } finally {
    await api.close();
  }
  report.meta.finishedAt = new Date().toISOString();
  await writeReport(report, flags.json);
  return report;
}

async function writeReport(report: VsKubeletReport, path: string): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(report, null, 2) + "\n");
}

// ------------------------------------------------------------------------------------------------
// The table

function range(values: number[], digits: number): string {
  if (values.length === 0) return "–";
  const lo = Math.min(...values).toFixed(digits);
  const hi = Math.max(...values).toFixed(digits);
  return lo === hi ? lo : `${lo}–${hi}`;
}

function loadRange(loads: [number, number][]): string {
  if (loads.length === 0) return "";
  return ` (load ${range(loads.flat(), 1)})`;
}

/**
 * The report as a markdown table: per figure, each agent's range over its passes with the load
 * average beside it, and the ratio probelet / kubelet (range of the per-pass ratios).
 *
 * @example
 * ```ts
 * console.log(formatVsKubelet(report));
 * ```
 */
export function formatVsKubelet(report: VsKubeletReport): string {
  const runs = (agent: AgentName) => report.runs.filter((r) => r.agent === agent && !r.error);
  const rows: string[][] = [];
  const ratio = (pick: (r: AgentRun) => number | undefined): string => {
    const ratios: number[] = [];
    for (const p of runs("probelet")) {
      const k = runs("kubelet").find((r) => r.pass === p.pass);
      const a = pick(p);
      const b = k && pick(k);
      if (a !== undefined && b !== undefined && b > 0) ratios.push(a / b);
    }
    return ratios.length ? `${range(ratios, 2)}×` : "–";
  };
  const cell = (
    agent: AgentName,
    pick: (r: AgentRun) => number | undefined,
    loads: (r: AgentRun) => [number, number] | undefined,
    digits: number,
  ) => {
    const rs = runs(agent);
    const values = rs.map(pick).filter((v): v is number => v !== undefined);
    const ls = rs.map(loads).filter((v): v is [number, number] => v !== undefined);
    return values.length ? `${range(values, digits)}${loadRange(ls)}` : "–";
  };
  const hasBefore = report.runs.some((r) => r.agent === "probelet-before");
  const before = (
    pick: (r: AgentRun) => number | undefined,
    loads: (r: AgentRun) => [number, number] | undefined,
    digits: number,
  ) => hasBefore ? [cell("probelet-before", pick, loads, digits)] : [];
  for (const pods of report.meta.flags.slots) {
    const fp = (r: AgentRun) => r.footprints.find((f) => f.pods === pods);
    const rss = (r: AgentRun) => fp(r)?.rssMiB.median;
    const cpu = (r: AgentRun) => fp(r)?.cpuPercent;
    const load = (r: AgentRun) => fp(r)?.load;
    rows.push([
      `agent RSS, ${pods} pods (MiB)`,
      cell("kubelet", rss, load, 1),
      ...before(rss, load, 1),
      cell("probelet", rss, load, 1),
      ratio(rss),
    ]);
    rows.push([
      `agent CPU, ${pods} pods (% of a core)`,
      cell("kubelet", cpu, load, 2),
      ...before(cpu, load, 2),
      cell("probelet", cpu, load, 2),
      ratio(cpu),
    ]);
  }
  const startup = (r: AgentRun) => r.startup;
  const n = report.runs.find((r) => r.startup)?.startup?.pods ?? 0;
  for (
    const [label, pick] of [
      ["p50", (r: AgentRun) => startup(r) && startup(r)!.p50Ms / 1000],
      ["p99", (r: AgentRun) => startup(r) && startup(r)!.p99Ms / 1000],
      ["all Ready", (r: AgentRun) => startup(r) && startup(r)!.allReadyMs / 1000],
      ["agent CPU per pod", (r: AgentRun) => startup(r)?.cpuSecondsPerPod],
    ] as const
  ) {
    rows.push([
      `${n} pods created at once → Ready, ${label} (${label.startsWith("agent") ? "CPU s" : "s"})`,
      cell("kubelet", pick, (r) => startup(r)?.load, label.startsWith("agent") ? 3 : 2),
      ...before(pick, (r) => startup(r)?.load, label.startsWith("agent") ? 3 : 2),
      cell("probelet", pick, (r) => startup(r)?.load, label.startsWith("agent") ? 3 : 2),
      ratio(pick),
    ]);
  }
  const kubeletVersion = runs("kubelet").find((r) => r.version)?.version ?? "v1.36.3";
  const lines = [
    `| | kubelet ${kubeletVersion} |${hasBefore ? " probelet before |" : ""} probelet | ratio |`,
    `|---|--:|${hasBefore ? "--:|" : ""}--:|--:|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ];
  const notes = [
    `${report.meta.startedAt} – ${report.meta.finishedAt}, ${report.meta.cpus} cores, ` +
    `${Math.max(runs("kubelet").length, runs("probelet").length)} passes per agent, ` +
    `each agent alone in turn; load = 1-minute load average over each window; ratio = ` +
    `probelet / kubelet, per pass.` +
    (hasBefore ? ` probelet before: ${report.meta.flags.beforeRepo}.` : ""),
    ...report.skipped.map((s) => `${s.agent} skipped: ${s.reason}`),
    ...report.runs.filter((r) => r.error).map((r) => `${r.agent} pass ${r.pass}: ${r.error}`),
  ];
  return `${lines.join("\n")}\n\n${notes.join("\n")}`;
}

if (import.meta.main) {
  const r = Deno.args.indexOf("--render");
  if (r >= 0) {
    console.log(formatVsKubelet(JSON.parse(Deno.readTextFileSync(Deno.args[r + 1]))));
  } else {
    const flags = parseVsKubeletFlags(Deno.args);
    const report = await runVsKubelet(flags);
    console.log(formatVsKubelet(report));
    say(`report: ${flags.json}`);
  }
}
