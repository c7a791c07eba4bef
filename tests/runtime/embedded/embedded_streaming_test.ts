/**
 * Exec, attach and port-forward on the embedded runtime through its streaming server, driven as
 * kube-apiserver drives a runtime's streaming server: the CRI call hands out a URL, a SPDY client
 * upgrades to it. client-go's own executor and port forwarder (scripts/spdy-client.sh) where Go is
 * there; the frame-level test client otherwise.
 * @module
 */
import assert from "node:assert/strict";
import { EmbeddedRuntimeService } from "../../../src/runtime/embedded/mod.ts";
import { runSpdyClient, spdyClientPath } from "../../cri_streaming/host_runtime.ts";
import { streamText, TestSpdyClient } from "../../cri_streaming/spdy_client.ts";

const oracle = spdyClientPath("embedded_streaming_test");

async function withContainer(
  script: string,
  fn: (
    runtime: EmbeddedRuntimeService,
    ids: { sandbox: string; id: string; dir: string },
  ) => Promise<void>,
): Promise<void> {
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-streaming-" });
  const workDir = await Deno.makeTempDir({ prefix: "probelet-workdir-" });
  const runtime = new EmbeddedRuntimeService({ rootDir });
  try {
    const sandbox = await runtime.runPodSandbox({
      metadata: { name: "web", uid: "uid-web", namespace: "default" },
    });
    const id = await runtime.createContainer(sandbox, {
      metadata: { name: "app" },
      image: { image: "busybox" },
      command: ["sh", "-c", script],
      workingDir: workDir,
      envs: [{ key: "GREETING", value: "hello from the pod" }],
    });
    await runtime.startContainer(id);
    await fn(runtime, { sandbox, id, dir: workDir });
  } finally {
    await runtime.shutdown();
    await Deno.remove(rootDir, { recursive: true });
    await Deno.remove(workDir, { recursive: true });
  }
}

const streams = { tty: false, stdin: false, stdout: true, stderr: true };

/** Polls `check` until it returns true (real processes take real time; no fixed sleeps). */
async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

Deno.test({
  name: "TestEmbeddedExec with client-go's SPDY executor",
  ignore: oracle === undefined,
  async fn(t) {
    await withContainer("sleep 60", async (runtime, { id, dir }) => {
      await t.step("in the container's folder and environment", async () => {
        const { url } = await runtime.exec({
          ...streams,
          containerId: id,
          cmd: ["sh", "-c", 'pwd; echo "$GREETING"'],
        });
        assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/exec\/[A-Za-z0-9_-]{8}$/);
        const r = await runSpdyClient(oracle!, ["exec", url]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(new TextDecoder().decode(r.stdout), `${dir}\nhello from the pod\n`);
      });
      await t.step("exit code 3", async () => {
        const { url } = await runtime.exec({
          ...streams,
          containerId: id,
          cmd: ["sh", "-c", "exit 3"],
        });
        const r = await runSpdyClient(oracle!, ["exec", url]);
        assert.equal(r.code, 3);
        assert.match(r.stderr, /command terminated with exit code 3/);
      });
      await t.step("stdin echo", async () => {
        const { url } = await runtime.exec({
          ...streams,
          stdin: true,
          containerId: id,
          cmd: ["cat"],
        });
        const r = await runSpdyClient(
          oracle!,
          ["exec", url, "-stdin"],
          new TextEncoder().encode("ping\n"),
        );
        assert.equal(r.code, 0, r.stderr);
        assert.equal(new TextDecoder().decode(r.stdout), "ping\n");
      });
      await t.step("a missing binary: containerd's wording in the status", async () => {
        const { url } = await runtime.exec({
          ...streams,
          containerId: id,
          cmd: ["no-such-binary"],
        });
        const r = await runSpdyClient(oracle!, ["exec", url]);
        assert.equal(r.code, 1);
        assert.match(
          r.stderr,
          /error executing command in container: failed to exec in container: exec: "no-such-binary": executable file not found in \$PATH/,
        );
      });
      await t.step("with a TTY: a terminal of the client's size", async () => {
        const { url } = await runtime.exec({
          ...streams,
          stderr: false,
          tty: true,
          stdin: true,
          containerId: id,
          cmd: ["sh", "-c", "read x; stty size; tty"],
        });
        const r = await runSpdyClient(
          oracle!,
          ["exec", url, "-stdin", "-tty"],
          new TextEncoder().encode("go\n"),
        );
        assert.equal(r.code, 0, r.stderr);
        assert.match(new TextDecoder().decode(r.stdout), /^go\r\n40 100\r\n\/dev\/pts\/\d+\r\n$/);
      });
    });
  },
});

