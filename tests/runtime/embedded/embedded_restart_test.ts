/**
 * The embedded runtime across agent restarts, with real processes: containers outlive the runtime
 * that started them and a new runtime on the same root folder adopts them (same IDs, metadata,
 * labels, annotations, times and states) without signalling them; containers that ended while no
 * runtime was there show their recorded exit; execs of a killed agent and processes that escaped
 * with setsid are cleaned up; log rotation.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { ContainerConfig, PodSandboxConfig } from "../../../src/cri_client/api.ts";
import {
  ContainerLog,
  EmbeddedRuntimeService,
  killRecordedGroups,
  procStat,
  recordDirs,
  rotatedLogFiles,
  shimFiles,
  unknownExitCode,
} from "../../../src/runtime/embedded/mod.ts";
import { ExitError } from "../../../src/util/exec/errors.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const sandboxConfig: PodSandboxConfig = {
  metadata: { name: "web", uid: "uid-web", namespace: "default", attempt: 1 },
  labels: { "io.kubernetes.pod.name": "web", app: "web" },
  annotations: { "io.kubernetes.pod.terminationGracePeriod": "30" },
};

function containerConfig(script: string, extra: Partial<ContainerConfig> = {}): ContainerConfig {
  return {
    metadata: { name: "app", attempt: 2 },
    image: { image: "busybox" },
    command: ["sh", "-c", script],
    labels: { "io.kubernetes.container.name": "app" },
    annotations: {
      "io.kubernetes.container.restartCount": "2",
      "io.kubernetes.container.hash": "h1",
    },
    ...extra,
  };
}

/** Polls `check` until it returns true (real processes take real time; no fixed sleeps). */
async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function alive(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== "Z";
}

// Whether `pid` runs `program` with its arguments and environment in place (the exec is over).
function execDone(pid: number, program: string): boolean {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).startsWith(`${program}\0`) &&
      Deno.readTextFileSync(`/proc/${pid}/environ`).length > 0;
  } catch {
    return false;
  }
}

async function readPid(file: string): Promise<number> {
  let pid = 0;
  await waitFor(async () => {
    pid = Number((await Deno.readTextFile(file).catch(() => "")).trim()) || 0;
    return pid > 0;
  }, `a pid in ${file}`);
  return pid;
}

/** A temporary root folder; whatever a failed test left running is killed by its records. */
async function withRoot(fn: (rootDir: string) => Promise<void>): Promise<void> {
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-restart-" });
  try {
    await fn(rootDir);
  } finally {
    killRecordedGroups(rootDir);
    // A shim just SIGKILLed may finish a last file write while the folder is being removed
    // (seen once: ENOTEMPTY); removal is tried again until nothing is added any more.
    await waitFor(async () => {
      try {
        await Deno.remove(rootDir, { recursive: true });
        return true;
      } catch (e) {
        if ((e as { code?: string }).code === "ENOTEMPTY") return false;
        throw e;
      }
    }, `${rootDir} removed`);
  }
}

async function startContainer(runtime: EmbeddedRuntimeService, script: string) {
  const sandbox = await runtime.runPodSandbox(sandboxConfig);
  const id = await runtime.createContainer(sandbox, containerConfig(script), { sandboxConfig });
  await runtime.startContainer(id);
  return { sandbox, id };
}

Deno.test("TestAdoptRunningContainer", async () => {
  await withRoot(async (rootDir) => {
    const marker = join(rootDir, "marker");
    const a = new EmbeddedRuntimeService({ rootDir });
    const { sandbox, id } = await startContainer(
      a,
      `echo before; while [ ! -e ${marker} ]; do sleep 0.02; done; echo after; sleep 600`,
    );
    const [pid] = a.processIds();
    const sandboxesBefore = await a.listPodSandbox();
    const containersBefore = await a.listContainers();
    const statusBefore = (await a.containerStatus(id)).status;
    await a.shutdown({ stopContainers: false });
    assert.ok(alive(pid), "the container outlives the runtime that started it");

    // Output written while no runtime is there still reaches the log: the shim holds the pipe.
    await Deno.writeTextFile(marker, "");
    await waitFor(
      async () => (await Deno.readTextFile(statusBefore.logPath)).includes("stdout F after"),
      "the output written after the runtime closed",
    );

    const b = new EmbeddedRuntimeService({ rootDir });
    try {
      assert.deepEqual(await b.listPodSandbox(), sandboxesBefore);
      assert.deepEqual(await b.listContainers(), containersBefore);
      const statusAfter = (await b.containerStatus(id)).status;
      assert.deepEqual(statusAfter, statusBefore);
      assert.equal(statusAfter.state, "CONTAINER_RUNNING");
      assert.equal(statusAfter.metadata.attempt, 2);
      assert.deepEqual(statusAfter.annotations, containerConfig("").annotations);
      assert.deepEqual(b.killLeftoverProcesses(), [], "nothing adoptable is killed");
      assert.ok(alive(pid));
      assert.deepEqual(b.processIds(), [pid]);
      // Names stay reserved across the restart, as in containerd.
      await assert.rejects(b.createContainer(sandbox, containerConfig("true")), /is reserved/);

      // The new runtime can exec in it and stop it.
      const out = await b.execSync(id, ["sh", "-c", "echo adopted"], { timeoutMs: 5000 });
      assert.equal(new TextDecoder().decode(out.stdout), "adopted\n");
      await b.stopContainer(id, { timeoutMs: 5000 });
      const stopped = (await b.containerStatus(id)).status;
      assert.equal(stopped.state, "CONTAINER_EXITED");
      assert.equal(stopped.exitCode, 143);
      assert.ok(stopped.finishedAt >= stopped.startedAt);
      assert.ok(!alive(pid));
      await b.removePodSandbox(sandbox);
      assert.deepEqual(await b.listContainers(), []);
      assert.deepEqual([...Deno.readDirSync(recordDirs.containers(rootDir))], []);
    } finally {
      await b.shutdown();
    }
  });
});

