import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Node, NodeCondition } from "../../src/api/core/v1/mod.ts";
import { newAlreadyExists, newConflict, newInternalError } from "../../src/client/errors.ts";
import { newForConfig } from "../../src/client/kubernetes/clientset.ts";
import type { Image } from "../../src/cri_client/api.ts";
import type { MachineInfo } from "../../src/kubelet/cadvisor/cadvisor.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import {
  KubeletNodeStatus,
  type KubeletNodeStatusOptions,
  nodeStatusHasChanged,
  type RuntimeCondition,
  updateDefaultLabels,
} from "../../src/kubelet/kubelet_node_status.ts";
import { maxNamesPerImageInNodeStatus } from "../../src/kubelet/nodestatus/setters.ts";
import { goArch, goOS } from "../../src/util/go_format.ts";
import { FakeClock } from "../../src/util/clock.ts";
import { setLogSink } from "../../src/util/log.ts";
import { strategicMergePatch } from "../../src/util/strategicpatch/patch.ts";
import { nodeSchema } from "../../src/util/strategicpatch/schema.ts";
import { FakeClientset } from "../testing/fake_clientset.ts";

// kubelet's tests name the node after its IP so NodeAddress reports it as InternalIP.
const testKubeletHostname = "127.0.0.1";
const fakeKernelVersion = "3.16.0-0.bpo.4-amd64";
const fakeContainerOSVersion = "Debian GNU/Linux 7 (wheezy)";
const kubeletVersion = "v1.36.3";

interface TestKubelet {
  nodeStatus: KubeletNodeStatus;
  client: FakeClientset;
  clock: FakeClock;
  recorder: FakeRecorder;
  runtime: { conditions: RuntimeCondition[]; err?: Error };
}

function newTestKubelet(
  client: FakeClientset,
  overrides: {
    machineInfo?: Partial<MachineInfo>;
    ephemeralStorage?: number;
    reservation?: Record<string, string>;
    images?: Image[];
    maxImages?: number;
    options?: Partial<KubeletNodeStatusOptions>;
  } = {},
): TestKubelet {
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0));
  const recorder = new FakeRecorder();
  const runtime: TestKubelet["runtime"] = {
    conditions: [
      { type: "RuntimeReady", status: true },
      { type: "NetworkReady", status: true },
    ],
  };
  const machine: MachineInfo = {
    machineID: "123",
    systemUUID: "abc",
    bootID: "1b3",
    numCores: 2,
    memoryCapacity: 10e9,
    hugePages: [],
    ...overrides.machineInfo,
  };
  const nodeStatus = new KubeletNodeStatus({
    nodeName: testKubeletHostname,
    hostname: testKubeletHostname,
    kubeClient: client,
    heartbeatClient: client,
    clock,
    registerNode: true,
    registerWithTaints: [],
    nodeLabels: {},
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    recorder,
    runtimeStatus: () =>
      runtime.err ? Promise.reject(runtime.err) : Promise.resolve(runtime.conditions),
    // No shift of the periodic report after a change, unless a test asks for one.
    random: () => 0.5,
    setters: {
      nodeIPs: [],
      nodeAddress: { validateNodeIP: () => {} },
      maxPods: 0,
      machineInfo: () => machine,
      ephemeralStorageCapacity: () => overrides.ephemeralStorage ?? 5000,
      allocatableReservation: () => overrides.reservation ?? {},
      versionInfo: () => ({
        kernelVersion: fakeKernelVersion,
        containerOsVersion: fakeContainerOSVersion,
      }),
      runtimeType: () => "test",
      runtimeVersion: () => Promise.resolve("1.5.0"),
      kubeletVersion,
      kubeletPort: () => 10250,
      nodeStatusMaxImages: overrides.maxImages ?? 5,
      imageList: () => Promise.resolve(overrides.images ?? []),
    },
    ...overrides.options,
  });
  return { nodeStatus, client, clock, recorder, runtime };
}

function quiet(): () => void {
  const previous = setLogSink(() => {});
  return () => setLogSink(previous);
}

function makeImage(size: number, tags: string[]): Image {
  return {
    id: crypto.randomUUID(),
    repoTags: tags,
    repoDigests: [],
    size: BigInt(size),
    username: "",
    pinned: false,
  };
}

// Random images with more tags than node status reports, and what node status should list.
function generateTestingImageLists(count: number, maxImages: number) {
  const list: Image[] = [];
  for (let i = 0; i < count; i++) {
    const tags = Array.from(
      { length: maxNamesPerImageInNodeStatus + 1 + Math.floor(Math.random() * 10) },
      (_, j) => `registry.k8s.io:v${j + 1}`,
    );
    list.push(makeImage(Math.floor(Math.random() * 1e9) + 1, tags));
  }
  const sorted = [...list].sort((a, b) => Number(b.size - a.size));
  const expected = sorted.map((img) => ({
    names: img.repoTags.slice(0, maxNamesPerImageInNodeStatus),
    sizeBytes: Number(img.size),
  }));
  return { list, expected: maxImages === -1 ? expected : expected.slice(0, maxImages) };
}

