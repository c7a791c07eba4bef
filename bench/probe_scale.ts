/**
 * Probe scale benchmark: how many probe workers one probelet event loop sustains, what each probe
 * costs, and whether probes stay on time. Starts the targets (bench/targets.mjs, a Node process),
 * runs every scenario in a fresh Deno process (bench/scenario.ts: the real prober manager, RealClock,
 * real sockets), measures the plain-Node floor for the same request pattern and rate
 * (bench/floor.ts), and prints a table (and JSON with `--json`).
 *
 * Usage: `deno task bench [-- flags]`
 *   --duration S      measurement window per scenario (default 30)
 *   --warmup S        probing before the window opens (default 2)
 *   --workers LIST    worker counts (default 100,1000,10000)
 *   --kinds LIST      http,https,tcp,grpc,mix (default all)
 *   --period S        probe period (default 1)
 *   --exec-workers L  exec scenario worker counts (default 10,100); --no-exec skips them
 *   --no-period10     skip the extra row: the largest mix at kubelet's default 10 s period
 *   --floor-duration S  floor window (default min(duration, 10)); --no-floor skips the floor
 *   --quick           small and short: 20 workers, 2 s windows, exec at 5 (under a minute)
 *   --json            print the results as JSON on stdout (the table goes to stderr)
 *   --render FILE     print the table of a saved --json report
 *   --profile DIR     write a V8 CPU profile (+ markdown summary) of each scenario process to DIR
 *   --v8-flags F      extra V8 flags for the scenario processes (e.g. --max-semi-space-size=64)
 *   --vs-go           side by side with the Go prober of ../shared/bench/go-baseline (built
 *                     with `go build`): http and tcp at 1,000 / 5,000 / 10,000 workers, 15 s
 *                     windows, each side with its own targets process, interleaved; prints both
 *                     with ratios. Without `go` it says so and measures probelet's side only.
 *   --go-baseline DIR where the Go baseline's sources are (default: found beside the checkout)
 *   --targets T       node (default: bench/targets.mjs) or go (bench/go_targets, built with
 *                     `go build`: a TLS handshake and a gRPC call cost it a fraction of Node's CPU)
 *   --vs-kubelet      instead of the above: probelet's footprint (RSS, CPU at 0/30/100 pods) and
 *                     30-pod start-up beside the real kubelet's, each a node of the local control
 *                     plane in turn; see bench/vs_kubelet.ts for its flags
 *   --probe-workers L probe pool threads, as the agent's --probe-workers (default: one per core;
 *                     0 = probes on the main thread); a list such as 0,2 runs each scenario with
 *                     each, interleaved, and names the rows kind/tN
 * @module
 */
import process from "node:process";
import type { FloorResult, TargetPorts } from "./floor.ts";
import { loadAverage } from "./proc_stats.ts";
import {
  buildGoBaseline,
  buildGoTargets,
  findGoBaseline,
  goMissingReason,
  type GoResult,
  GoTargets,
  runGoProber,
} from "./go_baseline.ts";
import { defaultProbeWorkers } from "../src/probe/pool/pool.ts";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "./scenario.ts";
import { formatVsKubelet, parseVsKubeletFlags, runVsKubelet } from "./vs_kubelet.ts";

const benchDir = new URL(".", import.meta.url).pathname;

interface Flags {
  durationS: number;
  warmupS: number;
  workers: number[];
  kinds: string[];
  periodSeconds: number;
  execWorkers: number[];
  floorDurationS: number;
  floor: boolean;
  exec: boolean;
  period10: boolean;
  quick: boolean;
  json: boolean;
  profileDir?: string;
  /** Extra V8 flags for the scenario processes (e.g. --max-semi-space-size=64). */
  v8Flags?: string;
  /** Probe pool sizes to run each scenario with. */
  probeWorkers: number[];
  /** Run the Go baseline beside each scenario. */
  vsGo: boolean;
  goBaseline?: string;
  /** Which servers the probes hit: bench/targets.mjs under Node, or bench/go_targets in Go. */
  targets: "node" | "go";
}