Deno.test({
  name: "TestEmbeddedPortForward with client-go's port forwarder",
  ignore: oracle === undefined,
  async fn() {
    const target = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (target.addr as Deno.NetAddr).port;
    const serving = (async () => {
      const conn = await target.accept();
      const buf = new Uint8Array(1024);
      const n = await conn.read(buf);
      const request = new TextDecoder().decode(buf.subarray(0, n ?? 0));
      const body = `you asked for ${request.split(" ")[1]}`;
      await conn.write(new TextEncoder().encode(
        `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ));
      conn.close();
    })();
    try {
      await withContainer("sleep 60", async (runtime, { sandbox }) => {
        const { url } = await runtime.portForward({ podSandboxId: sandbox, port: [port] });
        const r = await runSpdyClient(
          oracle!,
          ["portforward", url, String(port)],
          new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: pod\r\n\r\n"),
        );
        assert.equal(r.code, 0, r.stderr);
        assert.match(
          new TextDecoder().decode(r.stdout),
          /^HTTP\/1\.1 200 OK\r\n[^]*you asked for \/healthz$/,
        );
        await serving;
      });
    } finally {
      target.close();
    }
  },
});

Deno.test("TestEmbeddedStreaming refusals", async (t) => {
  await withContainer("exit 0", async (runtime, { id, sandbox }) => {
    await waitFor(
      async () => (await runtime.containerStatus(id)).status.state === "CONTAINER_EXITED",
      "the container to exit",
    );
    await t.step("exec in an exited container", async () => {
      await assert.rejects(
        runtime.exec({ ...streams, containerId: id, cmd: ["true"] }),
        /^Error: container is not running$/,
      );
    });
    await t.step("attach to an exited container", async () => {
      await assert.rejects(
        runtime.attach({ ...streams, containerId: id }),
        /container is in CONTAINER_EXITED state/,
      );
    });
    await t.step("exec in an unknown container", async () => {
      await assert.rejects(
        runtime.exec({ ...streams, containerId: "nope", cmd: ["true"] }),
        /not found/,
      );
    });
    await t.step("port-forward to a stopped sandbox", async () => {
      await runtime.stopPodSandbox(sandbox);
      await assert.rejects(
        runtime.portForward({ podSandboxId: sandbox, port: [] }),
        /sandbox container is not running/,
      );
      await assert.rejects(runtime.portForward({ podSandboxId: "nope", port: [] }), /not found/);
    });
  });
});

Deno.test("TestEmbeddedAttach: the container's output from now on", async () => {
  await withContainer(
    // Prints a line each time the file `go` appears in its folder.
    "while true; do if [ -f go ]; then rm go; echo fired; echo oops >&2; fi; sleep 0.02; done",
    async (runtime, { id, dir }) => {
      const { url } = await runtime.attach({ ...streams, containerId: id });
      const { answer, client } = await TestSpdyClient.dial(url);
      assert.equal(answer.status, 101);
      try {
        await client!.open({ streamtype: ["error"] });
        const stdoutId = await client!.open({ streamtype: ["stdout"] });
        const stderrId = await client!.open({ streamtype: ["stderr"] });
        let replies = 0;
        await client!.collect((f) => f.type === "synReply" && ++replies === 3);
        await Deno.writeTextFile(`${dir}/go`, "");
        let out = "";
        let err = "";
        await client!.collect((f) => {
          if (f.type === "data" && f.streamId === stdoutId) out += streamText([f], stdoutId);
          if (f.type === "data" && f.streamId === stderrId) err += streamText([f], stderrId);
          return out === "fired\n" && err === "oops\n";
        });
        assert.equal(out, "fired\n");
        assert.equal(err, "oops\n");
      } finally {
        client!.close();
      }
    },
  );
});

Deno.test("TestEmbeddedExec: the client going away kills the command", async () => {
  await withContainer("sleep 60", async (runtime, { id }) => {
    const { url } = await runtime.exec({
      ...streams,
      containerId: id,
      cmd: ["sh", "-c", "echo $$; exec sleep 1000"],
    });
    const { client } = await TestSpdyClient.dial(url);
    let pid = 0;
    try {
      await client!.open({ streamtype: ["error"] });
      const stdoutId = await client!.open({ streamtype: ["stdout"] });
      await client!.open({ streamtype: ["stderr"] });
      let out = "";
      await client!.collect((f) => {
        if (f.type === "data" && f.streamId === stdoutId) out += streamText([f], stdoutId);
        return out.endsWith("\n");
      });
      pid = Number(out.trim());
      assert.ok(runtime.processIds().includes(pid), "the exec is tracked while it runs");
    } finally {
      client!.close();
    }
    const alive = () => {
      try {
        return !Deno.readTextFileSync(`/proc/${pid}/stat`).includes(") Z ");
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(), "the exec to be killed");
    await waitFor(() => !runtime.processIds().includes(pid), "the exec to be forgotten");
  });
});
