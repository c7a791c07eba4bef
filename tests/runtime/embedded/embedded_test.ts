/**
 * Tests of the embedded runtime with real, short host processes (`sh -c`): lifecycle and exit
 * codes, logs, stop escalation, ExecSync results and errors, and that shutdown leaves no process.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { ContainerConfig } from "../../../src/cri_client/api.ts";
import {
  ContainerLog,
  EmbeddedRuntimeService,
  killRecordedGroups,
  maxLogLineBytes,
  procStat,
  recordDirs,
} from "../../../src/runtime/embedded/mod.ts";
import { CommandTimedOutError, ExitError } from "../../../src/util/exec/errors.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const decoder = new TextDecoder();

async function withRuntime(
  fn: (runtime: EmbeddedRuntimeService, rootDir: string) => Promise<void>,
): Promise<void> {
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-embedded-" });
  const runtime = new EmbeddedRuntimeService({ rootDir });
  try {
    await fn(runtime, rootDir);
  } finally {
    await runtime.shutdown();
    await Deno.remove(rootDir, { recursive: true });
  }
}

function sandboxConfig(name = "web") {
  return { metadata: { name, uid: `uid-${name}`, namespace: "default" }, labels: { app: name } };
}

function containerConfig(script: string, extra: Partial<ContainerConfig> = {}): ContainerConfig {
  return {
    metadata: { name: "app" },
    image: { image: "busybox" },
    command: ["sh", "-c", script],
    ...extra,
  };
}

async function runContainer(
  runtime: EmbeddedRuntimeService,
  script: string,
  extra: Partial<ContainerConfig> = {},
  sandboxName = "web",
): Promise<{ sandbox: string; id: string }> {
  const sandbox = await runtime.runPodSandbox(sandboxConfig(sandboxName));
  const id = await runtime.createContainer(sandbox, containerConfig(script, extra));
  await runtime.startContainer(id);
  return { sandbox, id };
}

/** Polls `check` until it returns true (real processes take real time; no fixed sleeps). */
async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function waitExited(runtime: EmbeddedRuntimeService, id: string) {
  await waitFor(
    async () => (await runtime.containerStatus(id)).status.state === "CONTAINER_EXITED",
    "the container to exit",
  );
  return (await runtime.containerStatus(id)).status;
}

/** Live (non-zombie) processes whose process group is one of `groups`. */
function liveProcessesIn(groups: Set<number>): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp ...; comm may contain spaces, so parse after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (state !== "Z" && groups.has(Number(pgrp))) found.push(Number(entry.name));
  }
  return found;
}

async function logLines(path: string): Promise<string[]> {
  const text = await Deno.readTextFile(path);
  return text.split("\n").filter((l) => l !== "");
}

