/**
 * Keeps bench/go_targets (the benchmark's `--targets go`) working: builds it, probes each kind with
 * the production handlers, and checks the stats line counts them.
 * @module
 */
import assert from "node:assert/strict";
import { buildGoTargets } from "../../bench/go_baseline.ts";
import { newHttpProber, newProbeRequest } from "../../src/probe/http/mod.ts";
import { newTcpProber } from "../../src/probe/tcp/mod.ts";
import { newGrpcProber } from "../../src/probe/grpc/mod.ts";

async function goMissing(): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("go", { args: ["version"], stdout: "null" }).output();
    return out.success ? undefined : "`go version` failed";
  } catch {
    return "`go` is not on PATH";
  }
}

const missing = await goMissing();
if (missing) console.log(`skipping go_targets test: ${missing}`);

Deno.test({
  name: "bench/go_targets serves HTTP, HTTPS, TCP and gRPC health to the production probes",
  ignore: missing !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "probelet-go-targets-test-" });
    const child = new Deno.Command(await buildGoTargets(dir), {
      args: ["--ports-per-kind", "1"],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    const nextLine = async () => {
      while (!buffer.includes("\n")) {
        const { value, done } = await lines.read();
        if (done) throw new Error(`go_targets ended early: ${buffer}`);
        buffer += value;
      }
      const line = buffer.slice(0, buffer.indexOf("\n"));
      buffer = buffer.slice(line.length + 1);
      return JSON.parse(line);
    };
    const stdin = child.stdin.getWriter();
    try {
      const ports = await nextLine();
      const http = newHttpProber();
      for (const scheme of ["http", "https"] as const) {
        const { request } = newProbeRequest(`${scheme}://127.0.0.1:${ports[scheme][0]}/healthz`);
        assert.deepEqual(await http.probe(request!, { timeoutMs: 5000 }), {
          result: "success",
          output: "ok",
        });
      }
      const tcp = await newTcpProber().probe("127.0.0.1", {
        port: ports.tcp[0],
        timeoutMs: 5000,
      });
      assert.equal(tcp.result, "success");
      const grpc = await newGrpcProber().probe("127.0.0.1", {
        service: "",
        port: ports.grpc[0],
        timeoutMs: 5000,
      });
      assert.deepEqual(grpc, { result: "success", output: "service healthy" });
      await stdin.write(new TextEncoder().encode(`{"stats":true}\n`));
      const stats = await nextLine();
      assert.deepEqual(stats.counts, { http: 1, https: 1, tcp: 1, grpc: 1 });
      assert.ok(stats.cpuSeconds > 0);
    } finally {
      await stdin.close().catch(() => {});
      await lines.cancel().catch(() => {});
      const status = await child.status;
      await Deno.remove(dir, { recursive: true });
      assert.equal(status.code, 0);
    }
  },
});
