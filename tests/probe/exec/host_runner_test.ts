/**
 * Tests for the host command runner with real processes: output order, exit status, timeouts that
 * kill the whole process group, missing binaries and output caps.
 * @module
 */
import assert from "node:assert/strict";
import {
  CommandTimedOutError,
  ExitError,
  HostCommandRunner,
  isCommandTimedOut,
  isExitError,
} from "../../../src/probe/exec/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const id = { type: "host", id: "test" };
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

// True when the process is gone or only a zombie waiting to be reaped (it cannot run any more).
function processIsDead(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state === "Z" || state === "X";
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return true;
    throw err;
  }
}

Deno.test("TestHostCommandRunner", async (t) => {
  const runner = new HostCommandRunner();

  await t.step("success returns stdout then stderr", async () => {
    const out = await runner.runInContainer(
      id,
      ["sh", "-c", "echo err >&2; echo out"],
      { timeoutMs: 5000 },
    );
    assert.equal(decode(out), "out\nerr\n");
  });

  await t.step("exit 1 is an ExitError carrying the output", async () => {
    const err = await runner.runInContainer(
      id,
      ["sh", "-c", "echo not ready; echo oops >&2; exit 1"],
      { timeoutMs: 5000 },
    ).then(() => undefined, (e) => e);
    assert.ok(isExitError(err), String(err));
    assert.equal((err as ExitError).exitStatus(), 1);
    assert.equal(decode((err as ExitError).output), "not ready\noops\n");
  });

  await t.step("timeout kills the command and its children", async () => {
    const pidFile = await Deno.makeTempFile();
    try {
      const cmd = ["sh", "-c", `sleep 5 & echo $! > ${pidFile}; sleep 5`];
      const start = Date.now();
      const err = await runner.runInContainer(id, cmd, { timeoutMs: 300 })
        .then(() => undefined, (e) => e);
      const elapsed = Date.now() - start;
      assert.ok(isCommandTimedOut(err), String(err));
      assert.equal(
        (err as Error).message,
        `command timed out: "sh -c sleep 5 & echo $! > ${pidFile}; sleep 5" timed out after 300ms`,
      );
      assert.ok(elapsed < 3000, `took ${elapsed} ms: the background sleep kept the pipes open`);
      const grandchild = Number((await Deno.readTextFile(pidFile)).trim());
      assert.ok(grandchild > 0);
      assert.ok(processIsDead(grandchild), `grandchild ${grandchild} still running`);
    } finally {
      await Deno.remove(pidFile);
    }
  });

  await t.step("timeout is measured on the injected clock", async () => {
    const clock = new FakeClock(0);
    const running = new HostCommandRunner({ clock })
      .runInContainer(id, ["sleep", "30"], { timeoutMs: 1000 })
      .then(() => undefined, (e) => e);
    assert.equal(clock.pendingTimers(), 1);
    await clock.step(999);
    assert.equal(clock.pendingTimers(), 1); // not yet
    await clock.step(1);
    const err = await running;
    assert.ok(err instanceof CommandTimedOutError, String(err));
    assert.equal(err.message, 'command timed out: "sleep 30" timed out after 1s');
  });

  await t.step("a descendant that escaped the group cannot hold a timed-out probe", async () => {
    const pidFile = await Deno.makeTempFile();
    const clock = new FakeClock(0);
    let escaped = 0;
    try {
      // setsid moves the grandchild out of the process group, so the kill cannot reach it, and it
      // keeps stdout open.
      const cmd = ["sh", "-c", `setsid sh -c 'echo $$ > ${pidFile}; exec sleep 30' & sleep 30`];
      const running = new HostCommandRunner({ clock })
        .runInContainer(id, cmd, { timeoutMs: 1000 })
        .then(() => undefined, (e) => e);
      // Wait (bounded) until the grandchild exists, so the scenario is really exercised.
      for (let i = 0; i < 500 && escaped === 0; i++) {
        escaped = Number((await Deno.readTextFile(pidFile)).trim()) || 0;
        if (escaped === 0) await new Promise((r) => setTimeout(r, 10));
      }
      assert.ok(escaped > 0, "the escaped grandchild never started");
      await clock.step(1000); // timeout: the group is killed, the grandchild survives
      assert.ok(!processIsDead(escaped));
      await clock.step(500); // the drain grace ends
      const err = await running;
      assert.ok(isCommandTimedOut(err), String(err));
    } finally {
      if (escaped > 0) {
        try {
          Deno.kill(escaped, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await Deno.remove(pidFile);
    }
  });

  await t.step("missing binary is a plain error", async () => {
    const err = await runner.runInContainer(id, ["/nonexistent/probe-binary"], { timeoutMs: 1000 })
      .then(() => undefined, (e) => e);
    assert.ok(err instanceof Error);
    assert.equal(isExitError(err), false);
    assert.equal(isCommandTimedOut(err), false);
    assert.equal(
      (err as Error).message,
      'exec: "/nonexistent/probe-binary": executable file not found in $PATH',
    );
  });

  await t.step("empty command is a plain error", async () => {
    await assert.rejects(runner.runInContainer(id, [], { timeoutMs: 1000 }), {
      message: "exec: no command",
    });
  });

  await t.step("large output is truncated to 10 KiB per stream", async () => {
    const out = await runner.runInContainer(
      id,
      [
        "sh",
        "-c",
        "head -c 100000 /dev/zero | tr '\\0' o; head -c 100000 /dev/zero | tr '\\0' e >&2",
      ],
      { timeoutMs: 5000 },
    );
    assert.equal(out.length, 2 * 10240);
    assert.equal(decode(out), "o".repeat(10240) + "e".repeat(10240));
  });

  await t.step("a command killed by a signal is an ExitError", async () => {
    const err = await runner.runInContainer(id, ["sh", "-c", "kill -9 $$"], { timeoutMs: 5000 })
      .then(() => undefined, (e) => e);
    assert.ok(isExitError(err), String(err));
    assert.notEqual(err.exitStatus(), 0);
    assert.equal(err.message, "signal: SIGKILL");
  });
});

Deno.test("TestHostCommandRunnerWaitsForStreams", async () => {
  // Issue 10.12: the same rule as the agent's ExecSync (kubelet through containerd): the command
  // is over when it has exited AND its output is closed, or at the timeout.
  const clock = new FakeClock(0);
  let settled = false;
  const running = new HostCommandRunner({ clock })
    .runInContainer(id, ["sh", "-c", "sleep 30 & echo started"], { timeoutMs: 1000 })
    .then(() => undefined, (e) => e).finally(() => settled = true);
  await clock.step(999);
  assert.equal(settled, false);
  await clock.step(1);
  await clock.step(500);
  const err = await running;
  assert.ok(isCommandTimedOut(err), String(err));
  assert.equal(
    err.message,
    'command timed out: "sh -c sleep 30 & echo started" timed out after 1s',
  );
});
