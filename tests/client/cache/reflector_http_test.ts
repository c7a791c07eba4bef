/**
 * The reflector over the HTTP clientset against a real local server: the failure mode that made us
 * drop @kubernetes/client-node (a quiet watch that ends without anybody noticing, so the informer
 * goes deaf) must not happen. Two ways a quiet watch ends are driven without a 60 s wait:
 *  - RealClock: the server keeps the watch quiet for 1.2 s and then closes it, as kube-apiserver
 *    does when `timeoutSeconds` runs out; the reflector re-watches from the last version and a pod
 *    created afterwards arrives.
 *  - FakeClock: the server never closes the quiet watch; the client's own deadline
 *    (`timeoutSeconds` + 60 s) ends it when the fake clock passes 360 s; again the next pod arrives.
 * @module
 */
import assert from "node:assert/strict";
import { newForConfig } from "../../../src/client/kubernetes/clientset.ts";
import { newListWatchFromClient } from "../../../src/client/cache/listwatch.ts";
import { Reflector } from "../../../src/client/cache/reflector.ts";
import { UndeltaStore } from "../../../src/client/cache/undelta_store.ts";
import { type Clock, FakeClock, RealClock } from "../../../src/util/clock.ts";
import { AlwaysAcceptRateLimiter } from "../../../src/util/flowcontrol/throttle.ts";
import type { Pod } from "../../../src/api/core/v1/mod.ts";

const podJson = (name: string, rv: string) => ({
  kind: "Pod",
  apiVersion: "v1",
  metadata: { name, namespace: "default", resourceVersion: rv },
  spec: { containers: [] },
});

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

/**
 * A server with one pod listed at RV 10. Watch 1 stays quiet (closing after `quietMs`, or never);
 * watch 2 sends pod "b" at RV 11 and stays open until the test ends.
 */
function startServer(quietMs: number | undefined) {
  const queries: string[] = [];
  const secondWatch = deferred();
  const closers: (() => void)[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    const url = new URL(req.url);
    queries.push(url.search);
    if (url.searchParams.get("watch") !== "true") {
      return Response.json({
        kind: "PodList",
        apiVersion: "v1",
        metadata: { resourceVersion: "10" },
        items: [podJson("a", "9")],
      });
    }
    const n = queries.filter((q) => q.includes("watch=true")).length;
    let ctrl!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => ctrl = c,
      cancel: () => {},
    });
    const close = () => {
      try {
        ctrl.close();
      } catch { /* already closed by the client */ }
    };
    closers.push(close);
    if (n === 1 && quietMs !== undefined) setTimeout(close, quietMs);
    if (n === 2) {
      ctrl.enqueue(
        new TextEncoder().encode(
          JSON.stringify({ type: "ADDED", object: podJson("b", "11") }) + "\n",
        ),
      );
      secondWatch.resolve();
    }
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    queries,
    secondWatch: secondWatch.promise,
    async stop() {
      closers.forEach((c) => c());
      await server.shutdown();
    },
  };
}

function runReflector(url: string, clock: Clock) {
  const client = newForConfig({ host: url, rateLimiter: new AlwaysAcceptRateLimiter() }, { clock });
  const sawB = deferred<string[]>();
  const store = new UndeltaStore<Pod>((pods) => {
    const names = pods.map((p) => p.metadata.name!);
    if (names.includes("b")) sawB.resolve(names);
  });
  const lw = newListWatchFromClient(client.coreV1.pods(""), {
    fieldSelector: "spec.nodeName=node-1",
  });
  const reflector = new Reflector(lw, store, { clock, random: () => 0, name: "pods" });
  const stop = new AbortController();
  const done = reflector.run(stop.signal);
  return {
    sawB: sawB.promise,
    async stop() {
      stop.abort();
      await done;
      client.close();
    },
  };
}

Deno.test("Reflector over HTTP (RealClock): a quiet watch closed by the server is re-watched and keeps delivering", async () => {
  const server = startServer(1200);
  const r = runReflector(server.url, new RealClock());
  try {
    assert.deepStrictEqual(await r.sawB, ["a", "b"]);
    const watches = server.queries.filter((q) => q.includes("watch=true"));
    assert.equal(watches.length, 2);
    for (const q of watches) {
      assert.match(q, /fieldSelector=spec.nodeName%3Dnode-1/);
      assert.match(q, /resourceVersion=10&timeoutSeconds=300&allowWatchBookmarks=true/);
    }
  } finally {
    await r.stop();
    await server.stop();
  }
});

Deno.test("Reflector over HTTP (FakeClock): a watch the server never closes is ended by the client's deadline", async () => {
  const server = startServer(undefined);
  const clock = new FakeClock(0);
  const r = runReflector(server.url, clock);
  try {
    // Let the LIST and the first WATCH happen; nothing arrives on it.
    while (server.queries.length < 2) await clock.step(0);
    await clock.step(359_000);
    assert.equal(server.queries.length, 2, "still on the first watch before the deadline");
    await clock.step(1_000);
    await server.secondWatch;
    assert.deepStrictEqual(await r.sawB, ["a", "b"]);
  } finally {
    await r.stop();
    await server.stop();
  }
});
