/**
 * How the REST client words and bounds a request that goes wrong (issue 21 rows 5, 16 and 17),
 * against real servers on 127.0.0.1:
 *  - names that cannot be one path segment (`.`, `..`, `/`, `%`) are refused before anything is
 *    sent, with client-go's request.go texts, and one such pod does not stop the status manager
 *    from syncing the others;
 *  - a timeout or a cancellation names the verb and the URL (with client-go's `timeout=` query)
 *    as Go's `url.Error` around a context error;
 *  - a response about to be retried is not read without end (client-go's readAndCloseResponseBody).
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import { isValidPathSegmentName, newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { maxBodySlurpBytes, RequestError, RESTClient } from "../../src/client/rest.ts";
import { BasicPodManager } from "../../src/kubelet/pod/pod_manager.ts";
import { Manager } from "../../src/kubelet/status/mod.ts";
import { FakeClock } from "../../src/util/clock.ts";
import { AlwaysAcceptRateLimiter } from "../../src/util/flowcontrol/throttle.ts";
import { setLogSink } from "../../src/util/log.ts";

const unlimited = { rateLimiter: new AlwaysAcceptRateLimiter() };

/** A server answering `handler`, recording each request's method and path with query. */
async function withServer(
  handler: (req: Request) => Response | Promise<Response>,
  fn: (url: string, seen: string[]) => Promise<void>,
): Promise<void> {
  const seen: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    const url = new URL(req.url);
    seen.push(`${req.method} ${url.pathname}${url.search}`);
    return handler(req);
  });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

function pod(name: string, uid: string, namespace = "default"): Pod {
  return {
    kind: "Pod",
    apiVersion: "v1",
    metadata: { name, namespace, uid, resourceVersion: "1" },
    spec: { containers: [] },
  };
}

Deno.test("TestInvalidPathSegmentNames", async (t) => {
  await t.step("client-go's texts, and nothing is sent", async () => {
    await withServer(() => Response.json({}), async (url, seen) => {
      const client = newForConfig({ host: url, ...unlimited });
      const cases: [() => Promise<unknown>, string][] = [
        [
          () => client.coreV1.pods("default").get(".."),
          `invalid resource name "..": [may not be '..']`,
        ],
        [
          () => client.coreV1.pods("default").get("."),
          `invalid resource name ".": [may not be '.']`,
        ],
        [
          () => client.coreV1.pods("default").delete("a/b%c"),
          `invalid resource name "a/b%c": [may not contain '/' may not contain '%']`,
        ],
        [
          () =>
            client.coreV1.pods("default").patchStatus(
              "x%2F..",
              "application/merge-patch+json",
              "{}",
            ),
          `invalid resource name "x%2F..": [may not contain '%']`,
        ],
        [() => client.coreV1.pods("..").get("web"), `invalid namespace "..": [may not be '..']`],
        [
          () => client.coreV1.nodes().update({ metadata: { name: "" } }),
          "resource name may not be empty",
        ],
      ];
      for (const [call, message] of cases) {
        // A rejected promise, never a synchronous throw.
        let pending: Promise<unknown> | undefined;
        assert.doesNotThrow(() => pending = call());
        await assert.rejects(pending!, new Error(message));
      }
      assert.deepEqual(seen, []);
      client.close();
    });
  });

  await t.step("IsValidPathSegmentName", () => {
    assert.deepEqual(isValidPathSegmentName("web"), []);
    assert.deepEqual(isValidPathSegmentName("..."), []);
    assert.deepEqual(isValidPathSegmentName(".."), ["may not be '..'"]);
    assert.deepEqual(isValidPathSegmentName("%"), ["may not contain '%'"]);
  });

  await t.step("a pod named '..' does not keep the status manager from the others", async () => {
    const lines: string[] = [];
    const previous = setLogSink((l) => lines.push(l));
    const served = new Map([["web", pod("web", "uid-web")]]);
    try {
      await withServer((req) => {
        const name = new URL(req.url).pathname.split("/")[6];
        const found = served.get(name);
        if (!found) {
          return Response.json({ kind: "Status", code: 404, reason: "NotFound" }, { status: 404 });
        }
        return Response.json(found);
      }, async (url, seen) => {
        const client = newForConfig({ host: url, qps: -1 });
        const podManager = new BasicPodManager();
        const pods = [pod("..", "uid-dotdot"), pod("web", "uid-web"), pod("a/b", "uid-slash")];
        for (const p of pods) podManager.addPod(p);
        const m = new Manager({
          podManager,
          clock: new FakeClock(Date.UTC(2026, 10, 27)),
          kubeClient: client,
        });
        for (const p of pods) m.setPodStatus(p, { message: "hello" });
        while (m.consumeUpdate()) await m.syncBatch(false);
        assert.deepEqual(seen, [
          "GET /api/v1/namespaces/default/pods/web",
          "PATCH /api/v1/namespaces/default/pods/web/status",
        ]);
        const refused = lines.filter((l) => l.includes("Failed to get status for pod"));
        assert.equal(refused.length, 2, lines.join("\n"));
        assert.ok(
          refused[0].includes(`invalid resource name \\"..\\": [may not be '..']`),
          refused[0],
        );
        client.close();
      });
    } finally {
      setLogSink(previous);
    }
  });
});