function parseFlags(args: string[]): Flags {
  const get = (name: string): string | undefined => {
    const i = args.indexOf(`--${name}`);
    if (i >= 0 && i + 1 < args.length && !args[i + 1].startsWith("--")) return args[i + 1];
    const eq = args.find((a) => a.startsWith(`--${name}=`));
    return eq?.slice(name.length + 3);
  };
  const has = (name: string) => args.includes(`--${name}`);
  const list = (v: string | undefined, d: string) => (v ?? d).split(",").filter((x) => x !== "");
  const quick = has("quick");
  const vsGo = has("vs-go");
  const durationS = Number(get("duration") ?? (quick ? 1.5 : vsGo ? 15 : 30));
  return {
    durationS,
    warmupS: Number(get("warmup") ?? (quick ? 1.2 : 2)),
    workers: list(get("workers"), quick ? "20" : vsGo ? "1000,5000,10000" : "100,1000,10000")
      .map(Number),
    kinds: list(get("kinds"), vsGo ? "http,tcp" : "http,https,tcp,grpc,mix"),
    periodSeconds: Number(get("period") ?? 1),
    execWorkers: list(get("exec-workers"), quick ? "5" : "10,100").map(Number),
    floorDurationS: Number(get("floor-duration") ?? (quick ? 1 : Math.min(durationS, 10))),
    floor: !vsGo && !has("no-floor"),
    exec: !vsGo && !has("no-exec"),
    period10: !quick && !vsGo && !has("no-period10"),
    quick,
    json: has("json"),
    profileDir: get("profile"),
    v8Flags: get("v8-flags"),
    probeWorkers: list(get("probe-workers"), String(defaultProbeWorkers())).map(Number),
    vsGo,
    goBaseline: get("go-baseline"),
    targets: get("targets") === "go" ? "go" : "node",
  };
}

/** One row of the report: a scenario's figures and, for network kinds, the floor's. */
export interface Row extends ScenarioResult {
  floor?: FloorResult;
  /** cpuPer1000 / floor.cpuPer1000. */
  floorRatio?: number;
  targetCpuSeconds?: number;
}

/** The whole report. */
export interface Report {
  meta: {
    startedAt: string;
    finishedAt: string;
    deno: string;
    cpus: number;
    loadAverageBefore: [number, number, number];
    loadAverageAfter: [number, number, number];
    flags: Flags;
  };
  scenarios: Row[];
  skipped: { name: string; reason: string }[];
  /** With --vs-go: the Go prober's run beside probelet's, per kind and worker count. */
  vsGo?: {
    goVersion?: string;
    /** Which targets each side probed. */
    targets?: string;
    /** Why the Go side did not run, if it did not. */
    skipped?: string;
    pairs: { kind: string; workers: number; go?: GoResult; probelet?: string; error?: string }[];
  };
}

/** A line-oriented reader over a child's stdout. */
class Lines {
  #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }
  async next(): Promise<string | undefined> {
    for (;;) {
      const nl = this.#buffer.indexOf("\n");
      if (nl >= 0) {
        const line = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        return line;
      }
      const { value, done } = await this.#reader.read();
      if (done) return undefined;
      this.#buffer += value;
    }
  }
}

/** The target process: ports, and a CPU/requests counter on request. */
class Targets {
  #child: Deno.ChildProcess;
  #lines: Lines;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #script: string;
  ports!: TargetPorts;

  /** `bench/targets.mjs` under Node, or the built `bench/go_targets` binary when given. */
  constructor(goBinary?: string) {
    this.#script = goBinary ? "go_targets" : "targets.mjs";
    this.#child = new Deno.Command(goBinary ?? "node", {
      args: goBinary ? [] : [`${benchDir}targets.mjs`],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
      cwd: `${benchDir}..`,
    }).spawn();
    this.#lines = new Lines(this.#child.stdout);
    this.#writer = this.#child.stdin.getWriter();
  }

  async ready(): Promise<TargetPorts> {
    const line = await this.#lines.next();
    if (!line) throw new Error(`bench/${this.#script} exited before listening`);
    this.ports = JSON.parse(line);
    return this.ports;
  }

  async cpuSeconds(): Promise<number> {
    await this.#writer.write(new TextEncoder().encode(`{"stats":true}\n`));
    const line = await this.#lines.next();
    return line ? JSON.parse(line).cpuSeconds : NaN;
  }

  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#child.status;
  }
}

