/**
 * Micro-costs of one probe, for `deno bench --allow-all bench/probe_bench.ts`: each production handler
 * beside the same request done with plain node:http/node:https/node:net/grpc-js (the floor), and the
 * framework's own pieces (results manager set, status lookup). Probes hit bench/targets.mjs, started
 * in a Node process of its own when this module loads.
 * @module
 */
import { floorGrpc, floorHttp, floorHttps, floorTcp, type TargetPorts } from "./floor.ts";
import { newHttpProber } from "../src/probe/http/http.ts";
import { newProbeRequest } from "../src/probe/http/request.ts";
import { newTcpProber } from "../src/probe/tcp/tcp.ts";
import { newGrpcProber } from "../src/probe/grpc/grpc.ts";
import { newManager as newResultsManager, Result } from "../src/kubelet/prober/results/mod.ts";
import { BasicPodManager, newManager as newStatusManager } from "../src/kubelet/status/mod.ts";
import type { Pod } from "../src/api/core/v1/mod.ts";

const benchDir = new URL(".", import.meta.url).pathname;
const targets = new Deno.Command("node", {
  args: [`${benchDir}targets.mjs`, "--ports-per-kind", "1"],
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
  cwd: `${benchDir}..`,
}).spawn();
const reader = targets.stdout.pipeThrough(new TextDecoderStream()).getReader();
let first = "";
while (!first.includes("\n")) {
  const { value, done } = await reader.read();
  if (done) throw new Error("bench/targets.mjs exited before listening");
  first += value;
}
reader.releaseLock();
const ports = JSON.parse(first.split("\n")[0]) as TargetPorts;
// The targets exit when their stdin closes, i.e. when this process exits.
globalThis.addEventListener("unload", () => targets.kill());
targets.unref();

const httpProber = newHttpProber({ followNonLocalRedirects: false });
const tcpProber = newTcpProber();
const grpcProber = newGrpcProber();
const httpRequest = newProbeRequest(`http://127.0.0.1:${ports.http[0]}/healthz`).request!;
const httpsRequest = newProbeRequest(`https://127.0.0.1:${ports.https[0]}/healthz`).request!;
const options = { timeoutMs: 1000 };

Deno.bench("http probe (prober)", { group: "http", baseline: false }, async () => {
  await httpProber.probe(httpRequest, options);
});
Deno.bench("http probe (node:http floor)", { group: "http", baseline: true }, async () => {
  await floorHttp(ports.http[0]);
});
Deno.bench("https probe (prober)", { group: "https" }, async () => {
  await httpProber.probe(httpsRequest, options);
});
Deno.bench("https probe (node:https floor)", { group: "https", baseline: true }, async () => {
  await floorHttps(ports.https[0]);
});
Deno.bench("tcp probe (prober)", { group: "tcp" }, async () => {
  await tcpProber.probe("127.0.0.1", { port: ports.tcp[0], timeoutMs: 1000 });
});
Deno.bench("tcp probe (node:net floor)", { group: "tcp", baseline: true }, async () => {
  await floorTcp(ports.tcp[0]);
});
Deno.bench("grpc probe (prober)", { group: "grpc" }, async () => {
  await grpcProber.probe("127.0.0.1", { service: "", port: ports.grpc[0], timeoutMs: 1000 });
});
Deno.bench("grpc probe (grpc-js floor)", { group: "grpc", baseline: true }, async () => {
  await floorGrpc(ports.grpc[0]);
});

const pod: Pod = {
  metadata: { name: "bench", namespace: "bench", uid: "bench-uid" },
  spec: { containers: [{ name: "app" }] },
};
const results = newResultsManager();
const id = { type: "containerd", id: "bench" };
await results.set(id, Result.Success, pod);
Deno.bench("results manager set (unchanged)", { group: "framework" }, async () => {
  await results.set(id, Result.Success, pod);
});
const podManager = new BasicPodManager();
podManager.addPod(pod);
const statuses = newStatusManager({ podManager });
statuses.setPodStatus(pod, {
  phase: "Running",
  podIP: "127.0.0.1",
  containerStatuses: [{
    name: "app",
    containerID: "containerd://bench",
    state: { running: { startedAt: new Date().toISOString() } },
    ready: true,
    started: true,
    restartCount: 0,
  }],
});
Deno.bench("status manager getPodStatus (copy)", { group: "framework" }, () => {
  statuses.getPodStatus("bench-uid");
});
Deno.bench("status manager getPodStatus (shared)", { group: "framework" }, () => {
  statuses.getPodStatus("bench-uid", { shared: true });
});
