/**
 * Node registration, node status and the node lease on the wire, against the API-server double
 * (node authorizer and NodeRestriction on) over HTTP, with time on a fake clock: the status patch
 * byte for byte with its path and content type, registration back-off, lease renewals every
 * 10 s + up to 4 %, and a lease conflict answered with exactly one GET before the next PUT.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { newForConfig } from "../../src/client/kubernetes/clientset.ts";
import type { MachineInfo } from "../../src/kubelet/cadvisor/cadvisor.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { KubeletNodeStatus, type RuntimeCondition } from "../../src/kubelet/kubelet_node_status.ts";
import { NamespaceNodeLease, newController } from "../../src/kubelet/nodelease/controller.ts";
import { setNodeOwnerFunc } from "../../src/kubelet/util/nodelease.ts";
import { FakeClock } from "../../src/util/clock.ts";
import { setLogSink } from "../../src/util/log.ts";
import { apiDrainTimeoutMs } from "../../src/util/wait/wait.ts";
import { nodeUser, startApiServer } from "../testing/apiserver/mod.ts";

const nodeName = "n1";

interface Sent {
  at: number;
  method: string;
  path: string;
}

/** The double on HTTP, a client whose requests are timed on the fake clock, and a drain helper. */
async function setUp() {
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0));
  const server = await startApiServer({ clock, defaultUser: nodeUser(nodeName) });
  const sent: Sent[] = [];
  let inflight = 0;
  const countingFetch: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    sent.push({ at: clock.now(), method: req.method, path: new URL(req.url).pathname });
    inflight++;
    try {
      const res = await fetch(req);
      const body = await res.arrayBuffer();
      return new Response(body, { status: res.status, headers: res.headers });
    } finally {
      inflight--;
    }
  };
  const client = newForConfig({ host: server.url, qps: -1 }, { clock, fetch: countingFetch });
  // Waits until no request is in flight (HTTP is real I/O; only timers are fake).
  const drain = async () => {
    for (let quiet = 0; quiet < 3;) {
      await new Promise((r) => setTimeout(r, inflight > 0 ? 1 : 0));
      quiet = inflight === 0 ? quiet + 1 : 0;
    }
  };
  // Moves the fake time forward in 100 ms steps, letting requests finish at each one.
  const advance = async (ms: number) => {
    await drain();
    for (let t = 0; t < ms; t += 100) {
      await clock.step(100);
      await drain();
    }
  };
  const close = async () => {
    await server.close();
    client.close();
  };
  return { clock, server, double: server.double, client, sent, drain, advance, close };
}

/** A runtime that reports both conditions true. */
function readyRuntime(): { conditions: RuntimeCondition[] } {
  return {
    conditions: [{ type: "RuntimeReady", status: true }, { type: "NetworkReady", status: true }],
  };
}

/** The node lease controller as the agent runs it, on the test's client and clock. */
function newLeaseController(env: Awaited<ReturnType<typeof setUp>>, random?: () => number) {
  return newController({
    clock: env.clock,
    client: env.client,
    holderIdentity: nodeName,
    leaseDurationSeconds: 40,
    renewIntervalMs: 10_000,
    leaseNamespace: NamespaceNodeLease,
    newLeasePostProcessFunc: setNodeOwnerFunc(env.client, nodeName),
    random,
  });
}

function quiet(): () => void {
  const previous = setLogSink(() => {});
  return () => setLogSink(previous);
}

const machine: MachineInfo = {
  machineID: "123",
  systemUUID: "abc",
  bootID: "1b3",
  numCores: 2,
  memoryCapacity: 4 * 2 ** 30,
  hugePages: [],
};

function newNodeStatus(
  env: Awaited<ReturnType<typeof setUp>>,
  runtime: { conditions: RuntimeCondition[] },
  recorder = new FakeRecorder(),
): KubeletNodeStatus {
  return new KubeletNodeStatus({
    nodeName,
    hostname: nodeName,
    kubeClient: env.client,
    heartbeatClient: env.client,
    clock: env.clock,
    registerNode: true,
    registerWithTaints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }],
    nodeLabels: { "probelet.io/agent": "true" },
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    recorder,
    runtimeStatus: () => Promise.resolve(runtime.conditions),
    random: () => 0,
    setters: {
      nodeIPs: ["10.0.0.7"],
      nodeAddress: { validateNodeIP: () => {} },
      maxPods: 110,
      machineInfo: () => machine,
      ephemeralStorageCapacity: () => 100 * 2 ** 30,
      versionInfo: () => ({ kernelVersion: "6.1.0-test", containerOsVersion: "Debian 12" }),
      runtimeType: () => "embedded",
      runtimeVersion: () => Promise.resolve("0.1.0"),
      kubeletVersion: "v1.36.3",
      kubeletPort: () => 10255,
    },
  });
}

