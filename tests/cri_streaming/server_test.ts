/**
 * The streaming server at the protocol level, driven as kube-apiserver drives a runtime's
 * streaming server: the upgrade request, then SPDY frames. Cases after cri-streaming's
 * server_test.go and remotecommand/portforward httpstream_test.go.
 * @module
 */
import assert from "node:assert/strict";
import { FakeClock, settle } from "../../src/util/clock.ts";
import { StreamingError, StreamingServer } from "../../src/cri_streaming/mod.ts";
import type { SpdyHeaders } from "../../src/cri_streaming/spdy/frame.ts";
import { HostRuntime } from "./host_runtime.ts";
import { streamText, TestSpdyClient } from "./spdy_client.ts";

const exec = { containerId: "c1", tty: false, stdin: false, stdout: true, stderr: true };

async function withServer(
  fn: (server: StreamingServer, runtime: HostRuntime) => Promise<void>,
  options: { clock?: FakeClock; streamIdleTimeoutMs?: number } = {},
): Promise<void> {
  const runtime = new HostRuntime();
  const server = new StreamingServer(runtime, options);
  await server.start();
  try {
    await fn(server, runtime);
  } finally {
    await server.stop();
  }
}

Deno.test("TestGetExec validation", async (t) => {
  await withServer(async (server) => {
    for (
      const [name, req, desc] of [
        ["no container", { ...exec, containerId: "" }, "missing required container_id"],
        ["tty and stderr", { ...exec, tty: true }, "tty and stderr cannot both be true"],
        [
          "no stream",
          { ...exec, stdout: false, stderr: false },
          "one of stdin, stdout, or stderr must be set",
        ],
      ] as const
    ) {
      await t.step(name, () => {
        assert.throws(() => server.getExec({ ...req, cmd: ["true"] }), (err: unknown) => {
          assert.ok(err instanceof StreamingError);
          assert.equal(err.message, `rpc error: code = InvalidArgument desc = ${desc}`);
          return true;
        });
      });
    }
    await t.step("URL: base URL, method, token", () => {
      const { url } = server.getExec({ ...exec, cmd: ["true"] });
      assert.match(url, new RegExp(`^${server.baseUrl}exec/[A-Za-z0-9_-]{8}$`));
      assert.match(server.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/$/);
      assert.match(
        server.getPortForward({ podSandboxId: "s", port: [] }).url,
        /\/portforward\/[A-Za-z0-9_-]{8}$/,
      );
      assert.throws(() => server.getPortForward({ podSandboxId: "", port: [] }), /pod_sandbox_id/);
    });
  });
});

