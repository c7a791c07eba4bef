import assert from "node:assert/strict";
import type {
  Container,
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodSpec,
  PodStatus,
} from "../../../src/api/core/v1/mod.ts";
import type { ContainerID } from "../../../src/kubelet/container/mod.ts";
import {
  BasicPodManager,
  ContainersNotReady,
  generateContainersReadyCondition,
  generatePodReadyCondition,
  maxPodTerminationMessageLogLength,
  newManager,
  normalizeStatus,
  PodCompleted,
  PodFailed,
  ReadinessGatesNotReady,
  UnknownContainerStatuses,
} from "../../../src/kubelet/status/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";

setLogSink(() => {});

const testEpoch = Date.UTC(2026, 0, 1);

function getTestPod(): Pod {
  return {
    metadata: { uid: "12345678", name: "foo", namespace: "new" },
    spec: { containers: [] },
  };
}

function getPodCondition(
  type: string,
  status: PodCondition["status"],
  reason: string,
  message: string,
): PodCondition {
  const c: PodCondition = { type, status };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

const getReadyStatus = (name: string): ContainerStatus => ({ name, ready: true, restartCount: 0 });
const getNotReadyStatus = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
});

function newTestManager() {
  const clock = new FakeClock(testEpoch);
  const podManager = new BasicPodManager();
  podManager.addPod(getTestPod());
  const m = newManager({ podManager, clock });
  let updates = 0;
  m.subscribe(() => updates++);
  return { m, podManager, clock, updates: () => updates };
}

Deno.test("TestSetContainerReadiness", () => {
  const cID1: ContainerID = { type: "test", id: "1" };
  const cID2: ContainerID = { type: "test", id: "2" };
  const status: PodStatus = {
    containerStatuses: [
      { name: "c1", containerID: "test://1", ready: false, restartCount: 0 },
      { name: "c2", containerID: "test://2", ready: false, restartCount: 0 },
    ],
    conditions: [{ type: "Ready", status: "False" }],
  };
  const pod = getTestPod();
  pod.spec.containers = [{ name: "c1" }, { name: "c2" }];

  const verifyReadiness = (
    step: string,
    s: PodStatus,
    c1Ready: boolean,
    c2Ready: boolean,
    podReady: boolean,
  ) => {
    for (const c of s.containerStatuses!) {
      if (c.containerID === "test://1") assert.equal(c.ready, c1Ready, `[${step}] c1`);
      else if (c.containerID === "test://2") assert.equal(c.ready, c2Ready, `[${step}] c2`);
      else assert.fail(`[${step}] Unexpected container: ${c.name}`);
    }
    assert.equal(s.conditions![0].type, "Ready", `[${step}] Unexpected condition`);
    assert.equal(s.conditions![0].status === "True", podReady, `[${step}] pod readiness`);
  };

  const { m, podManager, updates } = newTestManager();
  // The container spec changed: add the test pod again.
  podManager.addPod(pod);
  const uid = pod.metadata.uid!;

  // Setting readiness before status should fail.
  m.setContainerReadiness(uid, cID1, true);
  assert.equal(m.getPodStatus(uid), undefined);
  assert.equal(updates(), 0);

  // Setting initial status.
  m.setPodStatus(pod, status);
  assert.equal(updates(), 1);
  verifyReadiness("initial", m.getPodStatus(uid)!, false, false, false);

  // Setting unchanged readiness should do nothing.
  m.setContainerReadiness(uid, cID1, false);
  assert.equal(updates(), 1);
  verifyReadiness("unchanged", m.getPodStatus(uid)!, false, false, false);

  // Setting container readiness should generate update but not pod readiness.
  m.setContainerReadiness(uid, cID1, true);
  assert.equal(updates(), 2);
  verifyReadiness("c1 ready", m.getPodStatus(uid)!, true, false, false);

  // Setting both containers to ready should update pod readiness.
  m.setContainerReadiness(uid, cID2, true);
  assert.equal(updates(), 3);
  const allReady = m.getPodStatus(uid)!;
  verifyReadiness("all ready", allReady, true, true, true);
  // ContainersReady was missing and has been added.
  assert.equal(allReady.conditions![1].type, "ContainersReady");
  assert.equal(allReady.conditions![1].status, "True");

  // Setting non-existent container readiness should fail.
  m.setContainerReadiness(uid, { type: "test", id: "foo" }, true);
  assert.equal(updates(), 3);
  verifyReadiness("ignore non-existent", m.getPodStatus(uid)!, true, true, true);

  // A pod the pod source does not know is ignored.
  podManager.removePod(pod);
  m.setContainerReadiness(uid, cID1, false);
  verifyReadiness("deleted pod", m.getPodStatus(uid)!, true, true, true);
});

