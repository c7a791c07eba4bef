import assert from "node:assert/strict";
import type {
  Container,
  ContainerStatus,
  Pod,
  PodStatus,
  Probe,
} from "../../../src/api/core/v1/mod.ts";
import { parseContainerID } from "../../../src/kubelet/container/mod.ts";
import {
  newWorker,
  type ProbeKey,
  probeKeyString,
  type ProberManager,
  type ProbeType,
  Result,
} from "../../../src/kubelet/prober/mod.ts";
import {
  getTestPod,
  getTestRunningStatus,
  newTestManager,
  setTestProbe,
  syncExecProber,
  testContainerID,
  testContainerName,
  type TestManager,
  testPodUID,
} from "./common.ts";

const defaultProbe: Probe = {
  exec: {},
  timeoutSeconds: 1,
  periodSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
};

const emptyPod: Pod = { metadata: {}, spec: { containers: [] } };

function key(podUID: string, containerName: string, probeType: ProbeType): ProbeKey {
  return { podUID, containerName, probeType };
}

function expectProbes(m: ProberManager, expected: ProbeKey[]): void {
  const actual = m.probeKeys().map(probeKeyString).sort();
  assert.deepEqual(actual, expected.map(probeKeyString).sort(), "unexpected or missing probes");
}

// Advances the fake clock (a second at a time, at most `steps` times) until the workers are gone.
async function waitForWorkerExit(m: TestManager, keys: ProbeKey[], steps = 10): Promise<void> {
  for (let i = 0; i <= steps; i++) {
    if (keys.every((k) => !m.getWorker(k))) return;
    await m.clock.step(i === 0 ? 0 : 1_000);
  }
  assert.fail(`workers did not exit: ${keys.filter((k) => m.getWorker(k)).map(probeKeyString)}`);
}

// Advances the fake clock until the test container's readiness equals `ready`.
async function waitForReadyStatus(m: TestManager, ready: boolean, steps = 10): Promise<void> {
  for (let i = 0; i <= steps; i++) {
    const status = m.statusManager.getPodStatus(testPodUID);
    assert.ok(status, `status not found: "${testPodUID}"`);
    assert.equal(status.containerStatuses?.length, 1, "expected single container");
    assert.equal(status.containerStatuses![0].containerID, "test://cOnTaInEr_Id");
    if (status.containerStatuses![0].ready === ready) return;
    await m.clock.step(i === 0 ? 0 : 1_000);
  }
  assert.fail(`container never became ready=${ready}`);
}

// Stops every worker and waits for all of them to exit (no leaked loops or timers).
async function cleanup(m: TestManager): Promise<void> {
  m.cleanupPods(undefined);
  const all = [...m.workers.values()];
  await m.clock.step(0);
  await Promise.all(all.map((w) => w.done));
  assert.equal(m.workerCount(), 0);
  assert.equal(m.clock.pendingTimers(), 0);
}

Deno.test("TestAddRemovePods", async () => {
  const noProbePod: Pod = {
    metadata: { uid: "no_probe_pod" },
    spec: { containers: [{ name: "no_probe1" }, { name: "no_probe2" }, { name: "no_probe3" }] },
  };
  const probePod: Pod = {
    metadata: { uid: "probe_pod" },
    spec: {
      containers: [
        { name: "probe1" },
        { name: "readiness", readinessProbe: defaultProbe },
        { name: "probe2" },
        { name: "liveness", livenessProbe: defaultProbe },
        { name: "probe3" },
        { name: "startup", startupProbe: defaultProbe },
      ],
    },
  };

  const m = newTestManager();
  try {
    expectProbes(m, []);

    // Adding a pod with no probes should be a no-op.
    m.addPod(noProbePod);
    expectProbes(m, []);

    // Adding a pod with probes.
    m.addPod(probePod);
    const probePaths = [
      key("probe_pod", "readiness", "readiness"),
      key("probe_pod", "liveness", "liveness"),
      key("probe_pod", "startup", "startup"),
    ];
    expectProbes(m, probePaths);

    // Removing un-probed pod.
    m.removePod(noProbePod);
    expectProbes(m, probePaths);

    // Removing probed pod.
    m.removePod(probePod);
    await waitForWorkerExit(m, probePaths);
    expectProbes(m, []);

    // Removing already removed pods should be a no-op.
    m.removePod(probePod);
    expectProbes(m, []);
  } finally {
    await cleanup(m);
  }
});