async function runChild(
  options: Omit<ScenarioOptions, "runner"> & { cri?: boolean },
  profileDir?: string,
  v8Flags?: string,
): Promise<ScenarioResult> {
  const profile = profileDir
    ? [
      "--cpu-prof-dir",
      profileDir,
      "--cpu-prof-md",
      "--cpu-prof-name",
      `${options.name}-${options.workers}.cpuprofile`,
    ]
    : [];
  // The soft open-file limit raised to the hard one, as the agent does at start-up.
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      'ulimit -Sn "$(ulimit -Hn)" 2>/dev/null; exec "$@"',
      "probelet-scenario",
      Deno.execPath(),
      "run",
      "--allow-all",
      `--v8-flags=--expose-gc${v8Flags ? `,${v8Flags}` : ""}`,
      ...profile,
      `${benchDir}probe_scale.ts`,
      "--child",
      JSON.stringify(options),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Pass the child's stderr through, keeping its tail to explain a crash.
  let tail = "";
  const stderrDone = (async () => {
    for await (const chunk of child.stderr) {
      await Deno.stderr.write(chunk);
      tail = (tail + new TextDecoder().decode(chunk)).slice(-8192);
    }
  })();
  const [status, stdout] = await Promise.all([child.status, new Response(child.stdout).text()]);
  await stderrDone;
  const text = stdout.trim().split("\n").pop() ?? "";
  if (!status.success || !text.startsWith("{")) {
    throw new Error(
      `exit ${status.code}${status.signal ? ` (${status.signal})` : ""}: ${crashReason(tail)}`,
    );
  }
  return JSON.parse(text);
}

// The line that says why a child died: a Deno panic, V8 running out of heap, or the last error.
function crashReason(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const pick = lines.find((l) => /panicked at|Fatal JavaScript|out of memory/.test(l)) ??
    lines.find((l) => /error/i.test(l)) ?? lines.pop() ?? "no output";
  const i = lines.indexOf(pick);
  // A panic's assertion text is on the following lines.
  const detail = /panicked at/.test(pick) ? lines.slice(i + 1, i + 4).join(" ") : "";
  // deno-lint-ignore no-control-regex
  return `${pick} ${detail}`.replace(/\x1b\[[0-9;]*m/g, "").trim().slice(0, 300);
}

async function runFloors(
  jobs: { kind: string; rate: number; maxInFlight?: number }[],
  ports: TargetPorts,
  durationS: number,
  warmupS: number,
): Promise<FloorResult[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      `${benchDir}floor.ts`,
      "--jobs",
      JSON.stringify(jobs),
      "--targets",
      JSON.stringify(ports),
      "--duration",
      String(durationS),
      "--warmup",
      String(warmupS),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n").filter((l) =>
    l.startsWith("{")
  );
  return lines.map((l) => JSON.parse(l));
}

async function criSkipReason(): Promise<string | undefined> {
  const { integrationSkipReason } = await import("../tests/integration/helpers.ts");
  return await integrationSkipReason();
}

// NaN travels through JSON as null.
const fmt = (x: number | null | undefined, digits = 2) =>
  typeof x !== "number" || !Number.isFinite(x) ? "-" : x.toFixed(digits);

