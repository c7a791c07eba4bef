/**
 * Run by tests/probe/overload_test.ts under a low `ulimit -n`: many probes of one kind at once
 * through kubelet's prober, then one JSON line counting the outcomes by output text.
 * Usage: `overload_child.ts <http|tcp|grpc> <port> <count>`.
 * @module
 */
import type { Container, Pod, Probe } from "../../../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import { newProber } from "../../../src/kubelet/prober/prober.ts";

const [kind, portText, countText] = Deno.args;
const port = Number(portText);
const probes: Record<string, Probe> = {
  http: { httpGet: { host: "127.0.0.1", port, path: "/" }, timeoutSeconds: 1 },
  tcp: { tcpSocket: { host: "127.0.0.1", port }, timeoutSeconds: 1 },
  grpc: { grpc: { port }, timeoutSeconds: 1 },
};
const container: Container = { name: "c", readinessProbe: probes[kind] };
const pod: Pod = {
  metadata: { name: "p", namespace: "default", uid: "u1" },
  spec: { containers: [container] },
};
const prober = newProber(undefined, new FakeRecorder());
const outcomes = await Promise.all(
  Array.from({ length: Number(countText) }, () =>
    prober.runProbe("readiness", {
      pod,
      status: { podIP: "127.0.0.1" },
      container,
      containerID: { type: "test", id: "c1" },
    })),
);
const counts: Record<string, number> = {};
for (const { result, output, error } of outcomes) {
  const key = `${result}: ${error ? `error ${error.message}` : output.replace(/:\d+/g, ":PORT")}`;
  counts[key] = (counts[key] ?? 0) + 1;
}
console.log(JSON.stringify({ capacity: prober.budget?.capacity, counts }));
