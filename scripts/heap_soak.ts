/**
 * Heap soak of the node agent: does its JS heap grow, or only its RSS? Runs the agent in-process
 * (`runKubelet`, embedded runtime) with the pods of `scripts/soak.ts` (the host fixture pods, a
 * container running `yes`, and a silent gRPC target probed for readiness and liveness every
 * second), and every `--interval` seconds forces a GC and prints `Deno.memoryUsage()` (heapUsed,
 * external, rss). Nothing is added to the agent for this.
 *
 * ```sh
 * deno run -A --v8-flags=--expose-gc scripts/heap_soak.ts --minutes 15 --interval 30
 * ```
 *
 * Options: `--probe-workers N` (default: the agent's, one per core; `0` runs the probes on the main
 * thread, so that the sampled heap holds them too: a pool thread's heap is its own isolate and
 * is not in `heapUsed`), `--port-base P` (fixture ports P+0..P+3, silent target P+4, agent P+75;
 * default 27180, so two runs at once need different bases), `--snapshots 240,840` (seconds at
 * which to write a heap snapshot after GC into the run's folder, for comparing object counts by
 * constructor). Prints a Markdown table at the end and writes `samples.json` to the folder.
 * @module
 */
import { join } from "node:path";
import { writeHeapSnapshot } from "node:v8";
import { runKubelet } from "../src/cmd/probelet/app.ts";
import { copyFixturePods, writeEmbeddedSoakPods } from "./soak_pods.ts";

const args = new Map<string, string>();
for (let i = 0; i < Deno.args.length; i += 2) {
  args.set(Deno.args[i].replace(/^--/, ""), Deno.args[i + 1]);
}
const minutes = Number(args.get("minutes") ?? "15");
const intervalS = Number(args.get("interval") ?? "30");
const portBase = Number(args.get("port-base") ?? "27180");
const probeWorkers = args.has("probe-workers") ? Number(args.get("probe-workers")) : undefined;
const snapshotsAt = (args.get("snapshots") ?? "").split(",").filter(Boolean).map(Number);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");

const base = await Deno.makeTempDir({ prefix: "probelet-heap-soak-" });
const pods = join(base, "pods");
await Deno.mkdir(pods);
await copyFixturePods(pods, { runtime: "host", portBase });
await writeEmbeddedSoakPods(pods, portBase + 4);

const agent = await runKubelet({
  podManifestPath: pods,
  rootDir: join(base, "root"),
  port: portBase + 75,
  liveView: "never",
  nodeName: "heap-soak",
  ...(probeWorkers === undefined ? {} : { probeWorkers }),
});
console.error(
  `heap-soak: folder ${base}, ${minutes} min, every ${intervalS} s, probe workers ${
    probeWorkers ?? "default"
  }`,
);

interface Sample {
  at: number;
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
  rssMiB: number;
  events: number;
  restarts: number;
}
const mib = (n: number) => n / 1024 / 1024;
const samples: Sample[] = [];
const started = Date.now();
const sample = (at: number) => {
  gc();
  const m = Deno.memoryUsage();
  let restarts = 0;
  for (const pod of agent.kubelet.pods()) {
    for (const c of pod.status?.containerStatuses ?? []) restarts += c.restartCount ?? 0;
  }
  const s: Sample = {
    at,
    heapUsedMiB: mib(m.heapUsed),
    heapTotalMiB: mib(m.heapTotal),
    externalMiB: mib(m.external),
    rssMiB: mib(m.rss),
    events: agent.kubelet.events.list().length,
    restarts,
  };
  samples.push(s);
  const load = Deno.loadavg().map((l) => l.toFixed(2)).join(" ");
  console.error(
    `heap-soak: t=${at}s heapUsed=${s.heapUsedMiB.toFixed(2)}MiB external=${
      s.externalMiB.toFixed(2)
    }MiB rss=${s.rssMiB.toFixed(1)}MiB events=${s.events} restarts=${restarts} load=${load}`,
  );
  if (snapshotsAt.includes(at)) {
    const file = writeHeapSnapshot(join(base, `heap-${at}.heapsnapshot`));
    console.error(`heap-soak: snapshot ${file}`);
  }
};

const steps = Math.floor((minutes * 60) / intervalS);
for (let i = 0; i <= steps; i++) {
  const due = started + i * intervalS * 1000;
  if (Date.now() < due) await new Promise((r) => setTimeout(r, due - Date.now()));
  sample(i * intervalS);
}
await agent.stop();

console.log("| t (s) | heapUsed after GC (MiB) | external (MiB) | rss (MiB) | events | restarts |");
console.log("| ----: | ----------------------: | -------------: | --------: | -----: | -------: |");
for (const s of samples) {
  console.log(
    `| ${s.at} | ${s.heapUsedMiB.toFixed(2)} | ${s.externalMiB.toFixed(2)} | ${
      s.rssMiB.toFixed(1)
    } | ${s.events} | ${s.restarts} |`,
  );
}
await Deno.writeTextFile(join(base, "samples.json"), JSON.stringify(samples, null, 2));
console.log(`\nfolder ${base}`);