Deno.test("TestContainerExitedWhileAway", async (t) => {
  await t.step("exit code and time recorded by the shim", async () => {
    await withRoot(async (rootDir) => {
      const go = join(rootDir, "go");
      const a = new EmbeddedRuntimeService({ rootDir });
      const { id } = await startContainer(
        a,
        `while [ ! -e ${go} ]; do sleep 0.02; done; exit 3`,
      );
      const before = (await a.containerStatus(id)).status;
      await a.shutdown({ stopContainers: false });
      await Deno.writeTextFile(go, "");
      const exitFile = join(recordDirs.containers(rootDir), id, shimFiles.exit);
      await waitFor(async () => {
        try {
          await Deno.stat(exitFile);
          return true;
        } catch {
          return false;
        }
      }, "the exit record");
      const b = new EmbeddedRuntimeService({ rootDir });
      try {
        const after = (await b.containerStatus(id)).status;
        assert.equal(after.state, "CONTAINER_EXITED");
        assert.equal(after.exitCode, 3);
        assert.equal(after.reason, "Error");
        assert.equal(after.startedAt, before.startedAt);
        assert.ok(after.finishedAt > after.startedAt);
      } finally {
        await b.shutdown();
      }
    });
  });

  await t.step("an exit the agent saw keeps its status after a restart", async () => {
    await withRoot(async (rootDir) => {
      const a = new EmbeddedRuntimeService({ rootDir });
      const { id } = await startContainer(a, "exit 7");
      await waitFor(
        async () => (await a.containerStatus(id)).status.state === "CONTAINER_EXITED",
        "the container to exit",
      );
      const seen = (await a.containerStatus(id)).status;
      await a.shutdown();
      const b = new EmbeddedRuntimeService({ rootDir });
      try {
        assert.deepEqual((await b.containerStatus(id)).status, seen);
        assert.equal(seen.exitCode, 7);
      } finally {
        await b.shutdown();
      }
    });
  });

  await t.step("an adopted container that exits later is seen to exit", async () => {
    await withRoot(async (rootDir) => {
      const go = join(rootDir, "go");
      const a = new EmbeddedRuntimeService({ rootDir });
      const { id } = await startContainer(a, `while [ ! -e ${go} ]; do sleep 0.02; done; exit 0`);
      await a.shutdown({ stopContainers: false });
      const b = new EmbeddedRuntimeService({ rootDir });
      try {
        assert.equal((await b.containerStatus(id)).status.state, "CONTAINER_RUNNING");
        await Deno.writeTextFile(go, "");
        await waitFor(
          async () => (await b.containerStatus(id)).status.state === "CONTAINER_EXITED",
          "the adopted container to exit",
        );
        const { status } = await b.containerStatus(id);
        assert.equal(status.exitCode, 0);
        assert.equal(status.reason, "Completed");
      } finally {
        await b.shutdown();
      }
    });
  });

  await t.step("a shim killed meanwhile: exit unknown (255), the container is killed", async () => {
    await withRoot(async (rootDir) => {
      const a = new EmbeddedRuntimeService({ rootDir });
      const { id } = await startContainer(a, "sleep 600");
      const [pid] = a.processIds();
      const [shim] = a.shimProcessIds();
      await a.shutdown({ stopContainers: false });
      Deno.kill(shim, "SIGKILL");
      await waitFor(() => !alive(shim), "the shim to die");
      const b = new EmbeddedRuntimeService({ rootDir });
      try {
        const { status } = await b.containerStatus(id);
        assert.equal(status.state, "CONTAINER_EXITED");
        assert.equal(status.exitCode, unknownExitCode);
        assert.equal(status.reason, "Unknown");
        await waitFor(() => !alive(pid), "the orphaned container to be killed");
      } finally {
        await b.shutdown();
      }
    });
  });
});

