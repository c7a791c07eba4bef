/**
 * The agent-level hostile soak of issue 21 ("How it is tested", third bullet): the agent, run
 * through its CLI on the embedded runtime, with one pod per hostile kind whose readiness probe
 * targets a hostile server on 127.0.0.1, beside one healthy pod probed every second, for
 * `--minutes` minutes. Every `--interval` seconds it prints one table row: the agent's RSS and
 * open descriptors (`/proc/<pid>`), the latency of `/healthz` on the read-only port (polled every
 * `--healthz-every-ms`; p50, p99, max, failures), and the healthy pod's probes in the interval
 * against the number its period asks for (from the agent's `/metrics/probes` counters), with
 * their mean duration. A summary follows, with the hostile pods' probe counts by result.
 *
 * The hostile kinds, one server each (in a child process, so their CPU and buffers are not the
 * agent's nor this sampler's):
 *
 * | pod                  | issue 21 row | the target                                                   |
 * | -------------------- | ------------ | ------------------------------------------------------------ |
 * | `grpc-continuation`  | 1            | HEADERS without END_HEADERS, then empty CONTINUATION frames   |
 * | `http-redirect`      | 2            | a 302 to a ~6 MB path on a port that accepts and never reads   |
 * | `grpc-ping-flood`    | 3            | PINGs without end, never reading                              |
 * | `grpc-hpack-bomb`    | 4            | a 15 MiB header block of one-byte indexed fields               |
 * | `http-trailer-stall` | 7            | a chunked body whose trailer never ends                        |
 * | `http-big-head`      | 9            | a 9 MB response head                                           |
 * | `grpc-data-flood`    | 12           | empty DATA frames without end                                  |
 *
 * ```sh
 * deno run -A scripts/hostile_soak.ts --minutes 5 --interval 10
 * deno run -A scripts/hostile_soak.ts --repo /path/to/older/checkout   # its agent, for "before"
 * ```
 *
 * `--repo` runs the agent of another source tree (with that tree's `deno.json`); the flags given
 * to it are those the tree's `src/cmd/probelet/flags.ts` knows (`--read-only-port` where it
 * exists, else `--port`, which was the plain port). `--max-rss-gib` (default 3) stops the agent
 * early, and says when, if its RSS passes that much. `--kinds http-big-head,grpc-ping-flood` runs
 * only those hostile pods beside the healthy one, to see which kind costs what (`--kinds ""`: the
 * healthy pod alone); `--v 4` sets the agent's log level. The agent's root folder, log and samples (`samples.json`) stay in the
 * temporary folder printed at the end.
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startHostileServer } from "../tests/testing/hostile_h2_server.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    targets: { type: "boolean", default: false },
    repo: { type: "string", default: new URL("..", import.meta.url).pathname },
    minutes: { type: "string", default: "5" },
    interval: { type: "string", default: "10" },
    port: { type: "string", default: "26355" },
    "healthz-every-ms": { type: "string", default: "250" },
    "max-rss-gib": { type: "string", default: "3" },
    kinds: { type: "string" },
    v: { type: "string", default: "0" },
  },
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the hostile targets (the child process) ----

if (values.targets) {
  console.log(JSON.stringify(startTargets()));
  await new Promise(() => {});
}

/** Ports of the hostile servers, by pod name. */
type TargetPorts = Record<string, number>;

