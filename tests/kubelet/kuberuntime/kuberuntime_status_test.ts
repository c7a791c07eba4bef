/**
 * Pod status built from CRI answers (a scripted fake runtime), and the ExecSync command runner.
 */
import assert from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import type {
  Container,
  ContainerStatus,
  PodSandboxStatus,
  RuntimeService,
} from "../../../src/cri_client/mod.ts";
import { CriError, GrpcCode } from "../../../src/cri_client/mod.ts";
import {
  getPodStatus,
  getRuntimePodStatus,
} from "../../../src/kubelet/kuberuntime/kuberuntime_status.ts";
import {
  RuntimeCommandRunner,
  toKubeContainerStatus,
} from "../../../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { ExitError } from "../../../src/util/exec/errors.ts";

const sec = (s: number) => BigInt(s) * 1_000_000_000n;
const t0 = Date.UTC(2025, 0, 2, 3, 4, 0) / 1000; // 2025-01-02T03:04:00Z

function sandbox(overrides: Partial<PodSandboxStatus> = {}): PodSandboxStatus {
  return {
    id: "sb1",
    metadata: { name: "web", uid: "uid-1", namespace: "default", attempt: 0 },
    state: "SANDBOX_READY",
    createdAt: sec(t0),
    network: { ip: "10.88.77.5", additionalIps: [{ ip: "fd00::5" }] },
    labels: {},
    annotations: {},
    runtimeHandler: "",
    ...overrides,
  };
}

function cstatus(
  id: string,
  name: string,
  attempt: number,
  state: ContainerStatus["state"],
  times: {
    created: number;
    started?: number;
    finished?: number;
    exitCode?: number;
    reason?: string;
  },
): ContainerStatus {
  return {
    id,
    metadata: { name, attempt },
    state,
    createdAt: sec(times.created),
    startedAt: times.started ? sec(times.started) : 0n,
    finishedAt: times.finished ? sec(times.finished) : 0n,
    exitCode: times.exitCode ?? 0,
    image: { image: "probelet.local/busybox:1" },
    imageRef: "sha256:abc",
    reason: times.reason ?? "",
    message: "",
    labels: {},
    annotations: {},
    mounts: [],
    logPath: "",
    imageId: "",
  };
}

/** A RuntimeService answering from fixed data; only the calls status reading makes. */
function fakeRuntime(sb: PodSandboxStatus, statuses: ContainerStatus[], gone: string[] = []) {
  const calls: string[] = [];
  const runtime = {
    version: () => {
      calls.push("Version");
      return Promise.resolve({
        version: "0.1.0",
        runtimeName: "containerd",
        runtimeVersion: "1.6.20",
        runtimeApiVersion: "v1",
      });
    },
    podSandboxStatus: (id: string) => {
      calls.push(`PodSandboxStatus ${id}`);
      return Promise.resolve({ status: sb, info: {}, containersStatuses: [], timestamp: 0n });
    },
    listContainers: (filter?: { podSandboxId?: string }) => {
      calls.push(`ListContainers ${filter?.podSandboxId}`);
      return Promise.resolve(
        [...statuses.map((s) => s.id), ...gone].map((id) => ({ id }) as Container),
      );
    },
    containerStatus: (id: string) => {
      calls.push(`ContainerStatus ${id}`);
      const status = statuses.find((s) => s.id === id);
      if (!status) {
        return Promise.reject(
          new CriError(GrpcCode.NotFound, `container "${id}" not found`, {
            endpoint: "fake",
            method: "ContainerStatus",
          }),
        );
      }
      return Promise.resolve({ status, info: {} });
    },
  } as unknown as RuntimeService;
  return { runtime, calls };
}

function pod(extra: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { name: "web", namespace: "default", uid: "uid-1" },
    spec: { containers: [{ name: "app", image: "probelet.local/busybox:1" }], ...extra },
  };
}

