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
 * @module
 */
import { join } from "node:path";

interface Sample {
  at: number;
  fds: number;
  rssMiB: number;
  healthzMs: number | undefined;
  floodLogFiles: number;
  floodLogMiB: number;
  restarts: Record<string, number>;
}

const args = new Map<string, string>();
for (let i = 0; i < Deno.args.length; i += 2) {
  args.set(Deno.args[i].replace(/^--/, ""), Deno.args[i + 1]);
}
const minutes = Number(args.get("minutes") ?? "10");
const intervalS = Number(args.get("interval") ?? "30");
const agentPort = Number(args.get("port") ?? "26255");
const repo = new URL("..", import.meta.url).pathname;

const base = await Deno.makeTempDir({ prefix: "probelet-soak-" });
const pods = join(base, "pods");
await Deno.mkdir(pods);
for await (const entry of Deno.readDir(join(repo, "fixtures/pods/host"))) {
  const text = await Deno.readTextFile(join(repo, "fixtures/pods/host", entry.name));
  await Deno.writeTextFile(join(pods, entry.name), text.replaceAll(/\b1818([0-3])\b/g, "2618$1"));
}
await Deno.writeTextFile(
  join(pods, "flood.yaml"),
  `apiVersion: v1
kind: Pod
metadata:
  name: flood
spec:
  containers:
  - name: flood
    image: probelet.local/host
    command: ["yes"]
`,
);
const silent = "const l = Deno.listen({ hostname: '127.0.0.1', port: 26184 }); " +
  "for await (const c of l) c.readable.pipeTo(new WritableStream()).catch(() => {});";
await Deno.writeTextFile(
  join(pods, "grpc-silent.yaml"),
  `apiVersion: v1
kind: Pod
metadata:
  name: grpc-silent
spec:
  containers:
  - name: target
    image: probelet.local/host
    command: ["deno", "eval", ${JSON.stringify(silent)}]
    readinessProbe:
      grpc: {port: 26184}
      periodSeconds: 1
      timeoutSeconds: 1
    livenessProbe:
      grpc: {port: 26184}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1000000
`,
);

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
    "--port",
    String(agentPort),
    "--live-view",
    "never",
    "--node-name",
    "soak",
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

async function restarts(): Promise<Record<string, number>> {
  try {
    const list = await (await fetch(`http://127.0.0.1:${agentPort}/pods`)).json();
    const out: Record<string, number> = {};
    for (const p of list.items) {
      for (const c of p.status?.containerStatuses ?? []) {
        out[`${p.metadata.name.replace(/-soak$/, "")}`] = c.restartCount;
      }
    }
    return out;
  } catch {
    return {};
  }
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
    restarts: await restarts(),
  });
  const s = samples.at(-1)!;
  console.error(
    `soak: t=${s.at}s fds=${s.fds} rss=${s.rssMiB.toFixed(1)}MiB healthz=${
      s.healthzMs?.toFixed(1) ?? "timeout"
    }ms flood logs ${s.floodLogFiles} files ${s.floodLogMiB.toFixed(1)}MiB`,
  );
};

// The first sample once the agent answers, then one per interval (timed from the start).
while ((await healthz()) === undefined) await new Promise((r) => setTimeout(r, 200));
const steps = Math.floor((minutes * 60) / intervalS);
for (let i = 0; i <= steps; i++) {
  const due = started + i * intervalS * 1000;
  if (Date.now() < due) await new Promise((r) => setTimeout(r, due - Date.now()));
  await sample();
}

const stopStart = Date.now();
agent.kill("SIGTERM");
const status = await agent.status;
await logDone.catch(() => {});
const stopS = (Date.now() - stopStart) / 1000;

console.log(
  "| t (s) | agent fds | agent RSS (MiB) | /healthz (ms) | flood log files | flood log (MiB) | restarts |",
);
console.log(
  "| ----: | --------: | --------------: | ------------: | --------------: | --------------: | -------- |",
);
for (const s of samples) {
  const r = Object.entries(s.restarts).map(([k, v]) => `${k} ${v}`).join(", ");
  console.log(
    `| ${s.at} | ${s.fds} | ${s.rssMiB.toFixed(1)} | ${
      s.healthzMs?.toFixed(1) ?? "timeout"
    } | ${s.floodLogFiles} | ${s.floodLogMiB.toFixed(1)} | ${r} |`,
  );
}
console.log(
  `\nstop: exit ${status.code} after ${stopS.toFixed(1)} s; log ${logPath}; folder ${base}`,
);
await Deno.writeTextFile(join(base, "samples.json"), JSON.stringify(samples, null, 2));
