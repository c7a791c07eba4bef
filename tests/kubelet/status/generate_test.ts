import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { ContainerStatus, Pod, PodPhase } from "../../../src/api/core/v1/mod.ts";
import {
  ContainersNotInitialized,
  generatePodInitializedCondition,
  PodCompleted,
  UnknownContainerStatuses,
} from "../../../src/kubelet/status/mod.ts";

function podWith(init: { name: string; sidecar?: boolean }[]): Pod {
  return {
    metadata: { name: "p", namespace: "default", uid: "u" },
    spec: {
      initContainers: init.map((c) => ({
        name: c.name,
        ...(c.sidecar ? { restartPolicy: "Always" as const } : {}),
      })),
      containers: [{ name: "app" }],
    },
  };
}

const done = (name: string): ContainerStatus => ({
  name,
  ready: true,
  restartCount: 0,
  state: { terminated: { exitCode: 0, reason: "Completed" } },
});
const failed = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode: 1, reason: "Error" } },
});
const running = (name: string, started: boolean): ContainerStatus => ({
  name,
  ready: started,
  started,
  restartCount: 0,
  state: { running: { startedAt: "2026-11-23T11:00:00Z" } },
});
const waiting = (name: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { waiting: { reason: "PodInitializing" } },
});
// After an exit under restartPolicy Always: waiting, not started.
const exitedSidecar = (name: string): ContainerStatus => ({
  name,
  ready: false,
  started: false,
  restartCount: 0,
  state: { terminated: { exitCode: 143, reason: "Error" } },
});

Deno.test("TestGeneratePodInitializedCondition", async (t) => {
  const cases: {
    name: string;
    init: { name: string; sidecar?: boolean }[];
    statuses: ContainerStatus[] | undefined;
    phase: PodPhase;
    want: { status: string; reason?: string; message?: string };
  }[] = [
    {
      name: "no init containers",
      init: [],
      statuses: [],
      phase: "Running",
      want: { status: "True" },
    },
    {
      name: "no statuses known",
      init: [{ name: "setup" }],
      statuses: undefined,
      phase: "Pending",
      want: { status: "False", reason: UnknownContainerStatuses },
    },
    {
      name: "an init container without a status",
      init: [{ name: "setup" }],
      statuses: [waiting("app")],
      phase: "Pending",
      want: {
        status: "False",
        reason: ContainersNotInitialized,
        message: "containers with unknown status: [setup]",
      },
    },
    {
      name: "an init container that failed",
      init: [{ name: "setup" }, { name: "second" }],
      statuses: [failed("setup"), waiting("second"), waiting("app")],
      phase: "Pending",
      want: {
        status: "False",
        reason: ContainersNotInitialized,
        message: "containers with incomplete status: [setup second]",
      },
    },
    {
      name: "a sidecar not started yet",
      init: [{ name: "setup" }, { name: "proxy", sidecar: true }],
      statuses: [done("setup"), running("proxy", false), waiting("app")],
      phase: "Pending",
      want: {
        status: "False",
        reason: ContainersNotInitialized,
        message: "containers with incomplete status: [proxy]",
      },
    },
    {
      name: "all done, sidecar started",
      init: [{ name: "setup" }, { name: "proxy", sidecar: true }],
      statuses: [done("setup"), running("proxy", true), running("app", true)],
      phase: "Running",
      want: { status: "True" },
    },
    {
      name: "a restarting sidecar does not un-initialize a pod whose app has run",
      init: [{ name: "proxy", sidecar: true }],
      statuses: [running("proxy", false), running("app", true)],
      phase: "Running",
      want: { status: "True" },
    },
    {
      name: "Succeeded with its sidecar stopped: PodCompleted",
      init: [{ name: "proxy", sidecar: true }],
      statuses: [exitedSidecar("proxy"), done("app")],
      phase: "Succeeded",
      want: { status: "True", reason: PodCompleted },
    },
    {
      name: "Failed init under restartPolicy Never stays not initialized",
      init: [{ name: "setup" }],
      statuses: [failed("setup"), waiting("app")],
      phase: "Failed",
      want: {
        status: "False",
        reason: ContainersNotInitialized,
        message: "containers with incomplete status: [setup]",
      },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const got = generatePodInitializedCondition(podWith(c.init), {}, c.statuses, c.phase);
      assertEquals(got, { type: "Initialized", ...c.want });
    });
  }
});