function startTargets(): TargetPorts {
  const listen = () => Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const portOf = (l: Deno.Listener) => (l.addr as Deno.NetAddr).port;
  const encoder = new TextEncoder();
  /** Serves every connection: reads the request head, then `answer(conn)`. */
  const serveHttp = (listener: Deno.Listener, answer: (conn: Deno.Conn) => Promise<void>) => {
    (async () => {
      for await (const conn of listener) {
        (async () => {
          const buf = new Uint8Array(65536);
          let tail = "";
          while (!tail.includes("\r\n\r\n")) {
            const n = await conn.read(buf);
            if (n === null) return;
            tail = (tail + new TextDecoder().decode(buf.subarray(0, n))).slice(-8);
          }
          await answer(conn);
        })().catch(() => {}).finally(() => {
          try {
            conn.close();
          } catch {
            // closed
          }
        });
      }
    })();
  };
  const writeAll = async (conn: Deno.Conn, bytes: Uint8Array) => {
    for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
  };

  // Row 2: a sink that accepts and never reads, and a 302 to a 6 MB path on it.
  const sink = listen();
  const held: Deno.Conn[] = [];
  (async () => {
    for await (const conn of sink) held.push(conn);
  })();
  const redirect = encoder.encode(
    `HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:${portOf(sink)}/${"a".repeat(6 << 20)}\r\n` +
      "Content-Length: 0\r\n\r\n",
  );
  const redirector = listen();
  serveHttp(redirector, (conn) => writeAll(conn, redirect));

  // Row 7: a chunked body whose trailer never ends (the connection is dropped after 10 s).
  const stall = encoder.encode(
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n",
  );
  const trailer = listen();
  serveHttp(trailer, async (conn) => {
    await writeAll(conn, stall);
    await sleep(10_000);
  });

  // Row 9: a 9 MB response head.
  const bigHead = encoder.encode(
    `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(9_000_000)}\r\nContent-Length: 2\r\n\r\nok`,
  );
  const head = listen();
  serveHttp(head, (conn) => writeAll(conn, bigHead));

  return {
    "grpc-continuation": startHostileServer("continuation-flood").port,
    "grpc-hpack-bomb": startHostileServer("hpack-bomb").port,
    "grpc-ping-flood": startHostileServer("ping-flood").port,
    "grpc-data-flood": startHostileServer("empty-data-flood").port,
    "http-redirect": portOf(redirector),
    "http-trailer-stall": portOf(trailer),
    "http-big-head": portOf(head),
  };
}

// ---- the soak (this process) ----

const repo = values.repo;
const minutes = Number(values.minutes);
const intervalS = Number(values.interval);
const agentPort = Number(values.port);
const healthzEveryMs = Number(values["healthz-every-ms"]);
const maxRssMiB = Number(values["max-rss-gib"]) * 1024;
const healthyPort = agentPort + 1;

const base = await Deno.makeTempDir({ prefix: "probelet-hostile-soak-" });
// Every container gets this variable, so that leftovers can be found (and ended) by it.
const marker = `PROBELET_HOSTILE_SOAK=${base}`;

const targets = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", new URL(import.meta.url).pathname, "--targets"],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const allPorts: TargetPorts = JSON.parse(await firstLine(targets.stdout));
const kinds = values.kinds === undefined
  ? Object.keys(allPorts)
  : values.kinds.split(",").filter((kind) => kind !== "");
for (const kind of kinds) {
  if (!(kind in allPorts)) throw new Error(`--kinds: no kind ${kind}`);
}
const ports = Object.fromEntries(kinds.map((kind) => [kind, allPorts[kind]]));

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the targets process ended");
    text += value;
  }
  reader.releaseLock();
  return text.slice(0, text.indexOf("\n"));
}

/** Probe period of each pod, seconds. */
const periods: Record<string, number> = {
  "healthy": 1,
  "grpc-continuation": 1,
  "grpc-hpack-bomb": 1,
  "grpc-ping-flood": 1,
  "grpc-data-flood": 1,
  "http-redirect": 2,
  "http-trailer-stall": 1,
  "http-big-head": 2,
};

