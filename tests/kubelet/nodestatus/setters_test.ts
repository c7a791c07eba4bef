import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import type { Node } from "../../../src/api/core/v1/mod.ts";
import { parseQuantity } from "../../../src/api/resource/quantity.ts";
import { binarySI, capacityFromMachineInfo } from "../../../src/kubelet/cadvisor/cadvisor.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import {
  formatQuantity,
  images,
  machineInfo,
  memoryPressureCondition,
  nodeAddress,
  readyCondition,
  validateNodeIP,
} from "../../../src/kubelet/nodestatus/setters.ts";

const newNode = (): Node => ({ metadata: { name: "node-1" } });

Deno.test("TestQuantities", () => {
  assertEquals(binarySI(0), "0");
  assertEquals(binarySI(512), "512");
  assertEquals(binarySI(5000), "5000");
  assertEquals(binarySI(2 * 1024 * 1024), "2Mi");
  assertEquals(binarySI(10e9), "9765625Ki");
  assertEquals(binarySI(16331784 * 1024), "16331784Ki");
  assertEquals(parseQuantity("1800m"), 1.8);
  assertEquals(parseQuantity("100e6"), 100e6);
  assertEquals(parseQuantity("2Gi"), 2 * 2 ** 30);
  assertEquals(parseQuantity("1k"), 1000);
  assertEquals(formatQuantity("cpu", 1.8), "1800m");
  assertEquals(formatQuantity("cpu", 2), "2");
  assertEquals(formatQuantity("memory", 9900e6), "9900000000");
  assertEquals(
    capacityFromMachineInfo({
      numCores: 4,
      memoryCapacity: 8 * 2 ** 30,
      machineID: "",
      systemUUID: "",
      bootID: "",
      hugePages: [{ pageSizeKiB: 2048, numPages: 0 }, { pageSizeKiB: 1048576, numPages: 2 }],
    }),
    { cpu: "4", memory: "8Gi", "hugepages-2Mi": "0", "hugepages-1Gi": "2Gi" },
  );
});

Deno.test("TestNodeAddress", async (t) => {
  const accept = () => {};
  await t.step("--node-ip", async () => {
    const node = newNode();
    await nodeAddress({ nodeIPs: ["10.0.0.5"], hostname: "node-1", validateNodeIP: accept })(node);
    assertEquals(node.status?.addresses, [
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "Hostname", address: "node-1" },
    ]);
  });
  await t.step("dual-stack --node-ip", async () => {
    const node = newNode();
    await nodeAddress({
      nodeIPs: ["10.0.0.5", "fd00::5"],
      hostname: "node-1",
      validateNodeIP: accept,
    })(node);
    assertEquals(node.status?.addresses, [
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "InternalIP", address: "fd00::5" },
      { type: "Hostname", address: "node-1" },
    ]);
  });
  await t.step("node IP not on this host", async () => {
    await rejects(
      Promise.resolve(nodeAddress({ nodeIPs: ["192.0.2.77"], hostname: "node-1" })(newNode())),
      /failed to validate nodeIP: node IP: "192.0.2.77" not found in the host's network interfaces/,
    );
  });
  await t.step("resolved node name, IPv4 preferred", async () => {
    const node = newNode();
    await nodeAddress({
      nodeIPs: [],
      hostname: "node-1",
      validateNodeIP: accept,
      lookupIP: (name) => Promise.resolve(name === "node-1" ? ["fd00::9", "10.1.1.9"] : []),
    })(node);
    assertEquals(node.status?.addresses?.[0], { type: "InternalIP", address: "10.1.1.9" });
  });
  await t.step("no address at all", async () => {
    await rejects(
      Promise.resolve(
        nodeAddress({
          nodeIPs: [],
          hostname: "node-1",
          lookupIP: () => Promise.reject(new Error("no such host")),
          chooseHostInterface: () => undefined,
        })(newNode()),
      ),
      /can't get ip address of node node-1. error: no such host/,
    );
  });
  await t.step("validateNodeIP", () => {
    for (
      const [ip, why] of [
        ["127.0.0.1", "nodeIP can't be loopback address"],
        ["224.0.0.1", "nodeIP can't be a multicast address"],
        ["169.254.1.1", "nodeIP can't be a link-local unicast address"],
        ["fe80::1", "nodeIP can't be a link-local unicast address"],
        ["0.0.0.0", "nodeIP can't be an all zeros address"],
      ]
    ) {
      let message = "";
      try {
        validateNodeIP(ip);
      } catch (e) {
        message = (e as Error).message;
      }
      assertEquals(message, why, ip);
    }
  });
});

