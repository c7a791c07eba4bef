import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { ContainerStatus, Pod } from "../../src/api/core/v1/mod.ts";
import {
  convertToAPIContainerStatuses,
  generateAPIPodStatus,
  getPhase,
} from "../../src/kubelet/kubelet_pods.ts";
import type { PodStatus as RuntimePodStatus } from "../../src/kubelet/container/runtime.ts";

const running = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { running: {} },
});
const succeeded = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode: 0 } },
});
const failed = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode: 1 } },
});
const waiting = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { waiting: {} },
});
const waitingWithLastTermination = (name: string): ContainerStatus => ({
  ...waiting(name),
  lastState: { terminated: { exitCode: 1 } },
});

function pod(
  policy: "Always" | "OnFailure" | "Never",
  init: string[] = [],
  sidecars: string[] = [],
): Pod {
  return {
    metadata: { name: "p" },
    spec: {
      restartPolicy: policy,
      initContainers: [
        ...init.map((name) => ({ name })),
        ...sidecars.map((name) => ({ name, restartPolicy: "Always" as const })),
      ],
      containers: [{ name: "containerA" }, { name: "containerB" }],
    },
  };
}

const opts = { podIsTerminal: false, podHasInitialized: true };

// A pod whose sandbox and containers are not (or no longer) on the runtime.
const noContainers: RuntimePodStatus = {
  id: "uid",
  name: "p",
  namespace: "default",
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
};

Deno.test("TestPodPhase", async (t) => {
  const cases: [string, Pod, ContainerStatus[], string][] = [
    ["all running", pod("Always"), [running("containerA"), running("containerB")], "Running"],
    ["all stopped with restart always", pod("Always"), [
      succeeded("containerA"),
      failed("containerB"),
    ], "Running"],
    ["all succeeded, OnFailure", pod("OnFailure"), [
      succeeded("containerA"),
      succeeded("containerB"),
    ], "Succeeded"],
    ["one failed, OnFailure (restarting)", pod("OnFailure"), [
      succeeded("containerA"),
      failed("containerB"),
    ], "Running"],
    ["one failed, Never", pod("Never"), [succeeded("containerA"), failed("containerB")], "Failed"],
    ["mixed state #1 with restart always", pod("Always"), [running("containerA")], "Pending"],
    ["waiting", pod("Always"), [running("containerA"), waiting("containerB")], "Pending"],
    [
      "backoff crashloop container with restart always",
      pod("Always"),
      [running("containerA"), waitingWithLastTermination("containerB")],
      "Running",
    ],
    ["init container running", pod("Always", ["init"]), [running("init")], "Pending"],
    ["init container failed, Never", pod("Never", ["init"]), [failed("init")], "Failed"],
    [
      "init container succeeded, containers running",
      pod("Always", ["init"]),
      [succeeded("init"), running("containerA"), running("containerB")],
      "Running",
    ],
    [
      "sidecar running but not started, not initialised",
      pod("Always", [], ["sidecar"]),
      [{ ...running("sidecar"), started: false }],
      "Pending",
    ],
  ];
  for (const [name, p, statuses, want] of cases) {
    await t.step(name, () => {
      const initialised = name.includes("not initialised")
        ? { ...opts, podHasInitialized: false }
        : opts;
      assertEquals(getPhase(p, statuses, initialised), want);
    });
  }
});

Deno.test("TestConvertToAPIContainerStatuses", async (t) => {
  const p = pod("Always");
  const status: RuntimePodStatus = {
    id: "uid",
    name: "p",
    namespace: "default",
    ips: ["10.0.0.1"],
    sandboxStatuses: [],
    containerStatuses: [
      {
        id: { type: "containerd", id: "new" },
        name: "containerA",
        state: "exited",
        createdAt: 2000,
        startedAt: 2000,
        finishedAt: 3000,
        exitCode: 137,
        image: "busybox",
        imageID: "sha",
        hash: "",
        restartCount: 1,
        reason: "Error",
        message: "",
      },
      {
        id: { type: "containerd", id: "old" },
        name: "containerA",
        state: "exited",
        createdAt: 1000,
        startedAt: 1000,
        finishedAt: 1500,
        exitCode: 1,
        image: "busybox",
        imageID: "sha",
        hash: "",
        restartCount: 0,
        reason: "Error",
        message: "",
      },
    ],
  };
  await t.step(
    "the newest instance is the state, a never-created container is ContainerCreating",
    () => {
      const [a, b] = convertToAPIContainerStatuses(p, status, p.spec.containers, {
        isInit: false,
        startFailures: new Map(),
      });
      assertEquals(a.state?.terminated?.exitCode, 137);
      assertEquals(a.containerID, "containerd://new");
      assertEquals(a.restartCount, 1);
      assertEquals(a.lastState?.terminated?.exitCode, 1);
      assertEquals(b.state, { waiting: { reason: "ContainerCreating" } });
    },
  );
  await t.step("behind init containers, a never-created container is PodInitializing", () => {
    // kubelet's defaultWaitingState when the pod has init containers, for both lists.
    const [, b] = convertToAPIContainerStatuses(p, status, p.spec.containers, {
      isInit: false,
      hasInitContainers: true,
      startFailures: new Map(),
    });
    assertEquals(b.state, { waiting: { reason: "PodInitializing" } });
  });
  await t.step("a start failure turns the state into Waiting with its reason", () => {
    const [a] = convertToAPIContainerStatuses(p, status, p.spec.containers, {
      isInit: false,
      startFailures: new Map([["containerA", {
        reason: "CrashLoopBackOff",
        message: "back-off 10s",
      }]]),
    });
    assertEquals(a.state, { waiting: { reason: "CrashLoopBackOff", message: "back-off 10s" } });
    assertEquals(a.lastState?.terminated?.exitCode, 137);
  });
});

