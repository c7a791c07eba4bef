/**
 * Tests for the gRPC probe against real servers on 127.0.0.1; mirrors kubelet's
 * pkg/probe/grpc/grpc_test.go, plus the unimplemented and user-agent texts.
 * @module
 */
import assert from "node:assert/strict";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { type GrpcProber, newGrpcProber } from "../../../src/probe/grpc/mod.ts";
import { encodeGrpcTimeout } from "../../../src/util/h2/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
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
      assert.match(request.userAgent, /^kube-probe\/1\.36 /);
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

// A TCP listener on 127.0.0.1 that accepts and never speaks (no HTTP/2 SETTINGS, no close).
async function startSilentListener(): Promise<
  { port: number; held: net.Socket[]; close: () => Promise<void> }
> {
  const held: net.Socket[] = [];
  const server = net.createServer((socket) => {
    socket.on("error", () => {});
    held.push(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    held,
    close: async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function openDescriptors(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}

// Lets pending close operations finish (a fixed number of macrotask turns, not a timed wait).
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

Deno.test("TestGrpcProberReleasesSocketsWhateverThePeerDoes", async () => {
  const listener = await startSilentListener();
  try {
    const clock = new FakeClock(0);
    const prober = newGrpcProber({ clock });
    const probe = async () => {
      const pending = prober.probe("127.0.0.1", {
        service: "",
        port: listener.port,
        timeoutMs: 1000,
      });
      // Wait until the server holds the connection, then let the deadline pass.
      const before = listener.held.length;
      while (listener.held.length === before) await new Promise((r) => setTimeout(r, 0));
      await clock.step(1000);
      return await pending;
    };
    // One probe first, so lazily loaded modules and the proto are not counted.
    await probe();
    await settle();
    const baseline = openDescriptors() - listener.held.length;
    const n = 20;
    for (let i = 0; i < n; i++) {
      assert.deepEqual(await probe(), {
        result: "failure",
        output: `timeout: failed to connect service "127.0.0.1:${listener.port}" within 1s: ` +
          "context deadline exceeded",
      });
    }
    // The server side still holds every connection: only the prober's own sockets must be gone.
    assert.equal(listener.held.length, n + 1);
    // Closing is asynchronous in Deno: allow a bounded number of event-loop turns for it.
    for (let i = 0; i < 20 && openDescriptors() - listener.held.length > baseline; i++) {
      await settle();
    }
    assert.equal(openDescriptors() - listener.held.length, baseline);
  } finally {
    await listener.close();
  }
});

Deno.test("TestGrpcProberHugeTimeout", async (t) => {
  // grpc-js's deadline timer overflowed past 2^31-1 ms and failed the probe at once.
  for (const timeoutSeconds of [2147484, 2 ** 31, 10 ** 9]) {
    await t.step(`timeoutSeconds ${timeoutSeconds} succeeds`, async () => {
      const server = await startHealthServer({ status: "SERVING" });
      try {
        const outcome = await newGrpcProber().probe("127.0.0.1", {
          service: "",
          port: server.port,
          timeoutMs: timeoutSeconds * 1000,
        });
        assert.deepEqual(outcome, { result: "success", output: "service healthy" });
      } finally {
        await server.close();
      }
    });
  }
  await t.step("grpc-timeout header as grpc-go encodes it", () => {
    assert.equal(encodeGrpcTimeout(1000), "1000000u");
    assert.equal(encodeGrpcTimeout(2147484000), "2147484S");
    assert.equal(encodeGrpcTimeout(0), "0n");
    assert.equal(encodeGrpcTimeout(99), "99000000n");
    assert.equal(encodeGrpcTimeout(2 ** 31 * 1000), "35791395M");
  });
});

Deno.test("TestGrpcProberDeadlineOnFakeClock", async () => {
  const listener = await startSilentListener();
  try {
    const clock = new FakeClock(0);
    let done = false;
    const pending = newGrpcProber({ clock }).probe("127.0.0.1", {
      service: "",
      port: listener.port,
      timeoutMs: 3000,
    }).finally(() => done = true);
    while (listener.held.length === 0) await new Promise((r) => setTimeout(r, 0));
    await clock.step(2999);
    assert.equal(done, false);
    await clock.step(1);
    assert.equal(
      (await pending).output,
      `timeout: failed to connect service "127.0.0.1:${listener.port}" within 3s: context deadline exceeded`,
    );
  } finally {
    await listener.close();
  }
});
