/**
 * The streaming server against client-go v0.36.3's own SPDY executor and port forwarder (the
 * code kube-apiserver and kubectl run), built by scripts/spdy-client.sh (.ci/run builds it);
 * ignored, saying why, when it is not built.
 * @module
 */
import assert from "node:assert/strict";
import { StreamingServer } from "../../src/cri_streaming/mod.ts";
import { HostRuntime, runSpdyClient, spdyClientPath } from "./host_runtime.ts";

const oracle = spdyClientPath("go_client_test");

function assertIncludes(text: string, part: string): void {
  assert.ok(
    text.includes(part),
    `${JSON.stringify(text)} does not include ${JSON.stringify(part)}`,
  );
}

const execRequest = { containerId: "c1", tty: false, stdin: false, stdout: true, stderr: true };

Deno.test({
  name: "TestServeExec with client-go's SPDY executor",
  ignore: oracle === undefined,
  async fn(t) {
    const runtime = new HostRuntime();
    const server = new StreamingServer(runtime);
    await server.start();
    try {
      await t.step("echo: stdout, exit 0", async () => {
        const { url } = server.getExec({ ...execRequest, cmd: ["echo", "hello"] });
        const r = await runSpdyClient(oracle!, ["exec", url]);
        assert.deepStrictEqual(r.code, 0, r.stderr);
        assert.deepStrictEqual(new TextDecoder().decode(r.stdout), "hello\n");
      });
      await t.step("exit 3 and stderr: the status carries the code", async () => {
        const { url } = server.getExec({
          ...execRequest,
          cmd: ["sh", "-c", "echo oops >&2; exit 3"],
        });
        const r = await runSpdyClient(oracle!, ["exec", url]);
        assert.deepStrictEqual(r.code, 3);
        assertIncludes(r.stderr, "oops\n");
        assertIncludes(r.stderr, "command terminated with exit code 3");
      });
      await t.step("stdin echo of 1 MiB, closed by the client", async () => {
        const input = new Uint8Array(1 << 20).map((_, i) => (i * 7) & 0xff);
        const { url } = server.getExec({ ...execRequest, stdin: true, cmd: ["cat"] });
        const r = await runSpdyClient(oracle!, ["exec", url, "-stdin"], input);
        assert.deepStrictEqual(r.code, 0, r.stderr);
        assert.deepStrictEqual(r.stdout.length, input.length);
        assert.deepStrictEqual(r.stdout, input);
      });
      await t.step("a token is used once", async () => {
        const { url } = server.getExec({ ...execRequest, cmd: ["true"] });
        assert.deepStrictEqual((await runSpdyClient(oracle!, ["exec", url])).code, 0);
        const again = await runSpdyClient(oracle!, ["exec", url]);
        assert.deepStrictEqual(again.code, 1);
        assertIncludes(again.stderr, "404");
      });
    } finally {
      await server.stop();
    }
  },
});

Deno.test({
  name: "TestServePortForward with client-go's port forwarder",
  ignore: oracle === undefined,
  async fn() {
    const runtime = new HostRuntime();
    const server = new StreamingServer(runtime);
    const target = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (target.addr as Deno.NetAddr).port;
    // An upper-casing echo server: reads to EOF, answers, closes.
    const serving = (async () => {
      const conn = await target.accept();
      const chunks: Uint8Array[] = [];
      const buf = new Uint8Array(4096);
      for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
        chunks.push(buf.slice(0, n));
      }
      const text = chunks.map((c) => new TextDecoder().decode(c)).join("");
      await conn.write(new TextEncoder().encode(`HTTP/1.0 200 OK\r\n\r\n${text.toUpperCase()}`));
      conn.close();
    })();
    await server.start();
    try {
      const { url } = server.getPortForward({ podSandboxId: "sandbox1", port: [] });
      const r = await runSpdyClient(
        oracle!,
        ["portforward", url, String(port)],
        new TextEncoder().encode("hello through the tunnel"),
      );
      assert.deepStrictEqual(r.code, 0, r.stderr);
      assert.deepStrictEqual(
        new TextDecoder().decode(r.stdout),
        "HTTP/1.0 200 OK\r\n\r\nHELLO THROUGH THE TUNNEL",
      );
      assert.deepStrictEqual(runtime.forwards, [{ podSandboxId: "sandbox1", port }]);
      await serving;
    } finally {
      target.close();
      await server.stop();
    }
  },
});
