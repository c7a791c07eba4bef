/**
 * Bounded watch decoding (issue 21 row 5): a watch line that never ends, or one event longer than
 * apimachinery's 16 MiB frame limit, must not be buffered without limit. The client stops reading
 * at the limit, ends the watch with client-go's decoding `ERROR` event, and the reflector logs
 * "Warning: watch ended with error" and lists again. Mirrors the limit of
 * k8s.io/apimachinery/pkg/runtime/serializer/streaming (streaming_test.go) and client-go's
 * StreamWatcher/reflector handling of a decoding error.
 * @module
 */
import assert from "node:assert/strict";
import {
  errObjectTooLarge,
  maxWatchEventBytes,
  RESTClient,
  WatchLineFramer,
} from "../../src/client/rest.ts";
import { newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { newListWatchFromClient } from "../../src/client/cache/listwatch.ts";
import { Reflector } from "../../src/client/cache/reflector.ts";
import { UndeltaStore } from "../../src/client/cache/undelta_store.ts";
import { FakeClock } from "../../src/util/clock.ts";
import { AlwaysAcceptRateLimiter } from "../../src/util/flowcontrol/throttle.ts";
import { setLogSink } from "../../src/util/log.ts";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import type { Status } from "../../src/api/meta/v1/mod.ts";

const encoder = new TextEncoder();
const MiB = 1024 * 1024;

const podJson = (name: string, rv: string) => ({
  kind: "Pod",
  apiVersion: "v1",
  metadata: { name, namespace: "default", resourceVersion: rv },
  spec: { containers: [] },
});

/** One line of `size` bytes holding a valid ADDED event (padding in an annotation). */
function eventLine(size: number): Uint8Array {
  const head = '{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":' +
    '{"name":"big","namespace":"default","resourceVersion":"11","annotations":{"pad":"';
  const tail = '"}},"spec":{"containers":[]}}}';
  const line = new Uint8Array(size);
  line.fill(0x61); // "a"
  line.set(encoder.encode(head), 0);
  line.set(encoder.encode(tail), size - tail.length);
  return line;
}

/**
 * A server whose first watch streams one line without end (64 KiB pieces, produced only as the
 * client reads, up to `capBytes` before it closes); later watches stay open and quiet. Counts
 * LISTs and the bytes of the endless line sent before the client cancelled.
 */
function startEndlessLineServer(capBytes: number) {
  const state = { lists: 0, watches: 0, sentAtCancel: -1, sent: 0 };
  const { promise: relisted, resolve: relist } = Promise.withResolvers<void>();
  const closers: (() => void)[] = [];
  const piece = new Uint8Array(64 * 1024).fill(0x61);
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    const url = new URL(req.url);
    if (url.searchParams.get("watch") !== "true") {
      state.lists++;
      if (state.lists === 2) relist();
      return Response.json({
        kind: "PodList",
        apiVersion: "v1",
        metadata: { resourceVersion: "10" },
        items: [podJson("a", "9")],
      });
    }
    state.watches++;
    if (state.watches > 1) {
      let ctrl!: ReadableStreamDefaultController<Uint8Array>;
      const quiet = new ReadableStream<Uint8Array>({ start: (c) => ctrl = c });
      closers.push(() => {
        try {
          ctrl.close();
        } catch { /* cancelled by the client */ }
      });
      return new Response(quiet);
    }
    const endless = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode('{"type":"ADDED","object":{"metadata":{"name":"'));
      },
      pull(c) {
        if (state.sent >= capBytes) {
          c.close();
          return;
        }
        c.enqueue(piece.slice());
        state.sent += piece.length;
      },
      cancel() {
        state.sentAtCancel = state.sent;
      },
    }, { highWaterMark: 0 });
    return new Response(endless, { headers: { "content-type": "application/json" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    state,
    relisted,
    async stop() {
      closers.forEach((c) => c());
      await server.shutdown();
    },
  };
}

Deno.test("TestWatchEventTooLarge", async (t) => {
  await t.step("an endless line ends the watch at 16 MiB and the reflector re-lists", async () => {
    const capBytes = 40 * MiB;
    const server = startEndlessLineServer(capBytes);
    const lines: string[] = [];
    const previous = setLogSink((l) => lines.push(l));
    const clock = new FakeClock(0);
    const client = newForConfig({ host: server.url, rateLimiter: new AlwaysAcceptRateLimiter() });
    const reflector = new Reflector(
      newListWatchFromClient(client.coreV1.pods("")),
      new UndeltaStore<Pod>(() => {}),
      { clock, random: () => 0, name: "pods" },
    );
    const stop = new AbortController();
    const done = reflector.run(stop.signal);
    let relisted = false;
    server.relisted.then(() => relisted = true);
    try {
      // The back-off before the re-list is on the fake clock. A client that reads the whole line
      // (the server stops at capBytes) fails below instead of waiting.
      while (!relisted && server.state.sent < capBytes) await clock.step(100);
      assert.ok(server.state.sentAtCancel >= 0, "the client cancelled the endless line");
      // The client stopped at the 16 MiB limit; what is beyond it is in socket buffers only.
      assert.ok(
        server.state.sentAtCancel < maxWatchEventBytes + 16 * MiB,
        `read ${(server.state.sentAtCancel / MiB).toFixed(1)} MiB of an endless line`,
      );
      const warning = lines.find((l) => l.includes("Warning: watch ended with error"));
      assert.ok(warning, `no warning logged:\n${lines.join("\n")}`);
      assert.ok(warning.includes(`reflector="pods"`), warning);
      assert.ok(
        warning.includes(
          'an error on the server (\\"unable to decode an event from the watch stream: ' +
            `${errObjectTooLarge}\\") has prevented the request from succeeding`,
        ),
        warning,
      );
      await server.relisted;
      assert.equal(server.state.lists, 2);
    } finally {
      setLogSink(previous);
      stop.abort();
      await done;
      client.close();
      await server.stop();
    }
  });

  await t.step("a 16 MiB event is delivered; one byte more is an ERROR event", async () => {
    const sizes = [maxWatchEventBytes, maxWatchEventBytes + 1];
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
      const size = Number(new URL(req.url).searchParams.get("labelSelector")!.slice(5));
      const line = eventLine(size);
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          // In pieces, so that the line spans many reads.
          for (let at = 0; at < line.length; at += 1 << 20) {
            c.enqueue(line.slice(at, at + (1 << 20)));
          }
          c.enqueue(encoder.encode("\n"));
          c.close();
        },
      });
      return new Response(body, { headers: { "content-type": "application/json" } });
    });
    const rest = new RESTClient({
      host: `http://127.0.0.1:${server.addr.port}`,
      rateLimiter: new AlwaysAcceptRateLimiter(),
    });
    try {
      const seen: { type: string; name?: string; status?: Status }[] = [];
      for (const size of sizes) {
        const w = await rest.watch<Pod>({
          method: "GET",
          path: "/api/v1/pods",
          query: { labelSelector: `size=${size}` },
        });
        for await (const event of w) {
          seen.push(
            event.type === "ERROR"
              ? { type: event.type, status: event.object as unknown as Status }
              : { type: event.type, name: event.object.metadata?.name },
          );
        }
      }
      assert.deepEqual(seen.map((e) => e.type), ["ADDED", "ERROR"]);
      assert.equal(seen[0].name, "big");
      const status = seen[1].status!;
      assert.equal(status.code, 500);
      assert.equal(status.reason, "InternalError");
      assert.deepEqual(status.details?.causes?.map((c) => c.reason), [
        "UnexpectedServerResponse",
        "ClientWatchDecoding",
      ]);
      assert.equal(
        status.details?.causes?.[1].message,
        `unable to decode an event from the watch stream: ${errObjectTooLarge}`,
      );
    } finally {
      rest.close();
      await server.shutdown();
    }
  });

  await t.step("a line that is not JSON ends the watch with the same ERROR event", async () => {
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      () =>
        new Response(
          `${JSON.stringify({ type: "ADDED", object: podJson("a", "2") })}\n{"type":\n` +
            `${JSON.stringify({ type: "ADDED", object: podJson("b", "3") })}\n`,
        ),
    );
    const rest = new RESTClient({
      host: `http://127.0.0.1:${server.addr.port}`,
      rateLimiter: new AlwaysAcceptRateLimiter(),
    });
    try {
      const w = await rest.watch<Pod>({ method: "GET", path: "/api/v1/pods" });
      const types: string[] = [];
      let message = "";
      for await (const event of w) {
        types.push(event.type);
        if (event.type === "ERROR") message = (event.object as unknown as Status).message ?? "";
      }
      // Nothing after the bad line is read: client-go's StreamWatcher stops at the error.
      assert.deepEqual(types, ["ADDED", "ERROR"]);
      assert.match(message, /^an error on the server \("unable to decode an event from the watch/);
    } finally {
      rest.close();
      await server.shutdown();
    }
  });
});