function conditionsWithoutTimes(cs: NodeCondition[] = []): NodeCondition[] {
  return cs.map((c) => {
    const { lastHeartbeatTime: _h, lastTransitionTime: _t, ...rest } = c;
    return rest;
  });
}

function baseConditions(
  diskReason = "KubeletHasNoDiskPressure",
  diskMessage = "kubelet has no disk pressure",
): NodeCondition[] {
  return [
    {
      type: "MemoryPressure",
      status: "False",
      reason: "KubeletHasSufficientMemory",
      message: "kubelet has sufficient memory available",
    },
    { type: "DiskPressure", status: "False", reason: diskReason, message: diskMessage },
    {
      type: "PIDPressure",
      status: "False",
      reason: "KubeletHasSufficientPID",
      message: "kubelet has sufficient PID available",
    },
    {
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      message: "kubelet is posting ready status",
    },
  ];
}

const nodeInfo = {
  machineID: "123",
  systemUUID: "abc",
  bootID: "1b3",
  kernelVersion: fakeKernelVersion,
  osImage: fakeContainerOSVersion,
  containerRuntimeVersion: "test://1.5.0",
  kubeletVersion,
  operatingSystem: goOS(),
  architecture: goArch(),
};

function applyNodeStatusPatch(original: Node, patch: string): Node {
  return strategicMergePatch(original, JSON.parse(patch), nodeSchema);
}

Deno.test("TestUpdateNewNodeStatus", async (t) => {
  for (
    const tc of [
      { desc: "5 image limit", nodeStatusMaxImages: 5 },
      { desc: "no image limit", nodeStatusMaxImages: -1 },
    ]
  ) {
    await t.step(tc.desc, async () => {
      const restore = quiet();
      try {
        const numTestImages = tc.nodeStatusMaxImages === -1 ? 5 : tc.nodeStatusMaxImages + 1;
        const { list, expected: expectedImageList } = generateTestingImageLists(
          numTestImages,
          tc.nodeStatusMaxImages,
        );
        const existingNode: Node = { metadata: { name: testKubeletHostname } };
        const client = new FakeClientset({ ...existingNode, kind: "Node", apiVersion: "v1" });
        const k = newTestKubelet(client, {
          images: list,
          maxImages: tc.nodeStatusMaxImages,
          reservation: { cpu: "200m", memory: "100e6", "ephemeral-storage": "2000" },
        });
        await k.nodeStatus.updateRuntimeUp();
        await k.nodeStatus.updateNodeStatus();
        const actions = client.actions;
        assertEquals(actions.length, 2);
        assertEquals([actions[1].verb, actions[1].resource, actions[1].subresource], [
          "patch",
          "nodes",
          "status",
        ]);
        const updatedNode = applyNodeStatusPatch(existingNode, actions[1].patch!);
        for (const c of updatedNode.status?.conditions ?? []) {
          assert(c.lastHeartbeatTime, `lastHeartbeatTime for ${c.type} condition is zero`);
          assert(c.lastTransitionTime, `lastTransitionTime for ${c.type} condition is zero`);
        }
        const conditions = updatedNode.status!.conditions!;
        assertEquals(conditions.at(-1)?.type, "Ready", "NotReady should be last");
        assertEquals(updatedNode.status?.images?.length, expectedImageList.length);
        const expectedNode: Node = {
          metadata: {
            name: testKubeletHostname,
            labels: { "kubernetes.io/os": goOS(), "kubernetes.io/arch": goArch() },
          },
          status: {
            conditions: baseConditions(),
            nodeInfo,
            capacity: { cpu: "2", memory: "9765625Ki", pods: "0", "ephemeral-storage": "5000" },
            allocatable: {
              cpu: "1800m",
              memory: "9900000000",
              pods: "0",
              "ephemeral-storage": "3000",
            },
            addresses: [
              { type: "InternalIP", address: "127.0.0.1" },
              { type: "Hostname", address: testKubeletHostname },
            ],
            daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
            images: expectedImageList,
          },
        };
        updatedNode.status!.conditions = conditionsWithoutTimes(conditions);
        assertEquals(updatedNode, expectedNode);
      } finally {
        restore();
      }
    });
  }
});

