/**
 * Tests for the probe pool: a probe run on a pool thread gives the same outcome as the same handler
 * on the calling thread, and the prober's verdicts and events are the same with or without a pool.
 * Real servers on 127.0.0.1.
 * @module
 */
import assert from "node:assert/strict";
import type { Container, Pod, Probe } from "../../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import { newProber } from "../../../src/kubelet/prober/prober.ts";
import { newHttpProber, newProbeRequest } from "../../../src/probe/http/mod.ts";
import { newTcpProber } from "../../../src/probe/tcp/mod.ts";
import { newGrpcProber } from "../../../src/probe/grpc/mod.ts";
import { ProbePool, ProbePoolClosedError } from "../../../src/probe/pool/mod.ts";
import { ProbeBudget } from "../../../src/probe/budget.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { redirect, startServer, startTLSServer } from "../http/test_server.ts";
import { startHealthServer } from "../../testing/grpc_health_server.ts";

Deno.test("TestProbePoolSameOutcomeAsCallingThread", async (t) => {
  const server = await startServer((req, res) => {
    if (req.url === "/fail") {
      res.writeHead(500);
      res.end("no");
    } else if (req.url === "/away") {
      redirect(res, "http://example.invalid/", 302);
    } else if (req.url === "/cut") {
      res.writeHead(200, { "Content-Length": "100" });
      res.write("abc", () => res.destroy());
    } else {
      res.end(`ok ${req.headers["user-agent"]} ${req.headers["x-custom"] ?? ""}`);
    }
  });
  const tlsServer = await startTLSServer((_req, res) => res.end("tls"));
  const grpcServer = await startHealthServer({ status: "SERVING" });
  const unhealthy = await startHealthServer({ status: "NOT_SERVING" });
  const pool = new ProbePool(2, { inlineBelowPerSecond: 0 });
  try {
    const http = newHttpProber();
    for (
      const [url, headers] of [
        [`${server.url}/`, { "X-Custom": ["a", "b"] }],
        [`${server.url}/fail`, undefined],
        [`${server.url}/away`, undefined],
        [`${server.url}/cut`, undefined],
        ["http://127.0.0.1:1/", undefined],
        [`${tlsServer.url}/x`, undefined],
        [`${server.url}/a%2Fb?q=1`, undefined],
      ] as const
    ) {
      await t.step(`http ${url}`, async () => {
        const { request, error } = newProbeRequest(url, headers);
        assert.equal(error, undefined);
        const direct = await http.probe(request!, { timeoutMs: 2000 });
        const pooled = await pool.http.probe(request!, { timeoutMs: 2000 });
        assert.deepEqual(pooled, direct);
      });
    }
    const tcp = newTcpProber();
    for (const port of [server.port, 1]) {
      await t.step(`tcp ${port}`, async () => {
        const options = { port, timeoutMs: 1000 };
        assert.deepEqual(
          await pool.tcp.probe("127.0.0.1", options),
          await tcp.probe("127.0.0.1", options),
        );
      });
    }
    const grpc = newGrpcProber();
    for (const port of [grpcServer.port, unhealthy.port]) {
      await t.step(`grpc ${port}`, async () => {
        const options = { service: "", port, timeoutMs: 1000 };
        assert.deepEqual(
          await pool.grpc.probe("127.0.0.1", options),
          await grpc.probe("127.0.0.1", options),
        );
      });
    }
    await t.step("many probes at once are spread and all answered", async () => {
      const outcomes = await Promise.all(
        Array.from(
          { length: 200 },
          () => pool.tcp.probe("127.0.0.1", { port: server.port, timeoutMs: 2000 }),
        ),
      );
      assert.ok(outcomes.every((o) => o.result === "success"));
      assert.equal(pool.inFlight, 0);
    });
  } finally {
    pool.close();
    await server.close();
    await tlsServer.close();
    await grpcServer.close();
    await unhealthy.close();
  }
});

