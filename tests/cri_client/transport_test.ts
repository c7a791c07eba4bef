/**
 * The CRI client's own transport (HTTP/2 on `Deno.connect` unix, src/util/h2/) against a real
 * HTTP/2 gRPC server on a unix socket (tests/testing/h2_grpc_server.ts): concurrent calls on one
 * connection, MAX_CONCURRENT_STREAMS, flow control for big responses, deadlines, cancellation,
 * GOAWAY, a server that goes away, trailers-only errors, and close().
 */
import assert from "node:assert/strict";
import { CriError, GrpcCode, RemoteRuntimeService } from "../../src/cri_client/mod.ts";
import { GrpcStatus } from "../../src/util/grpc_codes.ts";
import { type CriHandler, RpcError, startFakeCriServer } from "../testing/fake_cri_server.ts";

/** A promise with its resolve, for handlers that wait for the test. */
function gate<T = void>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => open = resolve);
  return { promise, open };
}

async function errorOf(promise: Promise<unknown>): Promise<CriError> {
  const err = await promise.then(() => assert.fail("expected an error"), (e) => e);
  assert.ok(err instanceof CriError, String(err));
  return err;
}

/** A ListContainers answer of `count` containers with a `labelBytes` label each. */
function containers(count: number, labelBytes: number) {
  const big = "x".repeat(labelBytes);
  return {
    containers: Array.from({ length: count }, (_, i) => ({
      id: `c${i}`,
      podSandboxId: "sb",
      metadata: { name: `n${i}`, attempt: 0 },
      image: { image: "img" },
      imageRef: "img",
      state: "CONTAINER_RUNNING",
      createdAt: "1",
      labels: { big },
      annotations: {},
    })),
  };
}

const version = {
  version: "0.1.0",
  runtimeName: "fake",
  runtimeVersion: "1",
  runtimeApiVersion: "v1",
};

