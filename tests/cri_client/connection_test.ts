/**
 * The CRI client without a runtime: endpoint parsing, gRPC code names, and the errors a caller sees
 * when the socket is missing, refuses connections, or the client was closed.
 */
import assert from "node:assert/strict";
import {
  CriError,
  GrpcCode,
  grpcCodeName,
  newRemoteRuntimeService,
  parseEndpoint,
  RemoteRuntimeService,
} from "../../src/cri_client/mod.ts";
import { RpcError, startFakeCriServer } from "../testing/fake_cri_server.ts";

const grpcTest = (name: string, fn: () => Promise<void>) => Deno.test({ name, fn });

Deno.test("parseEndpoint", async (t) => {
  await t.step("unix:///path → unix target", () => {
    assert.deepEqual(parseEndpoint("unix:///run/containerd/containerd.sock"), {
      endpoint: "unix:///run/containerd/containerd.sock",
      target: "unix:///run/containerd/containerd.sock",
      socketPath: "/run/containerd/containerd.sock",
    });
  });
  await t.step("bare absolute path → unix socket", () => {
    assert.equal(parseEndpoint("/run/crio/crio.sock").target, "unix:///run/crio/crio.sock");
  });
  await t.step("tcp:// → refused", () => {
    assert.throws(() => parseEndpoint("tcp://127.0.0.1:1234"), /only support unix socket endpoint/);
  });
  await t.step("relative unix path → refused", () => {
    assert.throws(() => parseEndpoint("unix://relative.sock"), /absolute path/);
  });
});

Deno.test("grpcCodeName uses Go's names", () => {
  assert.equal(grpcCodeName(GrpcCode.DeadlineExceeded), "DeadlineExceeded");
  assert.equal(grpcCodeName(GrpcCode.NotFound), "NotFound");
  assert.equal(grpcCodeName(GrpcCode.Unavailable), "Unavailable");
  assert.equal(grpcCodeName(99), "Code(99)");
  assert.equal(
    new CriError(GrpcCode.NotFound, "no such container", { endpoint: "unix:///x", method: "/m" })
      .message,
    "rpc error: code = NotFound desc = no such container",
  );
});

grpcTest("missing socket: validation fails fast and names the endpoint", async () => {
  const dir = await Deno.makeTempDir();
  const endpoint = `unix://${dir}/missing.sock`;
  try {
    const start = Date.now();
    const err = await newRemoteRuntimeService(endpoint, { connectTimeoutMs: 300 }).then(
      () => assert.fail("expected an error"),
      (e) => e,
    );
    const elapsed = Date.now() - start;
    assert.ok(elapsed < 3_000, `took ${elapsed} ms`);
    assert.match(
      err.message,
      new RegExp(
        `^validate service connection: validate CRI v1 runtime API for endpoint "${endpoint}": `,
      ),
    );
    assert.match(err.message, /code = Unavailable/);
    assert.match(err.message, /CRI runtime unreachable at unix:\/\/.*missing\.sock/);
    assert.match(err.message, /does not exist: is the runtime running\?/);
    assert.ok(err.cause instanceof CriError);
    assert.equal(err.cause.code, GrpcCode.Unavailable);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

grpcTest("socket nobody listens on: calls fail with Unavailable naming the endpoint", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/stale.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  listener.close(); // the file stays, nothing accepts: connection refused
  const runtime = new RemoteRuntimeService(`unix://${path}`, { connectTimeoutMs: 200 });
  try {
    const err = await runtime.containerStatus("abc").then(() => assert.fail("expected"), (e) => e);
    assert.ok(err instanceof CriError, String(err));
    assert.equal(err.code, GrpcCode.Unavailable);
    assert.equal(err.endpoint, `unix://${path}`);
    assert.equal(err.method, "/runtime.v1.RuntimeService/ContainerStatus");
    assert.match(err.message, new RegExp(`CRI runtime unreachable at unix://${path}`));
  } finally {
    runtime.close();
    await Deno.remove(dir, { recursive: true });
  }
});

grpcTest("aborted call rejects with the signal's reason", async () => {
  const runtime = new RemoteRuntimeService("unix:///nonexistent/probelet.sock");
  try {
    const reason = new Error("stop");
    await assert.rejects(
      runtime.listContainers(undefined, { signal: AbortSignal.abort(reason) }),
      (e) => e === reason,
    );
  } finally {
    runtime.close();
  }
});

grpcTest("closed client rejects", async () => {
  const runtime = new RemoteRuntimeService("unix:///nonexistent/probelet.sock");
  runtime.close();
  const err = await runtime.version().then(() => assert.fail("expected"), (e) => e);
  assert.ok(err instanceof CriError);
  assert.equal(err.code, GrpcCode.Unavailable);
  assert.match(err.message, /closing/);
});

grpcTest("Unavailable: idempotent calls are retried once, RunPodSandbox is not", async () => {
  // Each method fails its first call with Unavailable after "acting", then succeeds.
  const calls: Record<string, number> = {};
  const flaky = (name: string, response: unknown) => () => {
    calls[name] = (calls[name] ?? 0) + 1;
    if (calls[name] === 1) throw new RpcError(GrpcCode.Unavailable, "transport is closing");
    return response;
  };
  const server = await startFakeCriServer({
    RunPodSandbox: flaky("RunPodSandbox", { podSandboxId: "sb-1" }),
    ListContainers: flaky("ListContainers", { containers: [] }),
  });
  const runtime = new RemoteRuntimeService(server.endpoint, { connectTimeoutMs: 2_000 });
  try {
    assert.deepEqual(await runtime.listContainers(), []);
    assert.equal(calls.ListContainers, 2);
    const err = await runtime.runPodSandbox({
      metadata: { name: "p", namespace: "d", uid: "u", attempt: 0 },
    })
      .then(() => assert.fail("expected"), (e) => e);
    assert.ok(err instanceof CriError, String(err));
    assert.equal(err.code, GrpcCode.Unavailable);
    assert.equal(calls.RunPodSandbox, 1);
  } finally {
    runtime.close();
    await server.close();
  }
});
