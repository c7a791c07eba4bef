import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import {
  computePodActions,
  type PodActions,
  type ResultsLookup,
} from "../../../src/kubelet/kuberuntime/kuberuntime_manager.ts";
import { hashContainer, legacyHashContainer } from "../../../src/kubelet/container/helpers.ts";
import type {
  PodStatus as RuntimePodStatus,
  RuntimeContainerState,
  RuntimeContainerStatus,
} from "../../../src/kubelet/container/runtime.ts";
import type { ContainerID } from "../../../src/kubelet/container/container_id.ts";
import type { PodSandboxStatus } from "../../../src/cri_client/api.ts";

function makeTestPod(): Pod {
  return {
    metadata: { name: "foo", namespace: "new", uid: "12345678" },
    spec: {
      containers: [
        { name: "foo1", image: "busybox" },
        { name: "foo2", image: "busybox" },
        { name: "foo3", image: "busybox" },
      ],
    },
  };
}

function sandbox(state: "SANDBOX_READY" | "SANDBOX_NOTREADY", attempt = 0): PodSandboxStatus {
  return {
    id: `sandbox-${attempt}`,
    metadata: { name: "foo", uid: "12345678", namespace: "new", attempt },
    state,
    createdAt: 0n,
    network: { ip: "10.0.0.1", additionalIps: [] },
    labels: {},
    annotations: {},
    runtimeHandler: "",
  };
}

function cstatus(
  container: Container,
  state: RuntimeContainerState,
  extra: Partial<RuntimeContainerStatus> = {},
): RuntimeContainerStatus {
  return {
    id: { type: "test", id: `id-${container.name}` },
    name: container.name,
    state,
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    image: "busybox",
    imageID: "",
    hash: hashContainer(container),
    restartCount: 0,
    reason: "",
    message: "",
    ...extra,
  };
}

function runningPodStatus(pod: Pod): RuntimePodStatus {
  return {
    id: pod.metadata.uid!,
    name: pod.metadata.name!,
    namespace: pod.metadata.namespace!,
    ips: ["10.0.0.1"],
    sandboxStatuses: [sandbox("SANDBOX_READY")],
    containerStatuses: pod.spec.containers.map((c) => cstatus(c, "running")),
  };
}

class FakeResults implements ResultsLookup {
  readonly cache = new Map<string, number>();
  get(id: ContainerID): number | undefined {
    return this.cache.get(id.id);
  }
}

function lookups() {
  return { livenessManager: new FakeResults(), startupManager: new FakeResults() };
}

function summary(a: PodActions) {
  return {
    killPod: a.killPod,
    createSandbox: a.createSandbox,
    attempt: a.attempt,
    initContainersToStart: a.initContainersToStart,
    containersToStart: a.containersToStart,
    kill: [...a.containersToKill.values()].map((k) => `${k.name}: ${k.message}`),
  };
}

const none = {
  killPod: false,
  createSandbox: false,
  attempt: 0,
  initContainersToStart: [],
  containersToStart: [],
  kill: [],
};