Deno.test("TestUpdateExistingNodeStatus", async () => {
  const restore = quiet();
  try {
    const old = "2012-01-01T00:00:00Z";
    const withTimes = (cs: NodeCondition[]) =>
      cs.map((c) => ({ ...c, lastHeartbeatTime: old, lastTransitionTime: old }));
    const existingNode: Node = {
      metadata: { name: testKubeletHostname },
      spec: {},
      status: {
        conditions: withTimes(
          baseConditions("KubeletHasSufficientDisk", "kubelet has sufficient disk space available"),
        ),
        capacity: { cpu: "3", memory: "20G", pods: "0" },
        allocatable: { cpu: "2800m", memory: "19900M", pods: "0" },
      },
    };
    const client = new FakeClientset({ ...structuredClone(existingNode), kind: "Node" });
    const k = newTestKubelet(client, {
      machineInfo: { memoryCapacity: 20e9 },
      reservation: { cpu: "200m", memory: "100e6" },
      images: [
        makeImage(123, ["registry.k8s.io:v1", "registry.k8s.io:v2"]),
        makeImage(456, ["registry.k8s.io:v3", "registry.k8s.io:v4"]),
      ],
    });
    await k.nodeStatus.updateRuntimeUp();
    await k.nodeStatus.updateNodeStatus();
    assertEquals(client.actions.length, 2);
    assertEquals(client.actions[1].verb, "patch");
    const updatedNode = applyNodeStatusPatch(existingNode, client.actions[1].patch!);
    for (const c of updatedNode.status!.conditions!) {
      // The heartbeat moves to now; the transition time stays, no condition flipped.
      assert(c.lastHeartbeatTime !== old, `lastHeartbeatTime for condition ${c.type}`);
      assertEquals(c.lastTransitionTime, old, `lastTransitionTime for condition ${c.type}`);
    }
    assertEquals(updatedNode.status!.conditions!.at(-1)?.type, "Ready");
    updatedNode.status!.conditions = conditionsWithoutTimes(updatedNode.status!.conditions);
    assertEquals(updatedNode, {
      metadata: {
        name: testKubeletHostname,
        labels: { "kubernetes.io/os": goOS(), "kubernetes.io/arch": goArch() },
      },
      spec: {},
      status: {
        // The reason of an unchanged condition is kept, even an outdated one.
        conditions: baseConditions(
          "KubeletHasSufficientDisk",
          "kubelet has sufficient disk space available",
        ),
        nodeInfo,
        capacity: { cpu: "2", memory: "19531250Ki", pods: "0", "ephemeral-storage": "5000" },
        allocatable: {
          cpu: "1800m",
          memory: "19900000000",
          pods: "0",
          "ephemeral-storage": "5000",
        },
        addresses: [
          { type: "InternalIP", address: "127.0.0.1" },
          { type: "Hostname", address: testKubeletHostname },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
        // Largest first (kubelet's image manager sorts; our setter sorts the runtime's list).
        images: [
          { names: ["registry.k8s.io:v3", "registry.k8s.io:v4"], sizeBytes: 456 },
          { names: ["registry.k8s.io:v1", "registry.k8s.io:v2"], sizeBytes: 123 },
        ],
      },
    });
  } finally {
    restore();
  }
});

Deno.test("TestUpdateNodeStatusWithRuntimeStateError", async (t) => {
  const restore = quiet();
  try {
    const client = new FakeClientset({ kind: "Node", metadata: { name: testKubeletHostname } });
    const k = newTestKubelet(client);
    const check = async (status: string, reason: string, message?: string, patched = true) => {
      client.clearActions();
      await k.nodeStatus.updateNodeStatus();
      assertEquals(client.actions.map((a) => a.verb), patched ? ["get", "patch"] : ["get"]);
      const node = await client.coreV1.nodes().get(testKubeletHostname);
      const ready = node.status!.conditions!.at(-1)!;
      assertEquals([ready.type, ready.status, ready.reason], ["Ready", status, reason]);
      if (message !== undefined) assertEquals(ready.message, message);
    };
    await t.step("no runtime check yet → not ready", async () => {
      await check(
        "False",
        "KubeletNotReady",
        "container runtime status check may not have completed yet",
      );
    });
    await t.step("runtime checked → ready, NodeReady event", async () => {
      await k.nodeStatus.updateRuntimeUp();
      await check("True", "KubeletReady", "kubelet is posting ready status");
      assertEquals(
        k.recorder.events.at(-1),
        "Normal NodeReady Node 127.0.0.1 status is now: NodeReady",
      );
    });
    await t.step("runtime check out of date → not ready, NodeNotReady event", async () => {
      await k.clock.step(30_000);
      await check("False", "KubeletNotReady", "container runtime is down");
      assertEquals(
        k.recorder.events.at(-1),
        "Normal NodeNotReady Node 127.0.0.1 status is now: NodeNotReady",
      );
    });
    await t.step("network not ready → not ready with the runtime's condition", async () => {
      k.runtime.conditions = [
        { type: "RuntimeReady", status: true },
        {
          type: "NetworkReady",
          status: false,
          reason: "NetworkPluginNotReady",
          message: "Network plugin returns error: cni plugin not initialized",
        },
      ];
      await k.nodeStatus.updateRuntimeUp();
      await check(
        "False",
        "KubeletNotReady",
        "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady " +
          "message:Network plugin returns error: cni plugin not initialized",
      );
    });
    await t.step("runtime not ready and no network condition → both errors", async () => {
      k.runtime.conditions = [{ type: "RuntimeReady", status: false, reason: "x", message: "y" }];
      await k.nodeStatus.updateRuntimeUp();
      await check(
        "False",
        "KubeletNotReady",
        "[container runtime not ready: RuntimeReady=false reason:x message:y, " +
          "container runtime network not ready: <nil>]",
      );
    });
    await t.step("status call fails → state kept until it goes stale", async () => {
      k.runtime.conditions = [
        { type: "RuntimeReady", status: true },
        { type: "NetworkReady", status: true },
      ];
      await k.nodeStatus.updateRuntimeUp();
      await check("True", "KubeletReady");
      k.runtime.err = new Error("injected runtime status error");
      await k.nodeStatus.updateRuntimeUp();
      // Nothing changed: no patch within the report frequency.
      await check("True", "KubeletReady", undefined, false);
      await k.clock.step(30_000);
      await check("False", "KubeletNotReady", "container runtime is down");
    });
    await t.step("PLEG not relisting → not ready, named as kubelet names it", async () => {
      k.runtime.err = undefined;
      let plegHealth = { ok: true, message: "" };
      k.nodeStatus.runtimeState.addHealthCheck("PLEG", () => plegHealth);
      await k.nodeStatus.updateRuntimeUp();
      await check("True", "KubeletReady");
      plegHealth = {
        ok: false,
        message: "pleg was last seen active 3m0.5s ago; threshold is 3m0s",
      };
      await check(
        "False",
        "KubeletNotReady",
        "PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s",
      );
    });
  } finally {
    restore();
  }
});

Deno.test("TestRegisterWithApiServer", async () => {
  const restore = quiet();
  try {
    const client = new FakeClientset();
    client.addReactor("create", "nodes", () => ({
      handled: true,
      err: newAlreadyExists({ group: "", resource: "nodes" }, testKubeletHostname),
    }));
    client.addReactor("get", "nodes", () => ({
      handled: true,
      ret: {
        metadata: {
          name: testKubeletHostname,
          labels: {
            "kubernetes.io/hostname": testKubeletHostname,
            "kubernetes.io/os": goOS(),
            "kubernetes.io/arch": goArch(),
            "beta.kubernetes.io/os": goOS(),
            "beta.kubernetes.io/arch": goArch(),
          },
        },
      },
    }));
    client.addReactor(
      "patch",
      "nodes",
      (a) =>
        a.subresource === "status"
          ? { handled: true, ret: { metadata: { name: testKubeletHostname } } }
          : { handled: true, err: new Error(`no reaction implemented for ${a.verb}`) },
    );
    client.addReactor("*", "*", (a) => ({
      handled: true,
      err: new Error(`no reaction implemented for ${a.verb} ${a.resource}`),
    }));
    const k = newTestKubelet(client, { machineInfo: { memoryCapacity: 1024 } });
    let done = false;
    const registered = k.nodeStatus.registerWithAPIServer().then(() => done = true);
    await k.clock.step(100);
    await registered;
    assert(done);
    assert(k.nodeStatus.registrationCompleted);
    // POST, 409 → GET, then the existing node gets the attach-detach annotation and capacity.
    assertEquals(client.actions.map((a) => `${a.verb} ${a.subresource}`.trim()), [
      "create",
      "get",
      "patch status",
    ]);
    const patch = JSON.parse(client.actions[2].patch!);
    assertEquals(
      patch.metadata.annotations,
      { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
    );
    assertEquals(patch.status.capacity.memory, "1Ki");
  } finally {
    restore();
  }
});

Deno.test("TestInitialNode", async () => {
  const restore = quiet();
  try {
    const client = new FakeClientset();
    const k = newTestKubelet(client, {
      options: {
        nodeLabels: { "probelet.io/agent": "true", "kubernetes.io/hostname": "custom" },
        registerWithTaints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }],
      },
    });
    await k.nodeStatus.updateRuntimeUp();
    const node = await k.nodeStatus.initialNode();
    assertEquals(node.metadata, {
      name: testKubeletHostname,
      labels: {
        "kubernetes.io/hostname": "custom",
        "kubernetes.io/os": goOS(),
        "kubernetes.io/arch": goArch(),
        "beta.kubernetes.io/os": goOS(),
        "beta.kubernetes.io/arch": goArch(),
        "probelet.io/agent": "true",
      },
      annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
    });
    assertEquals(node.spec, {
      taints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }],
    });
    assertEquals(node.status?.conditions?.at(-1)?.status, "True");
    const unschedulable = newTestKubelet(client, { options: { registerSchedulable: false } });
    assertEquals((await unschedulable.nodeStatus.initialNode()).spec, {
      unschedulable: true,
      taints: [{ key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" }],
    });
  } finally {
    restore();
  }
});