function podYaml(name: string, command: string[], probe: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: probelet.local/host
    command: ${JSON.stringify(command)}
    env:
    - {name: PROBELET_HOSTILE_SOAK, value: ${JSON.stringify(base)}}
    readinessProbe:
      ${probe}
      periodSeconds: ${periods[name]}
      timeoutSeconds: 1
`;
}

const podsDir = join(base, "pods");
await Deno.mkdir(podsDir);
const idle = ["sleep", "1000000"];
for (const [name, port] of Object.entries(ports)) {
  const probe = name.startsWith("grpc-")
    ? `grpc: {port: ${port}}`
    : `httpGet: {host: 127.0.0.1, port: ${port}, path: /}`;
  await Deno.writeTextFile(join(podsDir, `${name}.yaml`), podYaml(name, idle, probe));
}
const healthyServer = `Deno.serve({ hostname: '127.0.0.1', port: ${healthyPort}, ` +
  "onListen() {} }, () => new Response('ok'));";
await Deno.writeTextFile(
  join(podsDir, "healthy.yaml"),
  podYaml(
    "healthy",
    ["deno", "eval", healthyServer],
    `httpGet: {host: 127.0.0.1, port: ${healthyPort}, path: /}`,
  ),
);

// The agent's flags as its tree knows them.
const flagsSource = await Deno.readTextFile(join(repo, "src/cmd/probelet/flags.ts"));
const portFlags = flagsSource.includes('name: "read-only-port"')
  ? ["--read-only-port", String(agentPort), "--port", "0"]
  : ["--port", String(agentPort)];
const logPath = join(base, "agent.log");
const logFile = await Deno.open(logPath, { write: true, create: true });
const agent = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    join(repo, "src/cmd/probelet/main.ts"),
    "--pod-manifest-path",
    podsDir,
    "--root-dir",
    join(base, "root"),
    ...portFlags,
    "--live-view",
    "never",
    "--node-name",
    "soak",
    "--v",
    values.v,
  ],
  cwd: repo,
  stdout: "null",
  stderr: "piped",
}).spawn();
const logDone = agent.stderr.pipeTo(logFile.writable).catch(() => {});
console.error(
  `hostile soak: agent of ${repo} (pid ${agent.pid}), folder ${base}, ${minutes} min, ` +
    `a sample every ${intervalS} s; targets ${JSON.stringify(ports)}`,
);

// ---- measurements ----

async function rssMiB(): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${agent.pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0") / 1024;
}

async function descriptors(): Promise<number> {
  let n = 0;
  for await (const _ of Deno.readDir(`/proc/${agent.pid}/fd`)) n++;
  return n;
}

const healthzTimeoutMs = 5_000;
/** `/healthz` latencies (ms) since the last sample; a failure or timeout is `undefined`. */
let healthzWindow: (number | undefined)[] = [];
const healthzAll: (number | undefined)[] = [];
let polling = true;

async function healthzOnce(): Promise<number | undefined> {
  const start = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${agentPort}/healthz`, {
      signal: AbortSignal.timeout(healthzTimeoutMs),
    });
    const body = await res.text();
    return res.ok && body === "ok" ? performance.now() - start : undefined;
  } catch {
    return undefined;
  }
}

async function pollHealthz(): Promise<void> {
  while (polling) {
    const start = performance.now();
    const ms = await healthzOnce();
    healthzWindow.push(ms);
    healthzAll.push(ms);
    const wait = healthzEveryMs - (performance.now() - start);
    if (wait > 0) await sleep(wait);
  }
}

/** `prober_probe_total` by pod (without the node suffix), then by result. */
type ProbeCounts = Record<string, Record<string, number>>;
interface ProbeFigures {
  counts: ProbeCounts;
  /** The healthy pod's `prober_probe_duration_seconds` sum and count. */
  healthySeconds: number;
  healthyObserved: number;
}

async function probeFigures(): Promise<ProbeFigures | undefined> {
  let text: string;
  try {
    const res = await fetch(`http://127.0.0.1:${agentPort}/metrics/probes`, {
      signal: AbortSignal.timeout(healthzTimeoutMs),
    });
    text = await res.text();
  } catch {
    return undefined;
  }
  const figures: ProbeFigures = { counts: {}, healthySeconds: 0, healthyObserved: 0 };
  for (const line of text.split("\n")) {
    const labels = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1] ?? "";
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    const pod = labels("pod").replace(/-soak$/, "");
    if (line.startsWith("prober_probe_total{")) {
      const byResult = figures.counts[pod] ??= {};
      byResult[labels("result")] = (byResult[labels("result")] ?? 0) + value;
    } else if (pod === "healthy" && line.startsWith("prober_probe_duration_seconds_sum{")) {
      figures.healthySeconds += value;
    } else if (pod === "healthy" && line.startsWith("prober_probe_duration_seconds_count{")) {
      figures.healthyObserved += value;
    }
  }
  return figures;
}

const total = (byResult: Record<string, number> | undefined) =>
  Object.values(byResult ?? {}).reduce((a, b) => a + b, 0);

/** The `q` quantile of `values` (nearest rank). */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

interface HealthzFigures {
  n: number;
  failed: number;
  p50: number;
  p99: number;
  max: number;
  over100: number;
}

function healthzFigures(window: (number | undefined)[]): HealthzFigures {
  const ok = window.filter((ms): ms is number => ms !== undefined);
  // A failure counts as the timeout, so that it shows in p99 and max.
  const all = window.map((ms) => ms ?? healthzTimeoutMs);
  return {
    n: window.length,
    failed: window.length - ok.length,
    p50: all.length ? quantile(all, 0.5) : NaN,
    p99: all.length ? quantile(all, 0.99) : NaN,
    max: all.length ? Math.max(...all) : NaN,
    over100: all.filter((ms) => ms > 100).length,
  };
}

