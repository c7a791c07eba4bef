/**
 * Figures for the streaming server (docs/guide/embedded_runtime.md): exec start-to-exit latency,
 * stdin/stdout throughput through SPDY, port-forward throughput and the memory an idle exec
 * connection holds. The client is client-go v0.36.3's SPDY executor and port forwarder
 * (scripts/spdy-client.sh builds it); server and targets run on 127.0.0.1 in this process.
 *
 *   bash scripts/spdy-client.sh build && deno run -A scripts/streaming_figures.ts
 * @module
 */
import {
  CodeExitError,
  type CommandStreams,
  forwardConn,
  pipeInput,
  pipeOutput,
  type SpdyStream,
  StreamingServer,
} from "../src/cri_streaming/mod.ts";
import { RealClock } from "../src/util/clock.ts";
import * as log from "../src/util/log.ts";

log.setLogSink(() => {});
const clock = new RealClock();
const oracle = new TextDecoder().decode(
  new Deno.Command("bash", {
    args: [new URL("./spdy-client.sh", import.meta.url).pathname, "path"],
    stdout: "piped",
  }).outputSync().stdout,
).trim();

const server = new StreamingServer({
  async exec(_id: string, cmd: string[], s: CommandStreams) {
    const child = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      stdin: s.stdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    s.signal.addEventListener("abort", () => {
      try {
        child.kill("SIGKILL");
      } catch {
        // exited already
      }
    });
    if (s.stdin) pipeInput(s.stdin, child.stdin);
    const out = Promise.all([
      pipeOutput(child.stdout, s.stdout!),
      pipeOutput(child.stderr, s.stderr!),
    ]);
    const status = await child.status;
    await out;
    if (status.code !== 0) throw new CodeExitError(status.code, `exit code ${status.code}`);
  },
  attach: () => Promise.reject(new Error("no attach")),
  async portForward(_id: string, port: number, stream: SpdyStream) {
    await forwardConn(stream, await Deno.connect({ hostname: "127.0.0.1", port }), { clock });
  },
});
await server.start();
const req = { containerId: "c", tty: false, stdin: false, stdout: true, stderr: true };

async function client(args: string[], input?: string): Promise<number> {
  const start = performance.now();
  const child = new Deno.Command(args[0] === "sh" ? "sh" : oracle, {
    args: args[0] === "sh" ? args.slice(1) : args,
    stdin: input ? "piped" : "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const out = await child.output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return performance.now() - start;
}

// Exec latency: client-go process start to exit, `true` in the "container".
const runs: number[] = [];
for (let i = 0; i < 20; i++) {
  runs.push(await client(["exec", server.getExec({ ...req, cmd: ["true"] }).url]));
}
// The client's own start-up, for comparison: the same binary refused at once (404).
const bare: number[] = [];
for (let i = 0; i < 20; i++) {
  const start = performance.now();
  await new Deno.Command(oracle, {
    args: ["exec", `${server.baseUrl}exec/nothing`],
    stderr: "null",
  })
    .output();
  bare.push(performance.now() - start);
}
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`exec true, client start to exit: median ${median(runs).toFixed(1)} ms`);
console.log(`same client refused with 404:     median ${median(bare).toFixed(1)} ms`);

// Throughput: 200 MiB through stdin -> cat -> stdout, and 200 MiB of stdout alone.
const mib = 200;
const dir = await Deno.makeTempDir();
await Deno.writeFile(`${dir}/in`, new Uint8Array(mib << 20).map((_, i) => i & 0xff));
const echoUrl = server.getExec({ ...req, stdin: true, cmd: ["cat"] }).url;
const tEcho = await client([
  "sh",
  "-c",
  `${oracle} exec ${echoUrl} -stdin < ${dir}/in > /dev/null`,
]);
console.log(
  `stdin+stdout echo of ${mib} MiB: ${(tEcho / 1000).toFixed(2)} s, ${
    (mib / tEcho * 1000).toFixed(0)
  } MiB/s each way`,
);
const outUrl = server.getExec({ ...req, cmd: ["head", "-c", `${mib << 20}`, "/dev/zero"] }).url;
const tOut = await client(["sh", "-c", `${oracle} exec ${outUrl} > /dev/null`]);
console.log(
  `stdout only, ${mib} MiB: ${(tOut / 1000).toFixed(2)} s, ${(mib / tOut * 1000).toFixed(0)} MiB/s`,
);

// Port-forward: 200 MiB sent to a discarding server that answers with its byte count.
const target = Deno.listen({ hostname: "127.0.0.1", port: 0 });
(async () => {
  for await (const conn of target) {
    (async () => {
      let n = 0;
      const buf = new Uint8Array(64 * 1024);
      for (let r = await conn.read(buf); r !== null; r = await conn.read(buf)) n += r;
      await conn.write(new TextEncoder().encode(`${n}`));
      conn.close();
    })();
  }
})();
const pfUrl = server.getPortForward({ podSandboxId: "s", port: [] }).url;
const port = (target.addr as Deno.NetAddr).port;
const tPf = await client([
  "sh",
  "-c",
  `${oracle} portforward ${pfUrl} ${port} < ${dir}/in > /dev/null`,
]);
console.log(
  `port-forward upload of ${mib} MiB: ${(tPf / 1000).toFixed(2)} s, ${
    (mib / tPf * 1000).toFixed(0)
  } MiB/s`,
);

// Memory: 100 exec connections waiting on `sleep` (each with stdin, stdout, stderr, error).
const rss0 = Deno.memoryUsage().rss;
const sleepers: Deno.ChildProcess[] = [];
for (let i = 0; i < 100; i++) {
  const url = server.getExec({ ...req, stdin: true, cmd: ["sleep", "600"] }).url;
  sleepers.push(
    new Deno.Command(oracle, {
      args: ["exec", url, "-stdin", "-timeout", "10m"],
      stdin: "piped",
      stdout: "null",
      stderr: "piped",
    }).spawn(),
  );
}
// Each client is connected once its sleep is running: count them through /proc.
const deadline = Date.now() + 120_000;
const sleeping = () =>
  [...Deno.readDirSync("/proc")].filter((e) => /^\d+$/.test(e.name)).filter((e) => {
    try {
      return Deno.readTextFileSync(`/proc/${e.name}/cmdline`) === "sleep\u0000600\u0000";
    } catch {
      return false;
    }
  }).length;
while (sleeping() < 100 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
const rss1 = Deno.memoryUsage().rss;
console.log(
  `100 open exec connections (and their sleep processes' pipes): +${
    ((rss1 - rss0) / 1048576).toFixed(1)
  } MiB RSS, ${((rss1 - rss0) / 100 / 1024).toFixed(0)} KiB each`,
);
for (const s of sleepers) {
  try {
    s.kill("SIGKILL");
  } catch {
    const out = await s.output();
    console.log("a client had ended:", out.code, new TextDecoder().decode(out.stderr).trim());
  }
}
await Promise.all(sleepers.map((s) => s.status));
target.close();
await server.stop();
await Deno.remove(dir, { recursive: true });
Deno.exit(0);