Deno.test("TestNodeStatusPatchOnTheWire", async () => {
  const restore = quiet();
  const env = await setUp();
  const runtime = readyRuntime();
  const recorder = new FakeRecorder();
  const ns = newNodeStatus(env, runtime, recorder);
  try {
    await ns.updateRuntimeUp();
    const sync = ns.syncNodeStatus();
    await env.advance(100);
    await sync;
    const create = env.double.requests.find((r) => r.method === "POST")!;
    assertEquals([create.path, create.status, create.user], [
      "/api/v1/nodes",
      201,
      "system:node:n1",
    ]);
    const posted = JSON.parse(create.body);
    assertEquals(posted.spec.taints, [
      { key: "probelet.io/agent", value: "true", effect: "NoExecute" },
    ]);
    assertEquals(posted.metadata.labels["probelet.io/agent"], "true");
    assertEquals(
      posted.metadata.annotations,
      { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
    );
    // The first status GET reads the API server's cache (resourceVersion=0); nothing changed
    // within the second, but no report was ever sent, so kubelet's first one goes out empty.
    assertEquals(
      env.double.requests.slice(1).map((r) => [r.method, r.path, r.query, r.body]),
      [
        ["GET", "/api/v1/nodes/n1", "resourceVersion=0", ""],
        ["PATCH", "/api/v1/nodes/n1/status", "", "{}"],
      ],
    );

    // The network goes down: the next tick patches Ready with kubelet's bytes.
    await env.clock.step(10_000);
    runtime.conditions = [
      { type: "RuntimeReady", status: true, reason: "", message: "" },
      {
        type: "NetworkReady",
        status: false,
        reason: "NetworkPluginNotReady",
        message: "Network plugin returns error: cni plugin not initialized",
      },
    ];
    await ns.updateRuntimeUp();
    env.double.requests.length = 0;
    await ns.syncNodeStatus();
    const t = "2026-11-23T05:00:10Z";
    const patch = env.double.requests.find((r) => r.method === "PATCH")!;
    assertEquals(
      [patch.path, patch.query, patch.contentType, patch.status],
      ["/api/v1/nodes/n1/status", "", "application/strategic-merge-patch+json", 200],
    );
    assertEquals(
      patch.body,
      '{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},' +
        '{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[' +
        `{"lastHeartbeatTime":"${t}","type":"MemoryPressure"},` +
        `{"lastHeartbeatTime":"${t}","type":"DiskPressure"},` +
        `{"lastHeartbeatTime":"${t}","type":"PIDPressure"},` +
        `{"lastHeartbeatTime":"${t}","lastTransitionTime":"${t}","message":"container runtime ` +
        "network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network " +
        'plugin returns error: cni plugin not initialized","reason":"KubeletNotReady",' +
        '"status":"False","type":"Ready"}]}}',
    );
    const stored = env.double.get("nodes", undefined, nodeName)!;
    // deno-lint-ignore no-explicit-any
    const ready = (stored.status as any).conditions.at(-1);
    assertEquals([ready.status, ready.reason], ["False", "KubeletNotReady"]);
    assertEquals(recorder.events.at(-1), "Normal NodeNotReady Node n1 status is now: NodeNotReady");
    assert(!env.double.requests.some((r) => r.status === 403), "no request forbidden");
  } finally {
    await ns.stop();
    await env.close();
    restore();
  }
});

Deno.test("TestRegistrationBackoffOnTheWire", async () => {
  const restore = quiet();
  const env = await setUp();
  const ns = newNodeStatus(env, readyRuntime());
  const start = env.clock.now();
  env.double.injectFault({ method: "POST", path: "/api/v1/nodes", status: 500, times: 8 });
  try {
    const registering = ns.registerWithAPIServer();
    await env.advance(30_000);
    await registering;
    assert(ns.registrationCompleted);
    const posts = env.sent.filter((s) => s.method === "POST").map((s) => s.at - start);
    // Sleep 0.1 s, then double it before every retry up to 7 s.
    assertEquals(posts, [100, 300, 700, 1500, 3100, 6300, 12700, 19700, 26700]);
    assertEquals(
      env.double.requests.filter((r) => r.method === "POST").map((r) => r.status),
      [500, 500, 500, 500, 500, 500, 500, 500, 201],
    );
  } finally {
    await ns.stop();
    await env.close();
    restore();
  }
});

Deno.test("TestNodeLeaseOnTheWire", async () => {
  const restore = quiet();
  const env = await setUp();
  const node = env.double.create("nodes", { metadata: { name: nodeName } });
  const randoms = [0.5, 0.999, 0, 0.25, 0.75];
  let r = 0;
  const controller = newLeaseController(env, () => randoms[r++ % randoms.length]);
  const start = env.clock.now();
  const leasePath = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1";
  try {
    controller.run();
    await env.advance(41_000);
    const leaseRequests = env.double.requests.filter((q) => q.path.includes("/leases"));
    // ensureLease: GET 404, then POST (with the Node owner read by a GET of the node).
    assertEquals(leaseRequests.slice(0, 2).map((q) => [q.method, q.status]), [
      ["GET", 404],
      ["POST", 201],
    ]);
    const created = JSON.parse(leaseRequests[1].body);
    assertEquals(created.metadata.ownerReferences, [
      // deno-lint-ignore no-explicit-any
      { apiVersion: "v1", kind: "Node", name: nodeName, uid: (node.metadata as any).uid },
    ]);
    assertEquals(created.spec.holderIdentity, nodeName);
    assertEquals(created.spec.leaseDurationSeconds, 40);
    assertEquals(created.spec.renewTime, "2026-11-23T05:00:00.000000Z");
    // Renewals: PUT from the cached lease, no GET, every 10 s × (1 + 0.04 × jitter).
    const puts = env.sent.filter((s) => s.method === "PUT" && s.path === leasePath)
      .map((s) => s.at - start);
    const expectedGaps = [0.5, 0.999, 0, 0.25].map((x) => 10_000 * (1 + 0.04 * x));
    assertEquals(puts.length, 4, JSON.stringify(puts));
    const gaps = puts.map((t, i) => t - (i === 0 ? 0 : puts[i - 1]));
    for (const [i, want] of expectedGaps.entries()) {
      assert(Math.abs(gaps[i] - want) <= 100, `renewal ${i}: ${gaps[i]} ms, want ${want} ± 100`);
      assert(gaps[i] >= 10_000 && gaps[i] < 10_400 + 100, `renewal ${i} outside 10 s + 4 %`);
    }
    const body = JSON.parse(leaseRequests.filter((q) => q.method === "PUT").at(-1)!.body);
    assert(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(body.spec.renewTime),
      body.spec.renewTime,
    );
    assert(body.metadata.resourceVersion, "PUT carries the cached resourceVersion");

    // Someone else writes the lease: our cached copy is stale, the PUT gets 409, and the
    // controller reads the lease once and renews from it.
    const current = env.double.get("leases", NamespaceNodeLease, nodeName)!;
    env.double.update("leases", {
      ...current,
      metadata: { ...(current.metadata as object), labels: { touched: "yes" } },
    });
    env.double.requests.length = 0;
    await env.advance(11_000);
    assertEquals(
      env.double.requests.filter((q) => q.path === leasePath).map((q) => [q.method, q.status]),
      [["PUT", 409], ["GET", 200], ["PUT", 200]],
    );
    assert(!env.double.requests.some((q) => q.status === 403), "no request forbidden");
  } finally {
    await controller.stop();
    await env.close();
    restore();
  }
});

Deno.test("TestStopDoesNotWaitForAHangingAPIServer", async () => {
  // The API server accepts the request and never answers: stopping waits the drain time for
  // it, then cuts it.
  const restore = quiet();
  const env = await setUp();
  env.double.injectFault({ latencyMs: 3_600_000 });
  const ns = newNodeStatus(env, readyRuntime());
  const controller = newLeaseController(env);
  try {
    ns.start();
    controller.run();
    await env.clock.step(100);
    // Both are now waiting on requests the double holds for an hour of fake time.
    await waitUntil(() => env.sent.some((s) => s.method === "POST"));
    // A watchdog on the wall clock turns a hang into a failure (it never paces the test).
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    try {
      const stopped = Promise.all([ns.stop(), controller.stop()]);
      await env.clock.step(apiDrainTimeoutMs);
      await Promise.race([
        stopped,
        new Promise((_, reject) => {
          watchdog = setTimeout(() => reject(new Error("stop() waited for the request")), 5_000);
        }),
      ]);
    } finally {
      clearTimeout(watchdog);
    }
    assert(!ns.registrationCompleted);
  } finally {
    env.double.clearFaults();
    // Let the double finish the requests it was holding, so its server can shut down.
    await env.clock.step(3_600_000);
    await env.drain();
    await env.close();
    restore();
  }
});

async function waitUntil(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  assert(check(), "condition not reached");
}