Deno.test("TestRegistrationBackoff", async () => {
  // Every POST fails: attempts come after 0.1, 0.2, 0.4 ... s, capped at 7 s.
  const restore = quiet();
  try {
    const client = new FakeClientset();
    const attempts: number[] = [];
    const k = newTestKubelet(client);
    const start = k.clock.now();
    client.prependReactor("create", "nodes", () => {
      attempts.push(k.clock.now() - start);
      return { handled: true, err: newInternalError("etcdserver: request timed out") };
    });
    const registering = k.nodeStatus.registerWithAPIServer();
    for (let i = 0; i < 40; i++) await k.clock.step(1000);
    const gaps = attempts.map((t, i) => t - (i === 0 ? 0 : attempts[i - 1]));
    assertEquals(gaps.slice(0, 9), [100, 200, 400, 800, 1600, 3200, 6400, 7000, 7000]);
    assert(!k.nodeStatus.registrationCompleted);
    await k.nodeStatus.stop();
    await registering;
    assertEquals(k.clock.pendingTimers(), 0);
  } finally {
    restore();
  }
});

Deno.test("TestNodeStatusLoopPatchesOnChangeOrReportFrequency", async () => {
  const restore = quiet();
  try {
    const client = new FakeClientset();
    const k = newTestKubelet(client, {
      options: { random: () => 0 },
    });
    k.nodeStatus.start();
    const start = k.clock.now();
    const log: string[] = [];
    client.prependReactor("*", "nodes", (a) => {
      log.push(
        `${(k.clock.now() - start) / 1000}s ${a.verb}${a.subresource ? "/" + a.subresource : ""}`,
      );
      return { handled: false };
    });
    // Registration waits 100 ms; the fast update and the loop then see the node Ready.
    for (let i = 0; i < 61; i++) await k.clock.step(10_000);
    await k.nodeStatus.stop();
    const patches = log.filter((l) => l.includes("patch"));
    const gets = log.filter((l) => l.includes("get"));
    assert(log[0] === "0.1s create", log.join("\n"));
    // A GET every 10 s; a PATCH only when something changed (the first sync) or 5 min passed.
    assert(gets.length >= 59, `${gets.length} GETs`);
    // random() = 0: the first report draws a shift of -150 s (half the 5 min, as after any
    // change or restart), so the next goes out 150 s later; later ones every 5 min.
    assertEquals(patches, ["0.1s patch/status", "150.1s patch/status", "450.1s patch/status"]);
    assertEquals(k.clock.pendingTimers(), 0, "nothing left registered after stop");
  } finally {
    restore();
  }
});