Deno.test("getPodStatus", async (t) => {
  await t.step("running container: ID, startedAt, pod IPs, start time", async () => {
    const { runtime, calls } = fakeRuntime(sandbox(), [
      cstatus("c1", "app", 0, "CONTAINER_RUNNING", { created: t0 + 1, started: t0 + 2 }),
    ]);
    const status = await getPodStatus(runtime, { sandboxId: "sb1", pod: pod() });
    assert.deepEqual(status, {
      podIP: "10.88.77.5",
      podIPs: [{ ip: "10.88.77.5" }, { ip: "fd00::5" }],
      startTime: "2025-01-02T03:04:00Z",
      containerStatuses: [{
        name: "app",
        state: { running: { startedAt: "2025-01-02T03:04:02Z" } },
        ready: false,
        restartCount: 0,
        image: "probelet.local/busybox:1",
        imageID: "sha256:abc",
        containerID: "containerd://c1",
      }],
    });
    assert.deepEqual(calls, [
      "Version",
      "PodSandboxStatus sb1",
      "ListContainers sb1",
      "ContainerStatus c1",
    ]);
  });

  await t.step("newest attempt wins; the previous exit is lastState", async () => {
    const { runtime } = fakeRuntime(sandbox(), [
      cstatus("old", "app", 0, "CONTAINER_EXITED", {
        created: t0 + 1,
        started: t0 + 2,
        finished: t0 + 9,
        exitCode: 137,
        reason: "Error",
      }),
      cstatus("new", "app", 1, "CONTAINER_RUNNING", { created: t0 + 10, started: t0 + 11 }),
    ]);
    const [app] =
      (await getPodStatus(runtime, { sandboxId: "sb1", pod: pod(), runtimeName: "containerd" }))
        .containerStatuses!;
    assert.equal(app.containerID, "containerd://new");
    assert.equal(app.restartCount, 1);
    assert.deepEqual(app.lastState, {
      terminated: {
        exitCode: 137,
        reason: "Error",
        startedAt: "2025-01-02T03:04:02Z",
        finishedAt: "2025-01-02T03:04:09Z",
        containerID: "containerd://old",
      },
    });
  });

  await t.step("init containers: completed init, created app → waiting{}", async () => {
    const { runtime } = fakeRuntime(sandbox(), [
      cstatus("i1", "init", 0, "CONTAINER_EXITED", {
        created: t0,
        started: t0 + 1,
        finished: t0 + 2,
        reason: "Completed",
      }),
      cstatus("c1", "app", 0, "CONTAINER_CREATED", { created: t0 + 3 }),
    ]);
    const status = await getPodStatus(runtime, {
      sandboxId: "sb1",
      pod: pod({ initContainers: [{ name: "init" }] }),
    });
    assert.equal(status.initContainerStatuses?.[0].state?.terminated?.reason, "Completed");
    assert.equal(status.initContainerStatuses?.[0].state?.terminated?.exitCode, 0);
    assert.deepEqual(status.containerStatuses?.[0].state, { waiting: {} });
  });

  await t.step("nothing created: ContainerCreating, or PodInitializing behind init", async () => {
    const { runtime } = fakeRuntime(sandbox(), []);
    const status = await getPodStatus(runtime, {
      sandboxId: "sb1",
      pod: pod({ initContainers: [{ name: "init" }] }),
    });
    assert.deepEqual(status.initContainerStatuses?.[0].state, {
      waiting: { reason: "ContainerCreating" },
    });
    assert.deepEqual(status.containerStatuses?.[0].state, {
      waiting: { reason: "PodInitializing" },
    });
    assert.equal(status.containerStatuses?.[0].containerID, undefined);
  });

  await t.step("sandbox not ready → no pod IP", async () => {
    const { runtime } = fakeRuntime(sandbox({ state: "SANDBOX_NOTREADY" }), []);
    const status = await getPodStatus(runtime, { sandboxId: "sb1", pod: pod() });
    assert.equal(status.podIP, undefined);
    assert.equal(status.podIPs, undefined);
  });

  await t.step("host network → the host IP", async () => {
    const { runtime } = fakeRuntime(sandbox({ network: { ip: "", additionalIps: [] } }), []);
    const status = await getPodStatus(runtime, {
      sandboxId: "sb1",
      pod: pod({ hostNetwork: true }),
      hostIP: "192.168.1.10",
    });
    assert.equal(status.podIP, "192.168.1.10");
    assert.equal(status.hostIP, "192.168.1.10");
  });

  await t.step("a container removed between list and status is skipped", async () => {
    const { runtime } = fakeRuntime(sandbox(), [
      cstatus("c1", "app", 0, "CONTAINER_RUNNING", { created: t0, started: t0 }),
    ], ["vanished"]);
    const rs = await getRuntimePodStatus(runtime, { sandboxId: "sb1", pod: pod() });
    assert.deepEqual(rs.containerStatuses.map((s) => s.id.id), ["c1"]);
    assert.deepEqual(rs.ips, ["10.88.77.5", "fd00::5"]);
    assert.equal(rs.id, "uid-1");
  });
});

