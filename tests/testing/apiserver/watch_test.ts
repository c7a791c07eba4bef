// Tests of the double's watch: headers before any event, synthetic ADDED at resourceVersion 0,
// replay after N, 410 Expired below the compaction mark, selector transitions, bookmarks and
// timeoutSeconds on the fake clock, and closeWatches().
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { FakeClock } from "../../../src/util/clock.ts";
import { adminUser, type JsonObject, type RunningApiServer, startApiServer } from "./mod.ts";

interface WireEvent {
  type: string;
  object: JsonObject;
}

// Reads a line-delimited watch body; `next()` resolves with the next event or undefined at the end.
function watchReader(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return {
    async next(): Promise<WireEvent | undefined> {
      while (true) {
        const nl = buffer.indexOf("\n");
        if (nl >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          return JSON.parse(line);
        }
        const { done, value } = await reader.read();
        if (done) return undefined;
        buffer += value;
      }
    },
    cancel: () => reader.cancel(),
  };
}

function podName(e: WireEvent | undefined): string {
  return String((e?.object.metadata as Record<string, unknown>)?.name);
}

function rvOf(e: WireEvent | undefined): string {
  return String((e?.object.metadata as Record<string, unknown>)?.resourceVersion);
}

function pod(name: string, nodeName?: string): JsonObject {
  return {
    metadata: { name, namespace: "default" },
    spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: "c", image: "busybox" }] },
  };
}

async function withServer(
  clock: FakeClock | undefined,
  fn: (server: RunningApiServer, watch: (query: string) => Promise<Response>) => Promise<void>,
): Promise<void> {
  const server = await startApiServer({ defaultUser: adminUser, clock });
  try {
    await fn(
      server,
      (query) => fetch(`${server.url}/api/v1/namespaces/default/pods?watch=true&${query}`),
    );
  } finally {
    await server.close();
  }
}

Deno.test("watch: headers arrive before any event", async () => {
  await withServer(undefined, async (server, watch) => {
    const res = await watch(`resourceVersion=${server.double.storage.resourceVersion}`);
    assertEquals(res.status, 200);
    assertEquals(res.headers.get("content-type"), "application/json");
    const events = watchReader(res);
    server.double.create("pods", pod("later"));
    const e = await events.next();
    assertEquals(e?.type, "ADDED");
    assertEquals(podName(e), "later");
    assertEquals(e?.object.kind, "Pod");
    assertEquals(e?.object.apiVersion, "v1");
    await events.cancel();
  });
});

Deno.test("watch: resourceVersion 0 or unset starts with synthetic ADDED for current objects", async () => {
  await withServer(undefined, async (server, watch) => {
    server.double.create("pods", pod("a"));
    server.double.create("pods", pod("b"));
    for (const query of ["resourceVersion=0", ""]) {
      const events = watchReader(await watch(query));
      const first = await events.next();
      const second = await events.next();
      assertEquals([first?.type, second?.type], ["ADDED", "ADDED"]);
      assertEquals([podName(first), podName(second)], ["a", "b"]);
      await events.cancel();
    }
  });
});

Deno.test("watch: from N replays later changes in order; DELETED carries the last object at a new RV", async () => {
  await withServer(undefined, async (server, watch) => {
    const a = server.double.create("pods", pod("a"));
    const from = (a.metadata as Record<string, unknown>).resourceVersion;
    const labelled = server.double.get("pods", "default", "a")!;
    (labelled.metadata as Record<string, unknown>).labels = { x: "1" };
    server.double.update("pods", labelled);
    server.double.create("pods", pod("b"));
    server.double.delete("pods", { name: "a" });
    const events = watchReader(await watch(`resourceVersion=${from}`));
    const got = [];
    for (let n = 0; n < 4; n++) got.push(await events.next());
    // A pod delete writes its deletion mark first (MODIFIED), then removes it (DELETED).
    assertEquals(got.map((e) => `${e?.type} ${podName(e)}`), [
      "MODIFIED a",
      "ADDED b",
      "MODIFIED a",
      "DELETED a",
    ]);
    const deleted = got[3]?.object.metadata as Record<string, unknown>;
    assertEquals((deleted.labels as Record<string, string>).x, "1");
    assertEquals(deleted.deletionGracePeriodSeconds, 0);
    assertEquals(rvOf(got[3]), String(server.double.storage.resourceVersion));
    assertEquals(Number(rvOf(got[2])), Number(rvOf(got[3])) - 1);
    await events.cancel();
  });
});