Deno.test("TestReRegisterAfterNodeDeleted", async () => {
  const restore = quiet();
  try {
    const client = new FakeClientset();
    const k = newTestKubelet(client);
    await k.nodeStatus.updateRuntimeUp();
    const first = k.nodeStatus.syncNodeStatus();
    await k.clock.step(100);
    await first;
    assert(k.nodeStatus.registrationCompleted);
    // Someone deletes the Node: the next sync finds it gone and registers it again at once.
    await client.coreV1.nodes().delete(testKubeletHostname);
    client.clearActions();
    const second = k.nodeStatus.syncNodeStatus();
    await k.clock.step(100);
    await second;
    assertEquals(
      client.actions.map((a) => `${a.verb}${a.subresource ? "/" + a.subresource : ""}`),
      // The new Node carries the full status: the GET that follows finds nothing to patch.
      ["get", "create", "get"],
    );
    const node = await client.coreV1.nodes().get(testKubeletHostname);
    assertEquals(node.status?.conditions?.at(-1)?.status, "True");
  } finally {
    restore();
  }
});

Deno.test("TestNodeStatusHasChanged", async (t) => {
  const now = "2026-11-23T05:00:00Z";
  const later = "2026-11-23T05:01:00Z";
  const cond = (type: string, status: "True" | "False", hb: string, tr: string): NodeCondition => ({
    type,
    status,
    lastHeartbeatTime: hb,
    lastTransitionTime: tr,
  });
  const ready = cond("Ready", "True", now, now);
  const readyHB = cond("Ready", "True", later, now);
  const readyTR = cond("Ready", "True", later, later);
  const notReady = cond("Ready", "False", now, now);
  const mem = cond("MemoryPressure", "False", now, now);
  const cases: [string, Parameters<typeof nodeStatusHasChanged>, boolean][] = [
    ["Node status does not change with nil status.", [undefined, undefined], false],
    ["Node status does not change with default status.", [{}, {}], false],
    ["Node status changes with nil and default status.", [undefined, {}], true],
    ["Node status changes with nil and status.", [undefined, { conditions: [ready, mem] }], true],
    [
      "Node status does not change with empty conditions.",
      [{ conditions: [] }, { conditions: [] }],
      false,
    ],
    [
      "Node status does not change",
      [{ conditions: [ready, mem] }, { conditions: [ready, mem] }],
      false,
    ],
    ["Node status does not change even if heartbeat time changes.", [{ conditions: [ready, mem] }, {
      conditions: [readyHB, mem],
    }], false],
    ["Node status does not change even if the orders of conditions are different.", [{
      conditions: [ready, mem],
    }, { conditions: [mem, readyHB] }], false],
    ["Node status changes if condition status differs.", [{ conditions: [ready, mem] }, {
      conditions: [notReady, mem],
    }], true],
    ["Node status changes if transition time changes.", [{ conditions: [ready, mem] }, {
      conditions: [readyTR, mem],
    }], true],
    ["Node status changes with different number of conditions.", [{ conditions: [ready] }, {
      conditions: [ready, mem],
    }], true],
    ["Node status changes with different phase.", [{ phase: "Pending", conditions: [ready] }, {
      phase: "Running",
      conditions: [ready],
    }], true],
    ["Empty and absent lists are the same.", [{ addresses: [] }, {}], false],
  ];
  for (const [desc, args, want] of cases) {
    await t.step(desc, () => assertEquals(nodeStatusHasChanged(...args), want));
  }
});