/** The report as a text table. */
export function formatTable(report: Report): string {
  const header = [
    "scenario",
    "workers",
    "probes/s",
    "CPU s/1k",
    "floor s/1k",
    "floor /s",
    "x floor",
    "CPU %",
    "RSS/wkr idle KiB",
    "RSS/wkr load KiB",
    "heap/wkr KiB",
    "late p50",
    "p99",
    "max ms",
    "missed",
    "probe p50 ms",
    "fail/err",
  ];
  const rows = report.scenarios.map((r) => [
    r.name,
    String(r.workers),
    `${fmt(r.probesPerSecond, 0)}/${r.expectedPerSecond}`,
    fmt(r.cpuPer1000, 3),
    fmt(r.floor?.cpuPer1000, 3),
    fmt(r.floor?.achievedPerSecond, 0),
    fmt(r.floorRatio, 2),
    fmt(r.cpuUtilisation * 100, 0),
    fmt(r.rssPerWorkerIdle / 1024, 1),
    fmt(r.rssPerWorkerLoad / 1024, 1),
    fmt(r.heapPerWorkerIdle / 1024, 1),
    fmt(r.latenessMs.p50, 0),
    fmt(r.latenessMs.p99, 0),
    fmt(r.latenessMs.max, 0),
    String(r.missedPeriods),
    fmt(r.probeDurationMs.p50, 1),
    `${r.failures}/${r.errors}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    "| " + cells.map((c, i) => i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])).join(" | ") +
    " |";
  const sep = "|" +
    widths.map((w, i) => (i === 0 ? "-" : "-").repeat(w + 1) + (i === 0 ? "-" : ":"))
      .join("|") +
    "|";
  const out = [line(header), sep, ...rows.map(line)];
  for (const s of report.skipped) out.push(`skipped ${s.name}: ${s.reason}`);
  const m = report.meta;
  out.push(
    "probes/s = completed/expected; CPU s/1k = user+sys CPU seconds of the probelet process per " +
      "1,000 probes (targets excluded); floor = the same requests from a plain node:http/https/net/" +
      "grpc-js script at the same rate (floor /s = what it achieved); RSS/heap per worker: idle = workers armed, no probe yet; " +
      "late = probe start minus its tick (ms); missed = ticks with no probe.",
  );
  out.push(
    `load average before ${m.loadAverageBefore.join(" ")}, after ${
      m.loadAverageAfter.join(" ")
    }; ${m.cpus} CPUs; deno ${m.deno}; window ${m.flags.durationS} s, period ${m.flags.periodSeconds} s; ${
      m.flags.targets ?? "node"
    } targets`,
  );
  return out.join("\n");
}

// TIME_WAIT sockets of the previous run, system-wide (/proc/net/sockstat).
function timeWait(): number {
  const m = /^TCP:.* tw (\d+)/m.exec(Deno.readTextFileSync("/proc/net/sockstat"));
  return m ? Number(m[1]) : 0;
}

// Lets the previous run's TIME_WAIT sockets expire (at most 20 s), so each side starts alike.
async function drainTimeWait(): Promise<void> {
  const end = Date.now() + 20_000;
  while (Date.now() < end && timeWait() > 1000) await new Promise((r) => setTimeout(r, 1000));
}

/** The --vs-go comparison as a Markdown table: both sides and probelet / Go ratios. */
export function formatVsGo(report: Report): string {
  const vs = report.vsGo!;
  const out: string[] = [];
  if (vs.skipped) out.push(`Go side not run: ${vs.skipped}`);
  const header = [
    "kind",
    "workers",
    "Go probes/s",
    "probelet probes/s",
    "Go CPU ms/probe",
    "probelet CPU ms/probe",
    "ratio",
    "Go p99 late ms",
    "probelet p99 late ms",
    "Go missed / fail",
    "probelet missed / fail",
  ];
  out.push(
    `| ${header.join(" | ")} |`,
    `|${header.map((_, i) => i < 1 ? "---" : "--:").join("|")}|`,
  );
  for (const pair of vs.pairs) {
    const p = report.scenarios.find((r) => r.name === pair.probelet && r.workers === pair.workers);
    const g = pair.go;
    const gCpu = g ? g.cpu_ms_per_1000_probes / 1000 : NaN;
    const pCpu = p ? p.cpuPer1000 : NaN;
    out.push(
      `| ${
        [
          pair.kind,
          String(pair.workers),
          g ? fmt(g.probes_per_s, 0) : pair.error ? "failed" : "-",
          p ? fmt(p.probesPerSecond, 0) : "-",
          fmt(gCpu, 3),
          fmt(pCpu, 3),
          Number.isFinite(gCpu) && Number.isFinite(pCpu) ? `${fmt(pCpu / gCpu, 2)}×` : "-",
          g ? fmt(g.lateness_ms.p99, 1) : "-",
          p ? fmt(p.latenessMs.p99, 0) : "-",
          g ? `${g.missed_periods} / ${g.failures}` : "-",
          p ? `${p.missedPeriods} / ${p.failures + p.errors}` : "-",
        ].join(" | ")
      } |`,
    );
  }
  const m = report.meta;
  out.push(
    `${vs.goVersion ?? "go: -"}; ${
      vs.targets ?? "probelet probed bench/targets.mjs"
    }; deno ${m.deno}; ${m.cpus} CPUs; probelet probe threads ${
      m.flags.probeWorkers.join(",")
    }; load average before ${m.loadAverageBefore.join(" ")}, after ${
      m.loadAverageAfter.join(" ")
    }; ${m.startedAt} – ${m.finishedAt}`,
  );
  return out.join("\n");
}

async function main(args: string[]): Promise<void> {
  const flags = parseFlags(args);
  const log = (s: string) => console.error(s);
  const report: Report = {
    meta: {
      startedAt: new Date().toISOString(),
      finishedAt: "",
      deno: Deno.version.deno,
      cpus: navigator.hardwareConcurrency,
      loadAverageBefore: loadAverage(),
      loadAverageAfter: [0, 0, 0],
      flags,
    },
    scenarios: [],
    skipped: [],
  };
  let targetsDir: string | undefined;
  let targetsBinary: string | undefined;
  if (flags.targets === "go") {
    targetsDir = await Deno.makeTempDir({ prefix: "probelet-bench-targets-" });
    targetsBinary = await buildGoTargets(targetsDir);
  }
  const targets = new Targets(targetsBinary);
  let goDir: string | undefined;
  let goTargets: GoTargets | undefined;
  let probeletGoTargets: GoTargets | undefined;
  try {
    let ports = await targets.ready();
    log(`targets: ${JSON.stringify(ports)}`);
    const common = {
      periodSeconds: flags.periodSeconds,
      timeoutSeconds: 1,
      durationS: flags.durationS,
      warmupS: flags.warmupS,
    };
    const runs: { kind: string; workers: number; periodSeconds: number; probeWorkers: number }[] =
      [];
    for (const kind of flags.kinds) {
      for (const workers of flags.workers) {
        for (const probeWorkers of flags.probeWorkers) {
          runs.push({ kind, workers, periodSeconds: flags.periodSeconds, probeWorkers });
        }
      }
    }
    // Kubelet's default period is 10 s: the largest mix again at that period.
    if (flags.period10 && flags.kinds.includes("mix") && flags.periodSeconds !== 10) {
      runs.push({
        kind: "mix",
        workers: Math.max(...flags.workers),
        periodSeconds: 10,
        probeWorkers: flags.probeWorkers[0],
      });
    }
    // With --vs-go: build the Go side once and start its targets (a process of their own).
    let go: { prober: string; targets: GoTargets } | undefined;
    if (flags.vsGo) {
      const baseline = findGoBaseline(flags.goBaseline);
      const missing = await goMissingReason(baseline);
      report.vsGo = { pairs: [] };
      if (missing) {
        log(`--vs-go: ${missing}`);
        report.vsGo.skipped = missing;
      } else {
        goDir = await Deno.makeTempDir({ prefix: "probelet-go-baseline-" });
        const bins = await buildGoBaseline(baseline!, goDir);
        report.vsGo.goVersion = bins.version;
        goTargets = new GoTargets(bins.targets);
        await goTargets.ready();
        go = { prober: bins.prober, targets: goTargets };
        // probelet's HTTP and TCP targets: the same Go program, in a process of their own, so
        // that both sides probe the same server code (the Node targets starve first on 2 cores).
        probeletGoTargets = new GoTargets(bins.targets);
        await probeletGoTargets.ready();
        ports = { ...ports, http: [probeletGoTargets.httpPort], tcp: [probeletGoTargets.tcpPort] };
        report.vsGo.targets = "Go targets.go for both sides (one process each)";
        log(
          `--vs-go: ${bins.version}; Go targets pid ${goTargets.pid}, probelet's ${probeletGoTargets.pid}`,
        );
      }
    }
    const runGo = async (kind: string, workers: number) => {
      if (!go || !report.vsGo) return;
      if (kind !== "http" && kind !== "tcp") return;
      await drainTimeWait();
      log(`running go ${kind} × ${workers} ...`);
      const pair = report.vsGo.pairs.find((p) => p.kind === kind && p.workers === workers) ??
        report.vsGo.pairs[report.vsGo.pairs.push({ kind, workers }) - 1];
      try {
        pair.go = await runGoProber(go.prober, go.targets, {
          kind,
          workers,
          periodS: flags.periodSeconds,
          durationS: flags.durationS,
        });
      } catch (err) {
        pair.error = err instanceof Error ? err.message : String(err);
        log(`go ${kind} × ${workers}: ${pair.error}`);
      }
    };
    let pairIndex = 0;
    const deferredFloors: { job: { kind: string; rate: number; maxInFlight: number }; row: Row }[] =
      [];
    for (const { kind, workers, periodSeconds, probeWorkers } of runs) {
      const base = periodSeconds === flags.periodSeconds ? kind : `${kind}@${periodSeconds}s`;
      const name = flags.probeWorkers.length > 1 ? `${base}/t${probeWorkers}` : base;
      // Interleaved: Go first on even pairs, probelet first on odd ones.
      const goFirst = flags.vsGo && pairIndex++ % 2 === 0;
      if (goFirst) await runGo(kind, workers);
      if (flags.vsGo) await drainTimeWait();
      log(`running ${name} × ${workers} ...`);
      const cpu0 = await targets.cpuSeconds();
      let result: Row;
      try {
        result = await runChild(
          {
            ...common,
            periodSeconds,
            // Every worker must have started probing before the window opens.
            warmupS: Math.max(flags.warmupS, periodSeconds + 0.2),
            name,
            kind: kind as ScenarioOptions["kind"],
            workers,
            targets: ports,
            probeWorkers,
          },
          flags.profileDir,
          flags.v8Flags,
        );
      } catch (err) {
        const reason = `crashed: ${err instanceof Error ? err.message : err}`;
        log(`${name} × ${workers} ${reason}`);
        report.skipped.push({ name: `${name} × ${workers}`, reason });
        if (flags.vsGo && !goFirst) await runGo(kind, workers);
        continue;
      }
      result.targetCpuSeconds = await targets.cpuSeconds() - cpu0;
      if (flags.floor && kind !== "noop") {
        const job = { kind, rate: workers / periodSeconds, maxInFlight: workers };
        // --quick measures every floor in one process at the end (a process start each is slow).
        if (flags.quick) {
          deferredFloors.push({ job, row: result });
        } else {
          const [floor] = await runFloors([job], ports, flags.floorDurationS, 1);
          if (floor) {
            result.floor = floor;
            result.floorRatio = result.cpuPer1000 / floor.cpuPer1000;
          }
        }
      }
      report.scenarios.push(result);
      log(formatTable({ ...report, scenarios: [result], skipped: [] }).split("\n")[2]);
      if (report.vsGo && periodSeconds === flags.periodSeconds) {
        const pair = report.vsGo.pairs.find((p) => p.kind === kind && p.workers === workers) ??
          report.vsGo.pairs[report.vsGo.pairs.push({ kind, workers }) - 1];
        pair.probelet = name;
      }
      if (flags.vsGo && !goFirst) await runGo(kind, workers);
    }

    if (deferredFloors.length > 0) {
      const floors = await runFloors(
        deferredFloors.map((d) => d.job),
        ports,
        flags.floorDurationS,
        0.5,
      );
      deferredFloors.forEach(({ row }, i) => {
        if (!floors[i]) return;
        row.floor = floors[i];
        row.floorRatio = row.cpuPer1000 / floors[i].cpuPer1000;
      });
    }
    if (flags.exec) {
      for (const workers of flags.execWorkers) {
        const name = "exec-host";
        log(`running ${name} × ${workers} ...`);
        try {
          report.scenarios.push(
            await runChild({
              ...common,
              name,
              kind: "exec",
              workers,
              execCommand: ["/bin/true"],
              containerID: "host://bench",
            }),
          );
        } catch (err) {
          report.skipped.push({ name: `${name} × ${workers}`, reason: `crashed: ${err}` });
        }
      }
      const reason = await criSkipReason();
      if (reason) {
        log(`skipping exec-cri: ${reason}`);
        report.skipped.push({ name: "exec-cri", reason });
      } else {
        for (const workers of flags.execWorkers) {
          log(`running exec-cri × ${workers} ...`);
          try {
            report.scenarios.push(
              await runChild({ ...common, name: "exec-cri", kind: "exec", workers, cri: true }),
            );
          } catch (err) {
            report.skipped.push({ name: `exec-cri × ${workers}`, reason: String(err) });
          }
        }
      }
    }
  } finally {
    await targets.close();
    if (targetsDir) await Deno.remove(targetsDir, { recursive: true }).catch(() => {});
    await goTargets?.close();
    await probeletGoTargets?.close();
    if (goDir) await Deno.remove(goDir, { recursive: true }).catch(() => {});
  }
  report.meta.finishedAt = new Date().toISOString();
  report.meta.loadAverageAfter = loadAverage();
  const table = formatTable(report) + (report.vsGo ? `\n\n${formatVsGo(report)}` : "");
  if (flags.json) {
    console.error(table);
    console.log(JSON.stringify(report, null, 2));
  } else {
    console.log(table);
  }
}

