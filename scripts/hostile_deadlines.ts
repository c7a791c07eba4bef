/**
 * Figures for issue 21's closing note, rows 2, 3, 6 and 11: this process plays the agent (the
 * HTTP and gRPC probe handlers, the read-only server's HttpServer) against hostile peers that run
 * in a child process, so the RSS and descriptors printed are the agent side's alone. For each
 * hostile kind it prints RSS, open descriptors and established sockets before and after, and the
 * latency of the hostile probes and of a healthy probe (or `/healthz`) next to them.
 *
 * ```sh
 * deno run -A scripts/hostile_deadlines.ts                 # this tree's code
 * deno run -A scripts/hostile_deadlines.ts --src /path/to/other/checkout/src   # e.g. main's
 * ```
 * `--src` imports the handlers from another checkout (read only), for the "before" figures;
 * `--rows 3,6` runs only those rows.
 * @module
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    src: { type: "string" },
    peer: { type: "string" },
    probes: { type: "string", default: "5" },
    rows: { type: "string", default: "2,3,6,11" },
  },
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the hostile peers (child process) ----

if (values.peer) {
  await runPeers();
  Deno.exit(0);
}

async function runPeers(): Promise<void> {
  const held: Deno.Conn[] = [];
  const listen = () => Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const portOf = (l: Deno.Listener) => (l.addr as Deno.NetAddr).port;
  // Accepts and never reads.
  const sink = listen();
  (async () => {
    for await (const conn of sink) held.push(conn);
  })();
  // Answers every request with a 302 to a 6 MB path on the sink.
  const redirector = listen();
  const location = `http://127.0.0.1:${portOf(sink)}/${"a".repeat(6 << 20)}`;
  const redirect = new TextEncoder().encode(
    `HTTP/1.1 302 Found\r\nLocation: ${location}\r\nContent-Length: 0\r\n\r\n`,
  );
  (async () => {
    for await (const conn of redirector) {
      (async () => {
        const buf = new Uint8Array(65536);
        let tail = "";
        while (!tail.includes("\r\n\r\n")) {
          const n = await conn.read(buf);
          if (n === null) return;
          tail = (tail + new TextDecoder().decode(buf.subarray(0, n))).slice(-8);
        }
        for (let off = 0; off < redirect.length;) off += await conn.write(redirect.subarray(off));
        conn.close();
      })().catch(() => {});
    }
  })();
  // HTTP/2: SETTINGS, then PINGs without end; never reads.
  const flood = listen();
  const ping = new Uint8Array(17);
  ping.set([0, 0, 8, 6, 0, 0, 0, 0, 0]);
  const pings = new Uint8Array(17 * 1024);
  for (let i = 0; i < 1024; i++) pings.set(ping, i * 17);
  (async () => {
    for await (const conn of flood) {
      held.push(conn);
      (async () => {
        await conn.write(new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]));
        for (;;) {
          for (let off = 0; off < pings.length;) off += await conn.write(pings.subarray(off));
        }
      })().catch(() => {});
    }
  })();
  // A healthy HTTP endpoint.
  const healthy = listen();
  const ok = new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  (async () => {
    for await (const conn of healthy) {
      (async () => {
        const buf = new Uint8Array(4096);
        let seen = "";
        while (!seen.includes("\r\n\r\n")) {
          const n = await conn.read(buf);
          if (n === null) return;
          seen += new TextDecoder().decode(buf.subarray(0, n));
        }
        await conn.write(ok);
        conn.close();
      })().catch(() => {});
    }
  })();
  console.log(JSON.stringify({
    redirector: portOf(redirector),
    flood: portOf(flood),
    healthy: portOf(healthy),
    sink: portOf(sink),
  }));
  // Clients against the agent's server, on command from stdin: "readers <port> <n>" opens n
  // connections that request a big response and never read; "slowloris <port> <n>" opens n that
  // send one byte a second; "stop" closes them.
  const clients: Deno.Conn[] = [];
  let slowloris = false;
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    const [cmd, port, n] = line.trim().split(" ");
    if (cmd === "readers" || cmd === "slowloris") {
      for (let i = 0; i < Number(n); i++) {
        try {
          const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
          clients.push(conn);
          if (cmd === "readers") {
            await conn.write(new TextEncoder().encode("GET /big HTTP/1.1\r\n\r\n"));
          } else await conn.write(new TextEncoder().encode("G"));
        } catch {
          // refused
        }
      }
      if (cmd === "slowloris" && !slowloris) {
        slowloris = true;
        (async () => {
          while (slowloris) {
            await sleep(1000);
            for (const conn of clients) conn.write(new TextEncoder().encode("X")).catch(() => {});
          }
        })();
      }
      console.log("done");
    } else if (cmd === "stop") {
      slowloris = false;
      for (const conn of clients.splice(0)) {
        try {
          conn.close();
        } catch {
          // closed by the server
        }
      }
      console.log("done");
    }
  }
}

// ---- the agent side (this process) ----

const src = values.src ?? new URL("../src", import.meta.url).pathname;
const { newHttpProber, newProbeRequest } = await import(`${src}/probe/http/mod.ts`);
const { newGrpcProber } = await import(`${src}/probe/grpc/mod.ts`);
const { HttpServer } = await import(`${src}/kubelet/server/http_server.ts`);

const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", new URL(import.meta.url).pathname, "--peer", "1"],
  stdin: "piped",
  stdout: "piped",
}).spawn();
const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
let buffered = "";
async function nextLine(): Promise<string> {
  while (!buffered.includes("\n")) {
    const { value, done } = await lines.read();
    if (done) throw new Error("peer exited");
    buffered += value;
  }
  const i = buffered.indexOf("\n");
  const line = buffered.slice(0, i);
  buffered = buffered.slice(i + 1);
  return line;
}
const stdin = child.stdin.getWriter();
async function tell(command: string): Promise<void> {
  await stdin.write(new TextEncoder().encode(command + "\n"));
  await nextLine();
}
const ports = JSON.parse(await nextLine());

function figures() {
  const fds = [...Deno.readDirSync("/proc/self/fd")].length;
  const rss = Deno.memoryUsage().rss / 2 ** 20;
  return { fds, rss };
}
async function establishedTo(port: number): Promise<number> {
  const out = await new Deno.Command("ss", { args: ["-tnH", `( dport = :${port} )`] }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.includes("ESTAB")).length;
}
/** `promise`'s time in ms, or "no answer in N s". */
async function timed(promise: Promise<unknown>, limitMs: number): Promise<string> {
  const start = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const result = await Promise.race([
    promise.then(() => "answered"),
    new Promise((resolve) => timer = setTimeout(() => resolve("late"), limitMs)),
  ]);
  clearTimeout(timer);
  if (result === "late") return `no answer in ${limitMs / 1000} s`;
  return `${(performance.now() - start).toFixed(0)} ms`;
}
const healthyRequest = newProbeRequest(`http://127.0.0.1:${ports.healthy}/`).request;
const healthyProbe = () => timed(newHttpProber().probe(healthyRequest, { timeoutMs: 1000 }), 5000);

