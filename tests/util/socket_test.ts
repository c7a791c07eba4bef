/**
 * util/socket.ts on real sockets: `abortConn` ends a write the peer never reads (Deno 2.9.3's
 * `close()` does not), over IPv4 and IPv6, and is a plain close without a pending write.
 */
import { ok as assert, strictEqual as assertEquals } from "node:assert/strict";
import { abortConn, findTcpDescriptor, writeAll, writePending } from "../../src/util/socket.ts";

/** A listener on `hostname` that accepts and never reads; undefined when the family is missing. */
function sink(hostname: string) {
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname, port: 0 });
  } catch {
    return undefined;
  }
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) conns.push(conn);
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    conns,
    async close() {
      for (const conn of conns) conn.close();
      listener.close();
      await accepting.catch(() => {});
    },
  };
}

/** Lets the event loop run until `fn` holds, for at most 2 s. */
async function until(what: string, fn: () => boolean): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

Deno.test("abortConn", async (t) => {
  for (const hostname of ["127.0.0.1", "::1"]) {
    const server = sink(hostname);
    if (!server) continue;
    await t.step(`ends a write the peer never reads (${hostname})`, async () => {
      try {
        const conn = await Deno.connect({ hostname, port: server.port });
        assert(findTcpDescriptor(conn) !== undefined, "its descriptor is found");
        let settled = "";
        const write = writeAll(conn, new Uint8Array(16 << 20)).then(
          () => settled = "resolved",
          (err) => settled = `rejected ${err?.name}`,
        );
        // The kernel takes a few MiB, then the write waits for the peer.
        await until("the write to block", () => server.conns.length === 1 && writePending(conn));
        assertEquals(abortConn(conn), "reset");
        await write;
        assertEquals(settled, "rejected BrokenPipe");
        assertEquals(findTcpDescriptor(conn), undefined, "the descriptor is closed");
        assertEquals(abortConn(conn), "closed", "a second call is harmless");
      } finally {
        await server.close();
      }
    });
  }

  await t.step("without a pending write it only closes", async () => {
    const server = sink("127.0.0.1")!;
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      await writeAll(conn, new Uint8Array(10));
      assertEquals(writePending(conn), false);
      const read = conn.read(new Uint8Array(10)).catch((err) => err);
      assertEquals(abortConn(conn), "closed");
      assert((await read) instanceof Deno.errors.Interrupted || (await read) === null);
    } finally {
      await server.close();
    }
  });
});