Deno.test("TestSetContainerStartup", () => {
  const cID1: ContainerID = { type: "test", id: "1" };
  const cID2: ContainerID = { type: "test", id: "2" };
  const status: PodStatus = {
    containerStatuses: [
      { name: "c1", containerID: "test://1", ready: false, restartCount: 0 },
      { name: "c2", containerID: "test://2", ready: false, restartCount: 0 },
    ],
    conditions: [{ type: "Ready", status: "False" }],
  };
  const pod = getTestPod();
  pod.spec.containers = [{ name: "c1" }, { name: "c2" }];
  const verifyStartup = (step: string, s: PodStatus, c1: boolean, c2: boolean) => {
    for (const c of s.containerStatuses!) {
      const want = c.containerID === "test://1" ? c1 : c2;
      assert.equal(c.started === true, want, `[${step}] ${c.name}`);
    }
  };

  const { m, podManager, updates } = newTestManager();
  podManager.addPod(pod);
  const uid = pod.metadata.uid!;

  // Setting startup before status should fail.
  m.setContainerStartup(uid, cID1, true);
  assert.equal(m.getPodStatus(uid), undefined);

  // Setting initial status.
  m.setPodStatus(pod, status);
  verifyStartup("initial", m.getPodStatus(uid)!, false, false);

  // Started = undefined to false is a change; false to false is not.
  m.setContainerStartup(uid, cID1, false);
  assert.equal(updates(), 2);
  m.setContainerStartup(uid, cID1, false);
  assert.equal(updates(), 2);
  verifyStartup("unchanged", m.getPodStatus(uid)!, false, false);

  // Setting container startup should generate an update.
  m.setContainerStartup(uid, cID1, true);
  assert.equal(updates(), 3);
  verifyStartup("c1 started", m.getPodStatus(uid)!, true, false);

  m.setContainerStartup(uid, cID2, true);
  verifyStartup("all started", m.getPodStatus(uid)!, true, true);
  // Startup does not touch conditions.
  assert.deepEqual(m.getPodStatus(uid)!.conditions!.map((c) => c.type), ["Ready"]);

  // Setting non-existent container startup should fail.
  m.setContainerStartup(uid, { type: "test", id: "foo" }, true);
  verifyStartup("ignore non-existent", m.getPodStatus(uid)!, true, true);
});

Deno.test("TestStatusDeepCopy", () => {
  const { m, podManager } = newTestManager();
  const pod = getTestPod();
  pod.spec.containers = [{ name: "c1" }];
  podManager.addPod(pod);
  const status: PodStatus = {
    containerStatuses: [{ name: "c1", containerID: "test://1", ready: false, restartCount: 0 }],
  };
  m.setPodStatus(pod, status);
  // The caller's object is not the cache.
  status.containerStatuses![0].ready = true;
  const uid = pod.metadata.uid!;
  assert.equal(m.getPodStatus(uid)!.containerStatuses![0].ready, false);
  // A returned copy is the caller's to change.
  m.getPodStatus(uid)!.containerStatuses![0].ready = true;
  assert.equal(m.getPodStatus(uid)!.containerStatuses![0].ready, false);
  // A shared read is the cache itself, frozen: changing it fails loudly.
  const shared = m.getPodStatus(uid, { shared: true })!;
  assert.throws(() => {
    shared.containerStatuses![0].ready = true;
  }, TypeError);
  // Writers work on a private copy, so an earlier shared read never changes.
  m.setContainerReadiness(uid, { type: "test", id: "1" }, true);
  assert.equal(shared.containerStatuses![0].ready, false);
  assert.equal(m.getPodStatus(uid, { shared: true })!.containerStatuses![0].ready, true);
});