Deno.test("toKubeContainerStatus", async (t) => {
  await t.step("kubelet's label and annotation win over CRI metadata", () => {
    const s = cstatus("c1", "meta-name", 4, "CONTAINER_RUNNING", { created: t0, started: t0 });
    s.labels["io.kubernetes.container.name"] = "app";
    s.annotations["io.kubernetes.container.restartCount"] = "2";
    s.annotations["io.kubernetes.container.hash"] = "abc123";
    const k = toKubeContainerStatus(s, "containerd");
    assert.equal(k.name, "app");
    assert.equal(k.restartCount, 2);
    assert.equal(k.hash, "abc123");
    assert.deepEqual(k.id, { type: "containerd", id: "c1" });
  });
  await t.step("created: no start time; running: no exit fields", () => {
    const created = cstatus("c", "a", 0, "CONTAINER_CREATED", { created: t0, started: t0 + 5 });
    assert.equal(toKubeContainerStatus(created, "containerd").startedAt, 0);
    const running = cstatus("c", "a", 0, "CONTAINER_RUNNING", {
      created: t0,
      started: t0,
      exitCode: 3,
      reason: "x",
    });
    const k = toKubeContainerStatus(running, "containerd");
    assert.equal(k.exitCode, 0);
    assert.equal(k.reason, "");
    assert.equal(k.startedAt, t0 * 1000);
  });
});

Deno.test("RuntimeCommandRunner", async (t) => {
  const enc = (s: string) => new TextEncoder().encode(s);
  await t.step("stdout then stderr, ExecSync gets the ID and timeout", async () => {
    const seen: unknown[] = [];
    const runtime = {
      execSync: (id: string, cmd: string[], options: { timeoutMs: number }) => {
        seen.push([id, cmd, options.timeoutMs]);
        return Promise.resolve({ stdout: enc("out\n"), stderr: enc("err\n") });
      },
    } as unknown as RuntimeService;
    const out = await new RuntimeCommandRunner(runtime).runInContainer(
      { type: "containerd", id: "c1" },
      ["cat", "/x"],
      { timeoutMs: 2500 },
    );
    assert.equal(new TextDecoder().decode(out), "out\nerr\n");
    assert.deepEqual(seen, [["c1", ["cat", "/x"], 2500]]);
  });
  await t.step("errors pass through unchanged", async () => {
    const exit = new ExitError(1, { output: enc("nope") });
    const runtime = { execSync: () => Promise.reject(exit) } as unknown as RuntimeService;
    await assert.rejects(
      new RuntimeCommandRunner(runtime).runInContainer({ type: "containerd", id: "c" }, ["x"], {
        timeoutMs: 1000,
      }),
      (e) => e === exit,
    );
  });
});
