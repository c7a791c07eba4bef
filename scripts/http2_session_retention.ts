/**
 * Measures the JS heap a destroyed `node:http2` client session keeps (see docs/reliability.md): a
 * TCP port that accepts and never answers, 1,000 sessions per round, each destroyed after 50 ms,
 * a forced GC before and after. Three ways of ending a session are tried; on Deno 2.9.3 each
 * keeps 2-4 KiB per session.
 *
 * ```sh
 * deno run -A --v8-flags=--expose-gc scripts/http2_session_retention.ts
 * ```
 * @module
 */
import http2 from "node:http2";
import net from "node:net";
const l = Deno.listen({ hostname: "127.0.0.1", port: 26293 });
(async () => {
  for await (const c of l) c.readable.pipeTo(new WritableStream()).catch(() => {});
})();
const gc = (globalThis as unknown as { gc: () => void }).gc;
function one(mode: string): Promise<void> {
  return new Promise((resolve) => {
    let session: http2.ClientHttp2Session;
    let socket: net.Socket | undefined;
    if (mode === "own") {
      session = http2.connect("http://127.0.0.1:26293");
    } else {
      socket = net.connect({ host: "127.0.0.1", port: 26293 });
      socket.on("error", () => {});
      session = http2.connect("http://127.0.0.1:26293", { createConnection: () => socket! });
    }
    session.on("error", () => {});
    setTimeout(() => {
      if (mode === "close") session.close();
      session.destroy();
      socket?.destroy();
      if (mode === "unref") {
        session.removeAllListeners();
        socket?.removeAllListeners();
      }
      resolve();
    }, 50);
  });
}
for (const mode of ["own", "close", "unref"]) {
  await Promise.all(Array.from({ length: 100 }, () => one(mode)));
  for (let round = 0; round < 2; round++) {
    gc();
    const before = Deno.memoryUsage().heapUsed;
    for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 100 }, () => one(mode)));
    await new Promise((r) => setTimeout(r, 200));
    gc();
    console.log(
      `${mode} round ${round}: +${
        ((Deno.memoryUsage().heapUsed - before) / 1024).toFixed(0)
      } KiB / 1000`,
    );
  }
}
Deno.exit(0);
