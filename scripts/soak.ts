/**
 * Soak run of the node agent (issue 10): the host fixture pods, plus a container that prints
 * without end (`yes`) and a gRPC target that accepts TCP and never speaks HTTP/2 (probed for
 * readiness and liveness every second), for `--minutes` minutes. Every `--interval` seconds it
 * samples the agent's descriptors (`/proc/<pid>/fd`), RSS, the flooding container's log folder and
 * the time `/healthz` takes, then prints a Markdown table and stops the agent with SIGTERM.
 *
 * ```sh
 * deno run -A scripts/soak.ts --minutes 10 --interval 30
 * ```
 *
 * Ports: the fixture ports 18180-18183 move to 26180-26183 (so a `deno task start` elsewhere on the
 * machine does not collide) and the silent target listens on 26184.
 *
 * `--runtime containerd` runs the agent on the containerd of `scripts/containerd.sh` instead
 * (`PROBELET_CRI_ENDPOINT`, else this checkout's `.run/containerd/containerd.sock`): the containerd
 * fixture pods (exec, HTTP, TCP and gRPC probes), plus a host-network pod whose gRPC readiness and
 * liveness probes (every second) reach a `fixtures/apps/grpc_health.ts` this script runs on
 * 127.0.0.1:26183. At `--restart-at` seconds (default: half-way; `-1`: never) it restarts
 * containerd (`scripts/containerd.sh restart`; containers keep running). Each sample adds the CRI
 * errors the agent logged since the previous one, and the containers' IDs, so a restart of
 * containerd that restarted a container would show. The agent stops as kubelet does, leaving its
 * pods running (node name `soak`; `scripts/containerd.sh down` removes them).
 *
 * ```sh
 * bash scripts/containerd.sh up
 * deno run -A scripts/soak.ts --runtime containerd --minutes 10 --interval 30
 * ```
 * @module
 */
import { join } from "node:path";
import { copyFixturePods, writeEmbeddedSoakPods } from "./soak_pods.ts";

interface Sample {
  at: number;
  fds: number;
  rssMiB: number;
  healthzMs: number | undefined;
  floodLogFiles: number;
  floodLogMiB: number;
  restarts: Record<string, number>;
  /** Log lines of failed CRI calls since the previous sample (containerd only). */
  criErrors: number;
  /** Ready pods out of all. */
  ready: string;
  /** Container IDs by pod (containerd only). */
  containerIds: Record<string, string>;
}

const args = new Map<string, string>();
for (let i = 0; i < Deno.args.length; i += 2) {
  args.set(Deno.args[i].replace(/^--/, ""), Deno.args[i + 1]);
}
const minutes = Number(args.get("minutes") ?? "10");
const intervalS = Number(args.get("interval") ?? "30");
const agentPort = Number(args.get("port") ?? "26255");
const runtime = args.get("runtime") ?? "embedded";
if (runtime !== "embedded" && runtime !== "containerd") {
  throw new Error(`--runtime: "embedded" or "containerd", not ${JSON.stringify(runtime)}`);
}
const onContainerd = runtime === "containerd";
const restartAtS = Number(args.get("restart-at") ?? String((minutes * 60) / 2));
const repo = new URL("..", import.meta.url).pathname;
const criEndpoint = Deno.env.get("PROBELET_CRI_ENDPOINT") ??
  `unix://${join(repo, ".run/containerd/containerd.sock")}`;

const base = await Deno.makeTempDir({ prefix: "probelet-soak-" });
const pods = join(base, "pods");
await Deno.mkdir(pods);
await copyFixturePods(pods, { runtime: onContainerd ? "containerd" : "host", portBase: 26180 });
// Host processes this script starts (containerd: the gRPC health target).
const helpers: Deno.ChildProcess[] = [];
if (onContainerd) await containerdPods();
else await writeEmbeddedSoakPods(pods, 26184);