Deno.test({
  name: "TestUpdateExistingNodeStatusTimeout",
  // The client keeps no socket open after each timed-out request is abandoned.
  sanitizeResources: false,
  fn: async () => {
    const restore = quiet();
    // A server that accepts connections and never answers.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const conns: Deno.Conn[] = [];
    let attempts = 0;
    const accepting = (async () => {
      for await (const conn of listener) {
        attempts++;
        conns.push(conn);
      }
    })().catch(() => {});
    const heartbeatClient = newForConfig({
      host: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
      qps: -1,
      timeoutMs: 200,
    });
    let failureCallbacks = 0;
    try {
      const k = newTestKubelet(new FakeClientset(), {
        options: {
          heartbeatClient,
          onRepeatedHeartbeatFailure: () => failureCallbacks++,
        },
      });
      // Should fail, but not hang.
      let err: unknown;
      try {
        await k.nodeStatus.updateNodeStatus();
      } catch (e) {
        err = e;
      }
      assert(err instanceof Error, "updateNodeStatus must fail");
      // A fresh connection per timed-out request, or one reused: at least one, five tries.
      assert(attempts >= 1, `${attempts} connections`);
      assertEquals(failureCallbacks, 4, "called after every failed try but the first");
    } finally {
      heartbeatClient.close();
      listener.close();
      for (const c of conns) c.close();
      await accepting;
      restore();
    }
  },
});

Deno.test("TestFastStatusUpdateOnce", async () => {
  const restore = quiet();
  try {
    const client = new FakeClientset();
    const k = newTestKubelet(client);
    // The runtime is not ready at start-up: the Node registers NotReady.
    k.runtime.conditions = [{ type: "RuntimeReady", status: false, reason: "Starting" }];
    k.nodeStatus.start();
    await k.clock.step(100);
    const ready = async () =>
      (await client.coreV1.nodes().get(testKubeletHostname)).status?.conditions?.at(-1)?.status;
    assertEquals(await ready(), "False");
    // It turns ready between two status ticks: the fast path patches within 100 ms.
    await k.clock.step(1_000);
    k.runtime.conditions = [
      { type: "RuntimeReady", status: true },
      { type: "NetworkReady", status: true },
    ];
    const before = client.actions.length;
    await k.clock.step(100);
    assertEquals(await ready(), "True");
    const sinceFlip = client.actions.slice(before).map((a) => `${a.verb}/${a.subresource}`);
    assert(sinceFlip.includes("patch/status"), sinceFlip.join(", "));
    // Once Ready is True in the API the fast path ends: later rounds send nothing.
    const after = client.actions.length;
    await k.clock.step(1_000);
    assertEquals(client.actions.slice(after).length, 0);
    await k.nodeStatus.stop();
    assertEquals(k.clock.pendingTimers(), 0);
  } finally {
    restore();
  }
});

Deno.test("TestRecordNodeSchedulableEvent", async () => {
  const restore = quiet();
  try {
    const client = new FakeClientset({ kind: "Node", metadata: { name: testKubeletHostname } });
    const k = newTestKubelet(client);
    await k.nodeStatus.updateRuntimeUp();
    await k.nodeStatus.updateNodeStatus();
    const schedulingEvents = () => k.recorder.events.filter((e) => e.includes("Schedulable"));
    assertEquals(schedulingEvents(), []);
    // kubectl cordon, then uncordon.
    const cordon = async (unschedulable: boolean) => {
      const node = await client.coreV1.nodes().get(testKubeletHostname);
      await client.coreV1.nodes().update({ ...node, spec: { unschedulable } });
      await k.nodeStatus.updateNodeStatus();
    };
    await cordon(true);
    await cordon(false);
    assertEquals(schedulingEvents(), [
      "Normal NodeNotSchedulable Node 127.0.0.1 status is now: NodeNotSchedulable",
      "Normal NodeSchedulable Node 127.0.0.1 status is now: NodeSchedulable",
    ]);
  } finally {
    restore();
  }
});