Deno.test("TestContainerLifecycle", async (t) => {
  await t.step("exit code, times, reason and CRI log", async () => {
    await withRuntime(async (runtime, rootDir) => {
      const sandbox = await runtime.runPodSandbox(sandboxConfig());
      const id = await runtime.createContainer(
        sandbox,
        containerConfig('echo "out $GREETING $0 $1"; echo err >&2; exit 3', {
          args: ["first", "second"],
          envs: [{ key: "GREETING", value: "hello" }],
        }),
      );
      assert.match(id, /^[0-9a-f]{64}$/);
      const created = (await runtime.containerStatus(id)).status;
      assert.equal(created.state, "CONTAINER_CREATED");
      assert.equal(created.startedAt, 0n);

      await runtime.startContainer(id);
      const status = await waitExited(runtime, id);
      assert.equal(status.exitCode, 3);
      assert.equal(status.reason, "Error");
      assert.ok(status.startedAt > 0n && status.finishedAt >= status.startedAt);
      assert.equal(status.metadata.name, "app");
      assert.equal(status.logPath, join(rootDir, "containers", `${id}.log`));

      await waitFor(async () => (await logLines(status.logPath)).length === 2, "two log lines");
      const lines = await logLines(status.logPath);
      const entries = lines.map((l) => l.replace(/^\S+ /, "")).sort();
      assert.deepEqual(entries, ["stderr F err", "stdout F out hello first second"]);
      assert.ok(!Number.isNaN(Date.parse(lines[0].split(" ")[0])), "RFC 3339 timestamp");
    });
  });

  await t.step("exit 0 is Completed", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "exit 0");
      const status = await waitExited(runtime, id);
      assert.equal(status.exitCode, 0);
      assert.equal(status.reason, "Completed");
    });
  });

  await t.step("kubelet's log folder is used when the sandbox has one", async () => {
    await withRuntime(async (runtime, rootDir) => {
      const sandbox = await runtime.runPodSandbox({
        ...sandboxConfig(),
        logDirectory: "pods/default_web_uid-web",
      });
      const id = await runtime.createContainer(
        sandbox,
        containerConfig("echo hi", { logPath: "app/0.log" }),
      );
      await runtime.startContainer(id);
      const status = await waitExited(runtime, id);
      assert.equal(status.logPath, join(rootDir, "pods/default_web_uid-web/app/0.log"));
      await waitFor(async () => (await logLines(status.logPath)).length === 1, "the log line");
      await runtime.removeContainer(id);
      assert.ok((await Deno.stat(status.logPath)).isFile, "kubelet's logs are kubelet's to remove");
    });
  });

  await t.step("a container needs a command", async () => {
    await withRuntime(async (runtime) => {
      const sandbox = await runtime.runPodSandbox(sandboxConfig());
      await assert.rejects(
        runtime.createContainer(sandbox, {
          metadata: { name: "app" },
          image: { image: "nginx" },
          args: ["-g", "daemon off;"],
        }),
        {
          message:
            'container "app" has no command: the embedded runtime runs host processes and cannot use the entrypoint of image "nginx"; set command in the pod spec',
        },
      );
    });
  });

  await t.step("a command that cannot start ends as StartError", async () => {
    await withRuntime(async (runtime) => {
      const sandbox = await runtime.runPodSandbox(sandboxConfig());
      const id = await runtime.createContainer(sandbox, {
        metadata: { name: "app" },
        image: { image: "busybox" },
        command: ["probelet-no-such-binary"],
      });
      await assert.rejects(runtime.startContainer(id), {
        message:
          `failed to start container "${id}": exec: "probelet-no-such-binary": executable file not found in $PATH`,
      });
      const { status } = await runtime.containerStatus(id);
      assert.equal(status.state, "CONTAINER_EXITED");
      assert.equal(status.exitCode, 128);
      assert.equal(status.reason, "StartError");
    });
  });

  await t.step("names are reserved per sandbox and attempt", async () => {
    await withRuntime(async (runtime) => {
      const sandbox = await runtime.runPodSandbox(sandboxConfig());
      const first = await runtime.createContainer(sandbox, containerConfig("true"));
      await assert.rejects(runtime.createContainer(sandbox, containerConfig("true")), /reserved/);
      const second = await runtime.createContainer(
        sandbox,
        containerConfig("true", { metadata: { name: "app", attempt: 1 } }),
      );
      await runtime.removeContainer(first);
      await runtime.createContainer(sandbox, containerConfig("true"));
      await assert.rejects(runtime.runPodSandbox(sandboxConfig()), /reserved/);
      assert.notEqual(first, second);
    });
  });

  await t.step("list, filters, status and removal", async () => {
    await withRuntime(async (runtime) => {
      const web = await runtime.runPodSandbox(sandboxConfig("web"));
      const db = await runtime.runPodSandbox(sandboxConfig("db"));
      const a = await runtime.createContainer(
        web,
        containerConfig("sleep 30", { labels: { role: "a" } }),
      );
      const b = await runtime.createContainer(db, containerConfig("sleep 30"));
      await runtime.startContainer(a);

      const sandboxes = await runtime.listPodSandbox({ labelSelector: { app: "db" } });
      assert.deepEqual(sandboxes.map((s) => s.id), [db]);
      const { status } = await runtime.podSandboxStatus(web);
      assert.equal(status.network?.ip, "127.0.0.1");
      assert.equal(status.state, "SANDBOX_READY");
      assert.deepEqual(
        (await runtime.listContainers({ state: "CONTAINER_RUNNING" })).map((c) => c.id),
        [a],
      );
      assert.deepEqual((await runtime.listContainers({ podSandboxId: db })).map((c) => c.id), [b]);
      assert.deepEqual(
        (await runtime.listContainers({ labelSelector: { role: "a" } })).map((c) => c.id),
        [a],
      );
      assert.deepEqual((await runtime.listContainers({ id: a.slice(0, 12) })).map((c) => c.id), [
        a,
      ]);

      await runtime.stopPodSandbox(web);
      assert.equal((await runtime.podSandboxStatus(web)).status.state, "SANDBOX_NOTREADY");
      assert.equal((await runtime.containerStatus(a)).status.exitCode, 137, "killed at once");
      await runtime.removePodSandbox(web);
      await runtime.removePodSandbox(web); // idempotent
      await runtime.removeContainer(b);
      await runtime.removeContainer(b); // idempotent
      await assert.rejects(runtime.containerStatus(a), {
        message: `an error occurred when try to find container "${a}": not found`,
      });
      assert.deepEqual((await runtime.listPodSandbox()).map((s) => s.id), [db]);
      assert.equal(
        (await runtime.imageStatus({ image: "anything:1" })).image?.repoTags[0],
        "anything:1",
      );
    });
  });

  await t.step("when the main process exits, the rest of its group is killed", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "sleep 30 & echo $!; exit 0");
      const status = await waitExited(runtime, id);
      await waitFor(async () => (await logLines(status.logPath)).length === 1, "the pid");
      const pid = Number((await logLines(status.logPath))[0].split(" ").at(-1));
      assert.ok(pid > 0);
      await waitFor(() => !isAlive(pid), "the background child to be killed");
    });
  });
});

function isAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

Deno.test("TestStopContainer", async (t) => {
  await t.step("SIGTERM ends a cooperative container", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "sleep 30");
      const start = Date.now();
      await runtime.stopContainer(id, { timeoutMs: 10_000 });
      assert.ok(Date.now() - start < 5_000, "no need to wait for the grace period");
      const { status } = await runtime.containerStatus(id);
      assert.equal(status.state, "CONTAINER_EXITED");
      assert.equal(status.exitCode, 143);
    });
  });

  await t.step("escalates to SIGKILL after the timeout", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(
        runtime,
        "trap '' TERM; echo ready; while :; do sleep 0.05; done",
      );
      const logPath = (await runtime.containerStatus(id)).status.logPath;
      await waitFor(async () => (await logLines(logPath)).length === 1, "the trap to be set");
      const pid = JSON.parse((await runtime.containerStatus(id, { verbose: true })).info.info).pid;

      const start = Date.now();
      await runtime.stopContainer(id, { timeoutMs: 300 });
      const elapsed = Date.now() - start;
      assert.ok(elapsed >= 290, `stopped after ${elapsed} ms, before the grace period ended`);
      const { status } = await runtime.containerStatus(id);
      assert.equal(status.exitCode, 137);
      assert.equal(status.reason, "Error");
      // SIGKILL has been sent to the group; descendants that are not our children die a moment later.
      await waitFor(() => liveProcessesIn(new Set([pid])).length === 0, "the whole group to go");
      await runtime.stopContainer(id, { timeoutMs: 300 }); // idempotent
    });
  });

  await t.step("timeout 0 kills at once", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "trap '' TERM; sleep 30");
      await runtime.stopContainer(id, { timeoutMs: 0 });
      assert.equal((await runtime.containerStatus(id)).status.exitCode, 137);
    });
  });
});