Deno.test("TestServeExec over SPDY frames", async (t) => {
  await withServer(async (server) => {
    await t.step("v4: stdout, stderr, and exit code 3 in the status", async () => {
      const { url } = server.getExec({
        ...exec,
        cmd: ["sh", "-c", "echo out; echo err >&2; exit 3"],
      });
      const { answer, client } = await TestSpdyClient.dial(url, {
        protocols: ["v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io"],
      });
      assert.equal(answer.status, 101);
      assert.deepEqual(answer.headers.get("upgrade"), ["SPDY/3.1"]);
      // v5 is WebSocket-only here, as in cri-streaming: the client's next choice wins.
      assert.deepEqual(answer.headers.get("x-stream-protocol-version"), ["v4.channel.k8s.io"]);
      try {
        const errorId = await client!.open({ streamtype: ["error"] });
        const stdoutId = await client!.open({ streamtype: ["stdout"] });
        const stderrId = await client!.open({ streamtype: ["stderr"] });
        const frames = await client!.collect();
        const replies = frames.filter((f) => f.type === "synReply").map((f) =>
          (f as { streamId: number }).streamId
        );
        assert.deepEqual(replies.sort(), [errorId, stdoutId, stderrId].sort());
        assert.equal(streamText(frames, stdoutId), "out\n");
        assert.equal(streamText(frames, stderrId), "err\n");
        assert.deepEqual(JSON.parse(streamText(frames, errorId)), {
          status: "Failure",
          reason: "NonZeroExitCode",
          details: { causes: [{ reason: "ExitCode", message: "3" }] },
          message:
            "command terminated with non-zero exit code: error executing command [sh -c echo out; echo err >&2; exit 3], exit code 3",
        });
        // FIN on both outputs, then GOAWAY.
        for (const id of [stdoutId, stderrId]) {
          assert.ok(frames.some((f) => f.type === "data" && f.streamId === id && f.flags === 1));
        }
        assert.equal(frames.at(-1)?.type, "goAway");
      } finally {
        client!.close();
      }
    });

    await t.step("v4 success: {status: Success}", async () => {
      const { url } = server.getExec({ ...exec, stderr: false, cmd: ["true"] });
      const { client } = await TestSpdyClient.dial(url);
      try {
        const errorId = await client!.open({ streamtype: ["error"] });
        await client!.open({ streamtype: ["stdout"] });
        const frames = await client!.collect();
        assert.deepEqual(JSON.parse(streamText(frames, errorId)), { status: "Success" });
      } finally {
        client!.close();
      }
    });

    await t.step("v2: the error stream carries only a failure's message", async () => {
      const { url } = server.getExec({ ...exec, stderr: false, cmd: ["sh", "-c", "exit 4"] });
      const { answer, client } = await TestSpdyClient.dial(url, {
        protocols: ["v2.channel.k8s.io"],
      });
      assert.deepEqual(answer.headers.get("x-stream-protocol-version"), ["v2.channel.k8s.io"]);
      try {
        const errorId = await client!.open({ streamtype: ["error"] });
        await client!.open({ streamtype: ["stdout"] });
        const frames = await client!.collect();
        assert.equal(
          streamText(frames, errorId),
          "command terminated with non-zero exit code: error executing command [sh -c exit 4], exit code 4",
        );
      } finally {
        client!.close();
      }
    });

    await t.step("stdin: data then FIN reaches the command, which answers", async () => {
      const { url } = server.getExec({ ...exec, stdin: true, stderr: false, cmd: ["cat"] });
      const { client } = await TestSpdyClient.dial(url);
      try {
        await client!.open({ streamtype: ["error"] });
        const stdinId = await client!.open({ streamtype: ["stdin"] });
        const stdoutId = await client!.open({ streamtype: ["stdout"] });
        // 40 KiB: more than half a window, so the server acknowledges it.
        const input = new Uint8Array(40 * 1024).fill(0x61);
        await client!.send({ type: "data", streamId: stdinId, flags: 0, data: input });
        // Read by the command: the server gives the window back, for the stream and the session.
        const before = await client!.collect((f) =>
          f.type === "windowUpdate" && f.streamId === stdinId
        );
        await client!.send({ type: "data", streamId: stdinId, flags: 1, data: new Uint8Array() });
        const frames = [...before, ...await client!.collect()];
        assert.equal(streamText(frames, stdoutId), "a".repeat(40 * 1024));
        const updates = frames.filter((f) => f.type === "windowUpdate");
        assert.deepEqual(updates.find((f) => f.streamId === stdinId), {
          type: "windowUpdate",
          streamId: stdinId,
          deltaWindowSize: 40 * 1024,
        });
        assert.ok(updates.some((f) => f.streamId === 0), "a session window update");
      } finally {
        client!.close();
      }
    });

    await t.step("a peer keeping SPDY/3.1 flow control gets no more than its window", async () => {
      const { url } = server.getExec({
        ...exec,
        stderr: false,
        cmd: ["head", "-c", "5000", "/dev/zero"],
      });
      const { client } = await TestSpdyClient.dial(url);
      try {
        await client!.send({
          type: "settings",
          flags: 0,
          entries: [{ flags: 0, id: 7, value: 1000 }],
        });
        await client!.open({ streamtype: ["error"] });
        const stdoutId = await client!.open({ streamtype: ["stdout"] });
        let got = 0;
        const first = await client!.collect((f) => {
          if (f.type === "data" && f.streamId === stdoutId) got += f.data.length;
          return got >= 1000;
        });
        assert.equal(got, 1000, JSON.stringify(first.map((f) => f.type)));
        await client!.send({ type: "windowUpdate", streamId: stdoutId, deltaWindowSize: 4000 });
        const rest = await client!.collect();
        assert.equal(streamText(rest, stdoutId).length, 4000);
      } finally {
        client!.close();
      }
    });

    await t.step("PING from the client is echoed", async () => {
      const { url } = server.getExec({ ...exec, stderr: false, cmd: ["true"] });
      const { client } = await TestSpdyClient.dial(url);
      try {
        await client!.send({ type: "ping", id: 7 });
        const frames = await client!.collect((f) => f.type === "ping");
        assert.deepEqual(frames.at(-1), { type: "ping", id: 7 });
      } finally {
        client!.close();
      }
    });
  });
});