Deno.test("TestProberWithPoolSameVerdictsAndEvents", async () => {
  const server = await startServer((req, res) => {
    res.writeHead(req.url === "/bad" ? 503 : 200);
    res.end("body");
  });
  const pool = new ProbePool(2, { inlineBelowPerSecond: 0 });
  try {
    const probes: Probe[] = [
      { httpGet: { path: "/", port: server.port, host: "127.0.0.1" }, timeoutSeconds: 1 },
      { httpGet: { path: "/bad", port: server.port, host: "127.0.0.1" }, timeoutSeconds: 1 },
      { tcpSocket: { port: 1, host: "127.0.0.1" }, timeoutSeconds: 1 },
      { grpc: { port: 1 }, timeoutSeconds: 1 },
    ];
    for (const probe of probes) {
      const container: Container = { name: "c", livenessProbe: probe };
      const pod: Pod = {
        metadata: { name: "p", namespace: "default", uid: "u" },
        spec: { containers: [container] },
      };
      const target = {
        pod,
        status: { podIP: "127.0.0.1" },
        container,
        containerID: { type: "test", id: "1" },
      };
      const runWith = async (withPool: boolean) => {
        const recorder = new FakeRecorder();
        const prober = newProber(undefined, recorder, {
          budget: new ProbeBudget(10),
          pool: withPool ? pool : undefined,
        });
        const result = await prober.probe("liveness", target);
        return { result, events: recorder.events };
      };
      assert.deepEqual(await runWith(true), await runWith(false));
    }
  } finally {
    pool.close();
    await server.close();
  }
});

Deno.test("TestProbePoolClose", async () => {
  const pool = new ProbePool(1, { inlineBelowPerSecond: 0 });
  // A probe that cannot finish before close: a deadline far away on an unroutable target.
  const pending = pool.tcp.probe("10.255.255.1", { port: 9, timeoutMs: 60_000 });
  pool.close();
  const outcome = await pending;
  assert.equal(outcome.result, "unknown");
  assert.equal(outcome.error?.message, "probe pool closed");
  const after = await pool.tcp.probe("127.0.0.1", { port: 1, timeoutMs: 100 });
  assert.equal(after.error?.message, "probe pool closed");
});

Deno.test("TestProbePoolRunsInlineBelowTheRate", async () => {
  const server = await startServer((_req, res) => res.end("ok"));
  const pool = new ProbePool(1, { inlineBelowPerSecond: 3 });
  try {
    const { request } = newProbeRequest(`${server.url}/`);
    const direct = await newHttpProber().probe(request!, { timeoutMs: 2000 });
    for (let i = 0; i < 5; i++) {
      assert.deepEqual(await pool.http.probe(request!, { timeoutMs: 2000 }), direct);
    }
    // The first three of the second ran here, the others on the thread.
    assert.equal(pool.inlined, 3);
  } finally {
    pool.close();
    await server.close();
  }
});

Deno.test("TestProbePoolInlineBudgetWeighsTheKind", async () => {
  const server = await startTLSServer((_req, res) => res.end("tls"));
  // Budget 9 plain-HTTP probes a second: an HTTPS probe counts 2, a gRPC one 1.5.
  const pool = new ProbePool(1, { inlineBelowPerSecond: 9 });
  const grpcServer = await startHealthServer({ status: "SERVING" });
  try {
    const { request } = newProbeRequest(`${server.url}/`);
    for (let i = 0; i < 5; i++) {
      assert.deepEqual(await pool.http.probe(request!, { timeoutMs: 2000 }), {
        result: "success",
        output: "tls",
      });
    }
    // Four HTTPS probes (8) fit the second; the fifth (10) ran on the thread.
    assert.equal(pool.inlined, 4);
    const grpc = await pool.grpc.probe("127.0.0.1", {
      service: "",
      port: grpcServer.port,
      timeoutMs: 2000,
    });
    assert.equal(grpc.result, "success");
    assert.equal(pool.inlined, 4, "the budget of this second is spent");
  } finally {
    pool.close();
    await server.close();
    await grpcServer.close();
  }
});