/** Child mode: one scenario in this process, its JSON on the last stdout line. */
async function child(json: string): Promise<void> {
  const options = JSON.parse(json) as ScenarioOptions & { cri?: boolean };
  let cleanup: (() => Promise<void>) | undefined;
  if (options.cri) {
    const { connectRuntime, startTestSandbox } = await import("../tests/integration/helpers.ts");
    const { RuntimeCommandRunner } = await import(
      "../src/kubelet/kuberuntime/kuberuntime_container.ts"
    );
    const runtime = await connectRuntime();
    // One pod (sandbox, hence one containerd shim) per 10 workers, as a node's exec probes are
    // spread over its pods: containerd 1.6's shim stalls (get state: context deadline exceeded)
    // with ~100 execs per second into one container.
    const sandboxes: { remove(): Promise<void> }[] = [];
    const ids: string[] = [];
    try {
      for (let i = 0; i < Math.ceil(options.workers / 10); i++) {
        const sandbox = await startTestSandbox(runtime, `probelet-bench-${i}`, {
          hostNetwork: true,
        });
        sandboxes.push(sandbox);
        ids.push(
          `containerd://${await sandbox.startContainer("app", { command: ["sleep", "3600"] })}`,
        );
      }
    } catch (err) {
      for (const sandbox of sandboxes) await sandbox.remove();
      runtime.close();
      throw err;
    }
    options.runner = new RuntimeCommandRunner(runtime);
    options.containerIDs = ids;
    options.execCommand = ["true"];
    cleanup = async () => {
      for (const sandbox of sandboxes) await sandbox.remove();
      runtime.close();
    };
  }
  try {
    const result = await runScenario(options);
    console.log(JSON.stringify(result));
  } finally {
    await cleanup?.();
  }
  process.exit(0);
}

if (import.meta.main && Deno.args.includes("--vs-kubelet")) {
  const flags = parseVsKubeletFlags(Deno.args);
  const report = await runVsKubelet(flags);
  console.log(formatVsKubelet(report));
  console.error(`vs-kubelet: report ${flags.json}`);
} else if (import.meta.main) {
  const i = Deno.args.indexOf("--child");
  const r = Deno.args.indexOf("--render");
  if (i >= 0) await child(Deno.args[i + 1]);
  else if (r >= 0) {
    const report = JSON.parse(Deno.readTextFileSync(Deno.args[r + 1])) as Report;
    console.log(formatTable(report) + (report.vsGo ? `\n\n${formatVsGo(report)}` : ""));
  } else await main(Deno.args);
}