Deno.test("TestAddPodContinuesAfterExistingWorker", async () => {
  const pod: Pod = {
    metadata: { uid: "test_pod" },
    spec: {
      containers: [
        { name: "container_a", readinessProbe: defaultProbe },
        { name: "container_b", readinessProbe: defaultProbe },
      ],
    },
  };
  const m = newTestManager();
  try {
    // First addPod: workers for both containers.
    m.addPod(pod);
    const both = [
      key("test_pod", "container_a", "readiness"),
      key("test_pod", "container_b", "readiness"),
    ];
    expectProbes(m, both);

    // container_b's worker goes away while container_a's stays.
    const b = m.getWorker(both[1])!;
    b.stop();
    await m.clock.step(0);
    await b.done;
    expectProbes(m, [both[0]]);

    // The second addPod must re-create container_b's worker although container_a's exists.
    m.addPod(pod);
    expectProbes(m, both);
  } finally {
    await cleanup(m);
  }
});

Deno.test("TestAddRemovePodsWithRestartableInitContainer", async (t) => {
  const m = newTestManager();
  expectProbes(m, []);
  const testCases = [
    { desc: "pod without sidecar", probePaths: [], hasRestartableInitContainer: false },
    {
      desc: "pod with sidecar",
      probePaths: [
        key("restartable_init_container_pod", "restartable-init", "liveness"),
        key("restartable_init_container_pod", "restartable-init", "readiness"),
        key("restartable_init_container_pod", "restartable-init", "startup"),
      ],
      hasRestartableInitContainer: true,
    },
  ];
  try {
    for (const tc of testCases) {
      await t.step(tc.desc, async () => {
        const sidecar: Container = {
          name: "restartable-init",
          livenessProbe: defaultProbe,
          readinessProbe: defaultProbe,
          startupProbe: defaultProbe,
        };
        if (tc.hasRestartableInitContainer) sidecar.restartPolicy = "Always";
        const probePod: Pod = {
          metadata: { uid: "restartable_init_container_pod" },
          spec: { initContainers: [{ name: "init" }, sidecar], containers: [{ name: "main" }] },
        };

        // Adding a pod with probes.
        m.addPod(probePod);
        expectProbes(m, tc.probePaths);

        // Removing probed pod.
        m.removePod(probePod);
        await waitForWorkerExit(m, tc.probePaths);
        expectProbes(m, []);

        // Removing already removed pods should be a no-op.
        m.removePod(probePod);
        expectProbes(m, []);
      });
    }
  } finally {
    await cleanup(m);
  }
});

Deno.test("TestCleanupPods", async () => {
  const m = newTestManager();
  const probed = (uid: string): Pod => ({
    metadata: { uid },
    spec: {
      containers: [
        { name: "prober1", readinessProbe: defaultProbe },
        { name: "prober2", livenessProbe: defaultProbe },
        { name: "prober3", startupProbe: defaultProbe },
      ],
    },
  });
  try {
    m.addPod(probed("pod_cleanup"));
    m.addPod(probed("pod_keep"));

    m.cleanupPods(new Set(["pod_keep"]));

    const removedProbes = [
      key("pod_cleanup", "prober1", "readiness"),
      key("pod_cleanup", "prober2", "liveness"),
      key("pod_cleanup", "prober3", "startup"),
    ];
    const expectedProbes = [
      key("pod_keep", "prober1", "readiness"),
      key("pod_keep", "prober2", "liveness"),
      key("pod_keep", "prober3", "startup"),
    ];
    await waitForWorkerExit(m, removedProbes);
    expectProbes(m, expectedProbes);
  } finally {
    await cleanup(m);
  }
});

