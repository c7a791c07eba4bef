/**
 * The agent's API clients: the pod watch ends after `podWatchIdleTimeoutMs` of silence (Deno's
 * fetch sends no HTTP/2 pings, so silence is the only sign of a dead connection), a bookmark
 * restarts the count; `closeAllConns` reaches all three clients.
 */
import assert from "node:assert/strict";
import { buildKubeClients, podWatchIdleTimeoutMs } from "../../../src/cmd/probelet/kube_clients.ts";
import { defaultFlags } from "../../../src/cmd/probelet/flags.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";

// Builds the agent's clients from a kubeconfig for `server` in a temporary folder.
async function clientsFor(server: string, user: string, clock: FakeClock) {
  const dir = await Deno.makeTempDir({ prefix: "probelet-kube-clients-test-" });
  const previous = log.setLogSink(() => {});
  const kubeconfig = `${dir}/kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    [
      "apiVersion: v1",
      "kind: Config",
      `clusters: [{name: c, cluster: {server: '${server}'}}]`,
      `users: [{name: u, user: ${user}}]`,
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      "current-context: x",
    ].join("\n"),
  );
  const clients = await buildKubeClients(
    { ...defaultFlags(), kubeconfig, nodeName: "node-1" },
    { clock },
  );
  const cleanup = async () => {
    clients.close();
    log.setLogSink(previous);
    await Deno.remove(dir, { recursive: true });
  };
  return { clients, cleanup };
}

Deno.test("buildKubeClients: the pod watch ends after podWatchIdleTimeoutMs without a byte, a bookmark restarts the count", async () => {
  const enc = new TextEncoder();
  let stream!: ReadableStreamDefaultController<Uint8Array>;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () =>
      new Response(new ReadableStream({ start: (c) => stream = c }), {
        headers: { "content-type": "application/json" },
      }),
  );
  const clock = new FakeClock(0);
  const { clients, cleanup } = await clientsFor(
    `http://127.0.0.1:${server.addr.port}`,
    "{}",
    clock,
  );
  try {
    const w = await clients.kubeClient.coreV1.pods("").watch({
      resourceVersion: "5",
      allowWatchBookmarks: true,
      timeoutSeconds: 600,
    });
    const it = w[Symbol.asyncIterator]();
    let next = it.next();
    await clock.step(podWatchIdleTimeoutMs - 1_000);
    stream.enqueue(enc.encode(
      '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}\n',
    ));
    assert.equal((await next).value?.type, "BOOKMARK");
    next = it.next();
    await clock.step(podWatchIdleTimeoutMs - 1);
    const pending = Symbol("pending");
    assert.equal(await Promise.race([next, Promise.resolve(pending)]), pending, "still open");
    await clock.step(1);
    assert.deepEqual(await next, { value: undefined, done: true });
    assert.equal((w as unknown as { endReason: string }).endReason, "idle");
  } finally {
    await cleanup();
    await server.shutdown();
  }
});

Deno.test("buildKubeClients: closeAllConns drops the connections of all three clients, as kubelet's shared dialer does", async () => {
  const { clients, cleanup } = await clientsFor(
    "https://127.0.0.1:6443",
    "{token: t}",
    new FakeClock(0),
  );
  try {
    const dropped: string[] = [];
    for (const name of ["kubeClient", "heartbeatClient", "eventClient"] as const) {
      clients[name].closeAllConns = () => void dropped.push(name);
    }
    clients.closeAllConns();
    assert.deepEqual(dropped, ["kubeClient", "heartbeatClient", "eventClient"]);
  } finally {
    await cleanup();
  }
});