Deno.test("TestGenerateAPIPodStatusHostNetworkPodIPs (host IPs come from the node)", async (t) => {
  const runtime: RuntimePodStatus = {
    id: "uid",
    name: "p",
    namespace: "default",
    ips: ["10.88.0.7"],
    sandboxStatuses: [],
    containerStatuses: [],
  };
  const generate = (hostNetwork: boolean, hostIPs: string[]) =>
    generateAPIPodStatus(
      { ...pod("Always"), spec: { ...pod("Always").spec, hostNetwork } },
      runtime,
      {
        startFailures: new Map(),
        hostIPs,
        startTime: "2026-11-23T05:00:00Z",
      },
    );
  const cases: [string, boolean, string[], string[]][] = [
    ["pod network: the runtime's IPs", false, ["192.168.1.2"], ["10.88.0.7"]],
    ["host network: the node's IP", true, ["192.168.1.2"], ["192.168.1.2"]],
    ["host network, dual-stack node: both", true, ["192.168.1.2", "fd00::2"], [
      "192.168.1.2",
      "fd00::2",
    ]],
  ];
  for (const [name, hostNetwork, hostIPs, podIPs] of cases) {
    await t.step(name, () => {
      const status = generate(hostNetwork, hostIPs);
      assertEquals(status.hostIP, hostIPs[0]);
      assertEquals(status.hostIPs, hostIPs.map((ip) => ({ ip })));
      assertEquals(status.podIP, podIPs[0]);
      assertEquals(status.podIPs, podIPs.map((ip) => ({ ip })));
    });
  }
});

Deno.test("TestGenerateAPIPodStatusPodInitializing", () => {
  // kubelet's generateAPIPodStatus passes len(pod.Spec.InitContainers) > 0 for both lists: with
  // init containers, nothing created yet waits as PodInitializing (kubectl's Init:0/1).
  const withInit = pod("Never", ["setup"]);
  const runtime = noContainers;
  const status = generateAPIPodStatus(withInit, runtime, {
    startFailures: new Map(),
    hostIPs: ["192.168.1.2"],
    startTime: "2026-11-23T05:00:00Z",
  });
  const waiting = { waiting: { reason: "PodInitializing" } };
  assertEquals(status.initContainerStatuses?.map((s) => s.state), [waiting]);
  assertEquals(
    status.containerStatuses?.map((s) => s.state),
    withInit.spec.containers.map(() => waiting),
  );
  // Without init containers: ContainerCreating.
  const plain = generateAPIPodStatus(pod("Never"), runtime, {
    startFailures: new Map(),
    hostIPs: ["192.168.1.2"],
    startTime: "2026-11-23T05:00:00Z",
  });
  assertEquals(plain.containerStatuses?.[0].state, { waiting: { reason: "ContainerCreating" } });
});

Deno.test("TestPodPhaseWithPodIsTerminal (SyncTerminatingPod's final status)", async (t) => {
  const terminal = { podIsTerminal: true, podHasInitialized: true };
  await t.step("restartPolicy Always, one container failed: Failed, not Running", () => {
    assertEquals(
      getPhase(pod("Always"), [succeeded("containerA"), failed("containerB")], terminal),
      "Failed",
    );
  });
  await t.step("restartPolicy Always, all succeeded: Succeeded", () => {
    assertEquals(
      getPhase(pod("Always"), [succeeded("containerA"), succeeded("containerB")], terminal),
      "Succeeded",
    );
  });
  await t.step("restartPolicy OnFailure, one waiting to restart after a failure: Failed", () => {
    assertEquals(
      getPhase(pod("OnFailure"), [
        succeeded("containerA"),
        waitingWithLastTermination("containerB"),
      ], terminal),
      "Failed",
    );
  });
  await t.step("a static pod keeps the policy's answer (kubelet's TODO #116484)", () => {
    const p = pod("Always");
    p.metadata.annotations = { "kubernetes.io/config.source": "file" };
    assertEquals(getPhase(p, [succeeded("containerA"), failed("containerB")], terminal), "Running");
  });
  await t.step("a container still running: Running", () => {
    assertEquals(
      getPhase(pod("Always"), [running("containerA"), failed("containerB")], terminal),
      "Running",
    );
  });
});

