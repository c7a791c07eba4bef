/**
 * HTTP-level tests of the REST client and the HTTP clientset against a real local server: paths,
 * query strings, bodies byte for byte, content types, Status errors, Retry-After, timeouts on the
 * injected clock, watch streams and each way they end.
 * @module
 */
import assert from "node:assert/strict";
import { newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { RESTClient } from "../../src/client/rest.ts";
import { isConflict, isNotFound, isTooManyRequests, StatusError } from "../../src/client/errors.ts";
import { FakeClock } from "../../src/util/clock.ts";
import { AlwaysAcceptRateLimiter } from "../../src/util/flowcontrol/throttle.ts";
import type { Pod } from "../../src/api/core/v1/mod.ts";

/** One request as the server saw it. */
interface Seen {
  method: string;
  path: string;
  query: string;
  contentType: string | null;
  body: string;
  headers: Headers;
}

type Handler = (req: Request, seen: Seen) => Response | Promise<Response>;

async function withServer(handler: Handler, fn: (url: string, seen: Seen[]) => Promise<void>) {
  const seen: Seen[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const s: Seen = {
      method: req.method,
      path: url.pathname,
      query: url.search,
      contentType: req.headers.get("content-type"),
      body: await req.text(),
      headers: req.headers,
    };
    seen.push(s);
    return handler(req, s);
  });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });

const unlimited = { rateLimiter: new AlwaysAcceptRateLimiter() };