Deno.test("TestUpdateLastTransitionTime", () => {
  const { m, podManager, clock } = newTestManager();
  const pod = getTestPod();
  pod.spec.containers = [{ name: "c1" }];
  podManager.addPod(pod);
  const uid = pod.metadata.uid!;
  const id: ContainerID = { type: "test", id: "1" };
  m.setPodStatus(pod, {
    phase: "Running",
    containerStatuses: [{ name: "c1", containerID: "test://1", ready: false, restartCount: 0 }],
  });

  const readyTime = () =>
    m.getPodStatus(uid)!.conditions!.find((c) => c.type === "Ready")!.lastTransitionTime;

  m.setContainerReadiness(uid, id, true);
  assert.equal(readyTime(), "2026-01-01T00:00:00Z", "no old condition: set to now");

  // An unchanged status keeps its transition time.
  clock.setTime(testEpoch + 5_000);
  m.setPodStatus(pod, m.getPodStatus(uid)!);
  assert.equal(readyTime(), "2026-01-01T00:00:00Z");

  // A flip sets it to now.
  clock.setTime(testEpoch + 7_000);
  m.setContainerReadiness(uid, id, false);
  assert.equal(readyTime(), "2026-01-01T00:00:07Z");
  const c = m.getPodStatus(uid)!.conditions!.find((c) => c.type === "Ready")!;
  assert.equal(c.status, "False");
  assert.equal(c.reason, ContainersNotReady);
  assert.equal(c.message, "containers with unready status: [c1]");
});

function spec(partial: Partial<PodSpec>): PodSpec {
  return { containers: [], ...partial };
}
const restartable = (name: string): Container => ({ name, restartPolicy: "Always" });

Deno.test("TestGenerateContainersReadyCondition", async (t) => {
  const tests: {
    spec: PodSpec;
    containerStatuses?: ContainerStatus[];
    podPhase: PodPhase;
    expectReady: PodCondition;
  }[] = [
    {
      spec: spec({}),
      containerStatuses: undefined,
      podPhase: "Running",
      expectReady: getPodCondition("ContainersReady", "False", UnknownContainerStatuses, ""),
    },
    {
      spec: spec({}),
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition("ContainersReady", "True", "", ""),
    },
    {
      spec: spec({ containers: [{ name: "1234" }] }),
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition(
        "ContainersReady",
        "False",
        ContainersNotReady,
        "containers with unknown status: [1234]",
      ),
    },
    {
      spec: spec({ containers: [{ name: "1234" }, { name: "5678" }] }),
      containerStatuses: [getReadyStatus("1234"), getReadyStatus("5678")],
      podPhase: "Running",
      expectReady: getPodCondition("ContainersReady", "True", "", ""),
    },
    {
      spec: spec({ containers: [{ name: "1234" }, { name: "5678" }] }),
      containerStatuses: [getReadyStatus("1234")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "ContainersReady",
        "False",
        ContainersNotReady,
        "containers with unknown status: [5678]",
      ),
    },
    {
      spec: spec({ containers: [{ name: "1234" }, { name: "5678" }] }),
      containerStatuses: [getReadyStatus("1234"), getNotReadyStatus("5678")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "ContainersReady",
        "False",
        ContainersNotReady,
        "containers with unready status: [5678]",
      ),
    },
    {
      spec: spec({ containers: [{ name: "1234" }] }),
      containerStatuses: [getNotReadyStatus("1234")],
      podPhase: "Succeeded",
      expectReady: getPodCondition("ContainersReady", "False", PodCompleted, ""),
    },
    {
      spec: spec({
        initContainers: [restartable("restartable-init-1")],
        containers: [{ name: "regular-1" }],
      }),
      containerStatuses: [getReadyStatus("regular-1")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "ContainersReady",
        "False",
        ContainersNotReady,
        "containers with unknown status: [restartable-init-1]",
      ),
    },
    {
      spec: spec({
        initContainers: [restartable("restartable-init-1"), restartable("restartable-init-2")],
        containers: [{ name: "regular-1" }],
      }),
      containerStatuses: [
        getReadyStatus("restartable-init-1"),
        getReadyStatus("restartable-init-2"),
        getReadyStatus("regular-1"),
      ],
      podPhase: "Running",
      expectReady: getPodCondition("ContainersReady", "True", "", ""),
    },
    {
      spec: spec({
        initContainers: [restartable("restartable-init-1"), restartable("restartable-init-2")],
        containers: [{ name: "regular-1" }],
      }),
      containerStatuses: [getReadyStatus("restartable-init-1"), getReadyStatus("regular-1")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "ContainersReady",
        "False",
        ContainersNotReady,
        "containers with unknown status: [restartable-init-2]",
      ),
    },
    {
      spec: spec({
        initContainers: [restartable("restartable-init-1"), restartable("restartable-init-2")],
        containers: [{ name: "regular-1" }],
      }),
      containerStatuses: [
        getReadyStatus("restartable-init-1"),
        getNotReadyStatus("restartable-init-2"),
        getReadyStatus("regular-1"),
      ],
      podPhase: "Running",
      expectReady: getPodCondition(
        "ContainersReady",
        "False",
        ContainersNotReady,
        "containers with unready status: [restartable-init-2]",
      ),
    },
    // Not in this Go table (newer generate.go): a failed pod is never ready.
    {
      spec: spec({ containers: [{ name: "1234" }] }),
      containerStatuses: [getReadyStatus("1234")],
      podPhase: "Failed",
      expectReady: getPodCondition("ContainersReady", "False", PodFailed, ""),
    },
    {
      spec: spec({ containers: [{ name: "a" }, { name: "b" }, { name: "c" }] }),
      containerStatuses: [getNotReadyStatus("a"), getNotReadyStatus("c")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "ContainersReady",
        "False",
        ContainersNotReady,
        "containers with unknown status: [b], containers with unready status: [a c]",
      ),
    },
  ];
  for (const [i, test] of tests.entries()) {
    await t.step(`case ${i}`, () => {
      const pod: Pod = { metadata: {}, spec: test.spec };
      const ready = generateContainersReadyCondition(
        pod,
        {},
        test.containerStatuses,
        test.podPhase,
      );
      assert.deepEqual(ready, test.expectReady);
    });
  }
});