Deno.test("TestComputePodActions", async (t) => {
  await t.step("everything is good; do nothing", () => {
    const pod = makeTestPod();
    assertEquals(summary(computePodActions(pod, runningPodStatus(pod), lookups())), none);
  });

  await t.step("no sandbox: create one and start all containers", () => {
    const pod = makeTestPod();
    const status = runningPodStatus(pod);
    status.sandboxStatuses = [];
    status.containerStatuses = [];
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      killPod: true,
      createSandbox: true,
      containersToStart: [0, 1, 2],
    });
  });

  await t.step("sandbox not ready: new attempt, restart everything", () => {
    const pod = makeTestPod();
    const status = runningPodStatus(pod);
    status.sandboxStatuses = [sandbox("SANDBOX_NOTREADY", 2)];
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      killPod: true,
      createSandbox: true,
      attempt: 3,
      containersToStart: [0, 1, 2],
    });
  });

  await t.step("sandbox dead and restartPolicy Never: kill only", () => {
    const pod = makeTestPod();
    pod.spec.restartPolicy = "Never";
    const status = runningPodStatus(pod);
    status.sandboxStatuses = [sandbox("SANDBOX_NOTREADY", 0)];
    status.sandboxStatuses[0].metadata.attempt = 1;
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      killPod: true,
      attempt: 2,
    });
  });

  for (
    const [policy, exitCode, restart] of [
      ["Always", 0, true],
      ["Always", 1, true],
      ["OnFailure", 0, false],
      ["OnFailure", 1, true],
      ["Never", 0, false],
      ["Never", 1, false],
    ] as const
  ) {
    await t.step(`exited container, restartPolicy ${policy}, exit ${exitCode}`, () => {
      const pod = makeTestPod();
      pod.spec.restartPolicy = policy;
      const status = runningPodStatus(pod);
      status.containerStatuses[1] = cstatus(pod.spec.containers[1], "exited", { exitCode });
      assertEquals(
        summary(computePodActions(pod, status, lookups())).containersToStart,
        restart ? [1] : [],
      );
    });
  }

  await t.step("liveness failure: kill and restart", () => {
    const pod = makeTestPod();
    const status = runningPodStatus(pod);
    const l = lookups();
    l.livenessManager.cache.set("id-foo2", 1);
    assertEquals(summary(computePodActions(pod, status, l)), {
      ...none,
      containersToStart: [1],
      kill: ["foo2: Container foo2 failed liveness probe, will be restarted"],
    });
  });

  await t.step("liveness failure with restartPolicy Never: kill without restart", () => {
    const pod = makeTestPod();
    pod.spec.restartPolicy = "Never";
    const l = lookups();
    l.livenessManager.cache.set("id-foo1", 1);
    assertEquals(summary(computePodActions(pod, runningPodStatus(pod), l)), {
      ...none,
      kill: ["foo1: Container foo1 failed liveness probe"],
    });
  });

  await t.step("startup failure: kill and restart", () => {
    const pod = makeTestPod();
    const l = lookups();
    l.startupManager.cache.set("id-foo3", 1);
    const actions = computePodActions(pod, runningPodStatus(pod), l);
    assertEquals(summary(actions), {
      ...none,
      containersToStart: [2],
      kill: ["foo3: Container foo3 failed startup probe, will be restarted"],
    });
    assertEquals([...actions.containersToKill.values()][0].reason, "StartupProbe");
  });

  await t.step("startup Unknown and liveness Success never kill", () => {
    const pod = makeTestPod();
    const l = lookups();
    l.startupManager.cache.set("id-foo1", -1);
    l.livenessManager.cache.set("id-foo1", 0);
    assertEquals(summary(computePodActions(pod, runningPodStatus(pod), l)), none);
  });

  await t.step("definition changed: restart even with restartPolicy Never", () => {
    const pod = makeTestPod();
    pod.spec.restartPolicy = "Never";
    const status = runningPodStatus(pod);
    status.containerStatuses[0].hash = "deadbeef";
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      containersToStart: [0],
      kill: ["foo1: Container foo1 definition changed, will be restarted"],
    });
  });

  await t.step("the hash covers name and image only, as kubelet's pickFieldsToHash", () => {
    const pod = makeTestPod();
    const status = runningPodStatus(pod);
    // A field a later version adds or defaults does not restart the container.
    pod.spec.containers[0].command = ["sh", "-c", "sleep 1"];
    pod.spec.containers[0].terminationMessagePolicy = "FallbackToLogsOnError";
    assertEquals(summary(computePodActions(pod, status, lookups())), none);
    pod.spec.containers[0].image = "busybox:2";
    assertEquals(
      summary(computePodActions(pod, status, lookups())).kill,
      ["foo1: Container foo1 definition changed, will be restarted"],
    );
  });

  await t.step("a container created with the whole-spec hash of earlier probelets is kept", () => {
    const pod = makeTestPod();
    const status = runningPodStatus(pod);
    status.containerStatuses[0].hash = legacyHashContainer(pod.spec.containers[0]);
    assertEquals(summary(computePodActions(pod, status, lookups())), none);
    pod.spec.containers[0].image = "busybox:2";
    assertEquals(
      summary(computePodActions(pod, status, lookups())).kill,
      ["foo1: Container foo1 definition changed, will be restarted"],
    );
  });

  await t.step("all containers exited with Never: kill the pod", () => {
    const pod = makeTestPod();
    pod.spec.restartPolicy = "Never";
    const status = runningPodStatus(pod);
    status.containerStatuses = pod.spec.containers.map((c) => cstatus(c, "exited"));
    assertEquals(summary(computePodActions(pod, status, lookups())), { ...none, killPod: true });
  });
});

