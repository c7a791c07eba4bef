/**
 * Memory and time of the API client against a watch line that never ends (issue 21 row 5): a
 * server on 127.0.0.1 streams one line of `--mib` MiB without a newline, produced only as the
 * client reads it; the client's `RESTClient.watch` iterates until the watch ends. Prints the bytes
 * the client read, the peak RSS (VmHWM) and the wall time.
 *
 * ```sh
 * deno run --allow-all bench/watch_event_memory.ts --mib 100
 * deno run --allow-all bench/watch_event_memory.ts --mib 64 --rest /path/to/old/src/client/rest.ts
 * ```
 * @module
 */
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";

const { values } = parseArgs({
  args: Deno.args,
  options: { mib: { type: "string", default: "100" }, rest: { type: "string" } },
});
const capBytes = Number(values.mib) * 1024 * 1024;
const restModule = values.rest
  ? pathToFileURL(Deno.realPathSync(values.rest)).href
  : new URL("../src/client/rest.ts", import.meta.url).href;
const { RESTClient } = await import(restModule);

function peakRssMiB(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  const kib = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return kib / 1024;
}

const baseline = peakRssMiB();
let sent = 0;
const piece = new Uint8Array(64 * 1024).fill(0x61);
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode('{"type":"ADDED","object":{"metadata":{"name":"'));
    },
    pull(c) {
      if (sent >= capBytes) return c.close();
      sent += piece.length;
      c.enqueue(piece.slice());
    },
  }, { highWaterMark: 0 });
  return new Response(body, { headers: { "content-type": "application/json" } });
});
const rest = new RESTClient({ host: `http://127.0.0.1:${server.addr.port}`, qps: -1 });
const start = performance.now();
let outcome = "ended";
try {
  const w = await rest.watch({ method: "GET", path: "/api/v1/pods" });
  for await (const event of w) {
    outcome = `event ${event.type}: ${
      JSON.stringify((event.object as { message?: string }).message ?? "").slice(0, 120)
    }`;
  }
} catch (err) {
  outcome = `threw: ${(err as Error).message.slice(0, 120)}`;
}
const seconds = (performance.now() - start) / 1000;
rest.close();
await server.shutdown();
console.log(
  JSON.stringify({
    code: values.rest ? "given" : "this branch",
    lineMiB: capBytes / 1024 / 1024,
    sentMiB: +(sent / 1024 / 1024).toFixed(1),
    seconds: +seconds.toFixed(2),
    peakRssMiB: +peakRssMiB().toFixed(0),
    baselineRssMiB: +baseline.toFixed(0),
    outcome,
  }),
);
