/**
 * A handler taking its connection over after the request head (`hijackResponse`, Go's
 * `Hijacker`): it gets the bytes that came after the head, none of the server's deadlines apply
 * to it (idle, header and write timers on the fake clock), the connection is not evicted at the
 * limit, a shutdown still closes it, and the request's header lines are kept as they came.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  defaultIdleTimeoutMs,
  defaultReadHeaderTimeoutMs,
  defaultWriteTimeoutMs,
  type HijackedConn,
  hijackResponse,
  HttpServer,
  requestHeaderLines,
  requestRemoteAddr,
} from "../../../src/kubelet/server/http_server.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";
import { writeAll } from "../../../src/util/socket.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test("HttpServer: a handler takes the connection over", async (t) => {
  const silence = log.setLogSink(() => {});
  const clock = new FakeClock(0);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let lines: Array<[string, string]> | undefined;
  let remote: Deno.Addr | undefined;
  let taken: ((h: HijackedConn) => void) | undefined;
  const server = new HttpServer(listener, {
    clock,
    maxConnections: 1,
    handler: (req) => {
      lines = requestHeaderLines(req);
      remote = requestRemoteAddr(req);
      // Echo everything upper-cased until the client ends.
      return hijackResponse(async (h) => {
        taken?.(h);
        await writeAll(h.conn, enc.encode("HTTP/1.1 101 Switching Protocols\r\n\r\n"));
        await writeAll(h.conn, enc.encode(dec.decode(h.buffered).toUpperCase()));
        const buf = new Uint8Array(1024);
        for (;;) {
          const n = await h.conn.read(buf);
          if (n === null) return;
          await writeAll(h.conn, enc.encode(dec.decode(buf.subarray(0, n)).toUpperCase()));
        }
      });
    },
  });
  const port = (listener.addr as Deno.NetAddr).port;
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  let received = "";
  const buf = new Uint8Array(4096);
  const readUntil = async (text: string) => {
    while (!received.includes(text)) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) return false;
      received += dec.decode(buf.subarray(0, n));
    }
    return true;
  };
  try {
    await t.step("the bytes after the head go to the handler", async () => {
      const hijacked = new Promise<HijackedConn>((resolve) => taken = resolve);
      // The head and the start of the stream in one write.
      await writeAll(
        conn,
        enc.encode(
          "POST /exec/x HTTP/1.1\r\nHost: a\r\nX-Stream-Protocol-Version: v5.channel.k8s.io\r\n" +
            "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nConnection: Upgrade\r\n\r\nearly",
        ),
      );
      assertEquals(dec.decode((await hijacked).buffered), "early");
      assertEquals(await readUntil("EARLY"), true);
      assertEquals(server.stats.hijacked, 1);
    });
    await t.step("header lines as they came, repeated names apart", () => {
      assertEquals(lines, [
        ["Host", "a"],
        ["X-Stream-Protocol-Version", "v5.channel.k8s.io"],
        ["X-Stream-Protocol-Version", "v4.channel.k8s.io"],
        ["Connection", "Upgrade"],
      ]);
      assertEquals((remote as Deno.NetAddr).hostname, "127.0.0.1");
    });
    await t.step("no server deadline cuts it; it is not evicted at the limit", async () => {
      await clock.step(defaultIdleTimeoutMs + defaultReadHeaderTimeoutMs + defaultWriteTimeoutMs);
      // The limit is one connection: a newcomer is refused, not given the stream's place.
      const other = await Deno.connect({ hostname: "127.0.0.1", port });
      const n = await other.read(new Uint8Array(16)).catch(() => null);
      other.close();
      assertEquals(n, null);
      await writeAll(conn, enc.encode("later"));
      assertEquals(await readUntil("LATER"), true);
      assertEquals([server.stats.evicted, server.stats.rejected, server.stats.open], [0, 1, 1]);
    });
    await t.step("a shutdown closes it", async () => {
      await server.shutdown();
      assertEquals(await readUntil("never"), false);
      assertEquals(server.stats.open, 0);
    });
  } finally {
    conn.close();
    await server.shutdown();
    log.setLogSink(silence);
  }
});