Deno.test("TestImages", async () => {
  const image = (size: number, tags: string[], digests: string[] = []) => ({
    id: String(size),
    repoTags: tags,
    repoDigests: digests,
    size: BigInt(size),
    username: "",
    pinned: false,
  });
  const node = newNode();
  await images(2, () =>
    Promise.resolve([
      image(10, ["a:1"]),
      image(30, ["c:1", "c:2", "c:3", "c:4", "c:5"], ["c@sha256:1"]),
      image(20, ["b:1"]),
    ]))(node);
  assertEquals(node.status?.images, [
    { names: ["c@sha256:1", "c:1", "c:2", "c:3", "c:4"], sizeBytes: 30 },
    { names: ["b:1"], sizeBytes: 20 },
  ]);
  const empty = newNode();
  await images(50, () => Promise.resolve([]))(empty);
  assertEquals(empty.status?.images, undefined);
});

Deno.test("TestMachineInfoRebootEvent", () => {
  const recorder = new FakeRecorder();
  let bootID = "b1";
  const setter = machineInfo({
    nodeName: "node-1",
    maxPods: 110,
    machineInfo: () => ({
      numCores: 2,
      memoryCapacity: 4 * 2 ** 30,
      machineID: "m",
      systemUUID: "s",
      bootID,
      hugePages: [],
    }),
    ephemeralStorageCapacity: () => 100 * 2 ** 30,
    recordEvent: (type, reason, message) => recorder.event({}, { type, reason, message }),
  });
  const node = newNode();
  setter(node);
  assertEquals(node.status?.capacity, {
    cpu: "2",
    memory: "4Gi",
    pods: "110",
    "ephemeral-storage": "100Gi",
  });
  assertEquals(node.status?.allocatable, node.status?.capacity);
  assertEquals(recorder.events, []);
  bootID = "b2";
  setter(node);
  assertEquals(recorder.events, ["Warning Rebooted Node node-1 has been rebooted, boot id: b2"]);
  assertEquals(node.status?.nodeInfo?.bootID, "b2");
});

Deno.test("TestPressureAndReadyConditions", () => {
  const recorder = new FakeRecorder();
  const record = (type: "Normal" | "Warning", event: string) =>
    recorder.event({}, { type, reason: event, message: event });
  let now = Date.UTC(2026, 10, 23, 5, 0, 0);
  const state: { runtimeErr?: Error } = {};
  const node = newNode();
  node.status = { capacity: { cpu: "1", memory: "1Gi", pods: "110", "ephemeral-storage": "1Gi" } };
  const setters = [
    memoryPressureCondition(() => now, () => false, record),
    readyCondition({
      now: () => now,
      runtimeErrors: () => state.runtimeErr,
      networkErrors: () => undefined,
      storageErrors: () => undefined,
      recordEvent: record,
    }),
  ];
  for (const s of setters) s(node);
  assertEquals(node.status.conditions, [
    {
      type: "MemoryPressure",
      status: "False",
      lastHeartbeatTime: "2026-11-23T05:00:00Z",
      lastTransitionTime: "2026-11-23T05:00:00Z",
      reason: "KubeletHasSufficientMemory",
      message: "kubelet has sufficient memory available",
    },
    {
      type: "Ready",
      status: "True",
      lastHeartbeatTime: "2026-11-23T05:00:00Z",
      lastTransitionTime: "2026-11-23T05:00:00Z",
      reason: "KubeletReady",
      message: "kubelet is posting ready status",
    },
  ]);
  // A new condition records its first state only for pressure (kubelet's behaviour).
  assertEquals(recorder.events, ["Normal NodeHasSufficientMemory NodeHasSufficientMemory"]);
  now += 10_000;
  state.runtimeErr = new Error("container runtime is down");
  delete node.status.capacity!.pods;
  for (const s of setters) s(node);
  assertEquals(node.status.conditions![1], {
    type: "Ready",
    status: "False",
    lastHeartbeatTime: "2026-11-23T05:00:10Z",
    lastTransitionTime: "2026-11-23T05:00:10Z",
    reason: "KubeletNotReady",
    message: "[container runtime is down, missing node capacity for resources: pods]",
  });
  assertEquals(node.status.conditions![0].lastTransitionTime, "2026-11-23T05:00:00Z");
  assertEquals(recorder.events.at(-1), "Normal NodeNotReady NodeNotReady");
});
