/**
 * Tests of starting and killing containers with lifecycle hooks, and of termination messages,
 * ported from kubelet's pkg/kubelet/kuberuntime/kuberuntime_container_test.go (TestLifeCycleHook)
 * and its termination message helpers. The runtime is a fake on a fake clock.
 */
import { defaultLinuxConfigOptions } from "../../../src/kubelet/kuberuntime/kuberuntime_container_linux.ts";
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import type { ContainerStatus as CriContainerStatus } from "../../../src/cri_client/api.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import type { HandlerRunner } from "../../../src/kubelet/lifecycle/handlers.ts";
import { newHandlerRunner } from "../../../src/kubelet/lifecycle/handlers.ts";
import {
  type ContainerManagerContext,
  convertToKubeContainerStatus,
  ErrPostStartHook,
  getTerminationMessage,
  killContainer,
  makeMounts,
  readLastStringFromContainerLogs,
  RuntimeCommandRunner,
  startContainer,
} from "../../../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { newHttpClient } from "../../../src/probe/http/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import * as log from "../../../src/util/log.ts";
import { FakeRuntime } from "./fake_runtime.ts";

function testPod(container: Container, grace = 30): Pod {
  return {
    metadata: { name: "foo", namespace: "new", uid: "12345678" },
    spec: { containers: [container], terminationGracePeriodSeconds: grace },
  };
}

function setup(options: { runner?: HandlerRunner } = {}) {
  const clock = new FakeClock(1_000_000);
  const runtime = new FakeRuntime(clock);
  const recorder = new FakeRecorder();
  const runner = options.runner ?? newHandlerRunner({
    httpDoer: newHttpClient(),
    commandRunner: new RuntimeCommandRunner(runtime),
    containerManager: { getPodStatus: () => Promise.resolve({ ips: [] }) },
    clock,
  });
  const m: ContainerManagerContext = {
    runtime,
    recorder,
    nodeName: "node",
    runner,
    runtimeName: "containerd",
    clock,
    linux: {
      ...defaultLinuxConfigOptions,
      seccompProfileRoot: "/var/lib/kubelet/seccomp",
      memoryCapacity: 1 << 30,
    },
  };
  return { clock, runtime, recorder, m };
}

async function runningContainer(runtime: FakeRuntime, name: string): Promise<string> {
  const id = await runtime.createContainer("s1", { metadata: { name }, image: { image: "i" } });
  await runtime.startContainer(id);
  return id;
}

