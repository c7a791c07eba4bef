/**
 * Reproduces a Deno 2.9.3 defect the CRI client is exposed to: a `node:net` client on a unix socket
 * closes its descriptor twice when the socket closes (strace: `close(N) = 0`, then
 * `close(N) = -1 EBADF`). When another thread reuses N in between, the second close destroys that
 * descriptor instead: a `Deno.readDir` running on a tokio thread then panics in `closedir` (EBADF)
 * or reads a socket as a folder. grpc-js dials `unix://` CRI endpoints with `net.connect({ path })`,
 * so every CRI channel that closes (agent stop, containerd restart) opens this window. Over TCP the
 * same client closes once.
 *
 * ```sh
 * deno run -A scripts/node_net_unix_double_close.ts [milliseconds]   # default 5000
 * ```
 * Prints `survived` when no panic hit within the time; on 2.9.3 it usually dies within seconds.
 * @module
 */
import net from "node:net";

const ms = Number(Deno.args[0] ?? 5000);
const dir = await Deno.makeTempDir({ prefix: "probelet-net-unix-" });
for (let i = 0; i < 50; i++) await Deno.writeTextFile(`${dir}/f${i}`, "x");
const path = `${dir}/s.sock`;

let stop = false;
let listings = 0;
// Folder readers on tokio threads: their descriptor numbers are the ones a stale close hits.
const readers = Array.from({ length: 4 }, async () => {
  while (!stop) {
    for await (const _ of Deno.readDir(dir)) {
      // only the open/close of the folder matters
    }
    listings++;
  }
});

// Deno's own server: only the node:net client is under test.
const listener = Deno.listen({ transport: "unix", path });
(async () => {
  for await (const conn of listener) {
    try {
      conn.close();
    } catch {
      // the client went first
    }
  }
})();

const end = Date.now() + ms;
let connections = 0;
while (Date.now() < end) {
  connections++;
  await new Promise<void>((resolve) => {
    const socket = net.connect(path);
    socket.on("error", () => {});
    socket.on("close", () => resolve());
    socket.on("connect", () => socket.destroy());
  });
}
stop = true;
await Promise.all(readers);
listener.close();
await Deno.remove(dir, { recursive: true });
console.log(`survived: ${connections} unix connections, ${listings} folder listings`);