Deno.test("TestIsUpdateStatusPeriodExpired", async (t) => {
  const restore = quiet();
  try {
    // Report frequency 5 min; the delay after a change is 5 min × (r - 0.5).
    const cases: { desc: string; r: number; sinceMs: number; want: boolean }[] = [
      { desc: "no delay, 4 min", r: 0.5, sinceMs: 240_000, want: false },
      { desc: "no delay, 5 min", r: 0.5, sinceMs: 300_000, want: true },
      { desc: "+1 min delay, 5 min", r: 0.7, sinceMs: 300_000, want: false },
      { desc: "+1 min delay, 6 min", r: 0.7, sinceMs: 360_000, want: true },
      { desc: "-2 min delay, 3 min", r: 0.1, sinceMs: 180_000, want: true },
      { desc: "-2 min delay, 2 min", r: 0.1, sinceMs: 119_000, want: false },
    ];
    for (const tc of cases) {
      await t.step(tc.desc, async () => {
        const client = new FakeClientset({ kind: "Node", metadata: { name: testKubeletHostname } });
        const k = newTestKubelet(client, { options: { random: () => tc.r } });
        await k.nodeStatus.updateRuntimeUp();
        // The first report of a run draws the delay, as a change does.
        await k.nodeStatus.updateNodeStatus();
        await k.clock.step(tc.sinceMs);
        assertEquals(k.nodeStatus.isUpdateStatusPeriodExpired(), tc.want);
      });
    }
    await t.step("never reported", () => {
      const k = newTestKubelet(new FakeClientset());
      assertEquals(k.nodeStatus.isUpdateStatusPeriodExpired(), true);
    });
    await t.step("calculateDelay stays within half the report frequency", () => {
      for (const r of [0, 0.25, 0.999]) {
        const k = newTestKubelet(new FakeClientset(), { options: { random: () => r } });
        const d = k.nodeStatus.calculateDelay();
        assert(Math.abs(d) <= 150_000, String(d));
      }
    });
  } finally {
    restore();
  }
});