Deno.test("RESTClient: verbs, paths, query parameters and bodies on the wire", async (t) => {
  const podJson =
    '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","creationTimestamp":"2026-11-23T04:50:00Z"},"spec":{"containers":[{"name":"app"}],"futureSpecField":{"x":1}},"status":{"startTime":"2026-11-23T04:50:00Z"}}';
  await withServer((_req, s) => {
    if (s.method === "DELETE") return json({ kind: "Status", apiVersion: "v1", status: "Success" });
    return json(podJson);
  }, async (url, seen) => {
    const client = newForConfig({ host: url, ...unlimited, userAgent: "probelet-test/1" });
    const pods = client.coreV1.pods("default");

    await t.step("GET keeps unknown fields and time strings exactly", async () => {
      const pod = await pods.get("web");
      assert.equal(JSON.stringify(pod), podJson);
      assert.equal(seen[0].path, "/api/v1/namespaces/default/pods/web");
      assert.equal(seen[0].headers.get("user-agent"), "probelet-test/1");
      assert.equal(seen[0].headers.get("accept"), "application/json, */*");
    });

    await t.step("LIST and WATCH options become query parameters", async () => {
      await client.coreV1.pods().list({
        fieldSelector: "spec.nodeName=node-1",
        resourceVersion: "0",
        limit: 500,
      });
      assert.equal(seen[1].path, "/api/v1/pods");
      assert.equal(
        seen[1].query,
        "?fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=0&limit=500",
      );
    });

    await t.step(
      "PATCH of the status subresource sends the bytes and content type given",
      async () => {
        const body = '{"metadata":{"uid":"u1"},"status":{"phase":"Running"}}';
        await pods.patchStatus("web", "application/strategic-merge-patch+json", body);
        const s = seen[2];
        assert.deepStrictEqual([s.method, s.path, s.contentType, s.body], [
          "PATCH",
          "/api/v1/namespaces/default/pods/web/status",
          "application/strategic-merge-patch+json",
          body,
        ]);
      },
    );

    await t.step("POST adds kind/apiVersion first; leases live under their group", async () => {
      await client.coordinationV1.leases("kube-node-lease").create({
        metadata: { name: "node-1" },
        spec: { holderIdentity: "node-1" },
      });
      const s = seen[3];
      assert.equal(s.path, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases");
      assert.equal(
        s.body,
        '{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"node-1"},"spec":{"holderIdentity":"node-1"}}',
      );
      assert.equal(s.contentType, "application/json");
    });

    await t.step("PUT of nodes/<n>/status", async () => {
      await client.coreV1.nodes().updateStatus({
        metadata: { name: "node-1", resourceVersion: "7" },
      });
      assert.deepStrictEqual([seen[4].method, seen[4].path], [
        "PUT",
        "/api/v1/nodes/node-1/status",
      ]);
    });

    await t.step("DELETE sends DeleteOptions as the body", async () => {
      await pods.delete("web", { gracePeriodSeconds: 0, preconditions: { uid: "u1" } });
      assert.equal(seen[5].body, '{"gracePeriodSeconds":0,"preconditions":{"uid":"u1"}}');
    });
    client.close();
  });
});

Deno.test("RESTClient: failures become StatusError", async (t) => {
  let retries = 0;
  await withServer((_req, s) => {
    if (s.path.endsWith("/missing")) {
      return json({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'pods "missing" not found',
        reason: "NotFound",
        details: { name: "missing", kind: "pods" },
        code: 404,
      }, 404);
    }
    if (s.path.endsWith("/plain")) return new Response("upstream broke", { status: 502 });
    if (s.path.endsWith("/busy")) {
      retries++;
      return retries < 3
        ? json(
          { kind: "Status", code: 429, reason: "TooManyRequests", message: "slow down" },
          429,
          {
            "Retry-After": "0",
          },
        )
        : json({ kind: "Pod", metadata: { name: "busy" } });
    }
    if (s.path.endsWith("/always-busy")) {
      return json({ kind: "Status", code: 429, reason: "TooManyRequests", message: "slow" }, 429, {
        "Retry-After": "0",
      });
    }
    return json({ kind: "Status", code: 409, reason: "Conflict", message: "conflict" }, 409);
  }, async (url) => {
    const client = newForConfig({ host: url, ...unlimited }, { maxRetries: 4 });
    const pods = client.coreV1.pods("default");
    await t.step("the server's Status is kept as sent", async () => {
      const err = await pods.get("missing").catch((e) => e);
      assert.ok(err instanceof StatusError);
      assert.equal(isNotFound(err), true);
      assert.equal(err.message, 'pods "missing" not found');
      assert.deepStrictEqual(err.status.details, { name: "missing", kind: "pods" });
    });
    await t.step("a body that is not a Status gives a generic status for the code", async () => {
      const err = await pods.get("plain").catch((e) => e);
      assert.equal(err.status.code, 502);
      assert.equal(err.status.reason, "InternalError");
      assert.match(err.message, /upstream broke/);
    });
    await t.step("429 with Retry-After is retried", async () => {
      assert.equal((await pods.get("busy")).metadata.name, "busy");
      assert.equal(retries, 3);
    });
    await t.step("retries stop at maxRetries and the last error is returned", async () => {
      const err = await pods.get("always-busy").catch((e) => e);
      assert.equal(isTooManyRequests(err), true);
      assert.equal(err.status.details?.retryAfterSeconds, 0);
    });
    await t.step("409 without Retry-After is not retried", async () => {
      assert.equal(
        isConflict(await pods.update({ metadata: { name: "x" } } as Pod).catch((e) => e)),
        true,
      );
    });
    client.close();
  });
});

Deno.test("RESTClient: a request timeout runs on the injected clock", async () => {
  let release!: () => void;
  const hung = new Promise<void>((r) => release = r);
  await withServer(async () => {
    await hung;
    return json({});
  }, async (url, seen) => {
    const clock = new FakeClock(0);
    const rest = new RESTClient({ host: url, ...unlimited, timeoutMs: 5000 }, { clock });
    const pending = rest.json({ method: "GET", path: "/api/v1/nodes/n1" }).catch((e) => e);
    while (seen.length === 0) await clock.step(0);
    await clock.step(4999);
    let settled = false;
    pending.then(() => settled = true);
    await clock.step(0);
    assert.equal(settled, false);
    await clock.step(1);
    const err = await pending;
    assert.equal((err as Error).name, "TimeoutError");
    release();
    rest.close();
  });
});

Deno.test("RESTClient: bearer token from a token file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/token`, "s3cret\n");
    await withServer(() => json({}), async (url, seen) => {
      const rest = new RESTClient({ host: url, ...unlimited, bearerTokenFile: `${dir}/token` });
      await rest.json({ method: "GET", path: "/api" });
      assert.equal(seen[0].headers.get("authorization"), "Bearer s3cret");
      rest.close();
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// A watch response the test writes to line by line.
function streamResponse() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => controller = c });
  const enc = new TextEncoder();
  return {
    response: new Response(body, { headers: { "content-type": "application/json" } }),
    send: (event: unknown) => controller.enqueue(enc.encode(JSON.stringify(event) + "\n")),
    sendRaw: (text: string) => controller.enqueue(enc.encode(text)),
    close: () => controller.close(),
    fail: () => controller.error(new Error("connection reset")),
  };
}

Deno.test("RESTClient: a watch never answered within the idle timeout fails and drops the pooled connections", async () => {
  const clock = new FakeClock(0);
  // A dead connection: the request goes out and nothing ever comes back until it is aborted.
  const hanging: typeof fetch = (_input, init) =>
    new Promise((_resolve, reject) =>
      init?.signal?.addEventListener("abort", () => reject(init.signal!.reason), { once: true })
    );
  const rest = new RESTClient({ host: "http://127.0.0.1:1", ...unlimited }, {
    clock,
    fetch: hanging,
  });
  let dropped = 0;
  rest.closeAllConns = () => void dropped++;
  const watch = rest.watch({ method: "GET", path: "/api/v1/pods" }, { idleTimeoutMs: 90_000 });
  const outcome = watch.then(() => "answered", (e: Error) => e.message);
  await clock.step(89_999);
  assert.equal(dropped, 0, "not before the idle timeout");
  await clock.step(1);
  assert.equal(await outcome, "watch /api/v1/pods: no answer after 90000 ms; reconnecting");
  assert.equal(dropped, 1);
  // Without an idle timeout nothing is armed: the caller's signal is the only way out.
  const abort = new AbortController();
  const plain = rest.watch({ method: "GET", path: "/api/v1/pods", signal: abort.signal });
  const plainOutcome = plain.then(() => "answered", () => "aborted");
  await clock.step(3_600_000);
  abort.abort();
  assert.equal(await plainOutcome, "aborted");
  assert.equal(dropped, 1);
});

Deno.test("RESTClient: watch streams", async (t) => {
  let stream = streamResponse();
  await withServer(() => stream.response, async (url, seen) => {
    const clock = new FakeClock(0);
    const client = newForConfig({ host: url, ...unlimited }, { clock, watchIdleTimeoutMs: 90_000 });
    const pods = client.coreV1.pods();

    await t.step("events split across chunks decode; server close ends the iteration", async () => {
      const w = await pods.watch({
        resourceVersion: "5",
        allowWatchBookmarks: true,
        timeoutSeconds: 300,
      });
      assert.equal(
        seen[0].query,
        "?resourceVersion=5&timeoutSeconds=300&allowWatchBookmarks=true&watch=true",
      );
      stream.send({ type: "ADDED", object: { metadata: { name: "a", resourceVersion: "6" } } });
      stream.sendRaw('{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1",');
      stream.sendRaw('"metadata":{"resourceVersion":"9"}}}\n');
      stream.close();
      const got: string[] = [];
      for await (const e of w) got.push(`${e.type} ${e.object.metadata.resourceVersion}`);
      assert.deepStrictEqual(got, ["ADDED 6", "BOOKMARK 9"]);
      assert.equal((w as unknown as { endReason: string }).endReason, "server-closed");
    });

    await t.step("stop() ends a quiet watch at once", async () => {
      stream = streamResponse();
      const w = await pods.watch({ resourceVersion: "9" });
      const done = (async () => {
        const got = [];
        for await (const e of w) got.push(e);
        return got;
      })();
      w.stop();
      assert.deepStrictEqual(await done, []);
    });

    await t.step("a watch quiet for the idle timeout ends instead of going deaf", async () => {
      stream = streamResponse();
      const w = await pods.watch({ resourceVersion: "9" });
      const it = w[Symbol.asyncIterator]();
      const next = it.next();
      stream.send({ type: "MODIFIED", object: { metadata: { name: "a", resourceVersion: "10" } } });
      assert.equal((await next).value?.type, "MODIFIED");
      const end = it.next();
      await clock.step(89_999);
      await clock.step(1);
      assert.deepStrictEqual(await end, { value: undefined, done: true });
      assert.equal((w as unknown as { endReason: string }).endReason, "idle");
    });

    await t.step("a broken connection makes the iteration throw", async () => {
      stream = streamResponse();
      const w = await pods.watch({ resourceVersion: "9" });
      const it = w[Symbol.asyncIterator]();
      const next = it.next();
      stream.sendRaw('{"type":"ADDED","obj');
      stream.fail();
      await assert.rejects(next);
      w.stop();
    });

    await t.step("a watch refused by the server rejects with its Status", async () => {
      stream = {
        ...streamResponse(),
        response: json({ kind: "Status", code: 403, reason: "Forbidden", message: "nope" }, 403),
      };
      const err = await pods.watch({}).catch((e) => e);
      assert.equal(err.status.reason, "Forbidden");
    });
    client.close();
  });
});

Deno.test("RESTClient: a GET whose connection is reset is retried after 1 s; a POST is not", async () => {
  const net = await import("node:net");
  let connections = 0;
  let answer = false;
  const server = net.createServer((socket) => {
    connections++;
    socket.once("data", () => {
      if (!answer) return socket.resetAndDestroy();
      const body = '{"metadata":{"name":"x"}}';
      socket.end(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
          `connection: close\r\n\r\n${body}`,
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const clock = new FakeClock(0);
  const client = newForConfig({ host: `http://127.0.0.1:${port}`, ...unlimited }, { clock });
  try {
    // Every connection is reset: the GET waits 1 s on the clock between attempts.
    let settled = false;
    const pending = client.coreV1.nodes().get("x").finally(() => settled = true);
    while (clock.pendingTimers() === 0) await clock.step(0);
    assert.equal(settled, false);
    const before = connections;
    answer = true;
    await clock.step(1000);
    assert.equal((await pending).metadata.name, "x");
    assert.ok(connections > before, "a new connection after the pause");

    answer = false;
    const err = await client.coreV1.nodes().create({ metadata: { name: "y" } }).catch((e) => e);
    assert.match(
      String(err),
      /POST http:\/\/127\.0\.0\.1:\d+\/api\/v1\/nodes: fetch failed: .*connection/i,
    );
    assert.equal(clock.pendingTimers(), 0, "no retry of a write");
  } finally {
    client.close();
    await new Promise((r) => server.close(r));
  }
});