Deno.test("TestGenerateAPIPodStatusKeepsTerminalPhase (kubelet's three-way merge)", () => {
  const runtime = noContainers;
  const options = {
    startFailures: new Map(),
    hostIPs: ["192.168.1.2"],
    startTime: "2026-11-23T05:00:00Z",
  };
  // Containers gone from the runtime would read as Pending; a terminal phase is never undone.
  assertEquals(generateAPIPodStatus(pod("Never"), runtime, options).phase, "Pending");
  assertEquals(
    generateAPIPodStatus(pod("Never"), runtime, { ...options, oldStatus: { phase: "Succeeded" } })
      .phase,
    "Succeeded",
  );
  const fromAPI = { ...pod("Never"), status: { phase: "Failed" as const } };
  assertEquals(generateAPIPodStatus(fromAPI, runtime, options).phase, "Failed");
});

Deno.test("TestConvertToAPIContainerStatusesVolumeMounts", () => {
  // kubelet's TestConvertToAPIContainerStatusesForUser (RecursiveReadOnlyMounts): each status
  // lists its container's mounts; read-only ones say recursiveReadOnly, non-recursive here.
  const withMounts: Pod = {
    metadata: { name: "p" },
    spec: {
      restartPolicy: "Never",
      initContainers: [{ name: "setup", volumeMounts: [{ name: "work", mountPath: "/work" }] }],
      containers: [
        {
          name: "app",
          volumeMounts: [
            { name: "work", mountPath: "/work" },
            { name: "cfg", mountPath: "/etc/cfg", readOnly: true, subPath: "app" },
            { name: "token", mountPath: "/var/run/secrets", readOnly: true },
          ],
        },
        { name: "bare" },
      ],
    },
  };
  const status = generateAPIPodStatus(withMounts, noContainers, {
    startFailures: new Map(),
    hostIPs: ["192.168.1.2"],
    startTime: "2026-11-23T05:00:00Z",
  });
  assertEquals(status.initContainerStatuses?.[0].volumeMounts, [
    { name: "work", mountPath: "/work" },
  ]);
  const app = status.containerStatuses?.find((s) => s.name === "app");
  assertEquals(app?.volumeMounts, [
    { name: "work", mountPath: "/work" },
    { name: "cfg", mountPath: "/etc/cfg", readOnly: true, recursiveReadOnly: "Disabled" },
    { name: "token", mountPath: "/var/run/secrets", readOnly: true, recursiveReadOnly: "Disabled" },
  ]);
  // No mounts: no field (kubelet's nil slice is omitted).
  const bare = status.containerStatuses?.find((s) => s.name === "bare");
  assertEquals("volumeMounts" in bare!, false);
});

Deno.test("TestGenerateAPIPodStatusWithPodSyncHandlers", async (t) => {
  const options = {
    startFailures: new Map(),
    hostIPs: ["192.168.1.2"],
    startTime: "2026-11-23T05:00:00Z",
  };
  const evict = {
    shouldEvict: () => ({ evict: true, reason: "DeadlineExceeded", message: "too long" }),
  };
  const keep = { shouldEvict: () => ({ evict: false }) };
  await t.step("a handler asking for eviction fails the pod with its reason", () => {
    const status = generateAPIPodStatus(pod("Always"), noContainers, {
      ...options,
      podSyncHandlers: [keep, evict],
    });
    assertEquals([status.phase, status.reason, status.message], [
      "Failed",
      "DeadlineExceeded",
      "too long",
    ]);
  });
  await t.step("no handler asking: the phase from the containers, no reason", () => {
    const status = generateAPIPodStatus(pod("Always"), noContainers, {
      ...options,
      podSyncHandlers: [keep],
    });
    assertEquals([status.phase, status.reason, status.message], ["Pending", undefined, undefined]);
  });
  await t.step("a pod the API shows Succeeded stays Succeeded", () => {
    const done = { ...pod("Never"), status: { phase: "Succeeded" as const } };
    const status = generateAPIPodStatus(done, noContainers, {
      ...options,
      podSyncHandlers: [evict],
    });
    assertEquals(status.phase, "Succeeded");
  });
});