Deno.test("TestCleanupRepeated", async () => {
  const m = newTestManager();
  try {
    const numTestPods = 100;
    for (let i = 0; i < numTestPods; i++) {
      m.addPod({
        metadata: { uid: String(i) },
        spec: {
          containers: [{
            name: "prober1",
            readinessProbe: defaultProbe,
            livenessProbe: defaultProbe,
            startupProbe: defaultProbe,
          }],
        },
      });
    }
    assert.equal(m.workerCount(), 300);
    for (let i = 0; i < 10; i++) m.cleanupPods(new Set());
  } finally {
    await cleanup(m);
  }
});

// kubelet's tests register empty workers; here real, never-started ones stand in for them.
function fakeWorker(m: ProberManager, podUID: string, name: string, probeType: ProbeType): void {
  const container: Container = { name, [`${probeType}Probe`]: defaultProbe };
  const pod: Pod = { metadata: { uid: podUID }, spec: { containers: [container] } };
  m.addWorker(newWorker(m, { probeType, pod, container }));
}

function running(name: string): ContainerStatus {
  return {
    name,
    containerID: `test://${name}_id`,
    state: { running: {} },
    ready: false,
    restartCount: 0,
  };
}

Deno.test("TestUpdatePodStatus", () => {
  const unprobed = running("unprobed_container");
  const probedReady = running("probed_container_ready");
  const probedPending = running("probed_container_pending");
  const probedUnready = running("probed_container_unready");
  const notStartedNoReadiness = running("not_started_container_no_readiness");
  const startedNoReadiness = running("started_container_no_readiness");
  const terminated: ContainerStatus = {
    name: "terminated_container",
    containerID: "test://terminated_container_id",
    state: { terminated: { exitCode: 0 } },
    ready: false,
    restartCount: 0,
  };
  const all = [
    unprobed,
    probedReady,
    probedPending,
    probedUnready,
    notStartedNoReadiness,
    startedNoReadiness,
    terminated,
  ];
  const podStatus: PodStatus = { phase: "Running", containerStatuses: all };

  const m = newTestManager();
  // No cleanup needed: the workers are never started.
  fakeWorker(m, testPodUID, unprobed.name, "liveness");
  fakeWorker(m, testPodUID, probedReady.name, "readiness");
  fakeWorker(m, testPodUID, probedPending.name, "readiness");
  fakeWorker(m, testPodUID, probedUnready.name, "readiness");
  fakeWorker(m, testPodUID, notStartedNoReadiness.name, "startup");
  fakeWorker(m, testPodUID, startedNoReadiness.name, "startup");
  fakeWorker(m, testPodUID, terminated.name, "readiness");
  m.readinessManager.set(parseContainerID(probedReady.containerID), Result.Success, emptyPod);
  m.readinessManager.set(parseContainerID(probedUnready.containerID), Result.Failure, emptyPod);
  m.startupManager.set(parseContainerID(startedNoReadiness.containerID), Result.Success, emptyPod);
  m.readinessManager.set(parseContainerID(terminated.containerID), Result.Success, emptyPod);

  m.updatePodStatus({
    metadata: { uid: testPodUID },
    spec: { containers: all.map((c) => ({ name: c.name })) },
  }, podStatus);

  const expectedReadiness: Record<string, boolean> = {
    [unprobed.name]: true,
    [probedReady.name]: true,
    [probedPending.name]: false,
    [probedUnready.name]: false,
    [notStartedNoReadiness.name]: false,
    [startedNoReadiness.name]: true,
    [terminated.name]: false,
  };
  for (const c of podStatus.containerStatuses!) {
    assert.ok(c.name in expectedReadiness, `Missing expectation for test case: ${c.name}`);
    assert.equal(
      c.ready,
      expectedReadiness[c.name],
      `Unexpected readiness for container ${c.name}`,
    );
  }

  // Where no readiness result was cached yet, the readiness worker got a manual trigger.
  assert.equal(
    m.getWorker(key(testPodUID, probedPending.name, "readiness"))!.manualTrigger(),
    false,
  );
  assert.equal(
    m.getWorker(key(testPodUID, probedUnready.name, "readiness"))!.manualTrigger(),
    false,
  );
  assert.equal(m.getWorker(key(testPodUID, probedReady.name, "readiness"))!.manualTrigger(), true);
});