Deno.test("TestProberPoolClosedRecordsNoEvent", async () => {
  // A probe cut by the agent's stop (the pool closes under it) is not the container's fault.
  const pool = new ProbePool(1, { inlineBelowPerSecond: 0 });
  const container: Container = {
    name: "c",
    livenessProbe: { tcpSocket: { port: 9, host: "10.255.255.1" }, timeoutSeconds: 60 },
  };
  const pod: Pod = {
    metadata: { name: "p", namespace: "default", uid: "u" },
    spec: { containers: [container] },
  };
  const recorder = new FakeRecorder();
  const prober = newProber(undefined, recorder, { budget: new ProbeBudget(10), pool });
  const pending = prober.probe("liveness", {
    pod,
    status: { podIP: "127.0.0.1" },
    container,
    containerID: { type: "test", id: "1" },
  });
  pool.close();
  const result = await pending;
  assert.ok(result.error instanceof ProbePoolClosedError);
  assert.deepEqual(recorder.events, []);
});

Deno.test("TestProbePoolStartsThreadsOnDemandAndStopsThemIdle", async (t) => {
  // A pool thread is a V8 isolate (≈ 19 MiB resident): none runs until the rate needs one, and
  // one without a probe for the idle timeout stops. The fake clock drives the rate's one-second
  // windows and the idle timeout; the threads and the server are real.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const accepting = (async () => {
    for await (const conn of listener) conn.close();
  })();
  const clock = new FakeClock(0);
  const pool = new ProbePool(2, { inlineBelowPerSecond: 3, idleTimeoutMs: 30_000, clock });
  const probe = () => pool.tcp.probe("127.0.0.1", { port, timeoutMs: 2000 });
  try {
    await t.step("no thread before a probe", () => {
      assert.equal(pool.threads, 0);
      assert.equal(pool.threadsStarted, 0);
    });
    await t.step("probes within the inline budget start none", async () => {
      for (let i = 0; i < 3; i++) assert.equal((await probe()).result, "success");
      assert.equal(pool.inlined, 3);
      assert.equal(pool.threads, 0);
    });
    await t.step("the first probe past the budget starts one", async () => {
      assert.equal((await probe()).result, "success");
      assert.equal(pool.inlined, 3);
      assert.equal(pool.threads, 1);
      assert.equal(pool.threadsStarted, 1);
    });
    await t.step("an idle thread takes the next probe: no second one", async () => {
      assert.equal((await probe()).result, "success");
      assert.equal(pool.threadsStarted, 1);
    });
    await t.step("probes at once while it is busy start a second, never a third", async () => {
      const outcomes = await Promise.all(Array.from({ length: 6 }, probe));
      assert.ok(outcomes.every((o) => o.result === "success"));
      assert.equal(pool.threads, 2);
      assert.equal(pool.threadsStarted, 2);
    });
    await t.step("a thread stops after the idle timeout, not before", async () => {
      await clock.step(29_999);
      assert.equal(pool.threads, 2);
      await clock.step(1);
      assert.equal(pool.threads, 0);
      assert.equal(pool.threadsStoppedIdle, 2);
      assert.equal(clock.pendingTimers(), 0, "no idle timer left behind");
    });
    await t.step("a probe before the timeout keeps its thread", async () => {
      // A new one-second window (the clock moved 30 s): the budget is spent again first.
      for (let i = 0; i < 3; i++) await probe();
      assert.equal(pool.threads, 0);
      await probe();
      assert.equal(pool.threads, 1);
      await clock.step(20_000);
      for (let i = 0; i < 4; i++) await probe(); // window reset: 3 inline, 1 on the thread
      await clock.step(20_000);
      assert.equal(pool.threads, 1, "20 s after its last probe");
      await clock.step(10_000);
      assert.equal(pool.threads, 0);
      assert.equal(pool.threadsStarted, 3);
    });
  } finally {
    pool.close();
    listener.close();
    await accepting.catch(() => {});
  }
});
