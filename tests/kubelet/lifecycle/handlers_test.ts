/**
 * Tests of the lifecycle handler runner, ported from kubelet's pkg/kubelet/lifecycle/handlers_test.go.
 * HTTP hooks go to real servers on 127.0.0.1; sleep hooks run on a fake clock.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Container, LifecycleHandler, Pod } from "../../../src/api/core/v1/mod.ts";
import type { CommandRunner } from "../../../src/kubelet/container/command_runner.ts";
import type { ContainerID } from "../../../src/kubelet/container/container_id.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import { newHandlerRunner } from "../../../src/kubelet/lifecycle/handlers.ts";
import { newHttpClient } from "../../../src/probe/http/mod.ts";
import { ExitError } from "../../../src/util/exec/errors.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";

class FakeCommandRunner implements CommandRunner {
  cmd: string[] = [];
  id?: ContainerID;
  timeoutMs?: number;
  constructor(readonly result: { output?: string; error?: Error } = {}) {}
  runInContainer(
    id: ContainerID,
    cmd: string[],
    options: { timeoutMs: number },
  ): Promise<Uint8Array> {
    this.cmd = cmd;
    this.id = id;
    this.timeoutMs = options.timeoutMs;
    if (this.result.error) return Promise.reject(this.result.error);
    return Promise.resolve(new TextEncoder().encode(this.result.output ?? ""));
  }
}

const containerID: ContainerID = { type: "test", id: "abc1234" };

function testPod(): Pod {
  return {
    metadata: { name: "podFoo", namespace: "nsFoo", uid: "uid1" },
    spec: { containers: [] },
  };
}

function runnerWith(options: {
  commandRunner?: CommandRunner;
  ips?: string[];
  clock?: FakeClock;
  recorder?: FakeRecorder;
}) {
  return newHandlerRunner({
    httpDoer: newHttpClient(),
    commandRunner: options.commandRunner ?? new FakeCommandRunner(),
    containerManager: { getPodStatus: () => Promise.resolve({ ips: options.ips ?? [] }) },
    eventRecorder: options.recorder,
    clock: options.clock,
  });
}

/** A real server on 127.0.0.1 recording each request's path and headers. */
function testServer(respond: (req: Request) => Response = () => new Response("ok")) {
  const requests: { path: string; headers: Headers }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    requests.push({ path: url.pathname + url.search, headers: req.headers });
    return respond(req);
  });
  return { server, requests, port: server.addr.port };
}

Deno.test("TestRunHandlerExec", async () => {
  const fake = new FakeCommandRunner();
  const container: Container = {
    name: "foo",
    lifecycle: { postStart: { exec: { command: ["ls", "-a"] } } },
  };
  const { message, error } = await runnerWith({ commandRunner: fake }).run(
    containerID,
    testPod(),
    container,
    container.lifecycle!.postStart!,
  );
  assertEquals(error, undefined);
  assertEquals(message, "");
  assertEquals(fake.id, containerID);
  assertEquals(fake.cmd, ["ls", "-a"]);
  // kubelet passes no timeout.
  assertEquals(fake.timeoutMs, 0);
});

Deno.test("TestRunHandlerExecFailure", async () => {
  const error = new ExitError(1, {
    message: "command 'false' exited with 1: ",
    output: new TextEncoder().encode("some error message"),
  });
  const fake = new FakeCommandRunner({ error });
  const container: Container = {
    name: "foo",
    lifecycle: { postStart: { exec: { command: ["false"] } } },
  };
  const result = await runnerWith({ commandRunner: fake }).run(
    containerID,
    testPod(),
    container,
    container.lifecycle!.postStart!,
  );
  assertEquals(result.error, error);
  assertEquals(
    result.message,
    `Exec lifecycle hook ([false]) for Container "foo" in Pod "podFoo_nsFoo(uid1)" failed - ` +
      `error: command 'false' exited with 1: , message: "some error message"`,
  );
});

Deno.test("TestRunHandlerHttp", async () => {
  const { server, requests, port } = testServer();
  try {
    const container: Container = {
      name: "foo",
      lifecycle: { postStart: { httpGet: { host: "127.0.0.1", port, path: "bar" } } },
    };
    const { error } = await runnerWith({}).run(
      containerID,
      testPod(),
      container,
      container.lifecycle!.postStart!,
    );
    assertEquals(error, undefined);
    assertEquals(requests.map((r) => r.path), ["/bar"]);
    assert(requests[0].headers.get("user-agent")?.startsWith("kube-lifecycle/"));
  } finally {
    await server.shutdown();
  }
});

Deno.test("TestRunHandlerHttpWithHeaders", async () => {
  const { server, requests, port } = testServer();
  try {
    const handler: LifecycleHandler = {
      httpGet: {
        host: "127.0.0.1",
        port,
        path: "/foo",
        httpHeaders: [{ name: "Foo", value: "bar" }],
      },
    };
    const { error } = await runnerWith({}).run(containerID, testPod(), { name: "foo" }, handler);
    assertEquals(error, undefined);
    assertEquals(requests[0].headers.get("foo"), "bar");
  } finally {
    await server.shutdown();
  }
});

