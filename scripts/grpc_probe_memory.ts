/**
 * A/B of the gRPC probe's memory and CPU (docs/benchmarks/): heap and RSS growth per probe after
 * a forced GC over N probes against a silent TCP listener and against a SERVING grpc.health.v1
 * server, and CPU ms per probe against the SERVING one. The servers run in their own process, so
 * the figures are the prober's alone; each implementation runs in a fresh process, alternating.
 *
 * ```sh
 * git show <before>:src/probe/grpc/grpc.ts > src/probe/grpc/grpc_before.ts   # the old transport
 * deno run -A --v8-flags=--expose-gc scripts/grpc_probe_memory.ts \
 *   --module src/probe/grpc/grpc_before.ts --module src/probe/grpc/grpc.ts --probes 5000 --rounds 2
 * rm src/probe/grpc/grpc_before.ts
 * ```
 * @module
 */
import { parseArgs } from "node:util";
import process from "node:process";
import * as net from "node:net";
import type { AddressInfo } from "node:net";

const { values } = parseArgs({
  options: {
    module: { type: "string", multiple: true },
    probes: { type: "string", default: "5000" },
    rounds: { type: "string", default: "2" },
    serve: { type: "boolean", default: false },
    measure: { type: "string" },
    serving: { type: "string" },
    silent: { type: "string" },
  },
});
const probes = Number(values.probes);

if (values.serve) {
  await serve();
} else if (values.measure) {
  await measure(values.measure, Number(values.serving), Number(values.silent));
} else {
  await orchestrate(values.module ?? ["src/probe/grpc/grpc.ts"], Number(values.rounds));
}

/** Child: a SERVING health server and a silent listener; prints their ports, runs until killed. */
async function serve(): Promise<void> {
  const { startHealthServer } = await import("../tests/testing/grpc_health_server.ts");
  const health = await startHealthServer({ status: "SERVING" });
  const silent = net.createServer((socket) => {
    socket.on("error", () => {});
    // Never speaks; reads (so the prober's FIN is seen) and lets go when the prober closes.
    socket.on("end", () => socket.destroy());
    socket.resume();
  });
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  console.log(
    JSON.stringify({ serving: health.port, silent: (silent.address() as AddressInfo).port }),
  );
  await new Promise(() => {});
}

interface Figures {
  target: string;
  heapBytesPerProbe: number;
  rssBytesPerProbe: number;
  cpuMsPerProbe: number;
  failures: number;
}

/** Child: runs warm-up then `probes` probes per target with the given module's prober. */
async function measure(module: string, servingPort: number, silentPort: number): Promise<void> {
  const gc = (globalThis as unknown as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --v8-flags=--expose-gc");
  const url = new URL(module, `file://${Deno.cwd()}/`).href;
  const { newGrpcProber } = await import(url) as typeof import("../src/probe/grpc/grpc.ts");
  const prober = newGrpcProber();
  const run = async (port: number, n: number, inFlight: number, timeoutMs: number) => {
    let next = 0;
    let failures = 0;
    const worker = async () => {
      while (next < n) {
        next++;
        const outcome = await prober.probe("127.0.0.1", { service: "", port, timeoutMs });
        if (outcome.result !== "success") failures++;
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    return failures;
  };
  const settle = async () => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (let i = 0; i < 3; i++) gc();
  };
  const out: Figures[] = [];
  for (
    const [target, port, inFlight, timeoutMs] of [
      ["silent", silentPort, 100, 50],
      ["serving", servingPort, 10, 1000],
    ] as const
  ) {
    // Warm-up: allocator pools and JIT settle first, so the growth measured is steady-state.
    await run(port, 2000, inFlight, timeoutMs);
    await settle();
    const heap0 = Deno.memoryUsage().heapUsed;
    const rss0 = Deno.memoryUsage().rss;
    const cpu0 = process.cpuUsage();
    const failures = await run(port, probes, inFlight, timeoutMs);
    const cpu = process.cpuUsage(cpu0);
    await settle();
    out.push({
      target,
      heapBytesPerProbe: (Deno.memoryUsage().heapUsed - heap0) / probes,
      rssBytesPerProbe: (Deno.memoryUsage().rss - rss0) / probes,
      cpuMsPerProbe: (cpu.user + cpu.system) / 1000 / probes,
      failures,
    });
  }
  console.log(JSON.stringify(out));
  Deno.exit(0);
}

async function orchestrate(modules: string[], rounds: number): Promise<void> {
  const self = new URL(import.meta.url).pathname;
  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", self, "--serve"],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let line = "";
    while (!line.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("server exited");
      line += value;
    }
    const ports = JSON.parse(line) as { serving: number; silent: number };
    console.log(
      "| round | module | target | heap B/probe | RSS B/probe | CPU ms/probe | failures |",
    );
    console.log("|---|---|---|---:|---:|---:|---:|");
    for (let round = 1; round <= rounds; round++) {
      for (const module of modules) {
        const child = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            "--v8-flags=--expose-gc",
            self,
            "--measure",
            module,
            "--serving",
            `${ports.serving}`,
            "--silent",
            `${ports.silent}`,
            "--probes",
            `${probes}`,
          ],
          stdout: "piped",
          stderr: "inherit",
        }).output();
        const figures = JSON.parse(new TextDecoder().decode(child.stdout)) as Figures[];
        for (const f of figures) {
          console.log(
            `| ${round} | ${module} | ${f.target} | ${f.heapBytesPerProbe.toFixed(0)} | ${
              f.rssBytesPerProbe.toFixed(0)
            } | ${f.target === "serving" ? f.cpuMsPerProbe.toFixed(3) : "–"} | ${f.failures} |`,
          );
        }
      }
    }
  } finally {
    server.kill("SIGKILL");
    await server.status;
  }
}
