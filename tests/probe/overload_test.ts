/**
 * Overload must never crash the process: with a low open-file limit, hundreds of simultaneous
 * HTTP, TCP and gRPC probes end as successes or failures with a clear text (the descriptor budget),
 * never an EMFILE error, an uncaught exception or a Deno panic. Runs probes in a child process
 * started under `ulimit -n 256`; the servers run here, under the normal limit.
 * @module
 */
import assert from "node:assert/strict";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { startHealthServer } from "../testing/grpc_health_server.ts";

const child = new URL("./testdata/overload_child.ts", import.meta.url).pathname;
const count = 600;

async function runChild(kind: string, port: number): Promise<Record<string, number>> {
  const command = new Deno.Command("bash", {
    args: [
      "-c",
      `ulimit -n 256 && exec "$0" run --allow-all "$1" "$2" "$3" "$4"`,
      Deno.execPath(),
      child,
      kind,
      String(port),
      String(count),
    ],
    stdout: "piped",
    stderr: "piped",
  });
  const { code, stdout, stderr } = await command.output();
  const out = new TextDecoder().decode(stdout);
  const err = new TextDecoder().decode(stderr);
  assert.equal(code, 0, `child exited ${code}\n${err.slice(-2000)}`);
  const report = JSON.parse(out.trim().split("\n").pop()!);
  assert.ok(report.capacity > 0 && report.capacity < 256, JSON.stringify(report));
  return report.counts;
}

function assertClean(counts: Record<string, number>, success: string): void {
  let total = 0;
  for (const [text, n] of Object.entries(counts)) {
    total += n;
    assert.doesNotMatch(text, /EMFILE|too many open files/i, JSON.stringify(counts));
    assert.ok(
      text === success || text.startsWith("failure: "),
      `unexpected outcome ${text}: ${JSON.stringify(counts)}`,
    );
  }
  assert.equal(total, count);
  assert.ok((counts[success] ?? 0) > 0, JSON.stringify(counts));
}

async function listen(server: http.Server | net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

Deno.test("TestOverloadDegradesIntoFailures", async (t) => {
  await t.step("grpc", async () => {
    const server = await startHealthServer({ status: "SERVING" });
    try {
      assertClean(await runChild("grpc", server.port), "success: service healthy");
    } finally {
      await server.close();
    }
  });
  await t.step("grpc against a port that never speaks: the budget's text", async () => {
    const held: net.Socket[] = [];
    const server = net.createServer((socket) => {
      socket.on("error", () => {});
      held.push(socket);
    });
    const port = await listen(server);
    try {
      const counts = await runChild("grpc", port);
      const texts = Object.keys(counts);
      assert.ok(
        texts.every((text) =>
          text.startsWith("failure: timeout: failed to connect service") ||
          /^failure: probe not started within 1s: all \d+ probe slots were in use \(descriptor budget for an open-file limit of 256\)$/
            .test(text)
        ),
        JSON.stringify(counts),
      );
      assert.ok(texts.some((text) => text.includes("probe not started")), JSON.stringify(counts));
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
  await t.step("http", async () => {
    const server = http.createServer((_req, res) => res.end("ok"));
    const port = await listen(server);
    try {
      assertClean(await runChild("http", port), "success: ok");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
  await t.step("tcp", async () => {
    const server = net.createServer((socket) => socket.destroy());
    const port = await listen(server);
    try {
      assertClean(await runChild("tcp", port), "success: ");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
