/**
 * Reproduces the Deno 2.9.3 defect behind issue 21 rows 2, 3 and 6, and measures the ways around
 * it: `close()` on a TCP connection with a `write()` pending neither settles the write nor closes
 * the socket; it stays ESTABLISHED, with its descriptor and send buffer, until the peer reads or
 * closes. So every deadline that relies on `close()` to abort I/O is void against a peer that
 * stops reading.
 *
 * A server on 127.0.0.1 accepts and never reads; a client writes 8 MiB, and 200 ms later (the
 * kernel has taken what it will) ends the connection one way or another. For each way: does the
 * write settle, is the descriptor still open in this process, what does the kernel hold for the
 * socket 300 ms later (`ss`), what did ending it cost, and what does a connection cost that way.
 *
 * ```sh
 * deno run -A scripts/deno_blocked_write_close.ts            # ~10 s
 * deno run -A scripts/deno_blocked_write_close.ts --orphan   # also: how long a FIN-WAIT-1 orphan lives
 * ```
 * @module
 */
import * as net from "node:net";
import process from "node:process";
import { abortConn, findTcpDescriptor } from "../src/util/socket.ts";
import { libc } from "../src/util/libc.ts";

const payload = new Uint8Array(8 << 20);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The hostile peer: accepts, never reads, never closes (until the end).
const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const port = (listener.addr as Deno.NetAddr).port;
const held: Deno.Conn[] = [];
(async () => {
  for await (const conn of listener) held.push(conn);
})();

function openFds(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}

/** The kernel's view of our end (state, bytes queued to send), or "gone". */
async function kernelState(localPort: number): Promise<string> {
  const out = await new Deno.Command("ss", {
    args: ["-tanH", `( sport = :${localPort} and dport = :${port} )`],
  }).output();
  const line = new TextDecoder().decode(out.stdout).trim();
  if (line === "") return "gone";
  const [state, , sendQ] = line.split(/\s+/);
  return `${state} (${(Number(sendQ) / 2 ** 20).toFixed(1)} MiB queued)`;
}

interface Row {
  way: string;
  write: string;
  fdOpen: string;
  kernel: string;
  abortMs: string;
}
const rows: Row[] = [];

/** One Deno.connect socket, a blocked 8 MiB write, then `end` at 200 ms. */
async function denoWay(
  way: string,
  end: (conn: Deno.TcpConn, connectAbort: AbortController) => void | Promise<void>,
): Promise<void> {
  const connectAbort = new AbortController();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port, signal: connectAbort.signal });
  const localPort = (conn.localAddr as Deno.NetAddr).port;
  let write = "pending";
  (async () => {
    for (let off = 0; off < payload.length;) off += await conn.write(payload.subarray(off));
  })().then(() => write = "resolved", (err) => write = `rejected (${err?.name})`);
  await sleep(200);
  // Looked up before ending it: afterwards it is either gone or still held by the write.
  const start = performance.now();
  await end(conn, connectAbort);
  const abortMs = (performance.now() - start).toFixed(2);
  await sleep(300);
  const stillOpen = findTcpDescriptor(conn) !== undefined;
  rows.push({
    way,
    write,
    fdOpen: stillOpen ? "yes" : "no",
    kernel: await kernelState(localPort),
    abortMs,
  });
  if (stillOpen) leaked.push(conn);
}
const leaked: Deno.Conn[] = [];

const fdsBefore = openFds();
await denoWay("Deno.connect + close()", (conn) => conn.close());
await denoWay("closeWrite() (awaited 300 ms), close()", async (conn) => {
  const settled = conn.closeWrite().then(() => "resolved", () => "rejected");
  const result = await Promise.race([settled, sleep(300).then(() => "still pending")]);
  rows.push({ way: "  closeWrite() itself", write: result, fdOpen: "", kernel: "", abortMs: "" });
  conn.close();
});
await denoWay("abort the connect signal (+ close())", (conn, connectAbort) => {
  connectAbort.abort();
  conn.close();
});
await denoWay("libc shutdown(SHUT_RDWR) + close()", (conn) => {
  const fd = findTcpDescriptor(conn);
  if (fd !== undefined) libc()?.shutdown(fd, 2);
  conn.close();
});
// The way src/util/socket.ts takes: SO_LINGER 0, shutdown, close.
await denoWay("abortConn(): SO_LINGER 0 + shutdown + close()", async (conn) => {
  const { writeAll } = await import("../src/util/socket.ts");
  // Registers a pending write so abortConn resets (the 8 MiB write above is not through it).
  writeAll(conn, new Uint8Array(1)).catch(() => {});
  abortConn(conn);
});

// node:net over Deno's own TCP (libuv-like binding).
for (const reset of [false, true]) {
  const socket = net.connect({ host: "127.0.0.1", port });
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.on("error", () => {});
  const localPort = socket.localPort!;
  let write = "pending";
  socket.write(payload, (err) => write = err ? `rejected (${err.message})` : "resolved");
  await sleep(200);
  const start = performance.now();
  if (reset) socket.resetAndDestroy();
  else socket.destroy();
  const abortMs = (performance.now() - start).toFixed(2);
  await sleep(300);
  rows.push({
    way: reset ? "node:net resetAndDestroy()" : "node:net destroy()",
    write,
    fdOpen: "no (close event)",
    kernel: await kernelState(localPort),
    abortMs,
  });
}