function report(kind: string, before: ReturnType<typeof figures>, latencies: string[], extra = "") {
  const after = figures();
  console.log(`\n${kind}`);
  console.log(`  hostile: ${latencies.join(", ")}${extra}`);
  console.log(
    `  agent RSS ${before.rss.toFixed(0)} → ${after.rss.toFixed(0)} MiB, ` +
      `descriptors ${before.fds} → ${after.fds}`,
  );
}

const probes = Number(values.probes);
const rows = new Set(values.rows.split(","));
console.log(`agent code: ${src}; Deno ${Deno.version.deno}; ${probes} hostile probes per kind`);
console.log(`healthy HTTP probe at the start: ${await healthyProbe()}`);

// Row 2: a redirect to a 6 MB path on a port that never reads; timeout 10 s (reading the 6 MB
// response head and URL took seconds before row 9's linear parsing).
if (rows.has("2")) {
  const before = figures();
  const request = newProbeRequest(`http://127.0.0.1:${ports.redirector}/`).request;
  const latencies: string[] = [];
  let output = "";
  for (let i = 0; i < Math.min(probes, 2); i++) {
    const probe = newHttpProber().probe(request, { timeoutMs: 10_000 });
    probe.then((o: { output: string }) => output = o.output);
    latencies.push(await timed(probe, 40_000));
  }
  console.log(`  (row 2 output: ${output.slice(0, 60)}…${output.slice(-80)})`);
  await sleep(500);
  report(
    "row 2: HTTP redirect to a 6 MB path on a port that never reads (timeout 10 s)",
    before,
    latencies,
    `; sockets still open to the sink: ${await establishedTo(ports.sink)}; ` +
      `healthy probe after: ${await healthyProbe()}`,
  );
}