Deno.test("TestTryRegisterWithApiServer", async (t) => {
  const gr = { group: "", resource: "nodes" };
  const alreadyExists = () => newAlreadyExists(gr, testKubeletHostname);
  const conflict = () => newConflict(gr, testKubeletHostname, "the object has been modified");
  const newNode = (cmad: boolean): Node => ({
    metadata: {
      name: testKubeletHostname,
      labels: { "kubernetes.io/os": goOS(), "kubernetes.io/arch": goArch() },
      ...(cmad
        ? { annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" } }
        : {}),
    },
  });
  const cases: {
    name: string;
    newNode: Node;
    existingNode?: Node;
    createError?: () => Error;
    getError?: () => Error;
    patchError?: () => Error;
    expectedResult: boolean;
    expectedActions: number;
    savedNodeCMAD?: boolean;
  }[] = [
    {
      name: "success case - new node",
      newNode: { metadata: { name: testKubeletHostname } },
      expectedResult: true,
      expectedActions: 1,
    },
    {
      name: "success case - existing node - no change in CMAD",
      newNode: newNode(true),
      createError: alreadyExists,
      existingNode: newNode(true),
      expectedResult: true,
      expectedActions: 2,
    },
    {
      name: "success case - existing node - CMAD disabled",
      newNode: newNode(false),
      createError: alreadyExists,
      existingNode: newNode(true),
      expectedResult: true,
      expectedActions: 3,
      savedNodeCMAD: false,
    },
    {
      name: "success case - existing node - CMAD enabled",
      newNode: newNode(true),
      createError: alreadyExists,
      existingNode: newNode(false),
      expectedResult: true,
      expectedActions: 3,
      savedNodeCMAD: true,
    },
    {
      name: "create failed",
      newNode: newNode(false),
      createError: conflict,
      expectedResult: false,
      expectedActions: 1,
    },
    {
      name: "get existing node failed",
      newNode: newNode(false),
      createError: alreadyExists,
      getError: conflict,
      expectedResult: false,
      expectedActions: 2,
    },
    {
      name: "update existing node failed",
      newNode: newNode(false),
      createError: alreadyExists,
      existingNode: newNode(true),
      patchError: conflict,
      expectedResult: false,
      expectedActions: 3,
    },
  ];
  for (const tc of cases) {
    await t.step(tc.name, async () => {
      const restore = quiet();
      try {
        const client = new FakeClientset();
        client.addReactor(
          "create",
          "nodes",
          () =>
            tc.createError
              ? { handled: true, err: tc.createError() }
              : { handled: true, ret: tc.newNode },
        );
        client.addReactor(
          "get",
          "nodes",
          () =>
            tc.getError
              ? { handled: true, err: tc.getError() }
              : { handled: true, ret: tc.existingNode },
        );
        client.addReactor("patch", "nodes", (a) => {
          if (tc.patchError) return { handled: true, err: tc.patchError() };
          return {
            handled: true,
            ret: strategicMergePatch(tc.existingNode!, JSON.parse(a.patch!), nodeSchema),
          };
        });
        client.addReactor("*", "*", (a) => ({
          handled: true,
          err: new Error(`no reaction implemented for ${a.verb} ${a.resource}`),
        }));
        const k = newTestKubelet(client);
        const result = await k.nodeStatus.tryRegisterWithAPIServer(tc.newNode);
        assertEquals(result, tc.expectedResult);
        assertEquals(client.actions.length, tc.expectedActions);
        if (tc.savedNodeCMAD !== undefined) {
          const patch = client.actions[2];
          assertEquals([patch.verb, patch.subresource], ["patch", "status"]);
          const saved = strategicMergePatch(tc.existingNode!, JSON.parse(patch.patch!), nodeSchema);
          const cmad = saved.metadata.annotations
            ?.["volumes.kubernetes.io/controller-managed-attach-detach"] ===
            "true";
          assertEquals(cmad, tc.savedNodeCMAD);
        }
      } finally {
        restore();
      }
    });
  }
});

Deno.test("TestUpdateDefaultLabels", async (t) => {
  const node = (labels?: Record<string, string>): Node => ({ metadata: { name: "n", labels } });
  const full = {
    "kubernetes.io/hostname": "new-hostname",
    "topology.kubernetes.io/zone": "new-zone-failure-domain",
    "topology.kubernetes.io/region": "new-zone-region",
    "failure-domain.beta.kubernetes.io/zone": "new-zone-failure-domain",
    "failure-domain.beta.kubernetes.io/region": "new-zone-region",
    "node.kubernetes.io/instance-type": "new-instance-type",
    "beta.kubernetes.io/instance-type": "new-instance-type",
    "kubernetes.io/os": "new-os",
    "kubernetes.io/arch": "new-arch",
  };
  const old = Object.fromEntries(
    Object.entries(full).map(([k, v]) => [k, v.replace("new", "old")]),
  );
  const cases: {
    name: string;
    initial: Node;
    existing: Node;
    needsUpdate: boolean;
    finalLabels: Record<string, string>;
  }[] = [
    {
      name: "make sure default labels exist",
      initial: node(full),
      existing: node({}),
      needsUpdate: true,
      finalLabels: full,
    },
    {
      name: "make sure default labels are up to date",
      initial: node(full),
      existing: node(old),
      needsUpdate: true,
      finalLabels: full,
    },
    {
      name: "make sure existing labels do not get deleted",
      initial: node(full),
      existing: node({ ...full, "please-persist": "foo" }),
      needsUpdate: false,
      finalLabels: { ...full, "please-persist": "foo" },
    },
    {
      name: "make sure existing labels do not get deleted when initial node has no opinion",
      initial: node({}),
      existing: node({ ...full, "please-persist": "foo" }),
      needsUpdate: false,
      finalLabels: { ...full, "please-persist": "foo" },
    },
    {
      name: "no update needed",
      initial: node(full),
      existing: node(full),
      needsUpdate: false,
      finalLabels: full,
    },
    {
      name: "not panic when existing node has nil labels",
      initial: node(full),
      existing: node(undefined),
      needsUpdate: true,
      finalLabels: full,
    },
    {
      name: "an empty initial value removes the label",
      initial: node({ "kubernetes.io/hostname": "" }),
      existing: node({ "kubernetes.io/hostname": "old" }),
      needsUpdate: true,
      finalLabels: {},
    },
  ];
  for (const tc of cases) {
    await t.step(tc.name, () => {
      assertEquals(updateDefaultLabels(tc.initial, tc.existing), tc.needsUpdate);
      assertEquals(tc.existing.metadata.labels, tc.finalLabels);
    });
  }
});

Deno.test("TestUpdateNewNodeStatusTooLargeReservation", async () => {
  const restore = quiet();
  try {
    const existingNode: Node = { metadata: { name: testKubeletHostname } };
    const client = new FakeClientset({ ...existingNode, kind: "Node" });
    // Reservations above capacity leave zero allocatable, never a negative quantity.
    const k = newTestKubelet(client, {
      ephemeralStorage: 3000,
      reservation: { cpu: "40000m", "ephemeral-storage": "4000" },
    });
    await k.nodeStatus.updateRuntimeUp();
    await k.nodeStatus.updateNodeStatus();
    const updated = applyNodeStatusPatch(existingNode, client.actions[1].patch!);
    assertEquals(updated.status?.capacity, {
      cpu: "2",
      memory: "9765625Ki",
      pods: "0",
      "ephemeral-storage": "3000",
    });
    assertEquals(updated.status?.allocatable, {
      cpu: "0",
      memory: "9765625Ki",
      pods: "0",
      "ephemeral-storage": "0",
    });
  } finally {
    restore();
  }
});
