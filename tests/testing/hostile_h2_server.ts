/**
 * Hostile HTTP/2 "gRPC" servers on 127.0.0.1 for the bounds tests and scripts/hostile_h2.ts: each
 * speaks just enough HTTP/2 (the preface, SETTINGS, the request's HEADERS) to get a probe's call
 * going and then misbehaves as one row of issue 21 describes: endless empty CONTINUATION frames, an
 * HPACK bomb, floods of small frames, answers grpc-go refuses. Frames are written by hand.
 * @module
 */
import {
  clientPreface,
  concat,
  encodeHeaderBlock,
  Flag,
  frame,
  FrameReader,
  FrameType,
  settingsFrame,
} from "../../src/util/h2/frame.ts";

/** What a hostile server does once the client's request HEADERS arrived. */
export type HostileScenario =
  | "continuation-flood"
  | "hpack-bomb"
  | "ping-flood"
  | "settings-flood"
  | "window-update-flood"
  | "priority-flood"
  | "empty-data-flood";

/** Every scenario, in the order the script runs them. */
export const hostileScenarios: HostileScenario[] = [
  "continuation-flood",
  "hpack-bomb",
  "ping-flood",
  "settings-flood",
  "window-update-flood",
  "priority-flood",
  "empty-data-flood",
];

/** What a running hostile server counted. */
export interface HostileStats {
  /** Frames the server wrote after the request arrived (those the kernel took). */
  framesWritten: number;
  /** Bytes the server wrote after the request arrived. */
  bytesWritten: number;
}

/** The `:status: 200` response header block (static table index 8), one byte. */
const status200 = Uint8Array.of(0x88);

/** `n` copies of `f` in one buffer. */
export function repeated(f: Uint8Array, n: number): Uint8Array {
  const out = new Uint8Array(f.length * n);
  for (let i = 0; i < n; i++) out.set(f, i * f.length);
  return out;
}

/**
 * The HPACK bomb of issue 21 row 4: one-byte references to static entry 16
 * (`accept-encoding: gzip, deflate`, 60 bytes in a header list), `blockBytes` of them in HEADERS
 * and CONTINUATION frames of 16,384 bytes, the last with END_HEADERS.
 */
export function hpackBombFrames(streamId: number, blockBytes: number): Uint8Array[] {
  const frames: Uint8Array[] = [];
  const chunk = new Uint8Array(16_384).fill(0x80 | 16);
  for (let off = 0; off < blockBytes; off += chunk.length) {
    const payload = chunk.subarray(0, Math.min(chunk.length, blockBytes - off));
    const last = off + payload.length >= blockBytes;
    frames.push(
      frame(
        off === 0 ? FrameType.Headers : FrameType.Continuation,
        last ? Flag.EndHeaders : 0,
        streamId,
        payload,
      ),
    );
  }
  return frames;
}

/** The frames a flood repeats, 64 KiB or so at a time, on `streamId`. */
function floodChunk(scenario: HostileScenario, streamId: number): Uint8Array {
  switch (scenario) {
    case "continuation-flood":
      return repeated(frame(FrameType.Continuation, 0, streamId, new Uint8Array(0)), 7_000);
    case "ping-flood":
      return repeated(frame(FrameType.Ping, 0, 0, new Uint8Array(8)), 3_000);
    case "settings-flood":
      return repeated(settingsFrame([]), 7_000);
    case "window-update-flood":
      return repeated(frame(FrameType.WindowUpdate, 0, 0, Uint8Array.of(0, 0, 0, 1)), 5_000);
    case "priority-flood":
      return repeated(frame(FrameType.Priority, 0, streamId, new Uint8Array(5)), 4_500);
    case "empty-data-flood":
      return repeated(frame(FrameType.Data, 0, streamId, new Uint8Array(0)), 7_000);
    default:
      throw new Error(`${scenario} is not a flood`);
  }
}

/**
 * Serves `scenario` on every connection until `close`. Floods stop when the client closes (the
 * write fails) or after `maxFloodBytes` (default: no limit).
 *
 * @example
 * ```ts
 * await using server = startHostileServer("ping-flood");
 * // probe 127.0.0.1:server.port
 * ```
 */
export function startHostileServer(
  scenario: HostileScenario,
  options: { maxFloodBytes?: number; port?: number } = {},
): HostileStats & { port: number; close(): Promise<void>; [Symbol.asyncDispose](): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: options.port ?? 0 });
  const conns = new Set<Deno.Conn>();
  const served: Promise<void>[] = [];
  const stats = {
    framesWritten: 0,
    bytesWritten: 0,
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      try {
        listener.close();
      } catch {
        // closed
      }
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // closed
        }
      }
      await Promise.allSettled(served);
    },
    [Symbol.asyncDispose]() {
      return stats.close();
    },
  };
  (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      served.push(
        serveOne(conn, scenario, stats, options.maxFloodBytes ?? Infinity).catch(() => {})
          .finally(() => {
            conns.delete(conn);
            try {
              conn.close();
            } catch {
              // closed
            }
          }),
      );
    }
  })().catch(() => {});
  return stats;
}

async function serveOne(
  conn: Deno.Conn,
  scenario: HostileScenario,
  stats: HostileStats,
  maxFloodBytes: number,
): Promise<void> {
  const reader = new FrameReader(conn, { maxFrameSize: 16_777_215 });
  await reader.readExactly(clientPreface.length);
  await writeAll(conn, settingsFrame([]));
  let request;
  do request = await reader.next(); while (request && request.type !== FrameType.Headers);
  if (!request) return;
  const id = request.streamId;
  // The ping flood's server never reads again; the others keep reading (and dropping) frames.
  if (scenario !== "ping-flood") {
    (async () => {
      while (await reader.next());
    })().catch(() => {});
  }
  const count = async (bytes: Uint8Array, frames: number) => {
    await writeAll(conn, bytes);
    stats.framesWritten += frames;
    stats.bytesWritten += bytes.length;
  };
  if (scenario === "hpack-bomb") {
    const frames = hpackBombFrames(id, 15 * 1024 * 1024);
    // Written in batches so the counts say how far the client let it get.
    for (let i = 0; i < frames.length; i += 16) {
      const batch = frames.slice(i, i + 16);
      await count(concat(batch), batch.length);
    }
    return;
  }
  if (scenario === "continuation-flood") {
    await count(frame(FrameType.Headers, 0, id, status200), 1);
  } else if (scenario === "empty-data-flood") {
    const block = encodeHeaderBlock([[":status", "200"], ["content-type", "application/grpc"]]);
    await count(frame(FrameType.Headers, Flag.EndHeaders, id, block), 1);
  }
  const chunk = floodChunk(scenario, id);
  const framesPerChunk = chunk.length / (chunk[2] + 9);
  while (stats.bytesWritten < maxFloodBytes) await count(chunk, framesPerChunk);
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
}