// Row 3: a gRPC target that floods PINGs and never reads; timeout 2 s (our PING ACKs need about
// a second to fill the socket's buffers).
if (rows.has("3")) {
  const before = figures();
  const latencies: string[] = [];
  for (let i = 0; i < probes; i++) {
    latencies.push(
      await timed(
        newGrpcProber().probe("127.0.0.1", { service: "", port: ports.flood, timeoutMs: 2000 }),
        10_000,
      ),
    );
  }
  await sleep(500);
  report(
    "row 3: gRPC target flooding PINGs, never reading (timeout 2 s)",
    before,
    latencies,
    `; sockets still open to it: ${await establishedTo(ports.flood)}; ` +
      `healthy probe after: ${await healthyProbe()}`,
  );
}

// Rows 6 and 11: the read-only server.
async function healthz(port: number): Promise<string> {
  const start = performance.now();
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(
      new TextEncoder().encode("GET /healthz HTTP/1.1\r\nconnection: close\r\n\r\n"),
    );
    let text = "";
    const buf = new Uint8Array(4096);
    const read = (async () => {
      for (;;) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) return;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
    })();
    await Promise.race([read, sleep(3000)]);
    conn.close();
    if (!text.includes("200 OK")) return "failed";
    return `${(performance.now() - start).toFixed(1)} ms`;
  } catch {
    return "failed";
  }
}
const big = new Uint8Array(8 << 20);
const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const serverPort = (listener.addr as Deno.NetAddr).port;
const server = new HttpServer(listener, {
  handler: (req: Request) =>
    new URL(req.url).pathname === "/big" ? new Response(big) : new Response("ok"),
  writeTimeoutMs: 2000,
  maxConnections: 1024,
});
if (rows.has("6")) await row6(serverPort);
if (rows.has("11")) await row11(serverPort);
await server.shutdown();

async function row6(port: number): Promise<void> {
  const before = figures();
  await tell(`readers ${port} 20`);
  const start = performance.now();
  while (server.stats.open > 0 && performance.now() - start < 10_000) await sleep(100);
  report(
    "row 6: 20 clients of the read-only server that never read (8 MiB answers, write timeout 2 s)",
    before,
    [
      `server connections open: ${server.stats.open} after ${
        ((performance.now() - start) / 1000).toFixed(1)
      } s (write timeouts ${server.stats.writeTimeouts ?? "n/a"})`,
    ],
    `; /healthz: ${await healthz(port)}`,
  );
  await tell("stop");
  await sleep(500);
}

async function row11(port: number): Promise<void> {
  const beforeSlow = figures();
  await tell(`slowloris ${port} 1024`);
  const answers: string[] = [];
  for (let i = 0; i < 5; i++) {
    answers.push(await healthz(port));
    await sleep(1000);
  }
  report(
    "row 11: slowloris, 1,024 connections sending a byte a second (limit 1,024)",
    beforeSlow,
    [`/healthz during the attack: ${answers.join(", ")}`],
    `; server open ${server.stats.open}, refused ${server.stats.rejected}, ` +
      `evicted ${server.stats.evicted ?? "n/a"}`,
  );
  await tell("stop");
}

child.kill();
Deno.exit(0);
