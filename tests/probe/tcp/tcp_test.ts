/**
 * Tests for the TCP probe; mirrors kubelet's pkg/probe/tcp/tcp_test.go plus the error texts.
 * @module
 */
import assert from "node:assert/strict";
import { newTcpProber } from "../../../src/probe/tcp/mod.ts";
import { joinHostPort } from "../../../src/probe/tcp/tcp.ts";
import type { Clock, ClockTimer } from "../../../src/util/clock.ts";

// A listener on 127.0.0.1 that accepts and drops connections; closed by the caller.
function listen(): { port: number; close: () => Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepting = (async () => {
    for await (const conn of listener) conn.close();
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close: async () => {
      listener.close();
      await accepting.catch(() => {});
    },
  };
}

// A clock on which every timer is already due: the connect deadline has passed before dialing.
const expiredClock: Clock = {
  now: () => 0,
  since: () => 0,
  afterFunc(_ms: number, fn: () => void): ClockTimer {
    fn();
    return { stop: () => false };
  },
  sleep: () => Promise.resolve(),
};

Deno.test("TestTcpHealthChecker", async (t) => {
  const server = listen();
  try {
    const prober = newTcpProber();
    await t.step("A connection is made and probing would succeed", async () => {
      const outcome = await prober.probe("127.0.0.1", { port: server.port, timeoutMs: 1000 });
      assert.deepEqual(outcome, { result: "success", output: "" });
    });
    await t.step("No connection can be made and probing would fail", async () => {
      const outcome = await prober.probe("127.0.0.1", { port: -1, timeoutMs: 1000 });
      assert.equal(outcome.result, "failure");
      assert.equal(outcome.error, undefined);
      assert.equal(outcome.output, "dial tcp: address -1: invalid port");
    });
  } finally {
    await server.close();
  }
});

Deno.test("TestTcpProbeErrorText", async (t) => {
  await t.step("refused connection reads like Go's dial error", async () => {
    const server = listen();
    const port = server.port;
    await server.close(); // nothing listens there any more
    const outcome = await newTcpProber().probe("127.0.0.1", { port, timeoutMs: 1000 });
    assert.deepEqual(outcome, {
      result: "failure",
      output: `dial tcp 127.0.0.1:${port}: connect: connection refused`,
    });
  });
  await t.step("IPv6 address is bracketed", async () => {
    const server = listen();
    const port = server.port;
    await server.close();
    const outcome = await newTcpProber().probe("::1", { port, timeoutMs: 1000 });
    assert.equal(outcome.result, "failure");
    assert.match(outcome.output, new RegExp(`^dial tcp \\[::1\\]:${port}: connect: `));
  });
  await t.step("deadline passed → i/o timeout", async () => {
    const server = listen();
    try {
      const prober = newTcpProber({ clock: expiredClock });
      const outcome = await prober.probe("127.0.0.1", { port: server.port, timeoutMs: 1000 });
      assert.deepEqual(outcome, {
        result: "failure",
        output: `dial tcp 127.0.0.1:${server.port}: i/o timeout`,
      });
    } finally {
      await server.close();
    }
  });
  await t.step("empty host dials this machine", async () => {
    const server = listen();
    try {
      const outcome = await newTcpProber().probe("", { port: server.port, timeoutMs: 1000 });
      assert.equal(outcome.result, "success");
    } finally {
      await server.close();
    }
  });
});

Deno.test("TestJoinHostPort", () => {
  assert.equal(joinHostPort("127.0.0.1", 80), "127.0.0.1:80");
  assert.equal(joinHostPort("fd00::1", 8080), "[fd00::1]:8080");
  assert.equal(joinHostPort("", 32), ":32");
});