Deno.test("TestGeneratePodReadyCondition", async (t) => {
  const gates = (...names: string[]) => names.map((conditionType) => ({ conditionType }));
  const tests: {
    spec: PodSpec;
    conditions?: PodCondition[];
    containerStatuses?: ContainerStatus[];
    podPhase: PodPhase;
    expectReady: PodCondition;
  }[] = [
    {
      spec: spec({}),
      podPhase: "Running",
      expectReady: getPodCondition("Ready", "False", UnknownContainerStatuses, ""),
    },
    {
      spec: spec({}),
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition("Ready", "True", "", ""),
    },
    {
      spec: spec({ containers: [{ name: "1234" }] }),
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ContainersNotReady,
        "containers with unknown status: [1234]",
      ),
    },
    {
      spec: spec({ containers: [{ name: "1234" }, { name: "5678" }] }),
      containerStatuses: [getReadyStatus("1234"), getReadyStatus("5678")],
      podPhase: "Running",
      expectReady: getPodCondition("Ready", "True", "", ""),
    },
    {
      spec: spec({ containers: [{ name: "1234" }, { name: "5678" }] }),
      containerStatuses: [getReadyStatus("1234")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ContainersNotReady,
        "containers with unknown status: [5678]",
      ),
    },
    {
      spec: spec({ containers: [{ name: "1234" }, { name: "5678" }] }),
      containerStatuses: [getReadyStatus("1234"), getNotReadyStatus("5678")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ContainersNotReady,
        "containers with unready status: [5678]",
      ),
    },
    {
      spec: spec({ containers: [{ name: "1234" }] }),
      containerStatuses: [getNotReadyStatus("1234")],
      podPhase: "Succeeded",
      expectReady: getPodCondition("Ready", "False", PodCompleted, ""),
    },
    {
      spec: spec({ readinessGates: gates("gate1") }),
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ReadinessGatesNotReady,
        `corresponding condition of pod readiness gate "gate1" does not exist.`,
      ),
    },
    {
      spec: spec({ readinessGates: gates("gate1") }),
      conditions: [getPodCondition("gate1", "False", "", "")],
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ReadinessGatesNotReady,
        `the status of pod readiness gate "gate1" is not "True", but False`,
      ),
    },
    {
      spec: spec({ readinessGates: gates("gate1") }),
      conditions: [getPodCondition("gate1", "True", "", "")],
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition("Ready", "True", "", ""),
    },
    {
      spec: spec({ readinessGates: gates("gate1", "gate2") }),
      conditions: [getPodCondition("gate1", "True", "", "")],
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ReadinessGatesNotReady,
        `corresponding condition of pod readiness gate "gate2" does not exist.`,
      ),
    },
    {
      spec: spec({ readinessGates: gates("gate1", "gate2") }),
      conditions: [
        getPodCondition("gate1", "True", "", ""),
        getPodCondition("gate2", "False", "", ""),
      ],
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ReadinessGatesNotReady,
        `the status of pod readiness gate "gate2" is not "True", but False`,
      ),
    },
    {
      spec: spec({ readinessGates: gates("gate1", "gate2") }),
      conditions: [
        getPodCondition("gate1", "True", "", ""),
        getPodCondition("gate2", "True", "", ""),
      ],
      containerStatuses: [],
      podPhase: "Running",
      expectReady: getPodCondition("Ready", "True", "", ""),
    },
    {
      spec: spec({ containers: [{ name: "1234" }], readinessGates: gates("gate1") }),
      conditions: [getPodCondition("gate1", "True", "", "")],
      containerStatuses: [getNotReadyStatus("1234")],
      podPhase: "Running",
      expectReady: getPodCondition(
        "Ready",
        "False",
        ContainersNotReady,
        "containers with unready status: [1234]",
      ),
    },
  ];
  for (const [i, test] of tests.entries()) {
    await t.step(`case ${i}`, () => {
      const pod: Pod = { metadata: {}, spec: test.spec };
      const ready = generatePodReadyCondition(
        pod,
        {},
        test.conditions,
        test.containerStatuses,
        test.podPhase,
      );
      assert.deepEqual(ready, test.expectReady);
    });
  }
});