Deno.test("TestUpdatePodStatusWithInitContainers", async (t) => {
  const notStarted = running("not_started_container");
  const started = running("started_container");
  const terminated: ContainerStatus = {
    name: "terminated_container",
    containerID: "test://terminated_container_id",
    state: { terminated: { exitCode: 0 } },
    ready: false,
    restartCount: 0,
  };

  const m = newTestManager();
  fakeWorker(m, testPodUID, notStarted.name, "startup");
  fakeWorker(m, testPodUID, started.name, "startup");
  m.startupManager.set(parseContainerID(started.containerID), Result.Success, emptyPod);

  const testCases = [
    {
      desc: "init containers",
      expectedStartup: { [notStarted.name]: false, [started.name]: true, [terminated.name]: false },
      expectedReadiness: {
        [notStarted.name]: false,
        [started.name]: false,
        [terminated.name]: true,
      },
      hasRestartableInitContainer: false,
    },
    {
      desc: "init container with Always restartPolicy",
      expectedStartup: { [notStarted.name]: false, [started.name]: true, [terminated.name]: false },
      expectedReadiness: {
        [notStarted.name]: false,
        [started.name]: true,
        [terminated.name]: false,
      },
      hasRestartableInitContainer: true,
    },
  ];
  for (const tc of testCases) {
    await t.step(tc.desc, () => {
      const podStatus: PodStatus = {
        phase: "Running",
        initContainerStatuses: structuredClone([notStarted, started, terminated]),
      };
      const initContainers: Container[] = [notStarted, started, terminated].map((c) => {
        const spec: Container = { name: c.name };
        if (tc.hasRestartableInitContainer) spec.restartPolicy = "Always";
        return spec;
      });
      m.updatePodStatus(
        { metadata: { uid: testPodUID }, spec: { initContainers, containers: [] } },
        podStatus,
      );
      for (const c of podStatus.initContainerStatuses!) {
        assert.equal(
          c.started,
          tc.expectedStartup[c.name],
          `Unexpected startup for container ${c.name}`,
        );
        assert.equal(
          c.ready,
          tc.expectedReadiness[c.name],
          `Unexpected readiness for container ${c.name}`,
        );
      }
    });
  }
});

Deno.test("TestUpdateReadiness", async () => {
  const testPod = getTestPod();
  setTestProbe(testPod, "readiness", {});
  const m = newTestManager();

  // An extract of kubelet's syncLoopIteration: readiness updates go to the status manager.
  let running = true;
  const consumer = (async () => {
    while (running) {
      const update = await m.readinessManager.updates().receive();
      if (update.done || !running) return;
      const { podUID, containerID, result } = update.value;
      m.statusManager.setContainerReadiness(podUID, containerID, result === Result.Success);
    }
  })();

  try {
    const exec = syncExecProber();
    exec.set("success");
    m.prober.exec = exec;

    m.statusManager.setPodStatus(testPod, getTestRunningStatus());

    m.addPod(testPod);
    expectProbes(m, [key(testPodUID, testContainerName, "readiness")]);

    // Wait for ready status.
    await waitForReadyStatus(m, true);

    // Prober fails.
    exec.set("failure");

    // Wait for failed status.
    await waitForReadyStatus(m, false);
  } finally {
    running = false;
    // An update to let the consumer loop see that it should end.
    await m.readinessManager.set({ type: "", id: "" }, Result.Success, emptyPod);
    await consumer;
    await cleanup(m);
  }
});