Deno.test("transport: concurrent calls share one connection", async () => {
  const arrived = gate();
  let waiting = 0;
  const server = await startFakeCriServer({
    // Every call waits until all 20 are in: only concurrent streams can get them all in.
    ContainerStatus: async (request) => {
      if (++waiting === 20) arrived.open();
      await arrived.promise;
      return {
        status: {
          id: (request as { containerId: string }).containerId,
          metadata: { name: "n", attempt: 0 },
          state: "CONTAINER_RUNNING",
          createdAt: "1",
          image: { image: "img" },
          imageRef: "img",
        },
      };
    },
  });
  // Calls sent one after another would never all arrive: the deadline then fails the test.
  const runtime = new RemoteRuntimeService(server.endpoint, { requestTimeoutMs: 5_000 });
  try {
    const ids = Array.from({ length: 20 }, (_, i) => `id-${i}`);
    const statuses = await Promise.all(ids.map((id) => runtime.containerStatus(id)));
    assert.deepEqual(statuses.map((s) => s.status?.id), ids);
    assert.equal(server.connections, 1);
    assert.equal(server.maxOpenStreams, 20);
    // The request carries grpc-go's headers and the call's deadline.
    const headers = server.requests[0];
    assert.equal(headers.get(":path"), "/runtime.v1.RuntimeService/ContainerStatus");
    assert.equal(headers.get("content-type"), "application/grpc");
    assert.equal(headers.get("te"), "trailers");
    assert.match(headers.get("grpc-timeout") ?? "", /^\d+[num]$|^1[12]\d{6}u$|^\d+m$/);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: MAX_CONCURRENT_STREAMS queues the calls above it", async () => {
  const server = await startFakeCriServer({
    Version: async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return version;
    },
  }, { maxConcurrentStreams: 2 });
  const runtime = new RemoteRuntimeService(server.endpoint);
  try {
    await runtime.version(); // the server's SETTINGS are in
    const answers = await Promise.all(Array.from({ length: 10 }, () => runtime.version()));
    assert.equal(answers.length, 10);
    assert.equal(server.maxOpenStreams, 2);
    assert.equal(server.connections, 1);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: a 10 MiB response flows through WINDOW_UPDATEs; above 16 MiB is ResourceExhausted", async () => {
  let count = 5_000;
  const server = await startFakeCriServer({ ListContainers: () => containers(count, 2_048) });
  const runtime = new RemoteRuntimeService(server.endpoint);
  try {
    const list = await runtime.listContainers();
    assert.equal(list.length, 5_000);
    assert.equal(list[4_999].labels.big.length, 2_048);
    // 10 MiB is more than the 4 MiB stream window we grant: the server needed our updates.
    assert.ok(server.windowUpdates >= 2, `windowUpdates=${server.windowUpdates}`);

    count = 9_000; // ≈ 18.6 MiB, above cri-client's 16 MiB maxMsgSize
    const err = await errorOf(runtime.listContainers());
    assert.equal(err.code, GrpcStatus.ResourceExhausted);
    assert.match(
      err.message,
      /^rpc error: code = ResourceExhausted desc = grpc: received message larger than max \(\d+ vs\. 16777216\)$/,
    );
    // The stream was cancelled; the connection carries on (and the server read our RST_STREAM
    // before the next call's HEADERS).
    count = 1;
    assert.equal((await runtime.listContainers()).length, 1);
    assert.ok(server.resets.some((r) => r.code === 0x8));
    assert.equal(server.connections, 1);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: a deadline ends the call with DeadlineExceeded and resets the stream", async () => {
  const reset = gate();
  const server = await startFakeCriServer({
    // Never answers; the client's RST_STREAM ends the stream.
    Version: (_req, call) => {
      call.signal.addEventListener("abort", () => reset.open());
      return new Promise(() => {});
    },
  });
  const runtime = new RemoteRuntimeService(server.endpoint, { requestTimeoutMs: 150 });
  try {
    const err = await errorOf(runtime.version());
    assert.equal(err.code, GrpcCode.DeadlineExceeded);
    assert.equal(
      err.message,
      "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    );
    await reset.promise;
    assert.deepEqual(server.resets, [{ streamId: 1, code: 0x8 }]);
    assert.match(server.requests[0].get("grpc-timeout") ?? "", /^1[45]\d{4}u$/);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: abort rejects with the reason, sends RST_STREAM CANCEL, keeps the connection", async () => {
  const started = gate();
  let calls = 0;
  const server = await startFakeCriServer({
    ListContainers: (_req, call) => {
      if (++calls > 1) return { containers: [] };
      started.open();
      return new Promise((resolve) =>
        call.signal.addEventListener("abort", () => resolve(undefined))
      );
    },
  });
  const runtime = new RemoteRuntimeService(server.endpoint);
  try {
    const controller = new AbortController();
    const pending = runtime.listContainers(undefined, { signal: controller.signal });
    await started.promise;
    const reason = new Error("pod worker stopped");
    controller.abort(reason);
    await assert.rejects(pending, (e) => e === reason);
    assert.deepEqual(await runtime.listContainers(), []);
    assert.deepEqual(server.resets, [{ streamId: 1, code: 0x8 }]);
    assert.equal(server.connections, 1);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: GOAWAY lets covered calls finish and retries uncovered ones on a new connection", async () => {
  const inFlight = gate();
  const release = gate();
  let runs = 0;
  let holding = 0;
  const hold: CriHandler = async () => {
    if (++holding === 2) inFlight.open();
    await release.promise;
    return { containers: [] };
  };
  const server = await startFakeCriServer({
    ListContainers: hold,
    RunPodSandbox: () => ({ podSandboxId: `sb-${++runs}` }),
  });
  const runtime = new RemoteRuntimeService(server.endpoint);
  try {
    const first = runtime.listContainers(); // stream 1
    const second = runtime.listContainers(); // stream 3
    await inFlight.promise;
    // Covers stream 1 only: stream 3 was never processed, and the connection takes no new calls.
    await server.goAway(1);
    // RunPodSandbox is never retried after Unavailable, but a call refused by GOAWAY or sent after
    // it was not processed at all: it goes to a new connection.
    const sandbox = runtime.runPodSandbox({
      metadata: { name: "p", namespace: "d", uid: "u", attempt: 0 },
    });
    release.open();
    assert.deepEqual(await first, []);
    assert.deepEqual(await second, []);
    assert.equal(await sandbox, "sb-1");
    assert.equal(runs, 1);
    assert.equal(server.connections, 2);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: a server that goes away is Unavailable, then the next call redials", async () => {
  const started = gate();
  let creates = 0;
  const server = await startFakeCriServer({
    CreateContainer: () => {
      if (++creates === 1) {
        started.open();
        return new Promise(() => {}); // the server dies before answering
      }
      return { containerId: "c-2" };
    },
    Version: () => version,
  });
  const runtime = new RemoteRuntimeService(server.endpoint, { connectTimeoutMs: 2_000 });
  try {
    await runtime.version();
    const create = runtime.createContainer("sb", {
      metadata: { name: "c", attempt: 0 },
      image: { image: "img" },
    });
    await started.promise;
    server.dropConnections();
    const err = await errorOf(create);
    assert.equal(err.code, GrpcCode.Unavailable);
    assert.equal(err.endpoint, server.endpoint);
    assert.equal(creates, 1, "CreateContainer is not retried");
    assert.equal((await runtime.version()).runtimeName, "fake");
    assert.equal(server.connections, 2);
    assert.equal(
      await runtime.createContainer("sb", {
        metadata: { name: "c", attempt: 0 },
        image: { image: "img" },
      }),
      "c-2",
    );
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: trailers-only and trailer errors read like grpc-go's, messages percent-decoded", async () => {
  const server = await startFakeCriServer({
    ContainerStatus: () => {
      throw new RpcError(
        GrpcCode.NotFound,
        'an error occurred when try to find container "x": not found 100% ✓',
      );
    },
    PodSandboxStatus: () => {
      throw new RpcError(GrpcCode.Unknown, "after headers", false);
    },
  });
  const runtime = new RemoteRuntimeService(server.endpoint);
  try {
    const notFound = await errorOf(runtime.containerStatus("x"));
    assert.equal(notFound.code, GrpcCode.NotFound);
    assert.equal(
      notFound.message,
      'rpc error: code = NotFound desc = an error occurred when try to find container "x": not found 100% ✓',
    );
    const unknown = await errorOf(runtime.podSandboxStatus("sb"));
    assert.equal(unknown.message, "rpc error: code = Unknown desc = after headers");
    const unimplemented = await errorOf(runtime.version());
    assert.equal(unimplemented.code, GrpcCode.Unimplemented);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: close() fails in-flight and later calls with Unavailable", async () => {
  const started = gate();
  const server = await startFakeCriServer({
    Version: () => {
      started.open();
      return new Promise(() => {});
    },
  });
  const runtime = new RemoteRuntimeService(server.endpoint);
  try {
    const pending = runtime.version();
    await started.promise;
    runtime.close();
    for (const err of [await errorOf(pending), await errorOf(runtime.version())]) {
      assert.equal(err.code, GrpcCode.Unavailable);
      assert.equal(
        err.message,
        "rpc error: code = Unavailable desc = grpc: the client connection is closing",
      );
    }
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: close() during the dial releases the socket at once, not after the handshake timeout", async () => {
  // A runtime that accepts and never speaks: the dial waits in the HTTP/2 handshake.
  const dir = await Deno.makeTempDir({ prefix: "probelet-silent-" });
  const path = `${dir}/s.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  const runtime = new RemoteRuntimeService(`unix://${path}`, { connectTimeoutMs: 60_000 });
  let accepted: Deno.Conn | undefined;
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  try {
    const pending = runtime.version();
    // close() while the connect is still in flight.
    runtime.close();
    assert.equal((await errorOf(pending)).code, GrpcCode.Unavailable);
    accepted = await listener.accept();
    // The client closes its end: EOF here, long before the 60 s handshake timeout.
    const read = accepted.read(new Uint8Array(1024)).catch(() => null);
    const bound = new Promise<string>((resolve) => {
      watchdog = setTimeout(() => resolve("still open after 5 s"), 5_000);
    });
    assert.equal(await Promise.race([read, bound]), null);
  } finally {
    clearTimeout(watchdog);
    accepted?.close();
    listener.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("transport: a call whose deadline passes while it waits for a stream slot is DeadlineExceeded and never sent", async () => {
  const release = gate();
  const holding = gate();
  const server = await startFakeCriServer({
    ExecSync: async () => {
      holding.open();
      await release.promise;
      return { stdout: new Uint8Array(), stderr: new Uint8Array(), exitCode: 0 };
    },
    Version: () => version,
  }, { maxConcurrentStreams: 1 });
  // ExecSync's deadline is the request timeout plus the command's: it holds the only slot well
  // past the 100 ms deadline of the Version call queued behind it.
  const runtime = new RemoteRuntimeService(server.endpoint, { requestTimeoutMs: 100 });
  try {
    await runtime.version(); // the server's SETTINGS (MAX_CONCURRENT_STREAMS 1) are in
    const exec = runtime.execSync("c", ["true"], { timeoutMs: 30_000 });
    await holding.promise;
    const err = await errorOf(runtime.version());
    assert.equal(err.code, GrpcCode.DeadlineExceeded);
    assert.equal(server.requests.length, 2, "the queued call never reached the server");
    release.open();
    await exec;
    assert.equal((await runtime.version()).runtimeName, "fake");
    assert.equal(server.connections, 1);
  } finally {
    runtime.close();
    await server.close();
  }
});

Deno.test("transport: a runtime that accepts but never sends its SETTINGS fails the call after the connect timeout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "probelet-silent-" });
  const path = `${dir}/s.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  const accepted: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) accepted.push(conn);
  })().catch(() => {});
  const runtime = new RemoteRuntimeService(`unix://${path}`, { connectTimeoutMs: 100 });
  try {
    const err = await errorOf(runtime.version());
    assert.equal(err.code, GrpcCode.Unavailable);
    assert.match(err.message, /timed out waiting for the server's HTTP\/2 settings/);
    assert.equal(err.endpoint, `unix://${path}`);
    // Every dial's socket was closed by the client (the test's sanitizers also catch a timer left).
    assert.ok(accepted.length >= 1);
    for (const conn of accepted) {
      const buf = new Uint8Array(1024);
      while (await conn.read(buf) !== null) {
        // the preface and SETTINGS it sent before giving up
      }
    }
  } finally {
    runtime.close();
    listener.close();
    await accepting;
    for (const conn of accepted) conn.close();
    await Deno.remove(dir, { recursive: true });
  }
});