Deno.test("TestHandshake and routing", async (t) => {
  await withServer(async (server) => {
    await t.step("no X-Stream-Protocol-Version: 400", async () => {
      const { url } = server.getExec({ ...exec, cmd: ["true"] });
      const { answer } = await TestSpdyClient.dial(url, { protocols: [] });
      assert.equal(answer.status, 400);
      assert.equal(
        answer.body,
        "unable to upgrade: header X-Stream-Protocol-Version does not exist in request with 2 headers\n",
      );
    });
    await t.step("no protocol in common: 403 with the accepted ones", async () => {
      const { url } = server.getExec({ ...exec, cmd: ["true"] });
      const { answer } = await TestSpdyClient.dial(url, { protocols: ["v9.channel.k8s.io"] });
      assert.equal(answer.status, 403);
      assert.deepEqual(answer.headers.get("x-accepted-stream-protocol-versions"), [
        "v4.channel.k8s.io",
        "v3.channel.k8s.io",
        "v2.channel.k8s.io",
        "channel.k8s.io",
      ]);
      assert.equal(
        answer.body,
        "unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], server accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n",
      );
    });
    await t.step("comma-separated protocols are split", async () => {
      const { url } = server.getExec({ ...exec, stderr: false, cmd: ["true"] });
      const { answer, client } = await TestSpdyClient.dial(url, {
        protocols: ["v9.channel.k8s.io, v3.channel.k8s.io"],
      });
      client?.close();
      assert.deepEqual(answer.headers.get("x-stream-protocol-version"), ["v3.channel.k8s.io"]);
    });
    await t.step("not an upgrade: 400", async () => {
      const { url } = server.getExec({ ...exec, cmd: ["true"] });
      const { answer } = await TestSpdyClient.dial(url, { headers: [["Accept", "*/*"]] });
      assert.equal(answer.status, 400);
      assert.equal(
        answer.body,
        'unable to upgrade: missing upgrade headers in request: http.Header{"Accept":[]string{"*/*"}, "X-Stream-Protocol-Version":[]string{"v4.channel.k8s.io"}}\n',
      );
    });
    await t.step("unknown token, wrong kind, other path: 404", async () => {
      const { url } = server.getExec({ ...exec, cmd: ["true"] });
      for (
        const u of [
          `${server.baseUrl}exec/AAAAAAAA`,
          url.replace("/exec/", "/attach/"),
          `${server.baseUrl}healthz`,
        ]
      ) {
        const { answer } = await TestSpdyClient.dial(u);
        assert.equal(answer.status, 404, u);
        assert.equal(answer.body, "404 page not found\n");
      }
    });
    await t.step("PUT: 405", async () => {
      const { url } = server.getExec({ ...exec, cmd: ["true"] });
      const { answer } = await TestSpdyClient.dial(url, { method: "PUT" });
      assert.equal(answer.status, 405);
    });
  });
});

Deno.test("TestRequestCacheExpiry through the server", async () => {
  const clock = new FakeClock(0);
  await withServer(async (server) => {
    const { url } = server.getExec({ ...exec, cmd: ["true"] });
    clock.setTime(60_001);
    const { answer } = await TestSpdyClient.dial(url);
    assert.equal(answer.status, 404);
  }, { clock });
});

Deno.test("TestStreamCreationTimeout", async () => {
  const clock = new FakeClock(0);
  await withServer(async (server, runtime) => {
    const { url } = server.getExec({ ...exec, cmd: ["true"] });
    const { client } = await TestSpdyClient.dial(url);
    try {
      const errorId = await client!.open({ streamtype: ["error"] });
      // The reply to the error stream arrives; stdout and stderr never come.
      await client!.collect((f) => f.type === "synReply" && f.streamId === errorId);
      await settle();
      await clock.step(30_000);
      const frames = await client!.collect();
      assert.equal(frames.at(-1)?.type, "goAway");
      assert.deepEqual(runtime.execs, []);
    } finally {
      client!.close();
    }
  }, { clock });
});

