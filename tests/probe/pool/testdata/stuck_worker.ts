/**
 * A probe pool thread for tests whose probes never answer: each HTTP call connects to its URL and
 * writes 16 MiB that the server never reads, so the thread holds a socket with a write pending,
 * as the HTTP handler did before util/socket.ts; TCP and gRPC calls are never answered either.
 * @module
 */
import { type PoolCall, requestFromWire } from "../../../../src/probe/pool/protocol.ts";

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;

scope.onmessage = (event: MessageEvent<unknown>) => {
  if (!Array.isArray(event.data)) return;
  for (const call of event.data as PoolCall[]) {
    if (call.kind !== "http") continue;
    const { url } = requestFromWire(call.request);
    (async () => {
      const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
      const bytes = new Uint8Array(16 << 20);
      for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
    })().catch(() => {});
  }
};