Deno.test("watch: below the compaction mark is an ERROR event with 410 Expired, then the end", async () => {
  await withServer(undefined, async (server, watch) => {
    const a = server.double.create("pods", pod("a"));
    server.double.create("pods", pod("b"));
    const compactedAt = server.double.storage.resourceVersion;
    server.double.compact();
    const old = Number((a.metadata as Record<string, unknown>).resourceVersion) - 1;
    const res = await watch(`resourceVersion=${old}`);
    assertEquals(res.status, 200);
    const events = watchReader(res);
    const e = await events.next();
    assertEquals(e, {
      type: "ERROR",
      object: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `too old resource version: ${old} (${compactedAt})`,
        reason: "Expired",
        code: 410,
      },
    });
    assertEquals(await events.next(), undefined);
    // At the mark itself nothing is missing.
    const ok = watchReader(await watch(`resourceVersion=${compactedAt}`));
    server.double.create("pods", pod("c"));
    assertEquals(podName(await ok.next()), "c");
    await ok.cancel();
  });
});

Deno.test("watch: an object leaving the field selector is DELETED, one entering is ADDED", async () => {
  await withServer(undefined, async (server, watch) => {
    const rv = server.double.storage.resourceVersion;
    const events = watchReader(
      await watch(
        `resourceVersion=${rv}&fieldSelector=${encodeURIComponent("status.phase=Pending")}`,
      ),
    );
    server.double.create("pods", pod("a", "n1"));
    const running = server.double.get("pods", "default", "a")!;
    running.status = { phase: "Running" };
    server.double.update("pods", running, { status: true });
    server.double.create("pods", pod("b", "n1"));
    const got = [await events.next(), await events.next(), await events.next()];
    assertEquals(got.map((e) => `${e?.type} ${podName(e)}`), ["ADDED a", "DELETED a", "ADDED b"]);
    // The DELETED object is the last state that matched, at the change's resourceVersion.
    assertEquals((got[1]?.object.status as Record<string, unknown>).phase, "Pending");
    assertEquals(Number(rvOf(got[1])), Number(rvOf(got[2])) - 1);
    await events.cancel();
  });
});

Deno.test("watch: bookmarks on the clock when the store moved, and 2 s before timeoutSeconds", async () => {
  const clock = new FakeClock(0);
  await withServer(clock, async (server, watch) => {
    server.double.create("pods", pod("a"));
    const events = watchReader(
      await watch("resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=150"),
    );
    assertEquals((await events.next())?.type, "ADDED");
    // A write to another resource moves the one global resourceVersion.
    server.double.create("leases", {
      metadata: { name: "n1", namespace: "kube-node-lease" },
      spec: {},
    });
    await clock.step(60_000);
    assertEquals(await events.next(), {
      type: "BOOKMARK",
      object: {
        kind: "Pod",
        apiVersion: "v1",
        metadata: { resourceVersion: String(server.double.storage.resourceVersion) },
        spec: { containers: null },
        status: {},
      },
    });
    // Nothing moved: the next period sends nothing; a pod event still flows.
    await clock.step(60_000);
    server.double.create("pods", pod("b"));
    assertEquals(podName(await events.next()), "b");
    server.double.create("leases", {
      metadata: { name: "n2", namespace: "kube-node-lease" },
      spec: {},
    });
    await clock.step(28_000);
    const last = await events.next();
    assertEquals(last?.type, "BOOKMARK");
    assertEquals(rvOf(last), String(server.double.storage.resourceVersion));
    await clock.step(2_000);
    assertEquals(await events.next(), undefined);
    assertEquals(server.double.openWatches, 0);
  });
});

Deno.test("watch: no bookmarks unless asked; sendInitialEvents ends with the initial-events-end bookmark", async () => {
  const clock = new FakeClock(0);
  await withServer(clock, async (server, watch) => {
    server.double.create("pods", pod("a"));
    const plain = watchReader(await watch("resourceVersion=0&timeoutSeconds=70"));
    assertEquals((await plain.next())?.type, "ADDED");
    await clock.step(70_000);
    assertEquals(await plain.next(), undefined);
    const initial = watchReader(
      await watch(
        "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
      ),
    );
    assertEquals((await initial.next())?.type, "ADDED");
    const end = await initial.next();
    assertEquals(end?.type, "BOOKMARK");
    assertEquals((end?.object.metadata as Record<string, unknown>).annotations, {
      "k8s.io/initial-events-end": "true",
    });
    await initial.cancel();
  });
});

Deno.test("watch: closeWatches ends every stream", async () => {
  await withServer(undefined, async (server, watch) => {
    const one = watchReader(await watch("resourceVersion=0"));
    const two = watchReader(await watch("resourceVersion=0"));
    assertEquals(server.double.openWatches, 2);
    server.double.closeWatches();
    assertEquals(await one.next(), undefined);
    assertEquals(await two.next(), undefined);
    assertEquals(server.double.openWatches, 0);
    // Writes after the close reach nobody and do not fail.
    server.double.create("pods", pod("after"));
    assert(server.double.watchEvents.every((w) => w.event.type !== "ADDED"));
  });
});