// A worker that holds the socket, terminated.
{
  const source = `
    self.onmessage = async (e) => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: e.data });
      self.postMessage(conn.localAddr.port);
      const bytes = new Uint8Array(8 << 20);
      for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
    };`;
  const url = URL.createObjectURL(new Blob([source], { type: "application/javascript" }));
  const worker = new Worker(url, { type: "module" });
  const localPort = await new Promise<number>((resolve) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.postMessage(port);
  });
  await sleep(200);
  const start = performance.now();
  worker.terminate();
  const abortMs = (performance.now() - start).toFixed(2);
  await sleep(300);
  rows.push({
    way: "Worker.terminate()",
    write: "(worker gone)",
    fdOpen: "see fds",
    kernel: await kernelState(localPort),
    abortMs,
  });
}

console.log("Deno", Deno.version.deno, "— a peer that accepts and never reads; 8 MiB written\n");
console.log(
  "way".padEnd(50) + "write".padEnd(24) + "fd open".padEnd(18) + "kernel, 300 ms later".padEnd(32) +
    "abort (ms)",
);
for (const r of rows) {
  console.log(
    r.way.padEnd(50) + r.write.padEnd(24) + r.fdOpen.padEnd(18) + r.kernel.padEnd(32) + r.abortMs,
  );
}
console.log(
  `\ndescriptors of this process: ${fdsBefore} before, ${openFds()} now ` +
    `(${held.length} held by the server side, ${leaked.length} client sockets still open)`,
);

// The server side of the sockets above is not needed any more.
for (const conn of held.splice(0)) conn.close();

// What a connection costs each way: connect, write 100 bytes, end it; 300 rounds each.
const rounds = 300;
const small = new Uint8Array(100);
async function perConnection(label: string, once: () => Promise<void>): Promise<void> {
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < rounds; i++) await once();
  const wall = (performance.now() - start) / rounds;
  const cpu1 = process.cpuUsage();
  const cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / 1000 / rounds;
  console.log(`${label.padEnd(50)} ${wall.toFixed(3)} ms wall, ${cpu.toFixed(3)} ms CPU`);
}
console.log(`\nper connection (connect, write 100 bytes, end; mean of ${rounds}):`);
const closeHeld = () => {
  for (const conn of held.splice(0)) conn.close();
};
await perConnection("Deno.connect + close()", async () => {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(small);
  conn.close();
});
closeHeld();
await perConnection("Deno.connect + abortConn() with a write pending", async () => {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(small);
  const { writeAll } = await import("../src/util/socket.ts");
  writeAll(conn, new Uint8Array(1)).catch(() => {});
  abortConn(conn);
});
closeHeld();
await perConnection("node:net connect + destroy()", async () => {
  const socket = net.connect({ host: "127.0.0.1", port });
  await new Promise((resolve) => socket.once("connect", resolve));
  await new Promise((resolve) => socket.write(small, resolve));
  socket.destroy();
});
closeHeld();
{
  const start = performance.now();
  const rss0 = Deno.memoryUsage().rss;
  const worker = new Worker(
    URL.createObjectURL(
      new Blob(["self.onmessage = () => self.postMessage(1);"], { type: "application/javascript" }),
    ),
    { type: "module" },
  );
  await new Promise((resolve) => {
    worker.onmessage = resolve;
    worker.postMessage(0);
  });
  console.log(
    `${"a Worker to hold connections (start)".padEnd(50)} ${
      (performance.now() - start).toFixed(1)
    } ms wall, +${((Deno.memoryUsage().rss - rss0) / 2 ** 20).toFixed(1)} MiB RSS`,
  );
  worker.terminate();
}
{
  const fds: number[] = [];
  const conns: Deno.Conn[] = [];
  for (const n of [30, 1000, 3000]) {
    while (conns.length < n) conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    const start = performance.now();
    for (let i = 0; i < 20; i++) fds.push(findTcpDescriptor(conns[i]) ?? -1);
    console.log(
      `${`findTcpDescriptor with ${openFds()} descriptors open`.padEnd(50)} ${
        ((performance.now() - start) / 20).toFixed(3)
      } ms`,
    );
  }
  for (const conn of conns) conn.close();
}

if (Deno.args.includes("--orphan")) {
  // A socket closed with unsent data and a peer that ACKs zero-window probes: FIN-WAIT-1 orphan.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const localPort = (conn.localAddr as Deno.NetAddr).port;
  (async () => {
    for (let off = 0; off < payload.length;) off += await conn.write(payload.subarray(off));
  })().catch(() => {});
  await sleep(200);
  const fd = findTcpDescriptor(conn);
  if (fd !== undefined) libc()?.shutdown(fd, 2);
  conn.close();
  const start = performance.now();
  for (;;) {
    const state = await kernelState(localPort);
    if (state === "gone" || performance.now() - start > 600_000) {
      console.log(
        `\nFIN-WAIT-1 orphan: ${state} after ${((performance.now() - start) / 1000).toFixed(0)} s`,
      );
      break;
    }
    await sleep(1000);
  }
}

for (const conn of held) conn.close();
listener.close();
Deno.exit(0);