Deno.test("TestRunHandlerHttpPodIP", async (t) => {
  await t.step("no host: the pod's first IP", async () => {
    const { server, requests, port } = testServer();
    try {
      const handler: LifecycleHandler = { httpGet: { port, path: "/ip" } };
      const { error } = await runnerWith({ ips: ["127.0.0.1", "::1"] }).run(
        containerID,
        testPod(),
        { name: "foo" },
        handler,
      );
      assertEquals(error, undefined);
      assertEquals(requests.map((r) => r.path), ["/ip"]);
    } finally {
      await server.shutdown();
    }
  });
  await t.step("no host and no pod IP: an error", async () => {
    const handler: LifecycleHandler = { httpGet: { port: 80, path: "/" } };
    const { error, message } = await runnerWith({}).run(
      containerID,
      testPod(),
      { name: "foo" },
      handler,
    );
    assert(error?.message.startsWith("failed to find networking container"), String(error));
    assert(message.startsWith('HTTP lifecycle hook (/) for Container "foo" in Pod'), message);
  });
});

Deno.test("TestRunHandlerHttpFailure", async (t) => {
  await t.step("a non-2xx status still counts as run, as in kubelet", async () => {
    const { server, port } = testServer(() => new Response("fail", { status: 500 }));
    try {
      const handler: LifecycleHandler = { httpGet: { host: "127.0.0.1", port, path: "bar" } };
      const { error } = await runnerWith({}).run(containerID, testPod(), { name: "foo" }, handler);
      assertEquals(error, undefined);
    } finally {
      await server.shutdown();
    }
  });
  await t.step("a refused connection fails the hook", async () => {
    // A port nothing listens on: bind one, then close it.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const handler: LifecycleHandler = { httpGet: { host: "127.0.0.1", port, path: "bar" } };
    const { error, message } = await runnerWith({}).run(
      containerID,
      testPod(),
      { name: "foo" },
      handler,
    );
    assert(error);
    assertEquals(
      message,
      `HTTP lifecycle hook (bar) for Container "foo" in Pod "podFoo_nsFoo(uid1)" failed - ` +
        `error: ${error.message}`,
    );
    assert(error.message.includes("connection refused"), error.message);
  });
});

Deno.test("TestRunHTTPHandlerFallback", async () => {
  const { server, requests, port } = testServer();
  const recorder = new FakeRecorder();
  const previous = log.setLogSink(() => {});
  try {
    const handler: LifecycleHandler = {
      httpGet: {
        host: "127.0.0.1",
        port,
        path: "/x",
        scheme: "HTTPS",
        httpHeaders: [{ name: "Authorization", value: "secret" }],
      },
    };
    const { error } = await runnerWith({ recorder }).run(
      containerID,
      testPod(),
      { name: "foo" },
      handler,
    );
    assertEquals(error, undefined);
    // Retried over HTTP without the Authorization header.
    assertEquals(requests.length, 1);
    assertEquals(requests[0].headers.get("authorization"), null);
    assertEquals(recorder.events, [
      `Warning LifecycleHTTPFallback request to HTTPS lifecycle hook 127.0.0.1:${port} got ` +
      "HTTP response, retry with HTTP succeeded",
    ]);
  } finally {
    log.setLogSink(previous);
    await server.shutdown();
  }
});

Deno.test("TestRunHandlerNil", async () => {
  const previous = log.setLogSink(() => {});
  try {
    const { error, message } = await runnerWith({}).run(
      containerID,
      testPod(),
      { name: "foo" },
      {},
    );
    assertEquals(error?.message, "invalid handler: {}");
    assertEquals(message, "Cannot run handler: invalid handler: {}");
  } finally {
    log.setLogSink(previous);
  }
});

Deno.test("TestRunHandlerTCPSocket", async () => {
  // Not a lifecycle handler: kubelet's runner has no case for it, so the hook fails.
  const previous = log.setLogSink(() => {});
  try {
    const { error, message } = await runnerWith({}).run(containerID, testPod(), { name: "foo" }, {
      tcpSocket: { port: 80 },
    });
    assertEquals(error?.message, 'invalid handler: {"tcpSocket":{"port":80}}');
    assertEquals(message, `Cannot run handler: ${error?.message}`);
  } finally {
    log.setLogSink(previous);
  }
});

Deno.test("TestRunSleepHandler", async (t) => {
  await t.step("sleeps for the given seconds on the clock", async () => {
    const clock = new FakeClock(0);
    let done = false;
    const run = runnerWith({ clock }).run(containerID, testPod(), { name: "foo" }, {
      sleep: { seconds: 5 },
    }).then((r) => {
      done = true;
      return r;
    });
    await clock.step(4_999);
    assertEquals(done, false);
    await clock.step(1);
    assertEquals((await run).error, undefined);
    assertEquals(clock.pendingTimers(), 0);
  });
  await t.step("stopped early: an error", async () => {
    const clock = new FakeClock(0);
    const stop = new AbortController();
    const run = runnerWith({ clock }).run(containerID, testPod(), { name: "foo" }, {
      sleep: { seconds: 5 },
    }, { signal: stop.signal });
    await clock.step(1_000);
    stop.abort();
    const { error, message } = await run;
    assertEquals(error?.message, "container terminated before sleep hook finished");
    assertEquals(
      message,
      `Sleep lifecycle hook (5) for Container "foo" in Pod "podFoo_nsFoo(uid1)" failed - ` +
        "error: container terminated before sleep hook finished",
    );
    assertEquals(clock.pendingTimers(), 0);
  });
});
