/**
 * Memory and time of gRPC probes against hostile HTTP/2 servers (issue 21 rows 1, 4 and 12; see
 * docs/hardening/http2.md): for each scenario a server runs in a child process (so its buffers
 * do not count), this process runs probes one after another against it and prints, per scenario,
 * the verdict, the time per probe, the longest event-loop stall (the largest gap between 5 ms
 * ticks) and RSS before and at its peak.
 *
 * ```sh
 * deno run -A scripts/hostile_h2.ts [--probes 3] [--timeout-ms 1000] [scenario ...]
 * ```
 * @module
 */
import { parseArgs } from "node:util";
import { newGrpcProber } from "../src/probe/grpc/mod.ts";
import {
  type HostileScenario,
  hostileScenarios,
  startHostileServer,
} from "../tests/testing/hostile_h2_server.ts";

const { values, positionals } = parseArgs({
  args: Deno.args,
  options: {
    serve: { type: "string" },
    probes: { type: "string", default: "3" },
    "timeout-ms": { type: "string", default: "1000" },
  },
  allowPositionals: true,
});

if (values.serve) {
  // The child: serve one scenario and say where.
  const server = startHostileServer(values.serve as HostileScenario);
  console.log(server.port);
  await new Promise(() => {});
}

const mib = (n: number) => (n / 1024 / 1024).toFixed(0);
const probes = Number(values.probes);
const timeoutMs = Number(values["timeout-ms"]);
const scenarios = positionals.length > 0 ? positionals as HostileScenario[] : hostileScenarios;

console.log(`${probes} probe(s) per scenario, timeout ${timeoutMs} ms`);
for (const scenario of scenarios) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, "--serve", scenario],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let line = "";
    while (!line.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the server child ended");
      line += value;
    }
    const port = Number(line.trim());
    const rssBefore = Deno.memoryUsage().rss;
    let rssPeak = rssBefore;
    let last = performance.now();
    let stall = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last);
      last = now;
      rssPeak = Math.max(rssPeak, Deno.memoryUsage().rss);
    }, 5);
    const times: number[] = [];
    let output = "";
    try {
      for (let i = 0; i < probes; i++) {
        const start = performance.now();
        const outcome = await newGrpcProber().probe("127.0.0.1", { service: "", port, timeoutMs });
        times.push(performance.now() - start);
        output = `${outcome.result}: ${outcome.output || outcome.error?.message}`;
      }
    } finally {
      clearInterval(ticker);
    }
    rssPeak = Math.max(rssPeak, Deno.memoryUsage().rss);
    console.log(
      `${scenario.padEnd(20)} per probe ${times.map((t) => t.toFixed(0)).join("/")} ms, ` +
        `longest stall ${stall.toFixed(0)} ms, RSS ${mib(rssBefore)} -> peak ${
          mib(rssPeak)
        } MiB\n  ${output.slice(0, 200)}`,
    );
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
}