Deno.test("TestStatusNormalizationEnforcesMaxBytes", async (t) => {
  await t.step("messages under their share are kept whole", () => {
    const containers = Array.from({ length: 48 }, (_, i) => ({ name: `c${i}` }));
    const pod: Pod = {
      metadata: { name: "p" },
      spec: { initContainers: containers.slice(0, 24), containers: containers.slice(24) },
    };
    const statuses = (names: { name: string }[], offset: number): ContainerStatus[] =>
      names.map((c, i) => ({
        name: c.name,
        ready: false,
        restartCount: 0,
        image: "",
        imageID: "",
        lastState: {
          terminated: { exitCode: 0, message: "abcdefgh".repeat(24 + (i + offset) % 3) },
        },
      }));
    const status = normalizeStatus(pod, {
      initContainerStatuses: statuses(containers.slice(0, 24), 0),
      containerStatuses: statuses(containers.slice(24), 24),
    });
    let count = 0;
    for (const s of [...status.initContainerStatuses!, ...status.containerStatuses!]) {
      const l = s.lastState!.terminated!.message!.length;
      assert.ok(l >= 192 && l <= 256, `container message had length ${l}`);
      count += l;
    }
    assert.ok(count <= maxPodTerminationMessageLogLength, "message length not truncated");
  });
  await t.step("each message cut to 12 KiB over the number of containers, in bytes", () => {
    const pod: Pod = {
      metadata: { name: "p" },
      spec: { containers: [{ name: "a" }, { name: "b" }, { name: "c" }, { name: "d" }] },
    };
    const status = normalizeStatus(pod, {
      containerStatuses: ["a", "b"].map((name) => ({
        name,
        ready: false,
        restartCount: 0,
        image: "",
        imageID: "",
        // 2 bytes per character: the cut is in bytes, not characters.
        state: { terminated: { exitCode: 1, message: "é".repeat(4000) } },
      })),
    });
    for (const s of status.containerStatuses!) {
      const message = s.state!.terminated!.message!;
      assert.equal(new TextEncoder().encode(message).length, 3072);
      assert.equal(message, "é".repeat(1536));
    }
  });
});
