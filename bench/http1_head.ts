/**
 * Cost of reading large HTTP/1.1 response heads in the HTTP prober (issue 21 row 9): one probe of
 * a 9 MB head, one of a 302 whose Location is 1 MB (to another host, so kubelet's policy stops
 * there), one of a head just over Go's 10 MiB limit, and one of 440,000 `100 Continue` heads. Prints, per case, the verdict, the wall
 * time, the CPU time of this process (the raw server included: a few large writes) and the
 * longest gap of a 5 ms interval timer, which is how long the event loop was blocked.
 *
 *   deno run --allow-all bench/http1_head.ts [--runs 3]
 * @module
 */
import { newHttpProber, newProbeRequest } from "../src/probe/http/mod.ts";
import { cpuSeconds } from "./proc_stats.ts";

const runs = Number(Deno.args[Deno.args.indexOf("--runs") + 1] || 3);

const cases: [string, string][] = [
  [
    "9 MB head",
    `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(9_000_000)}\r\nContent-Length: 2\r\n\r\nok`,
  ],
  [
    "1 MB Location",
    `HTTP/1.1 302 Found\r\nLocation: http://elsewhere.invalid/${"b".repeat(1_000_000)}\r\n` +
    "Content-Length: 4\r\n\r\nmove",
  ],
  ["10 MiB + 1 KiB head", `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat((10 << 20) + 1024)}\r\n\r\n`],
  ["11 MB of 100 Continue", "HTTP/1.1 100 Continue\r\n\r\n".repeat(440_000)],
];

// A raw server answering every request with `answer` and closing.
function serve(answer: Uint8Array): { port: number; close(): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      (async () => {
        const buf = new Uint8Array(8192);
        let seen = "";
        while (!seen.includes("\r\n\r\n")) {
          const n = await conn.read(buf);
          if (n === null) return;
          seen += new TextDecoder().decode(buf.subarray(0, n));
        }
        for (let off = 0; off < answer.length;) off += await conn.write(answer.subarray(off));
        conn.close();
      })().catch(() => {});
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close: async () => {
      listener.close();
      await serving.catch(() => {});
    },
  };
}

for (const [name, answer] of cases) {
  const server = serve(Uint8Array.from(answer, (ch) => ch.charCodeAt(0)));
  try {
    for (let run = 1; run <= runs; run++) {
      let last = performance.now();
      let maxGap = 0;
      const ticker = setInterval(() => {
        const now = performance.now();
        maxGap = Math.max(maxGap, now - last);
        last = now;
      }, 5);
      const cpu0 = cpuSeconds();
      const t0 = performance.now();
      const { request } = newProbeRequest(`http://127.0.0.1:${server.port}/`);
      const outcome = await newHttpProber().probe(request!, { timeoutMs: 60_000 });
      const wallMs = performance.now() - t0;
      const cpuMs = (cpuSeconds() - cpu0) * 1000;
      maxGap = Math.max(maxGap, performance.now() - last);
      clearInterval(ticker);
      const verdict = `${outcome.result}: ${outcome.output.slice(0, 60)}`.replace(/b{20,}/, "b…");
      console.log(
        `${name} run ${run}: wall ${wallMs.toFixed(0)} ms, cpu ${cpuMs.toFixed(0)} ms, ` +
          `longest event-loop gap ${maxGap.toFixed(0)} ms; ${verdict}`,
      );
    }
  } finally {
    await server.close();
  }
}