Deno.test("TestStopLivenessAndStartup (prober_manager.go StopLivenessAndStartup)", async () => {
  const m = newTestManager();
  const pod: Pod = {
    metadata: { uid: "terminating" },
    spec: {
      initContainers: [{ name: "sidecar", restartPolicy: "Always", livenessProbe: defaultProbe }],
      containers: [{
        name: "app",
        readinessProbe: defaultProbe,
        livenessProbe: defaultProbe,
        startupProbe: defaultProbe,
      }],
    },
  };
  try {
    m.addPod(pod);
    expectProbes(m, [
      key("terminating", "app", "startup"),
      key("terminating", "app", "readiness"),
      key("terminating", "app", "liveness"),
      key("terminating", "sidecar", "liveness"),
    ]);
    m.stopLivenessAndStartup(pod);
    await waitForWorkerExit(m, [
      key("terminating", "app", "liveness"),
      key("terminating", "app", "startup"),
    ]);
    // Readiness keeps going through termination; init containers are not covered (v1.35).
    expectProbes(m, [
      key("terminating", "app", "readiness"),
      key("terminating", "sidecar", "liveness"),
    ]);
  } finally {
    await cleanup(m);
  }
});

Deno.test("TestSetReadyStateOnKubeletRestart (prober_manager.go setReadyStateOnKubeletRestart)", async (t) => {
  // A container that started 11 s before the kubelet (the manager) did.
  const setup = (podReady: boolean, cached?: Result) => {
    const m = newTestManager();
    const pod = getTestPod();
    setTestProbe(pod, "readiness", {});
    pod.status = { conditions: [{ type: "Ready", status: podReady ? "True" : "False" }] };
    fakeWorker(m, testPodUID, testContainerName, "readiness");
    if (cached !== undefined) m.readinessManager.set(testContainerID, cached, emptyPod);
    const status = getTestRunningStatus({ now: m.clock.now() - 11_000 });
    return { m, pod, status };
  };
  await t.step("pod still Ready, nothing cached: stays ready", () => {
    const { m, pod, status } = setup(true);
    m.updatePodStatus(pod, status);
    assert.equal(status.containerStatuses![0].ready, true);
  });
  await t.step("pod not Ready: not ready", () => {
    const { m, pod, status } = setup(false);
    m.updatePodStatus(pod, status);
    assert.equal(status.containerStatuses![0].ready, false);
  });
  await t.step("pod Ready but a Failure is cached: not ready", () => {
    const { m, pod, status } = setup(true, Result.Failure);
    m.updatePodStatus(pod, status);
    assert.equal(status.containerStatuses![0].ready, false);
  });
  await t.step("probe in spec but no worker yet, pod not Ready: not ready", () => {
    // kubelet generates the status before addPod creates workers after a restart.
    const m = newTestManager();
    const pod = getTestPod();
    setTestProbe(pod, "readiness", {});
    pod.status = { conditions: [{ type: "Ready", status: "False" }] };
    const status = getTestRunningStatus({ now: m.clock.now() - 11_000 });
    m.updatePodStatus(pod, status);
    assert.equal(status.containerStatuses![0].ready, false);
  });
  await t.step("probe in spec but no worker yet, pod Ready: ready", () => {
    const m = newTestManager();
    const pod = getTestPod();
    setTestProbe(pod, "readiness", {});
    pod.status = { conditions: [{ type: "Ready", status: "True" }] };
    const status = getTestRunningStatus({ now: m.clock.now() - 11_000 });
    m.updatePodStatus(pod, status);
    assert.equal(status.containerStatuses![0].ready, true);
  });
  await t.step("gate ChangeContainerStatusOnKubeletRestart on: not ready until probed", () => {
    const m = newTestManager({ featureGates: { ChangeContainerStatusOnKubeletRestart: true } });
    const pod = getTestPod();
    setTestProbe(pod, "readiness", {});
    pod.status = { conditions: [{ type: "Ready", status: "True" }] };
    fakeWorker(m, testPodUID, testContainerName, "readiness");
    const status = getTestRunningStatus({ now: m.clock.now() - 11_000 });
    m.updatePodStatus(pod, status);
    assert.equal(status.containerStatuses![0].ready, false);
  });
});