Deno.test("TestServePortForward over SPDY frames", async (t) => {
  await withServer(async (server, runtime) => {
    await t.step("a stream without port is refused", async () => {
      const { url } = server.getPortForward({ podSandboxId: "s1", port: [] });
      const { answer, client } = await TestSpdyClient.dial(url, {
        protocols: ["portforward.k8s.io"],
      });
      assert.equal(answer.status, 101);
      try {
        for (
          const headers of <SpdyHeaders[]> [
            { streamtype: ["data"] },
            { port: ["0"], streamtype: ["data"] },
            { port: ["x"], streamtype: ["data"] },
            { port: ["80"], streamtype: ["other"] },
          ]
        ) {
          const id = await client!.open(headers);
          const frames = await client!.collect((f) => f.type === "rstStream");
          assert.deepEqual(frames.at(-1), { type: "rstStream", streamId: id, status: 3 });
        }
      } finally {
        client!.close();
      }
    });
    await t.step("nothing listens: the error stream says so", async () => {
      const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (probe.addr as Deno.NetAddr).port;
      probe.close();
      const { url } = server.getPortForward({ podSandboxId: "s1", port: [] });
      const { client } = await TestSpdyClient.dial(url, { protocols: ["portforward.k8s.io"] });
      try {
        const errorId = await client!.open({
          streamtype: ["error"],
          port: [String(port)],
          requestid: ["0"],
        });
        const dataId = await client!.open({
          streamtype: ["data"],
          port: [String(port)],
          requestid: ["0"],
        });
        const frames = await client!.collect((f) =>
          f.type === "rstStream" && f.streamId === dataId
        );
        assert.match(
          streamText(frames, errorId),
          new RegExp(`^error forwarding port ${port} to pod s1, uid : .*refused`, "i"),
        );
        assert.deepEqual(runtime.forwards.at(-1), { podSandboxId: "s1", port });
      } finally {
        client!.close();
      }
    });
    await t.step("two pairs on one connection, told apart by requestID", async () => {
      const target = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = String((target.addr as Deno.NetAddr).port);
      const serving = (async () => {
        for (let i = 0; i < 2; i++) {
          const conn = await target.accept();
          const buf = new Uint8Array(64);
          const n = await conn.read(buf);
          await conn.write(
            new TextEncoder().encode(`echo:${new TextDecoder().decode(buf.subarray(0, n ?? 0))}`),
          );
          conn.close();
        }
      })();
      const { url } = server.getPortForward({ podSandboxId: "s1", port: [] });
      const { client } = await TestSpdyClient.dial(url, { protocols: ["portforward.k8s.io"] });
      try {
        const ids: number[] = [];
        for (const rid of ["1", "2"]) {
          await client!.open({ streamtype: ["error"], port: [port], requestid: [rid] });
          ids.push(await client!.open({ streamtype: ["data"], port: [port], requestid: [rid] }));
        }
        await client!.send({
          type: "data",
          streamId: ids[0],
          flags: 0,
          data: new TextEncoder().encode("one"),
        });
        await client!.send({
          type: "data",
          streamId: ids[1],
          flags: 0,
          data: new TextEncoder().encode("two"),
        });
        let fins = 0;
        const frames = await client!.collect((f) =>
          f.type === "data" && ids.includes(f.streamId) && (f.flags & 1) === 1 && ++fins === 2
        );
        assert.equal(streamText(frames, ids[0]), "echo:one");
        assert.equal(streamText(frames, ids[1]), "echo:two");
        await serving;
      } finally {
        client!.close();
        target.close();
      }
    });
  });
});

Deno.test("TestIdleTimeout", async () => {
  const clock = new FakeClock(0);
  await withServer(async (server) => {
    const { url } = server.getPortForward({ podSandboxId: "s1", port: [] });
    const { client } = await TestSpdyClient.dial(url, { protocols: ["portforward.k8s.io"] });
    try {
      await client!.send({ type: "ping", id: 1 });
      await client!.collect((f) => f.type === "ping");
      await settle();
      await clock.step(4 * 60 * 60 * 1000 - 1);
      await client!.send({ type: "ping", id: 3 }); // activity: the idle timer starts over
      await client!.collect((f) => f.type === "ping");
      await settle();
      await clock.step(4 * 60 * 60 * 1000);
      const frames = await client!.collect();
      assert.deepEqual(frames.map((f) => f.type), ["goAway"]);
    } finally {
      client!.close();
    }
  }, { clock });
});

Deno.test("TestPortForwardStreamPairTimeout", async () => {
  const clock = new FakeClock(0);
  await withServer(async (server, runtime) => {
    const { url } = server.getPortForward({ podSandboxId: "s1", port: [] });
    const { client } = await TestSpdyClient.dial(url, { protocols: ["portforward.k8s.io"] });
    try {
      const errorId = await client!.open({ streamtype: ["error"], port: ["80"], requestid: ["7"] });
      await client!.collect((f) => f.type === "synReply" && f.streamId === errorId);
      await settle();
      await clock.step(30_000);
      const frames = await client!.collect((f) => f.type === "data" && f.streamId === errorId);
      assert.match(
        streamText(frames, errorId),
        /^\(conn=spdy-\d+, request=7\) timed out waiting for streams$/,
      );
      assert.deepEqual(runtime.forwards, []);
    } finally {
      client!.close();
    }
  }, { clock });
});