Deno.test("TestShutdownStopsContainersByDefault", async () => {
  await withRoot(async (rootDir) => {
    const a = new EmbeddedRuntimeService({ rootDir });
    const { id } = await startContainer(a, "sleep 600");
    const [pid] = a.processIds();
    await a.shutdown();
    assert.ok(!alive(pid), "Ctrl-C on a laptop leaves no process");
    const b = new EmbeddedRuntimeService({ rootDir, stopContainersOnShutdown: false });
    try {
      const { status } = await b.containerStatus(id);
      assert.equal(status.state, "CONTAINER_EXITED");
      assert.equal(status.exitCode, 137);
    } finally {
      await b.shutdown();
    }
  });
});

/** Whether this machine lets the runtime create cgroups (root with a cgroup2 mount). */
async function cgroupsAvailable(): Promise<boolean> {
  let available = false;
  await withRoot(async (rootDir) => {
    const probe = new EmbeddedRuntimeService({ rootDir });
    available = probe.cgroupRoot !== undefined;
    await probe.shutdown();
  });
  return available;
}

Deno.test("TestEscapedProcessesAreTracked", async (t) => {
  const hasCgroup = await cgroupsAvailable();
  if (!hasCgroup) console.log("cgroup steps ignored: no writable cgroup2 mount (needs root)");
  for (const cgroups of [true, false]) {
    const mode = cgroups ? "cgroup" : "process group + subreaper";
    await t.step({
      name: `setsid in a container, removed with the pod (${mode})`,
      ignore: cgroups && !hasCgroup,
      fn: async () => {
        await withRoot(async (rootDir) => {
          const pidFile = join(rootDir, "escaped");
          const runtime = new EmbeddedRuntimeService({ rootDir, cgroups });
          try {
            const { sandbox } = await startContainer(
              runtime,
              `setsid sleep 1003 & echo $! > ${pidFile}; sleep 600`,
            );
            const escaped = await readPid(pidFile);
            const container = runtime.processIds()[0];
            await waitFor(
              () => procStat(escaped)?.session === escaped,
              "the sleep to leave the container's session",
            );
            assert.notEqual(procStat(container)?.session, escaped);
            await runtime.removePodSandbox(sandbox);
            await waitFor(() => !alive(escaped), "the escaped sleep to be killed");
          } finally {
            await runtime.shutdown();
          }
        });
      },
    });
  }
  for (const cgroups of [true, false]) {
    const mode = cgroups ? "cgroup" : "environment marker";
    await t.step({
      name: `setsid in an exec probe, removed with the pod (${mode})`,
      ignore: cgroups && !hasCgroup,
      fn: async () => {
        await withRoot(async (rootDir) => {
          const runtime = new EmbeddedRuntimeService({ rootDir, cgroups });
          try {
            const { sandbox, id } = await startContainer(runtime, "sleep 600");
            const out = await runtime.execSync(
              id,
              ["sh", "-c", "setsid sleep 1003 >/dev/null 2>&1 & echo $!"],
              { timeoutMs: 5000 },
            );
            const escaped = Number(new TextDecoder().decode(out.stdout).trim());
            assert.ok(alive(escaped));
            await runtime.removePodSandbox(sandbox);
            await waitFor(() => !alive(escaped), "the exec's escaped sleep to be killed");
          } finally {
            await runtime.shutdown();
          }
        });
      },
    });

    await t.step({
      name: `an exec running when the agent dies is killed by the next start (${mode})`,
      ignore: cgroups && !hasCgroup,
      fn: async () => {
        await withRoot(async (rootDir) => {
          const pidFile = join(rootDir, "escaped");
          const a = new EmbeddedRuntimeService({ rootDir, cgroups });
          let exec: Promise<unknown> | undefined;
          try {
            const { id } = await startContainer(a, "sleep 600");
            exec = a.execSync(
              id,
              ["sh", "-c", `setsid sleep 1004 >/dev/null 2>&1 & echo $! > ${pidFile}; sleep 600`],
              { timeoutMs: 0 },
            ).then(() => undefined, (e) => e);
            const escaped = await readPid(pidFile);
            await waitFor(
              () => procStat(escaped)?.session === escaped,
              "the sleep to leave the exec's session",
            );
            // …and its exec of `sleep` to be over: while the kernel sets the new program up, its
            // /proc environ reads empty, so a scan for the exec's marker would miss it then.
            await waitFor(() => execDone(escaped, "sleep"), "the escaped sleep's exec to finish");
            assert.equal([...Deno.readDirSync(recordDirs.execs(rootDir))].length, 1);
            // The agent "dies": a new runtime starts on the folder while the exec still runs.
            const b = new EmbeddedRuntimeService({ rootDir, cgroups });
            assert.equal(b.killLeftoverProcesses().length, 1);
            await waitFor(() => !alive(escaped), "the exec's processes to be killed");
            assert.equal((await b.containerStatus(id)).status.state, "CONTAINER_RUNNING");
            const err = await exec;
            assert.ok(err instanceof ExitError && err.exitStatus() === 137, String(err));
            await b.shutdown();
          } finally {
            await a.shutdown();
            await exec;
          }
        });
      },
    });
  }
});

