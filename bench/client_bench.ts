/**
 * Micro-costs of the API client's hot paths, for `deno bench --allow-all bench/client_bench.ts`:
 * the strategic merge patch kubelet computes per pod status and node status sync (beside a plain
 * JSON round trip of the same objects, the floor), the event correlator per event, and decoding a
 * watch stream of 2,000 pod events from a local server (beside `JSON.parse` of the same lines).
 * @module
 */
import { createTwoWayMergePatch } from "../src/util/strategicpatch/patch.ts";
import { nodeSchema, podSchema } from "../src/util/strategicpatch/schema.ts";
import { EventCorrelator } from "../src/client/record/events_cache.ts";
import { newForConfig } from "../src/client/kubernetes/clientset.ts";
import { AlwaysAcceptRateLimiter } from "../src/util/flowcontrol/throttle.ts";
import { FakeClock } from "../src/util/clock.ts";
import type { Event, PodStatus } from "../src/api/core/v1/mod.ts";

const t0 = "2026-11-23T05:00:00Z";
const t1 = "2026-11-23T05:00:10Z";

function podStatus(ready: boolean, restarts: number): PodStatus {
  const cond = (type: string) => ({
    type,
    status: (ready ? "True" : "False") as "True" | "False",
    lastProbeTime: null,
    lastTransitionTime: ready ? t1 : t0,
  });
  return {
    phase: "Running",
    conditions: [
      "PodReadyToStartContainers",
      "Initialized",
      "Ready",
      "ContainersReady",
      "PodScheduled",
    ]
      .map(cond),
    hostIP: "10.0.0.1",
    hostIPs: [{ ip: "10.0.0.1" }],
    podIP: "10.244.0.7",
    podIPs: [{ ip: "10.244.0.7" }],
    startTime: t0,
    containerStatuses: ["app", "sidecar", "metrics"].map((name) => ({
      name,
      state: { running: { startedAt: t0 } },
      lastState: {},
      ready,
      restartCount: restarts,
      image: "busybox:1.36",
      imageID: "sha256:0123",
      containerID: `containerd://${name}0123`,
      started: true,
    })),
  };
}

const oldPod = { status: podStatus(false, 0) };
const newPod = {
  metadata: { uid: "6c2d1e8e-1111-2222-3333-444455556666" },
  status: podStatus(true, 1),
};

const nodeStatus = (ready: boolean, hb: string) => ({
  status: {
    conditions: ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"].map((type) => ({
      type,
      status: type === "Ready" ? (ready ? "True" : "False") : "False",
      lastHeartbeatTime: hb,
      lastTransitionTime: t0,
      reason: type === "Ready"
        ? (ready ? "KubeletReady" : "KubeletNotReady")
        : `KubeletHasNo${type}`,
      message: "kubelet is posting ready status",
    })),
    addresses: [{ type: "InternalIP", address: "10.0.0.1" }, {
      type: "Hostname",
      address: "node-1",
    }],
    capacity: { cpu: "2", memory: "4025196Ki", pods: "110" },
  },
});
const oldNode = nodeStatus(false, t0);
const newNode = nodeStatus(true, t1);

Deno.bench(
  "pod status SMP (5 conditions, 3 containers)",
  { group: "pod-patch", baseline: false },
  () => {
    createTwoWayMergePatch(oldPod, newPod, podSchema);
  },
);
Deno.bench(
  "floor: JSON round trip of both statuses",
  { group: "pod-patch", baseline: true },
  () => {
    JSON.parse(JSON.stringify(oldPod));
    JSON.parse(JSON.stringify(newPod));
  },
);
Deno.bench("node status SMP (4 conditions)", { group: "node-patch" }, () => {
  createTwoWayMergePatch(oldNode, newNode, nodeSchema);
});

const clock = new FakeClock(Date.parse(t0));
const correlator = new EventCorrelator(clock);
let n = 0;
Deno.bench(
  "EventCorrelator.eventCorrelate (repeat of one of 100 events)",
  { group: "events" },
  () => {
    const i = n++ % 100;
    const event: Event = {
      metadata: { name: `pod-${i}.1`, namespace: "default" },
      involvedObject: { kind: "Pod", namespace: "default", name: `pod-${i}`, uid: `u${i}` },
      reason: "Unhealthy",
      message: "Liveness probe failed: HTTP probe failed with statuscode: 500",
      source: { component: "kubelet", host: "node-1" },
      count: 1,
      firstTimestamp: t0,
      lastTimestamp: t0,
      type: "Warning",
    };
    const result = correlator.eventCorrelate(event);
    if (!result.skip) correlator.updateState(result.event!);
    clock.setTime(clock.now() + 1000);
  },
);

// A watch stream of 2,000 MODIFIED pod events, served from memory.
const events = 2000;
const line = (i: number) =>
  JSON.stringify({
    type: "MODIFIED",
    object: {
      kind: "Pod",
      apiVersion: "v1",
      metadata: { name: `pod-${i}`, namespace: "default", resourceVersion: String(1000 + i) },
      spec: { nodeName: "node-1", containers: [{ name: "app", image: "busybox" }] },
      status: podStatus(i % 2 === 0, i),
    },
  }) + "\n";
const body = new TextEncoder().encode(Array.from({ length: events }, (_, i) => line(i)).join(""));
const server = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen() {} },
  () => new Response(body, { headers: { "content-type": "application/json" } }),
);
const client = newForConfig({
  host: `http://127.0.0.1:${server.addr.port}`,
  rateLimiter: new AlwaysAcceptRateLimiter(),
});
globalThis.addEventListener("unload", () => {
  client.close();
  void server.shutdown();
});

Deno.bench(`watch: decode ${events} pod events over HTTP`, { group: "watch" }, async () => {
  const w = await client.coreV1.pods("").watch({ resourceVersion: "1" });
  let seen = 0;
  for await (const _ of w) seen++;
  if (seen !== events) throw new Error(`saw ${seen} events`);
});
Deno.bench(
  `floor: JSON.parse of the same ${events} lines`,
  { group: "watch", baseline: true },
  () => {
    const text = new TextDecoder().decode(body);
    for (const l of text.split("\n")) if (l) JSON.parse(l);
  },
);