Deno.test("TestLifeCycleHook", async (t) => {
  const previous = log.setLogSink(() => {});
  try {
    await t.step("PreStop-CMDExec: the command runs in the container before the stop", async () => {
      const { runtime, m } = setup();
      const container: Container = {
        name: "foo",
        lifecycle: { preStop: { exec: { command: ["ls", "-a"] } } },
      };
      const id = await runningContainer(runtime, "foo");
      await killContainer(m, {
        pod: testPod(container),
        id: { type: "containerd", id },
        container,
        message: "",
        reason: "",
      });
      const calls = runtime.calls.filter((c) => c.startsWith("execSync") || c.startsWith("stop"));
      assertEquals(calls, [`execSync ${id} ls -a`, `stopContainer ${id}`]);
    });

    await t.step("PreStop-HTTPGet: the request reaches the server", async () => {
      const paths: string[] = [];
      const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
        paths.push(new URL(req.url).pathname);
        return new Response("ok");
      });
      try {
        const { runtime, m } = setup();
        const container: Container = {
          name: "foo",
          lifecycle: {
            preStop: { httpGet: { host: "127.0.0.1", port: server.addr.port, path: "/prestop" } },
          },
        };
        const id = await runningContainer(runtime, "foo");
        await killContainer(m, {
          pod: testPod(container),
          id: { type: "containerd", id },
          container,
          message: "",
          reason: "",
        });
        assertEquals(paths, ["/prestop"]);
      } finally {
        await server.shutdown();
      }
    });

    await t.step("PreStop-Sleep: the time it takes is taken from the grace period", async () => {
      const { runtime, m, clock } = setup();
      const container: Container = {
        name: "foo",
        lifecycle: { preStop: { sleep: { seconds: 3 } } },
      };
      const id = await runningContainer(runtime, "foo");
      const killed = killContainer(m, {
        pod: testPod(container, 10),
        id: { type: "containerd", id },
        container,
        message: "",
        reason: "",
      });
      await clock.step(2_999);
      assertEquals(runtime.stopTimeouts, [], "not stopped while the hook runs");
      await clock.step(1);
      await killed;
      assertEquals(runtime.stopTimeouts, [7_000]);
      assertEquals(clock.pendingTimers(), 0);
    });

    await t.step("a preStop past the grace period: stopped with the 2 s minimum", async () => {
      const { runtime, m, clock, recorder } = setup();
      const container: Container = {
        name: "foo",
        lifecycle: { preStop: { sleep: { seconds: 100 } } },
      };
      const id = await runningContainer(runtime, "foo");
      const killed = killContainer(m, {
        pod: testPod(container, 3),
        id: { type: "containerd", id },
        container,
        message: "",
        reason: "",
      });
      await clock.step(3_000);
      await killed;
      assertEquals(runtime.stopTimeouts, [2_000]);
      assert(!recorder.events.some((e) => e.includes("FailedPreStopHook")), recorder.events.join());
      assertEquals(clock.pendingTimers(), 0);
    });

    await t.step("a failed preStop: FailedPreStopHook, and the container is stopped", async () => {
      const { runtime, m, recorder } = setup();
      runtime.execSyncFunc = () => Promise.reject(new Error("exec failed"));
      const container: Container = {
        name: "foo",
        lifecycle: { preStop: { exec: { command: ["false"] } } },
      };
      const id = await runningContainer(runtime, "foo");
      await killContainer(m, {
        pod: testPod(container),
        id: { type: "containerd", id },
        container,
        message: "",
        reason: "",
      });
      assertEquals(recorder.events, [
        "Normal Killing Stopping container foo",
        "Warning FailedPreStopHook PreStopHook failed",
      ]);
      assertEquals(runtime.stopTimeouts, [30_000]);
    });

    await t.step(
      "PostStart-CmdExe fails: FailedPostStartHook, killed, PostStartHookError",
      async () => {
        const { runtime, m, recorder } = setup();
        runtime.execSyncFunc = () => Promise.reject(new Error("boom"));
        const container: Container = {
          name: "foo",
          image: "busybox",
          lifecycle: { postStart: { exec: { command: ["false"] } } },
        };
        const pod = testPod(container, 5);
        const rootDir = await Deno.makeTempDir();
        try {
          const failure = await startContainer(m, {
            sandboxID: "s1",
            sandboxConfig: {
              metadata: { name: "foo", namespace: "new", uid: "12345678" },
              logDirectory: rootDir,
            },
            container,
            pod,
            podStatus: {
              id: "12345678",
              name: "foo",
              namespace: "new",
              ips: [],
              containerStatuses: [],
              sandboxStatuses: [],
            },
            podIP: "",
          });
          assertEquals(failure?.reason, ErrPostStartHook);
          assertEquals(
            failure?.message,
            'Exec lifecycle hook ([false]) for Container "foo" in Pod "foo_new(12345678)" failed - ' +
              'error: boom, message: ""',
          );
          assertEquals(recorder.events, [
            "Normal Created Container created",
            "Normal Started Container started",
            "Warning FailedPostStartHook PostStartHook failed",
            "Normal Killing FailedPostStartHook",
          ]);
          assertEquals(runtime.stopTimeouts, [5_000]);
        } finally {
          await Deno.remove(rootDir, { recursive: true });
        }
      },
    );
  } finally {
    log.setLogSink(previous);
  }
});

function exitedStatus(
  overrides: Partial<CriContainerStatus> & { annotations?: Record<string, string> },
): CriContainerStatus {
  return {
    id: "c1",
    metadata: { name: "foo", attempt: 0 },
    state: "CONTAINER_EXITED",
    createdAt: 0n,
    startedAt: 0n,
    finishedAt: 0n,
    exitCode: 1,
    image: { image: "busybox" },
    imageRef: "",
    reason: "Error",
    message: "",
    labels: {},
    annotations: {},
    mounts: [],
    logPath: "",
    imageId: "",
    ...overrides,
  } as CriContainerStatus;
}

