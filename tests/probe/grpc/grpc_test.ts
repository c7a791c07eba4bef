/**
 * Tests for the gRPC probe against real servers on 127.0.0.1; mirrors kubelet's
 * pkg/probe/grpc/grpc_test.go, plus the unimplemented and user-agent texts.
 * @module
 */
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { type GrpcProber, newGrpcProber } from "../../../src/probe/grpc/mod.ts";
import { startHealthServer } from "../../testing/grpc_health_server.ts";

Deno.test("TestNew", async (t) => {
  await t.step("Should: implement Probe interface", () => {
    const prober: GrpcProber = newGrpcProber();
    assert.equal(typeof prober.probe, "function");
  });
});

Deno.test("TestGrpcProber_Probe", async (t) => {
  await t.step("Should: failed but return nil error because cant find host", async () => {
    const outcome = await newGrpcProber().probe("", { service: "", port: 32, timeoutMs: 1000 });
    assert.deepEqual(outcome, {
      result: "failure",
      output: 'timeout: failed to connect service ":32" within 1s: context deadline exceeded',
    });
  });

  await t.step("Should: return nil error because connection closed", async () => {
    // node:http speaks HTTP/1 only (Deno.serve would also answer HTTP/2 prior knowledge).
    const server = http.createServer((_req, res) => res.end("res"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const outcome = await newGrpcProber().probe("127.0.0.1", {
        service: "",
        port,
        timeoutMs: 1000,
      });
      assert.equal(outcome.result, "failure");
      assert.equal(outcome.error, undefined);
      // The HTTP/2 handshake never succeeds, so the connect deadline passes, as with grpc-go.
      assert.equal(
        outcome.output,
        `timeout: failed to connect service "127.0.0.1:${port}" within 1s: context deadline exceeded`,
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  await t.step("Should: return nil error because server response not served", async () => {
    const server = await startHealthServer({ status: "NOT_SERVING" });
    try {
      const outcome = await newGrpcProber().probe("127.0.0.1", {
        service: "",
        port: server.port,
        timeoutMs: 1000,
      });
      assert.deepEqual(outcome, {
        result: "failure",
        output: 'service unhealthy (responded with "NOT_SERVING")',
      });
    } finally {
      await server.close();
    }
  });

  await t.step("Should: return nil-error because server not response in time", async () => {
    const server = await startHealthServer({ status: "SERVING", delayMs: 4000 });
    try {
      const outcome = await newGrpcProber().probe("127.0.0.1", {
        service: "",
        port: server.port,
        timeoutMs: 2000,
      });
      assert.deepEqual(outcome, {
        result: "failure",
        output: "timeout: health rpc did not complete within 2s",
      });
    } finally {
      await server.close();
    }
  });

  await t.step("Should: not return error because check was success", async () => {
    const server = await startHealthServer({ status: "SERVING" });
    try {
      const outcome = await newGrpcProber().probe("127.0.0.1", {
        service: "",
        port: server.port,
        timeoutMs: 2000,
      });
      assert.deepEqual(outcome, { result: "success", output: "service healthy" });
    } finally {
      await server.close();
    }
  });

  await t.step(
    "Should: not return error because check was success, when listen port is 0",
    async () => {
      // The server was asked for port 0 and the kernel chose one; the probe uses the chosen port.
      const server = await startHealthServer({ status: "SERVING", port: 0 });
      try {
        assert.notEqual(server.port, 0);
        const outcome = await newGrpcProber().probe("127.0.0.1", {
          service: "",
          port: server.port,
          timeoutMs: 2000,
        });
        assert.deepEqual(outcome, { result: "success", output: "service healthy" });
      } finally {
        await server.close();
      }
    },
  );
});

Deno.test("TestGrpcProberDetails", async (t) => {
  await t.step("server without the Health service → unimplemented text", async () => {
    const server = await startHealthServer({ implementHealth: false });
    try {
      const outcome = await newGrpcProber().probe("127.0.0.1", {
        service: "",
        port: server.port,
        timeoutMs: 1000,
      });
      assert.equal(outcome.result, "failure");
      assert.ok(
        outcome.output.startsWith(
          "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ",
        ),
        outcome.output,
      );
    } finally {
      await server.close();
    }
  });

  await t.step("sends the service name, kube-probe user agent and no metadata", async () => {
    const server = await startHealthServer({ status: "SERVING" });
    try {
      await newGrpcProber().probe("127.0.0.1", {
        service: "my.Service",
        port: server.port,
        timeoutMs: 1000,
      });
      assert.equal(server.requests.length, 1);
      const [request] = server.requests;
      assert.equal(request.service, "my.Service");
      assert.match(request.userAgent, /^kube-probe\/1\.35 /);
      assert.deepEqual(request.customMetadataKeys, []);
    } finally {
      await server.close();
    }
  });

  await t.step("status changes are seen by the next probe", async () => {
    const server = await startHealthServer({ status: "SERVING" });
    try {
      const prober = newGrpcProber();
      const probe = () =>
        prober.probe("127.0.0.1", { service: "", port: server.port, timeoutMs: 1000 });
      assert.equal((await probe()).result, "success");
      server.setStatus("SERVICE_UNKNOWN");
      assert.deepEqual(await probe(), {
        result: "failure",
        output: 'service unhealthy (responded with "SERVICE_UNKNOWN")',
      });
    } finally {
      await server.close();
    }
  });

  await t.step("IPv6 address is bracketed in the text", async () => {
    const outcome = await newGrpcProber().probe("::1", { service: "", port: 32, timeoutMs: 500 });
    assert.deepEqual(outcome, {
      result: "failure",
      output:
        'timeout: failed to connect service "[::1]:32" within 500ms: context deadline exceeded',
    });
  });
});