Deno.test("TestContainerLogRotation", async (t) => {
  await t.step("many rotations within one second keep the newest lines", async () => {
    const dir = await Deno.makeTempDir();
    try {
      const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5));
      const path = join(dir, "0.log");
      const log = await ContainerLog.open(path, clock, { maxSizeBytes: 200, maxFiles: 3 });
      for (let i = 0; i < 100; i++) {
        await log.write("stdout", new TextEncoder().encode(`line ${i}\n`));
      }
      await log.close();
      const files = [...await rotatedLogFiles(path), path];
      assert.equal(files.length, 3);
      const numbers = await Promise.all(
        files.map(async (f) =>
          (await Deno.readTextFile(f)).trimEnd().split("\n").map((l) => Number(l.split(" ").at(-1)))
        ),
      );
      const all = numbers.flat();
      assert.deepEqual(all, all.toSorted((a, b) => a - b), "rotated files keep their order");
      assert.equal(all.at(-1), 99);
      assert.equal(all.length, 100 - all[0], "no line lost between the kept files");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  await t.step("short lines: one entry per line", async () => {
    const dir = await Deno.makeTempDir();
    try {
      const path = join(dir, "0.log");
      const log = await ContainerLog.open(path, new FakeClock(0), { maxSizeBytes: 0, maxFiles: 0 });
      const chunk = new TextEncoder().encode("y\n".repeat(32768));
      for (let i = 0; i < 16; i++) await log.write("stdout", chunk);
      await log.close();
      const text = await Deno.readTextFile(path);
      assert.equal(text.split("\n").length - 1, 16 * 32768);
      assert.ok(text.startsWith("1970-01-01T00:00:00Z stdout F y\n"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  await t.step("at most maxFiles files of at most maxSize bytes", async () => {
    const dir = await Deno.makeTempDir();
    try {
      const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5));
      const path = join(dir, "0.log");
      const log = await ContainerLog.open(path, clock, { maxSizeBytes: 1000, maxFiles: 3 });
      const line = new TextEncoder().encode("x".repeat(60) + "\n");
      for (let i = 0; i < 200; i++) {
        await log.write("stdout", line);
        if (i % 10 === 0) await clock.step(1000);
      }
      await log.close();
      const rotated = await rotatedLogFiles(path);
      assert.equal(rotated.length, 2);
      for (const file of [path, ...rotated]) {
        const size = (await Deno.stat(file)).size;
        assert.ok(size <= 1000, `${file}: ${size} bytes`);
        assert.ok(size > 0);
      }
      assert.match(rotated[0], /0\.log\.20260102-0304\d\d/);
      // The newest lines are in the current file.
      const last = (await Deno.readTextFile(path)).trimEnd().split("\n").at(-1)!;
      assert.match(last, /stdout F x{60}$/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("TestKillAllFollowsTheStopPolicy", async () => {
  // The agent's last resort (a second signal) kills running execs; containers only when the
  // agent stops its pods on exit (--stop-pods-on-exit), else they are left for the next start.
  await withRoot(async (rootDir) => {
    const runtime = new EmbeddedRuntimeService({ rootDir, stopContainersOnShutdown: false });
    try {
      const { id } = await startContainer(runtime, "sleep 600");
      const [container] = runtime.processIds();
      const exec = runtime.execSync(id, ["sleep", "600"], { timeoutMs: 0 }).then(
        () => undefined,
        (e) => e,
      );
      await waitFor(() => runtime.processIds().length === 2, "the exec to start");
      runtime.killAll();
      const err = await exec;
      assert.ok(err instanceof ExitError && err.exitStatus() === 137, String(err));
      assert.ok(alive(container), "the container is left running");
      runtime.killAll({ containers: true });
      await waitFor(() => !alive(container), "the container to be killed");
    } finally {
      await runtime.shutdown();
    }
  });
});