Deno.test("TestGetTerminationMessage", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "msg");
    const status = exitedStatus({
      mounts: [{ hostPath: file, containerPath: "/dev/termination-log" }],
    });
    await t.step("no path: the logs when falling back", async () => {
      assertEquals(await getTerminationMessage(status, "", true), { message: "", checkLogs: true });
    });
    await t.step("the file's content", async () => {
      await Deno.writeTextFile(file, "done");
      assertEquals(await getTerminationMessage(status, "/dev/termination-log", true), {
        message: "done",
        checkLogs: false,
      });
    });
    await t.step("the last 4 KiB of a longer file", async () => {
      await Deno.writeTextFile(file, "a".repeat(100) + "b".repeat(4096));
      const { message } = await getTerminationMessage(status, "/dev/termination-log", false);
      assertEquals(message, "b".repeat(4096));
    });
    await t.step("an empty file: the logs when falling back", async () => {
      await Deno.writeTextFile(file, "");
      assertEquals(await getTerminationMessage(status, "/dev/termination-log", true), {
        message: "",
        checkLogs: true,
      });
    });
    await t.step("a missing file: the logs when falling back", async () => {
      await Deno.remove(file);
      assertEquals(await getTerminationMessage(status, "/dev/termination-log", true), {
        message: "",
        checkLogs: true,
      });
    });
    await t.step("no mount at the path: the logs when falling back", async () => {
      assertEquals(await getTerminationMessage(status, "/other", false), {
        message: "",
        checkLogs: false,
      });
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestReadLastStringFromContainerLogs", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "0.log");
    await t.step("both streams in order, partial lines joined", async () => {
      await Deno.writeTextFile(
        path,
        "2026-01-01T00:00:00.000000001Z stdout F one\n" +
          "2026-01-01T00:00:00.000000002Z stderr P tw\n" +
          "2026-01-01T00:00:00.000000003Z stderr F o two\n",
      );
      assertEquals(await readLastStringFromContainerLogs(path), "one\ntwo two\n");
    });
    await t.step("the last 80 lines, of which the last 2 KiB", async () => {
      const lines = Array.from(
        { length: 100 },
        (_, i) => `2026-01-01T00:00:00Z stdout F ${String(i).padStart(40, "x")}\n`,
      );
      await Deno.writeTextFile(path, lines.join(""));
      const tail = await readLastStringFromContainerLogs(path);
      assertEquals(tail.length, 2048);
      assert(tail.endsWith(`${String(99).padStart(40, "x")}\n`));
    });
    await t.step("an unreadable log: kubelet's error text", async () => {
      const tail = await readLastStringFromContainerLogs(join(dir, "missing.log"));
      assert(tail.startsWith("Error on reading termination message from logs: "), tail);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestConvertToKubeContainerStatus", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "msg");
    const logPath = join(dir, "0.log");
    await Deno.writeTextFile(file, "from file");
    await Deno.writeTextFile(logPath, "2026-01-01T00:00:00Z stderr F from logs\n");
    const annotations = (policy: string) => ({
      "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
      "io.kubernetes.container.terminationMessagePolicy": policy,
    });
    const mounts = [{ hostPath: file, containerPath: "/dev/termination-log" }];
    await t.step("the file's message appended to the runtime's", async () => {
      const s = await convertToKubeContainerStatus(
        exitedStatus({ annotations: annotations("File"), mounts, message: "OOMKilled" }),
        "containerd",
      );
      assertEquals(s.message, "OOMKilled: from file");
    });
    await t.step(
      "FallbackToLogsOnError with an empty file and a failure: the log tail",
      async () => {
        await Deno.writeTextFile(file, "");
        const s = await convertToKubeContainerStatus(
          exitedStatus({ annotations: annotations("FallbackToLogsOnError"), mounts, logPath }),
          "containerd",
        );
        assertEquals(s.message, "from logs\n");
      },
    );
    await t.step("FallbackToLogsOnError after success: no message", async () => {
      const s = await convertToKubeContainerStatus(
        exitedStatus({
          annotations: annotations("FallbackToLogsOnError"),
          mounts,
          logPath,
          exitCode: 0,
        }),
        "containerd",
      );
      assertEquals(s.message, "");
    });
    await t.step("a container that could not run has no logs to fall back to", async () => {
      const s = await convertToKubeContainerStatus(
        exitedStatus({
          annotations: annotations("FallbackToLogsOnError"),
          mounts,
          logPath,
          reason: "ContainerCannotRun",
        }),
        "containerd",
      );
      assertEquals(s.message, "");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestMakeMounts", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    await t.step("a fresh empty 0666 message file per instance, at the message path", async () => {
      const container: Container = { name: "foo", terminationMessagePath: "/dev/termination-log" };
      const opts = { mounts: [], podContainerDir: dir };
      const [a] = await makeMounts(opts, container);
      const [b] = await makeMounts(opts, container);
      assertEquals(a.containerPath, "/dev/termination-log");
      assert(a.hostPath.startsWith(dir) && a.hostPath !== b.hostPath);
      const stat = await Deno.stat(a.hostPath);
      assertEquals(stat.size, 0);
      assertEquals(stat.mode! & 0o777, 0o666);
    });
    await t.step("no message path or no folder: no file", async () => {
      assertEquals(await makeMounts({ mounts: [], podContainerDir: dir }, { name: "foo" }), []);
      assertEquals(
        await makeMounts({ mounts: [], podContainerDir: "" }, {
          name: "foo",
          terminationMessagePath: "/dev/termination-log",
        }),
        [],
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