Deno.test("TestExecSync", async (t) => {
  await t.step("success returns stdout and stderr", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "sleep 30", {
        envs: [{ key: "MARK", value: "m1" }],
      });
      const result = await runtime.execSync(id, ["sh", "-c", "echo out $MARK; echo err >&2"], {
        timeoutMs: 5000,
      });
      assert.equal(decoder.decode(result.stdout), "out m1\n");
      assert.equal(decoder.decode(result.stderr), "err\n");
    });
  });

  await t.step("non-zero exit is an ExitError with the output", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "sleep 30");
      const cmd = ["sh", "-c", "echo not ready; echo broken >&2; exit 2"];
      const err = await runtime.execSync(id, cmd, { timeoutMs: 5000 }).then(
        () => assert.fail("expected an ExitError"),
        (e) => e,
      );
      assert.ok(err instanceof ExitError);
      assert.equal(err.exitStatus(), 2);
      assert.equal(decoder.decode(err.output), "not ready\nbroken\n");
      assert.equal(
        err.message,
        "command 'sh -c echo not ready; echo broken >&2; exit 2' exited with 2: broken\n",
      );
    });
  });

  await t.step("timeout kills the command and reports CommandTimedOutError", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "sleep 30");
      const start = Date.now();
      await assert.rejects(
        runtime.execSync(id, ["sh", "-c", "sleep 10 & sleep 10"], { timeoutMs: 300 }),
        (e) => {
          assert.ok(e instanceof CommandTimedOutError);
          assert.equal(
            e.message,
            'command timed out: "sh -c sleep 10 & sleep 10" timed out after 300ms',
          );
          return true;
        },
      );
      assert.ok(Date.now() - start < 5_000, "the background sleep did not hold the call");
      assert.deepEqual(runtime.processIds().length, 1, "only the container is left");
    });
  });

  await t.step("keeps at most 10 KiB of each stream, as kubelet's exec probe", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "sleep 30");
      const script = "head -c 3000000 /dev/zero | tr '\\0' o; head -c 3000000 /dev/zero >&2";
      const result = await runtime.execSync(id, ["sh", "-c", script], { timeoutMs: 10_000 });
      assert.equal(result.stdout.length, 10 * 1024);
      assert.equal(decoder.decode(result.stdout), "o".repeat(10 * 1024));
      assert.equal(result.stderr.length, 10 * 1024);
    });
  });

  await t.step(
    "a background child holding stdout keeps the exec running until the timeout (issue 10.12)",
    async () => {
      const clock = new FakeClock(0);
      const rootDir = await Deno.makeTempDir({ prefix: "probelet-embedded-" });
      const runtime = new EmbeddedRuntimeService({ rootDir, clock });
      try {
        const { id } = await runContainer(runtime, "sleep 30");
        const cmd = ["sh", "-c", "sleep 30 & echo started"];
        let settled = false;
        const exec = runtime.execSync(id, cmd, { timeoutMs: 1000 }).then(
          () => undefined,
          (e) => e,
        ).finally(() => settled = true);
        const execGroup = () => runtime.processIds().find((p) => p !== runtime.processIds()[0]);
        await waitFor(() => execGroup() !== undefined, "the exec to start");
        const leader = execGroup()!;
        // The main process (sh) exits at once; sleep keeps stdout open.
        await waitFor(() => procStat(leader) === undefined, "the exec's sh to exit");
        await clock.step(999);
        assert.equal(settled, false, "the exec ended before its streams closed");
        await clock.step(1);
        await clock.step(500);
        const err = await exec;
        assert.ok(err instanceof CommandTimedOutError, String(err));
        assert.equal(
          err.message,
          'command timed out: "sh -c sleep 30 & echo started" timed out after 1s',
        );
        await waitFor(
          () => liveProcessesIn(new Set([leader])).length === 0,
          "the background sleep to be killed",
        );
      } finally {
        await runtime.shutdown();
        await Deno.remove(rootDir, { recursive: true });
      }
    },
  );

  await t.step("errors that are not the command's", async () => {
    await withRuntime(async (runtime) => {
      const { id } = await runContainer(runtime, "exit 0");
      await assert.rejects(runtime.execSync("nope", ["true"], { timeoutMs: 1000 }), {
        message: 'an error occurred when try to find container "nope": not found',
      });
      await waitExited(runtime, id);
      await assert.rejects(runtime.execSync(id, ["true"], { timeoutMs: 1000 }), {
        message: "failed to exec in container: container is in CONTAINER_EXITED state",
      });
      const running = await runContainer(runtime, "sleep 30", {}, "second");
      await assert.rejects(
        runtime.execSync(running.id, ["probelet-no-such-binary"], { timeoutMs: 1000 }),
        {
          message:
            'failed to exec in container: exec: "probelet-no-such-binary": executable file not found in $PATH',
        },
      );
    });
  });
});

Deno.test("TestShutdownLeavesNoProcesses", async () => {
  const rootDir = await Deno.makeTempDir({ prefix: "probelet-embedded-" });
  const runtime = new EmbeddedRuntimeService({ rootDir });
  try {
    const { id } = await runContainer(runtime, "sleep 30 & sleep 30 & wait");
    const sandbox = await runtime.runPodSandbox(sandboxConfig("other"));
    const other = await runtime.createContainer(
      sandbox,
      containerConfig("trap '' TERM; sleep 30 & wait"),
    );
    await runtime.startContainer(other);
    const exec = runtime.execSync(id, ["sh", "-c", "sleep 30 & sleep 30"], { timeoutMs: 0 })
      .then(() => undefined, (e) => e);
    const groups = new Set(runtime.processIds());
    assert.equal(groups.size, 3);
    await waitFor(() => liveProcessesIn(groups).length >= 6, "every process to start");

    await runtime.shutdown();
    const execError = await exec;
    assert.ok(execError instanceof ExitError, "the exec was killed");
    assert.equal(execError.exitStatus(), 137);
    await waitFor(() => liveProcessesIn(groups).length === 0, "every process group to go");
    assert.deepEqual(runtime.processIds(), []);
    await assert.rejects(runtime.listContainers(), { message: "embedded runtime is closed" });
  } finally {
    await runtime.shutdown();
    await Deno.remove(rootDir, { recursive: true });
  }
});