interface Sample {
  at: number;
  rssMiB: number;
  fds: number;
  healthz: HealthzFigures;
  /** Healthy pod's probes in the interval, and how many its period asks for. */
  healthyProbes: number | undefined;
  healthyExpected: number;
  /** Mean duration of the healthy pod's probes in the interval (ms). */
  healthyMeanMs: number | undefined;
  /** Cumulative probe counts by pod and result. */
  counts: ProbeCounts | undefined;
}

// Watch RSS every second for the cap, and keep its peak.
let peakRssMiB = 0;
let capNote = "";
let agentEnded = false;
const agentStatus = agent.status.then((status) => {
  agentEnded = true;
  return status;
});
const started = Date.now();
const seconds = () => Math.round((Date.now() - started) / 1000);
const watcher = setInterval(async () => {
  if (agentEnded || capNote) return;
  try {
    const rss = await rssMiB();
    peakRssMiB = Math.max(peakRssMiB, rss);
    if (rss > maxRssMiB && !capNote) {
      capNote = `agent stopped early at t=${seconds()} s: RSS ${rss.toFixed(0)} MiB passed ` +
        `the ${values["max-rss-gib"]} GiB cap`;
      console.error(`hostile soak: ${capNote}`);
      agent.kill("SIGKILL");
    }
  } catch {
    // the agent ended
  }
}, 1000);

console.log(
  "| t (s) | RSS (MiB) | fds | /healthz p50 / p99 / max (ms) | /healthz > 100 ms, failed | " +
    "healthy probes / expected | healthy probe mean (ms) |",
);
console.log(
  "| ----: | --------: | --: | ----------------------------: | ------------------------: | " +
    "------------------------: | ----------------------: |",
);

const samples: Sample[] = [];
let previous: ProbeFigures | undefined;
let previousAt = 0;
async function sample(): Promise<void> {
  const at = seconds();
  const window = healthzWindow;
  healthzWindow = [];
  const figures = await probeFigures();
  let healthyProbes: number | undefined;
  let healthyMeanMs: number | undefined;
  if (figures && previous) {
    healthyProbes = total(figures.counts["healthy"]) - total(previous.counts["healthy"]);
    const observed = figures.healthyObserved - previous.healthyObserved;
    if (observed > 0) {
      healthyMeanMs = (figures.healthySeconds - previous.healthySeconds) * 1000 / observed;
    }
  }
  const s: Sample = {
    at,
    rssMiB: await rssMiB(),
    fds: await descriptors(),
    healthz: healthzFigures(window),
    healthyProbes,
    healthyExpected: Math.round((at - previousAt) / periods["healthy"]),
    healthyMeanMs,
    counts: figures?.counts,
  };
  if (figures) previous = figures;
  previousAt = at;
  samples.push(s);
  peakRssMiB = Math.max(peakRssMiB, s.rssMiB);
  const h = s.healthz;
  console.log(
    `| ${s.at} | ${s.rssMiB.toFixed(0)} | ${s.fds} | ${h.p50.toFixed(1)} / ${h.p99.toFixed(1)} / ` +
      `${h.max.toFixed(1)} | ${h.over100} of ${h.n}, ${h.failed} | ` +
      `${
        s.healthyExpected === 0 ? "n/a" : `${s.healthyProbes ?? "n/a"} / ${s.healthyExpected}`
      } | ` +
      `${s.healthyMeanMs?.toFixed(1) ?? "n/a"} |`,
  );
}

// The run: the first sample once the agent answers and the healthy pod has been probed, then
// one per interval.
while ((await healthzOnce()) === undefined && !agentEnded) await sleep(200);
const ready = Date.now();
while (!agentEnded && total((await probeFigures())?.counts["healthy"]) === 0) {
  if (Date.now() - ready > 60_000) throw new Error("the healthy pod was not probed in 60 s");
  await sleep(500);
}
const polled = pollHealthz();
const steps = Math.floor((minutes * 60) / intervalS);
const first = Date.now();
previousAt = seconds();
previous = await probeFigures();
try {
  for (let i = 0; i <= steps && !agentEnded; i++) {
    const due = first + i * intervalS * 1000;
    if (Date.now() < due) await sleep(due - Date.now());
    if (agentEnded) break;
    await sample();
  }
} finally {
  polling = false;
  clearInterval(watcher);
  await polled;
}