Deno.test("TestRequestTimeoutError", async (t) => {
  await t.step(
    "no answer before the timeout: verb, URL with timeout=, deadline exceeded",
    async () => {
      const { promise: hung, resolve: release } = Promise.withResolvers<void>();
      await withServer(async () => {
        await hung;
        return Response.json({});
      }, async (url, seen) => {
        const clock = new FakeClock(0);
        const rest = new RESTClient({ host: url, ...unlimited, timeoutMs: 10_000 }, { clock });
        const pending = rest.json({ method: "GET", path: "/api/v1/nodes/n1" }).catch((e) => e);
        while (seen.length === 0) await clock.step(0);
        await clock.step(10_000);
        const err = await pending as RequestError;
        release();
        rest.close();
        assert.ok(err instanceof RequestError);
        assert.equal(
          err.message,
          `Get "${url}/api/v1/nodes/n1?timeout=10s": context deadline exceeded`,
        );
        assert.equal(err.timeout, true);
        assert.equal(err.name, "TimeoutError");
        assert.deepEqual(seen, ["GET /api/v1/nodes/n1?timeout=10s"]);
      });
    },
  );

  await t.step("the caller cancels: context canceled", async () => {
    const { promise: hung, resolve: release } = Promise.withResolvers<void>();
    const { promise: arrived, resolve: arrive } = Promise.withResolvers<void>();
    await withServer(async () => {
      arrive();
      await hung;
      return Response.json({});
    }, async (url) => {
      const rest = new RESTClient({ host: url, ...unlimited });
      const abort = new AbortController();
      const pending = rest.json({
        method: "PATCH",
        path: "/api/v1/nodes/n1/status",
        body: {},
        signal: abort.signal,
      })
        .catch((e) => e);
      await arrived;
      abort.abort();
      const err = await pending as Error;
      release();
      rest.close();
      assert.equal(err.message, `Patch "${url}/api/v1/nodes/n1/status": context canceled`);
      assert.equal(err.name, "AbortError");
    });
  });

  await t.step("the body stalls past the timeout", async () => {
    let ctrl!: ReadableStreamDefaultController<Uint8Array>;
    await withServer(() => {
      const body = new ReadableStream<Uint8Array>({ start: (c) => ctrl = c });
      ctrl.enqueue(new TextEncoder().encode('{"kind":'));
      return new Response(body, { headers: { "content-type": "application/json" } });
    }, async (url, seen) => {
      const clock = new FakeClock(0);
      const rest = new RESTClient({ host: url, ...unlimited, timeoutMs: 1500 }, { clock });
      const pending = rest.json({ method: "GET", path: "/api/v1/pods" }).catch((e) => e);
      while (seen.length === 0) await clock.step(0);
      await clock.step(1500);
      const err = await pending as Error;
      try {
        ctrl.close();
      } catch { /* cancelled by the client */ }
      rest.close();
      assert.equal(
        err.message,
        "unexpected error when reading response body. Please retry. Original error: context deadline exceeded",
      );
    });
  });
  await t.step("cancelled while waiting out Retry-After: context canceled", async () => {
    await withServer(
      () => new Response("busy", { status: 503, headers: { "Retry-After": "5" } }),
      async (url, seen) => {
        const clock = new FakeClock(0);
        const rest = new RESTClient({ host: url, ...unlimited }, { clock });
        const abort = new AbortController();
        const pending = rest.json({
          method: "GET",
          path: "/api/v1/nodes/n1",
          signal: abort.signal,
        }).catch((e) => e);
        while (seen.length === 0) await clock.step(0);
        await clock.step(1000);
        abort.abort();
        const err = await pending as Error;
        rest.close();
        assert.equal(err.message, `Get "${url}/api/v1/nodes/n1": context canceled`);
        assert.equal(seen.length, 1);
      },
    );
  });
});

Deno.test("TestRetryAfterBodyIsNotReadWithoutEnd", async () => {
  const capBytes = 64 * 1024 * 1024;
  let pulled = 0;
  let answers = 0;
  await withServer(() => {
    if (++answers > 1) return Response.json({ kind: "Node", metadata: { name: "n1" } });
    // A 503 with a 64 MiB body, produced only as the client reads it.
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (pulled >= capBytes) return c.close();
        pulled += 64 * 1024;
        c.enqueue(new Uint8Array(64 * 1024).fill(0x20));
      },
    }, { highWaterMark: 0 });
    return new Response(body, { status: 503, headers: { "Retry-After": "1" } });
  }, async (url, seen) => {
    const clock = new FakeClock(0);
    const rest = new RESTClient({ host: url, ...unlimited }, { clock });
    let done = false;
    const pending = rest.json<{ metadata: { name: string } }>({
      method: "GET",
      path: "/api/v1/nodes/n1",
    }).finally(() => done = true);
    // The Retry-After second is on the fake clock.
    while (!done) await clock.step(100);
    assert.equal((await pending).metadata.name, "n1");
    assert.equal(seen.length, 2);
    // At most 2 KiB is read (none here: no Content-Length); the rest is socket buffers.
    assert.ok(pulled < 16 * 1024 * 1024, `read ${pulled} bytes of a body that was dropped`);
    assert.equal(maxBodySlurpBytes, 2048);
    rest.close();
  });
});