Deno.test("TestContainerLog", async (t) => {
  await t.step("lines, partial lines and the trailing piece", async () => {
    const dir = await Deno.makeTempDir();
    try {
      const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
      const log = await ContainerLog.open(join(dir, "nested", "c.log"), clock);
      const enc = new TextEncoder();
      await log.write("stdout", enc.encode("one\ntw"));
      await log.write("stderr", enc.encode("oops\n"));
      await log.write("stdout", enc.encode("o\n" + "x".repeat(maxLogLineBytes + 10)));
      await log.close();
      const lines = await logLines(join(dir, "nested", "c.log"));
      const ts = "2026-01-02T03:04:05.678Z";
      assert.deepEqual(lines, [
        `${ts} stdout F one`,
        `${ts} stderr F oops`,
        `${ts} stdout F two`,
        `${ts} stdout P ${"x".repeat(maxLogLineBytes)}`,
        `${ts} stdout F xxxxxxxxxx`,
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("TestKillLeftoverProcesses", async (t) => {
  await t.step("groups recorded by the previous version are killed by the next start", async () => {
    const rootDir = await Deno.makeTempDir({ prefix: "probelet-embedded-" });
    const old = new Deno.Command("sh", { args: ["-c", "sleep 600 & sleep 600"], detached: true })
      .spawn();
    try {
      await Deno.mkdir(recordDirs.legacyPids(rootDir), { recursive: true });
      await Deno.writeTextFile(
        join(recordDirs.legacyPids(rootDir), "c1.json"),
        JSON.stringify({
          pgid: old.pid,
          startTime: procStat(old.pid)!.startTime,
          containerId: "c1",
        }),
      );
      const next = new EmbeddedRuntimeService({ rootDir });
      assert.deepEqual(next.killLeftoverProcesses(), [old.pid]);
      await old.status;
      await waitFor(() => liveProcessesIn(new Set([old.pid])).length === 0, "the group to die");
      assert.deepEqual([...Deno.readDirSync(recordDirs.legacyPids(rootDir))], []);
      await next.shutdown();
    } finally {
      await Deno.remove(rootDir, { recursive: true });
    }
  });

  await t.step("a record whose pid now belongs to another process is not acted on", async () => {
    const rootDir = await Deno.makeTempDir({ prefix: "probelet-embedded-" });
    const other = new Deno.Command("sleep", { args: ["600"], detached: true }).spawn();
    try {
      const start = procStat(other.pid)!.startTime;
      await Deno.mkdir(recordDirs.legacyPids(rootDir), { recursive: true });
      await Deno.writeTextFile(
        join(recordDirs.legacyPids(rootDir), "old.json"),
        JSON.stringify({ pgid: other.pid, startTime: start - 1, containerId: "old" }),
      );
      const next = new EmbeddedRuntimeService({ rootDir });
      assert.deepEqual(next.killLeftoverProcesses(), []);
      assert.equal(liveProcessesIn(new Set([other.pid])).length, 1);
      await next.shutdown();
    } finally {
      other.kill("SIGKILL");
      await other.status;
      await Deno.remove(rootDir, { recursive: true });
    }
  });

  await t.step("a container whose record is corrupt cannot be adopted: it is killed", async () => {
    const rootDir = await Deno.makeTempDir({ prefix: "probelet-embedded-" });
    const first = new EmbeddedRuntimeService({ rootDir });
    try {
      const { id } = await runContainer(first, "sleep 600 & sleep 600");
      const [pgid] = first.processIds();
      await first.shutdown({ stopContainers: false });
      await Deno.writeTextFile(join(recordDirs.containers(rootDir), id, "container.json"), "{");
      const next = new EmbeddedRuntimeService({ rootDir });
      assert.deepEqual(await next.listContainers(), []);
      assert.deepEqual(next.killLeftoverProcesses(), [pgid]);
      await waitFor(() => liveProcessesIn(new Set([pgid])).length === 0, "the group to die");
      await next.shutdown();
    } finally {
      killRecordedGroups(rootDir);
      await Deno.remove(rootDir, { recursive: true });
    }
  });
});
