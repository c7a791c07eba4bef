/**
 * Shows the CRI client no longer has Deno 2.9.3's `node:net` double close (see
 * node_net_unix_double_close.ts): it opens a CRI client, makes one call and closes it, over and over,
 * while four `Deno.readDir` loops run on other threads. With the old grpc-js transport this setup
 * panicked in `closedir` within seconds; now each socket is closed once.
 *
 * ```sh
 * deno run -A scripts/cri_unix_close_stress.ts [milliseconds] [unix:///path/to/cri.sock]
 * strace -f -e trace=connect,close deno run -A scripts/cri_unix_close_stress.ts 300 2>&1 | grep -c EBADF
 * ```
 * Without an endpoint it serves a fake RuntimeService itself (a `Deno.listen` unix socket).
 * Prints `survived` with the counts.
 * @module
 */
import { RemoteRuntimeService } from "../src/cri_client/mod.ts";
import { startFakeCriServer } from "../tests/testing/fake_cri_server.ts";

const ms = Number(Deno.args[0] ?? 5000);
const server = Deno.args[1] ? undefined : await startFakeCriServer({
  Version: () => ({
    version: "0.1.0",
    runtimeName: "fake",
    runtimeVersion: "1",
    runtimeApiVersion: "v1",
  }),
});
const endpoint = Deno.args[1] ?? server!.endpoint;

const dir = await Deno.makeTempDir({ prefix: "probelet-cri-close-" });
for (let i = 0; i < 50; i++) await Deno.writeTextFile(`${dir}/f${i}`, "x");
let stop = false;
let listings = 0;
// Folder readers on tokio threads: their descriptor numbers are the ones a stale close would hit.
const readers = Array.from({ length: 4 }, async () => {
  while (!stop) {
    for await (const _ of Deno.readDir(dir)) {
      // only the open/close of the folder matters
    }
    listings++;
  }
});

const end = Date.now() + ms;
let clients = 0;
while (Date.now() < end) {
  const runtime = new RemoteRuntimeService(endpoint, { connectTimeoutMs: 2_000 });
  try {
    await runtime.version();
  } finally {
    runtime.close();
  }
  clients++;
}
stop = true;
await Promise.all(readers);
await server?.close();
await Deno.remove(dir, { recursive: true });
console.log(
  `survived: ${clients} CRI clients opened, called and closed, ${listings} folder listings`,
);