function makeInitPod(restartable: boolean): Pod {
  const pod = makeTestPod();
  pod.spec.initContainers = [
    { name: "init1", image: "busybox", ...(restartable ? { restartPolicy: "Always" } : {}) },
    { name: "init2", image: "busybox", ...(restartable ? { restartPolicy: "Always" } : {}) },
  ];
  return pod;
}

Deno.test("TestComputePodActionsWithInitContainers", async (t) => {
  await t.step("new pod: create sandbox and start the first init container", () => {
    const pod = makeInitPod(false);
    const status = runningPodStatus(pod);
    status.sandboxStatuses = [];
    status.containerStatuses = [];
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      killPod: true,
      createSandbox: true,
      initContainersToStart: [0],
    });
  });

  await t.step("first init container running: wait", () => {
    const pod = makeInitPod(false);
    const status = runningPodStatus(pod);
    status.containerStatuses = [cstatus(pod.spec.initContainers![0], "running")];
    assertEquals(summary(computePodActions(pod, status, lookups())), none);
  });

  await t.step("first init container done: start the second", () => {
    const pod = makeInitPod(false);
    const status = runningPodStatus(pod);
    status.containerStatuses = [cstatus(pod.spec.initContainers![0], "exited")];
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      initContainersToStart: [1],
    });
  });

  await t.step("all init containers done: start the regular containers", () => {
    const pod = makeInitPod(false);
    const status = runningPodStatus(pod);
    status.containerStatuses = pod.spec.initContainers!.map((c) => cstatus(c, "exited"));
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      containersToStart: [0, 1, 2],
    });
  });

  await t.step("init container failed, restartPolicy Never: kill the pod", () => {
    const pod = makeInitPod(false);
    pod.spec.restartPolicy = "Never";
    const status = runningPodStatus(pod);
    status.containerStatuses = [cstatus(pod.spec.initContainers![0], "exited", { exitCode: 1 })];
    assertEquals(summary(computePodActions(pod, status, lookups())), { ...none, killPod: true });
  });

  await t.step("init container failed, restartPolicy Always: restart it", () => {
    const pod = makeInitPod(false);
    const status = runningPodStatus(pod);
    status.containerStatuses = [cstatus(pod.spec.initContainers![0], "exited", { exitCode: 1 })];
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      initContainersToStart: [0],
    });
  });

  await t.step("sidecar running without probes: start the next one", () => {
    const pod = makeInitPod(true);
    const status = runningPodStatus(pod);
    status.containerStatuses = [cstatus(pod.spec.initContainers![0], "running")];
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      initContainersToStart: [1],
    });
  });

  await t.step("sidecar with a startup probe not yet run: wait", () => {
    const pod = makeInitPod(true);
    pod.spec.initContainers![0].startupProbe = { exec: { command: ["true"] } };
    const status = runningPodStatus(pod);
    status.containerStatuses = [cstatus(pod.spec.initContainers![0], "running")];
    assertEquals(summary(computePodActions(pod, status, lookups())), none);
  });

  await t.step("sidecars running: start the regular containers", () => {
    const pod = makeInitPod(true);
    const status = runningPodStatus(pod);
    status.containerStatuses = pod.spec.initContainers!.map((c) => cstatus(c, "running"));
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      containersToStart: [0, 1, 2],
    });
  });

  await t.step("sidecar failed liveness: kill and restart it, keep the rest", () => {
    const pod = makeInitPod(true);
    pod.spec.initContainers![1].livenessProbe = { exec: { command: ["true"] } };
    const status = runningPodStatus(pod);
    status.containerStatuses = [
      ...pod.spec.initContainers!.map((c) => cstatus(c, "running")),
      ...pod.spec.containers.map((c) => cstatus(c, "running")),
    ];
    const l = lookups();
    l.livenessManager.cache.set("id-init2", 1);
    assertEquals(summary(computePodActions(pod, status, l)), {
      ...none,
      initContainersToStart: [1],
      kill: ["init2: Init container init2 failed liveness probe"],
    });
  });

  await t.step("sidecar exited after initialisation: restart it", () => {
    const pod = makeInitPod(true);
    const status = runningPodStatus(pod);
    status.containerStatuses = [
      cstatus(pod.spec.initContainers![0], "exited", { exitCode: 137 }),
      cstatus(pod.spec.initContainers![1], "running"),
      ...pod.spec.containers.map((c) => cstatus(c, "running")),
    ];
    assertEquals(summary(computePodActions(pod, status, lookups())), {
      ...none,
      initContainersToStart: [0],
    });
  });
});