// Stop the agent (SIGTERM stops its pods on the embedded runtime), then end whatever is left.
const stopStart = Date.now();
if (!agentEnded) agent.kill("SIGTERM");
const stopTimer = setTimeout(() => agent.kill("SIGKILL"), 30_000);
const status = await agentStatus;
clearTimeout(stopTimer);
await logDone;
const stopS = (Date.now() - stopStart) / 1000;
const leftovers = await endLeftovers();
targets.kill("SIGKILL");
await targets.status;

/** Ends the processes started for this run that outlived the agent (containers, shims). */
async function endLeftovers(): Promise<number> {
  const mine: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const environ = await Deno.readTextFile(`/proc/${entry.name}/environ`);
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (environ.split("\0").includes(marker) || cmdline.includes(base)) {
        mine.push(Number(entry.name));
      }
    } catch {
      // gone, or not ours to read
    }
  }
  for (const pid of mine) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  return mine.length;
}

// ---- summary ----

const rows = samples.filter((s) => s.counts);
const firstSample = samples[0];
const lastSample = samples.at(-1);
const all = healthzFigures(healthzAll);
console.log(`\nagent: ${repo} (Deno ${Deno.version.deno}), ${samples.length} samples`);
if (firstSample && lastSample) {
  const rss = samples.map((s) => s.rssMiB);
  const fds = samples.map((s) => s.fds);
  console.log(
    `RSS: first ${firstSample.rssMiB.toFixed(0)} MiB, last ${lastSample.rssMiB.toFixed(0)} MiB, ` +
      `min ${Math.min(...rss).toFixed(0)}, max of samples ${Math.max(...rss).toFixed(0)}, ` +
      `peak (1 s watch) ${peakRssMiB.toFixed(0)} MiB`,
  );
  console.log(
    `descriptors: first ${firstSample.fds}, last ${lastSample.fds}, min ${Math.min(...fds)}, ` +
      `max ${Math.max(...fds)}`,
  );
}
console.log(
  `/healthz: ${all.n} requests, p50 ${all.p50.toFixed(1)} ms, p99 ${all.p99.toFixed(1)} ms, ` +
    `max ${all.max.toFixed(1)} ms, ${all.over100} over 100 ms, ${all.failed} failed ` +
    `(timeout ${healthzTimeoutMs / 1000} s)`,
);
const healthyRows = samples.filter((s) => s.healthyProbes !== undefined);
const healthyGot = healthyRows.reduce((a, s) => a + (s.healthyProbes ?? 0), 0);
const healthyWanted = healthyRows.reduce((a, s) => a + s.healthyExpected, 0);
console.log(
  `healthy pod: ${healthyGot} readiness probes where its period asks for ${healthyWanted}; ` +
    `short intervals: ${
      healthyRows.filter((s) => (s.healthyProbes ?? 0) < s.healthyExpected - 1).length
    } of ${healthyRows.length}`,
);
// A probe that errors is not counted in prober_probe_total (kubelet throws its result away), but
// it gives an Unhealthy event, which the agent logs.
const unhealthy: Record<string, number> = {};
for (const line of (await Deno.readTextFile(logPath)).split("\n")) {
  if (!line.includes('reason="Unhealthy"')) continue;
  const pod = /object="[^/"]*\/([^"]*?)(-soak)?"/.exec(line)?.[1] ?? "?";
  unhealthy[pod] = (unhealthy[pod] ?? 0) + 1;
}
const lastCounts = rows.at(-1)?.counts ?? {};
console.log(
  "probes by pod over the run (prober_probe_total; Unhealthy events in the agent's log):",
);
for (const name of ["healthy", ...kinds]) {
  const byResult = lastCounts[name] ?? {};
  const parts = Object.entries(byResult).map(([result, n]) => `${result} ${n}`).join(", ");
  console.log(`  ${name.padEnd(20)} ${parts || "none"}; Unhealthy events ${unhealthy[name] ?? 0}`);
}
if (capNote) console.log(capNote);
console.log(
  `stop: exit ${status.code}${status.signal ? ` (${status.signal})` : ""} after ` +
    `${stopS.toFixed(1)} s; ${leftovers} leftover process(es) ended; log ${logPath}`,
);
await Deno.writeTextFile(join(base, "samples.json"), JSON.stringify(samples, null, 2));
Deno.exit(0);