/** containerd's extra pod: gRPC probes every second against a health server on the host. */
async function containerdPods(): Promise<void> {
  helpers.push(
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-net", "--allow-env", "--allow-read", "fixtures/apps/grpc_health.ts"],
      cwd: repo,
      env: { PORT: "26183", NOT_SERVING_AFTER_SECONDS: "0" },
      stdout: "null",
      stderr: "null",
    }).spawn(),
  );
  await Deno.writeTextFile(
    join(pods, "grpc-host.yaml"),
    `apiVersion: v1
kind: Pod
metadata:
  name: grpc-host
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: idle
    image: probelet.local/busybox:1
    command: [sleep, "100000"]
    readinessProbe:
      grpc: {port: 26183}
      periodSeconds: 1
      timeoutSeconds: 1
    livenessProbe:
      grpc: {port: 26183}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1000000
`,
  );
}

const logPath = join(base, "agent.log");
const logFile = await Deno.open(logPath, { write: true, create: true });
const agent = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    join(repo, "src/cmd/probelet/main.ts"),
    "--pod-manifest-path",
    pods,
    "--root-dir",
    join(base, "root"),
    "--read-only-port",
    String(agentPort),
    "--port",
    "0",
    "--live-view",
    "never",
    "--node-name",
    "soak",
    ...(onContainerd ? ["--container-runtime-endpoint", criEndpoint] : []),
  ],
  cwd: repo,
  stdout: "null",
  stderr: "piped",
}).spawn();
const logDone = agent.stderr.pipeTo(logFile.writable);
console.error(`soak: agent pid ${agent.pid}, folder ${base}, ${minutes} min, every ${intervalS} s`);

async function count(dir: string): Promise<number> {
  let n = 0;
  for await (const _ of Deno.readDir(dir)) n++;
  return n;
}

async function rssMiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0");
  return kb / 1024;
}

async function healthz(): Promise<number | undefined> {
  const start = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${agentPort}/healthz`, {
      signal: AbortSignal.timeout(5_000),
    });
    await res.text();
    return performance.now() - start;
  } catch {
    return undefined;
  }
}

async function floodLogs(): Promise<{ files: number; mib: number }> {
  const podsDir = join(base, "root", "pods");
  let files = 0;
  let bytes = 0;
  try {
    for await (const pod of Deno.readDir(podsDir)) {
      if (!pod.name.includes("_flood-")) continue;
      for await (const c of Deno.readDir(join(podsDir, pod.name))) {
        for await (const f of Deno.readDir(join(podsDir, pod.name, c.name))) {
          files++;
          bytes += (await Deno.stat(join(podsDir, pod.name, c.name, f.name))).size;
        }
      }
    }
  } catch {
    // not there yet
  }
  return { files, mib: bytes / 1024 / 1024 };
}

interface PodStates {
  restarts: Record<string, number>;
  ready: string;
  containerIds: Record<string, string>;
}

async function podStates(): Promise<PodStates> {
  const out: PodStates = { restarts: {}, ready: "", containerIds: {} };
  try {
    const list = await (await fetch(`http://127.0.0.1:${agentPort}/pods`)).json();
    let ready = 0;
    for (const p of list.items) {
      const name = `${p.metadata.name.replace(/-soak$/, "")}`;
      for (const c of p.status?.containerStatuses ?? []) {
        out.restarts[name] = c.restartCount;
        out.containerIds[name] = String(c.containerID ?? "").replace(/^.*:\/\//, "").slice(0, 8);
      }
      if (
        p.status?.conditions?.some((c: { type: string; status: string }) =>
          c.type === "Ready" && c.status === "True"
        )
      ) ready++;
    }
    out.ready = `${ready}/${list.items.length}`;
  } catch {
    // not answering
  }
  return out;
}

// Failed CRI calls in the agent's log since the last look (an error names the gRPC status).
let logOffset = 0;
async function criErrorsSinceLastSample(): Promise<number> {
  const bytes = await Deno.readFile(logPath);
  const text = new TextDecoder().decode(bytes.subarray(logOffset));
  logOffset = bytes.length;
  return text.split("\n").filter((line) => /rpc error: code =|CRI runtime unreachable/.test(line))
    .length;
}