Deno.test("TestWatchLineFramer", async (t) => {
  await t.step("each byte is scanned once: a line in 1-byte pieces costs linear work", () => {
    const framer = new WatchLineFramer(1 << 20);
    const line = new Uint8Array(256 * 1024).fill(0x61);
    let lines = 0;
    for (let i = 0; i < line.length; i++) lines += framer.push(line.subarray(i, i + 1)).length;
    assert.equal(lines, 0);
    assert.equal(framer.pendingBytes, line.length);
    const done = framer.push(new Uint8Array([0x0a, 0x62, 0x0a]));
    assert.deepEqual(done.map((l) => l.length), [line.length, 1]);
    assert.equal(framer.pendingBytes, 0);
  });

  await t.step(
    "a line longer than the limit throws errObjectTooLarge and drops what it held",
    () => {
      const framer = new WatchLineFramer(8);
      assert.deepEqual(framer.push(encoder.encode("12345678\n")).length, 1);
      framer.push(encoder.encode("12345"));
      assert.throws(() => framer.push(encoder.encode("6789")), new Error(errObjectTooLarge));
      assert.equal(framer.pendingBytes, 0);
    },
  );
});

Deno.test("TestWatchStreamEndingMidEvent", async () => {
  // Go's JSON framer reports a value cut by the end of the stream as io.ErrUnexpectedEOF, which
  // StreamWatcher logs at V(1) and treats as a normal close: no ERROR event, so no re-list.
  const whole = JSON.stringify({ type: "ADDED", object: podJson("a", "2") });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (req) =>
      new Response(
        new URL(req.url).searchParams.get("labelSelector") === "cut"
          ? `${whole}\n{"type":"ADDED","obj`
          : `${whole}\n${whole}`,
      ),
  );
  const rest = new RESTClient({
    host: `http://127.0.0.1:${server.addr.port}`,
    rateLimiter: new AlwaysAcceptRateLimiter(),
  });
  try {
    for (const [selector, want] of [["cut", ["ADDED"]], ["whole", ["ADDED", "ADDED"]]] as const) {
      const w = await rest.watch<Pod>({
        method: "GET",
        path: "/api/v1/pods",
        query: { labelSelector: selector },
      });
      const types: string[] = [];
      for await (const event of w) types.push(event.type);
      assert.deepEqual(types, want, selector);
      assert.equal((w as unknown as { endReason: string }).endReason, "server-closed");
    }
  } finally {
    rest.close();
    await server.shutdown();
  }
});