const samples: Sample[] = [];
const started = Date.now();
const sample = async () => {
  const logs = await floodLogs();
  samples.push({
    at: Math.round((Date.now() - started) / 1000),
    fds: await count(`/proc/${agent.pid}/fd`),
    rssMiB: await rssMiB(agent.pid),
    healthzMs: await healthz(),
    floodLogFiles: logs.files,
    floodLogMiB: logs.mib,
    ...await podStates(),
    criErrors: await criErrorsSinceLastSample(),
  });
  const s = samples.at(-1)!;
  console.error(
    `soak: t=${s.at}s fds=${s.fds} rss=${s.rssMiB.toFixed(1)}MiB healthz=${
      s.healthzMs?.toFixed(1) ?? "timeout"
    }ms flood logs ${s.floodLogFiles} files ${s.floodLogMiB.toFixed(1)}MiB ready=${s.ready} ` +
      `cri_errors=${s.criErrors}`,
  );
};

// containerd only: one restart of containerd during the run.
let restartNote = "";
async function restartContainerd(): Promise<void> {
  const at = Math.round((Date.now() - started) / 1000);
  const begin = performance.now();
  const out = await new Deno.Command("bash", {
    args: [join(repo, "scripts/containerd.sh"), "restart"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const took = (performance.now() - begin) / 1000;
  restartNote = `containerd restarted at ${at} s (exit ${out.code}, ${took.toFixed(1)} s)`;
  console.error(`soak: ${restartNote}`);
}
let restartTimer: ReturnType<typeof setTimeout> | undefined;

// The first sample once the agent answers, then one per interval (timed from the start).
while ((await healthz()) === undefined) await new Promise((r) => setTimeout(r, 200));
let restarting: Promise<void> | undefined;
if (onContainerd && restartAtS >= 0) {
  restartTimer = setTimeout(() => restarting = restartContainerd(), restartAtS * 1000);
}
const steps = Math.floor((minutes * 60) / intervalS);
for (let i = 0; i <= steps; i++) {
  const due = started + i * intervalS * 1000;
  if (Date.now() < due) await new Promise((r) => setTimeout(r, due - Date.now()));
  await sample();
}

clearTimeout(restartTimer);
await restarting;

const stopStart = Date.now();
agent.kill("SIGTERM");
const status = await agent.status;
await logDone.catch(() => {});
const stopS = (Date.now() - stopStart) / 1000;

if (onContainerd) {
  console.log(
    "| t (s) | agent fds | agent RSS (MiB) | /healthz (ms) | ready | CRI errors | restarts | container IDs |",
  );
  console.log(
    "| ----: | --------: | --------------: | ------------: | ----: | ---------: | -------- | ------------- |",
  );
} else {
  console.log(
    "| t (s) | agent fds | agent RSS (MiB) | /healthz (ms) | flood log files | flood log (MiB) | restarts |",
  );
  console.log(
    "| ----: | --------: | --------------: | ------------: | --------------: | --------------: | -------- |",
  );
}
for (const s of samples) {
  const r = Object.entries(s.restarts).map(([k, v]) => `${k} ${v}`).join(", ");
  const head = `| ${s.at} | ${s.fds} | ${s.rssMiB.toFixed(1)} | ${
    s.healthzMs?.toFixed(1) ?? "timeout"
  }`;
  if (onContainerd) {
    const ids = Object.entries(s.containerIds).map(([k, v]) => `${k} ${v}`).join(", ");
    console.log(`${head} | ${s.ready} | ${s.criErrors} | ${r} | ${ids} |`);
  } else {
    console.log(`${head} | ${s.floodLogFiles} | ${s.floodLogMiB.toFixed(1)} | ${r} |`);
  }
}
if (restartNote) console.log(`\n${restartNote}`);
console.log(
  `\nstop: exit ${status.code} after ${stopS.toFixed(1)} s; log ${logPath}; folder ${base}`,
);
for (const helper of helpers) {
  helper.kill("SIGTERM");
  await helper.status;
}
await Deno.writeTextFile(join(base, "samples.json"), JSON.stringify(samples, null, 2));
