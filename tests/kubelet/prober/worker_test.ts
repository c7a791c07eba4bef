import assert from "node:assert/strict";
import type { PodStatus } from "../../../src/api/core/v1/mod.ts";
import {
  probeKeyString,
  type ProbeType,
  probeTypeString,
  Result,
  type Worker,
} from "../../../src/kubelet/prober/mod.ts";
import {
  fakeExecProber,
  getTestNotRunningStatus,
  getTestPod,
  getTestRunningStatus,
  getTestRunningStatusWithStarted,
  newTestManager,
  newTestWorker,
  resetStatusManager,
  resultsManager,
  setTestProbe,
  syncExecProber,
  testContainerID,
  testContainerName,
  testEpoch,
  type TestManager,
  testPodUID,
} from "./common.ts";

const allTypes: ProbeType[] = ["liveness", "readiness", "startup"];

function expectResult(w: Worker, expected: Result, msg: string): void {
  const result = resultsManager(w.probeManager, w.probeType).get(w.containerID);
  assert.notEqual(result, undefined, `[${w.probeType} - ${msg}] Expected result to be set`);
  assert.equal(result, expected, `[${w.probeType} - ${msg}] Expected result ${expected}`);
}

function expectContinue(w: Worker, c: boolean, msg: string): void {
  assert.equal(c, true, `[${w.probeType} - ${msg}] Expected to continue, but did not`);
}

Deno.test("TestDoProbe", async (t) => {
  const m = newTestManager();
  for (const probeType of allTypes) {
    const started = probeType !== "startup";
    const runningStatus = getTestRunningStatusWithStarted(started);
    const pendingStatus = getTestRunningStatusWithStarted(started);
    delete pendingStatus.containerStatuses![0].state!.running;
    pendingStatus.containerStatuses![0].state!.waiting = {};
    const terminatedStatus = getTestRunningStatusWithStarted(started);
    terminatedStatus.containerStatuses![0].state = {
      terminated: { exitCode: 0, startedAt: new Date(testEpoch).toISOString() },
    };
    const otherStatus = getTestRunningStatusWithStarted(started);
    otherStatus.containerStatuses![0].name = "otherContainer";
    const failedStatus = getTestRunningStatusWithStarted(started);
    failedStatus.phase = "Failed";

    const tests: {
      name: string;
      initialDelaySeconds?: number;
      podStatus?: PodStatus;
      expectContinue: Partial<Record<ProbeType, boolean>>;
      expectSet?: boolean;
      expectedResult?: Result;
      setDeletionTimestamp?: boolean;
    }[] = [
      {
        name: "no status",
        expectContinue: { liveness: true, readiness: true, startup: true },
      },
      { name: "pod failed", podStatus: failedStatus, expectContinue: {} },
      {
        name: "pod deletion",
        podStatus: runningStatus,
        setDeletionTimestamp: true,
        expectSet: true,
        expectContinue: { readiness: true },
        expectedResult: Result.Success,
      },
      {
        name: "no container status",
        podStatus: otherStatus,
        expectContinue: { liveness: true, readiness: true, startup: true },
      },
      {
        name: "container waiting",
        podStatus: pendingStatus,
        expectContinue: { liveness: true, readiness: true, startup: true },
        expectSet: true,
        expectedResult: Result.Failure,
      },
      {
        name: "container terminated",
        podStatus: terminatedStatus,
        expectContinue: {},
        expectSet: true,
        expectedResult: Result.Failure,
      },
      {
        name: "probe successful",
        podStatus: runningStatus,
        expectContinue: { liveness: true, readiness: true, startup: true },
        expectSet: true,
        expectedResult: Result.Success,
      },
      {
        name: "initial delay passed",
        podStatus: runningStatus,
        initialDelaySeconds: -100,
        expectContinue: { liveness: true, readiness: true, startup: true },
        expectSet: true,
        expectedResult: Result.Success,
      },
    ];

    for (const [i, test] of tests.entries()) {
      await t.step(`${probeTypeString(probeType)}-${i} ${test.name}`, async () => {
        const w = newTestWorker(m, probeType, { initialDelaySeconds: test.initialDelaySeconds });
        if (test.podStatus) m.statusManager.setPodStatus(w.pod, test.podStatus);
        if (test.setDeletionTimestamp) {
          w.pod.metadata.deletionTimestamp = new Date(m.clock.now()).toISOString();
        }
        const c = await w.doProbe();
        assert.equal(c, test.expectContinue[probeType] ?? false, "continue");
        const result = resultsManager(m, probeType).get(testContainerID);
        assert.equal(result !== undefined, test.expectSet ?? false, "result set");
        // Go compares the zero value (Success) when nothing is cached.
        assert.equal(result ?? Result.Success, test.expectedResult ?? Result.Success, "result");

        // Clean up.
        resetStatusManager(m);
        resultsManager(m, probeType).remove(testContainerID);
      });
    }
  }
});

Deno.test("TestInitialDelay", async (t) => {
  const m = newTestManager();
  for (const probeType of allTypes) {
    await t.step(probeTypeString(probeType), async () => {
      const w = newTestWorker(m, probeType, { initialDelaySeconds: 10 });
      m.statusManager.setPodStatus(w.pod, getTestRunningStatusWithStarted(probeType !== "startup"));

      expectContinue(w, await w.doProbe(), "during initial delay");
      // The initial value depends on the probe type.
      const initial = {
        liveness: Result.Success,
        readiness: Result.Failure,
        startup: Result.Unknown,
      };
      expectResult(w, initial[probeType], "during initial delay");

      // 100 seconds later...
      const laterStatus = getTestRunningStatusWithStarted(probeType !== "startup", {
        now: m.clock.now() - 100_000,
      });
      m.statusManager.setPodStatus(w.pod, laterStatus);

      // Second call should succeed (already waited).
      expectContinue(w, await w.doProbe(), "after initial delay");
      expectResult(w, Result.Success, "after initial delay");
    });
  }

  await t.step("whole seconds: 9.999 s running is still within a 10 s delay", async () => {
    // The status manager keeps times to the second (kubelet's normalizeStatus): start the
    // container on a whole second so that the 9.999 s are exact.
    const offset = ((m.clock.now() - 9_999) % 1000 + 1000) % 1000;
    if (offset !== 0) m.clock.setTime(m.clock.now() + 1000 - offset);
    const w = newTestWorker(m, "readiness", { initialDelaySeconds: 10 });
    m.statusManager.setPodStatus(w.pod, getTestRunningStatus({ now: m.clock.now() - 9_999 }));
    await w.doProbe();
    expectResult(w, Result.Failure, "9.999 s");
    await m.clock.step(1);
    await w.doProbe();
    expectResult(w, Result.Success, "10 s");
    resultsManager(m, "readiness").remove(testContainerID);
  });
});

Deno.test("TestFailureThreshold", async () => {
  const m = newTestManager();
  const w = newTestWorker(m, "readiness", { successThreshold: 1, failureThreshold: 3 });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatus());

  for (let i = 0; i < 2; i++) {
    // First probe should succeed.
    m.prober.exec = fakeExecProber("success");
    for (let j = 0; j < 3; j++) {
      const msg = `${j + 1} success (${i})`;
      expectContinue(w, await w.doProbe(), msg);
      expectResult(w, Result.Success, msg);
    }

    // Prober starts failing :(
    m.prober.exec = fakeExecProber("failure");

    // Next 2 probes should still be "success".
    for (let j = 0; j < 2; j++) {
      const msg = `${j + 1} failing (${i})`;
      expectContinue(w, await w.doProbe(), msg);
      expectResult(w, Result.Success, msg);
    }

    // Third & following fail.
    for (let j = 0; j < 3; j++) {
      const msg = `${j + 3} failure (${i})`;
      expectContinue(w, await w.doProbe(), msg);
      expectResult(w, Result.Failure, msg);
    }
  }
});

Deno.test("TestSuccessThreshold", async () => {
  const m = newTestManager();
  const w = newTestWorker(m, "readiness", { successThreshold: 3, failureThreshold: 1 });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatus());

  // Start out failure.
  await w.resultsManager.set(testContainerID, Result.Failure, {
    metadata: {},
    spec: { containers: [] },
  });

  for (let i = 0; i < 2; i++) {
    // Probe defaults to Failure.
    for (let j = 0; j < 2; j++) {
      const msg = `${j + 1} success (${i})`;
      expectContinue(w, await w.doProbe(), msg);
      expectResult(w, Result.Failure, msg);
    }

    // Continuing success!
    for (let j = 0; j < 3; j++) {
      const msg = `${j + 3} success (${i})`;
      expectContinue(w, await w.doProbe(), msg);
      expectResult(w, Result.Success, msg);
    }

    // Prober flakes :(
    m.prober.exec = fakeExecProber("failure");
    const msg = `1 failure (${i})`;
    expectContinue(w, await w.doProbe(), msg);
    expectResult(w, Result.Failure, msg);

    // Back to success.
    m.prober.exec = fakeExecProber("success");
  }
});

Deno.test("TestStartupProbeSuccessThreshold", async () => {
  const m = newTestManager();
  const successThreshold = 1;
  const failureThreshold = 3;
  const w = newTestWorker(m, "startup", { successThreshold, failureThreshold });
  m.statusManager.setPodStatus(w.pod, getTestNotRunningStatus());
  m.prober.exec = fakeExecProber("success");

  for (let i = 0; i < successThreshold + 1; i++) {
    if (i < successThreshold) {
      // Not on hold: probes run until successThreshold is met.
      assert.equal(w.onHold, false, "Prober should not be on hold");
      const msg = `${i + 1} success`;
      expectContinue(w, await w.doProbe(), msg);
      expectResult(w, Result.Success, msg);
    } else {
      // On hold once successThreshold is met, with the run reset.
      assert.equal(w.onHold, true, "Prober should be on hold because successThreshold is exceeded");
      assert.equal(w.resultRun, 0, "Prober resultRun should be 0");
    }
  }
});

Deno.test("TestStartupProbeFailureThreshold", async () => {
  const m = newTestManager();
  const successThreshold = 1;
  const failureThreshold = 3;
  const w = newTestWorker(m, "startup", { successThreshold, failureThreshold });
  m.statusManager.setPodStatus(w.pod, getTestNotRunningStatus());
  m.prober.exec = fakeExecProber("failure");

  for (let i = 0; i < failureThreshold + 1; i++) {
    if (i < failureThreshold) {
      assert.equal(w.onHold, false, "Prober should not be on hold");
      const msg = `${i + 1} failure`;
      expectContinue(w, await w.doProbe(), msg);
      if (i < 2) {
        // Below FailureThreshold the cache keeps the initial Unknown.
        expectResult(w, Result.Unknown, msg);
        assert.equal(w.resultRun, i + 1, `Prober resultRun should be ${i + 1}`);
      } else {
        // Reaching FailureThreshold caches Failure and resets the run.
        expectResult(w, Result.Failure, msg);
        assert.equal(w.resultRun, 0, "Prober resultRun should be 0");
      }
    } else {
      assert.equal(w.onHold, true, "Prober should be on hold because failureThreshold is exceeded");
      assert.equal(w.resultRun, 0, "Prober resultRun should be 0");
    }
  }
});

Deno.test("TestCleanUp", async (t) => {
  const m = newTestManager();
  for (const probeType of allTypes) {
    await t.step(probeTypeString(probeType), async () => {
      const key = { podUID: testPodUID, containerName: testContainerName, probeType };
      const w = newTestWorker(m, probeType, {});
      m.statusManager.setPodStatus(w.pod, getTestRunningStatusWithStarted(probeType !== "startup"));
      const done = w.start();
      m.addWorker(w);

      // Let the worker run its first probe (jitter is 0 in these tests).
      await m.clock.step(0);
      assert.equal(resultsManager(m, probeType).get(testContainerID), Result.Success);

      for (let i = 0; i < 10; i++) w.stop(); // Stop should be callable multiple times.
      await done;

      assert.equal(resultsManager(m, probeType).get(testContainerID), undefined, "result cleared");
      assert.equal(m.workers.has(probeKeyString(key)), false, "worker cleared");
      // Nothing of the worker stays on the clock: no ticker, no pending wake-up.
      assert.equal(m.clock.pendingTimers(), 0);
    });
  }
});

Deno.test("TestHandleCrash", async () => {
  const m = newTestManager();
  const w = newTestWorker(m, "readiness", {});
  m.statusManager.setPodStatus(w.pod, getTestRunningStatus());

  expectContinue(w, await w.doProbe(), "Initial successful probe.");
  expectResult(w, Result.Success, "Initial successful probe.");

  // Prober starts crashing.
  m.prober.exec = {
    probe: () => {
      throw new Error("Intentional Probe crash.");
    },
  };

  // doProbe should recover from the crash, and keep going.
  expectContinue(w, await w.doProbe(), "Crashing probe.");
  expectResult(w, Result.Success, "Crashing probe unchanged.");
});

Deno.test("TestOnHoldOnLivenessOrStartupCheckFailure", async (t) => {
  const m = newTestManager();
  for (const probeType of ["liveness", "startup"] as const) {
    await t.step(probeTypeString(probeType), async () => {
      const w = newTestWorker(m, probeType, { successThreshold: 1, failureThreshold: 1 });
      const status = getTestRunningStatusWithStarted(probeType !== "startup");
      m.statusManager.setPodStatus(w.pod, status);

      // First probe should fail.
      m.prober.exec = fakeExecProber("failure");
      expectContinue(w, await w.doProbe(), "first probe");
      expectResult(w, Result.Failure, "first probe");
      assert.equal(w.onHold, true, `Prober should be on hold due to ${probeType} check failure`);

      // The prober now succeeds, but the worker is on hold and does not probe.
      m.prober.exec = fakeExecProber("success");
      expectContinue(w, await w.doProbe(), "while on hold");
      expectResult(w, Result.Failure, "while on hold");
      assert.equal(w.onHold, true, `Prober should be on hold due to ${probeType} check failure`);

      // A new container ID lifts the hold. The next probe will succeed.
      status.containerStatuses![0].containerID = "test://newCont_ID";
      m.statusManager.setPodStatus(w.pod, status);
      expectContinue(w, await w.doProbe(), "hold lifted");
      expectResult(w, Result.Success, "hold lifted");
      if (probeType === "liveness") {
        assert.equal(w.onHold, false, "Prober should not be on hold anymore");
      } else {
        assert.equal(w.onHold, true, `Prober should be on hold due to ${probeType} check success`);
      }
    });
  }
});

Deno.test("TestResultRunOnLivenessCheckFailure", async () => {
  const m = newTestManager();
  const w = newTestWorker(m, "liveness", { successThreshold: 1, failureThreshold: 3 });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatus());

  m.prober.exec = fakeExecProber("success");
  expectContinue(w, await w.doProbe(), "initial probe success");
  expectResult(w, Result.Success, "initial probe success");
  assert.equal(w.resultRun, 1, "Prober resultRun should be 1");

  m.prober.exec = fakeExecProber("failure");
  expectContinue(w, await w.doProbe(), "probe failure, result success");
  expectResult(w, Result.Success, "probe failure, result success");
  assert.equal(w.resultRun, 1, "Prober resultRun should be 1");

  expectContinue(w, await w.doProbe(), "2nd probe failure, result success");
  expectResult(w, Result.Success, "2nd probe failure, result success");
  assert.equal(w.resultRun, 2, "Prober resultRun should be 2");

  // Crossing FailureThreshold resets resultRun so a restarted container gets a full budget.
  expectContinue(w, await w.doProbe(), "3rd probe failure, result failure");
  expectResult(w, Result.Failure, "3rd probe failure, result failure");
  assert.equal(w.resultRun, 0, "Prober resultRun should be reset to 0");
});

Deno.test("TestResultRunOnStartupCheckFailure", async () => {
  const m = newTestManager();
  const w = newTestWorker(m, "startup", { successThreshold: 1, failureThreshold: 3 });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatusWithStarted(false));

  // Below FailureThreshold the state stays at startup's initial Unknown.
  m.prober.exec = fakeExecProber("failure");
  expectContinue(w, await w.doProbe(), "probe failure, result unknown");
  expectResult(w, Result.Unknown, "probe failure, result unknown");
  assert.equal(w.resultRun, 1, "Prober resultRun should be 1");

  expectContinue(w, await w.doProbe(), "2nd probe failure, result unknown");
  expectResult(w, Result.Unknown, "2nd probe failure, result unknown");
  assert.equal(w.resultRun, 2, "Prober resultRun should be 2");

  expectContinue(w, await w.doProbe(), "3rd probe failure, result failure");
  expectResult(w, Result.Failure, "3rd probe failure, result failure");
  assert.equal(w.resultRun, 0, "Prober resultRun should be reset to 0");
});

Deno.test("TestLivenessProbeDisabledByStarted", async () => {
  const m = newTestManager();
  const w = newTestWorker(m, "liveness", { successThreshold: 1, failureThreshold: 1 });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatusWithStarted(false));
  // The liveness probe fails, but is disabled until the container has started.
  m.prober.exec = fakeExecProber("failure");
  expectContinue(w, await w.doProbe(), "Not started, probe failure, result success");
  expectResult(w, Result.Success, "Not started, probe failure, result success");
  // Setting started state.
  m.statusManager.setContainerStartup(testPodUID, w.containerID, true);
  expectContinue(w, await w.doProbe(), "Started, probe failure, result failure");
  expectResult(w, Result.Failure, "Started, probe failure, result failure");
});

Deno.test("TestStartupProbeDisabledByStarted", async () => {
  const m = newTestManager();
  const w = newTestWorker(m, "startup", { successThreshold: 1, failureThreshold: 2 });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatusWithStarted(false));
  // Failing below FailureThreshold stays Unknown.
  m.prober.exec = fakeExecProber("failure");
  expectContinue(w, await w.doProbe(), "Not started, probe failure, result unknown");
  expectResult(w, Result.Unknown, "Not started, probe failure, result unknown");
  // The startup probe succeeds.
  m.prober.exec = fakeExecProber("success");
  expectContinue(w, await w.doProbe(), "Started, probe success, result success");
  expectResult(w, Result.Success, "Started, probe success, result success");
  // Setting started state.
  m.statusManager.setContainerStartup(testPodUID, w.containerID, true);
  // The startup probe fails, but is disabled.
  m.prober.exec = fakeExecProber("failure");
  expectContinue(w, await w.doProbe(), "Started, probe failure, result success");
  expectResult(w, Result.Success, "Started, probe failure, result success");
});

// ---- What the Go suite leaves implicit: timing of run(), on the fake clock. ----

// Starts a worker of the test pod and returns it with a probe counter.
function startCountingWorker(m: TestManager, probeType: ProbeType, periodSeconds: number) {
  const exec = syncExecProber();
  m.prober.exec = exec;
  const w = newTestWorker(m, probeType, { periodSeconds });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatusWithStarted(probeType !== "startup"));
  m.addWorker(w);
  const done = w.start();
  return { w, exec, done };
}

Deno.test("TestManualTriggerResetsPeriod (worker.go run: manualTriggerCh resets the ticker)", async () => {
  const m = newTestManager();
  const { w, exec, done } = startCountingWorker(m, "readiness", 10);
  await m.clock.step(0);
  assert.equal(exec.calls, 1, "first probe runs right away");

  await m.clock.step(4_000);
  assert.equal(exec.calls, 1);
  // As with Go's 1-slot channel: the waiting worker takes the first trigger at once, the second
  // waits in the slot, the third finds the slot full.
  assert.equal(w.manualTrigger(), true);
  assert.equal(w.manualTrigger(), true);
  assert.equal(w.manualTrigger(), false, "a third trigger finds the 1-slot buffer full");
  await m.clock.step(0);
  assert.equal(exec.calls, 3, "both accepted triggers probe at once");

  // Without the reset the next tick would come at 10 s; it now comes at 4 s + 10 s.
  await m.clock.step(9_999);
  assert.equal(exec.calls, 3, "no tick one period after start");
  await m.clock.step(1);
  assert.equal(exec.calls, 4, "tick one period after the manual probe");
  await m.clock.step(10_000);
  assert.equal(exec.calls, 5);

  w.stop();
  await done;
  assert.equal(m.clock.pendingTimers(), 0);
});

Deno.test("TestJitterOnlyRightAfterStart (worker.go run: jitter when the kubelet started < 1 period ago)", async (t) => {
  await t.step("within a period of the manager's start: wait random() * period", async () => {
    const draws: number[] = [];
    const m = newTestManager({ random: () => (draws.push(0.5), 0.5) });
    const { w, exec, done } = startCountingWorker(m, "liveness", 10);
    await m.clock.step(4_999);
    assert.equal(exec.calls, 0, "still in the jitter");
    await m.clock.step(1);
    assert.equal(exec.calls, 1, "first probe after 0.5 * 10 s");
    assert.deepEqual(draws, [0.5]);
    // The period counts from the first probe.
    await m.clock.step(10_000);
    assert.equal(exec.calls, 2);
    w.stop();
    await done;
  });

  await t.step("the jitter stays below one period", async () => {
    const m = newTestManager({ random: () => 0.999999 });
    const { w, exec, done } = startCountingWorker(m, "liveness", 10);
    await m.clock.step(9_999);
    assert.equal(exec.calls, 0);
    await m.clock.step(1);
    assert.equal(exec.calls, 1, "first probe before a full period has passed");
    w.stop();
    await done;
  });

  await t.step("a period or more after the manager's start: no jitter", async () => {
    let draws = 0;
    const m = newTestManager({ random: () => (draws++, 0.5) });
    await m.clock.step(10_000);
    const { w, exec, done } = startCountingWorker(m, "liveness", 10);
    await m.clock.step(0);
    assert.equal(exec.calls, 1, "first probe right away");
    assert.equal(draws, 0, "no random draw");
    w.stop();
    await done;
  });
});

Deno.test("TestTickerDropsExtraTicks (worker.go run: Go ticker semantics)", async () => {
  const m = newTestManager();
  let calls = 0;
  let release: (() => void) | undefined;
  // The second probe hangs for 25 s: two ticks fall due meanwhile, only one may be kept.
  m.prober.exec = {
    probe: () => {
      calls++;
      if (calls !== 2) return Promise.resolve({ result: "success", output: "" });
      return new Promise((resolve) => {
        release = () => resolve({ result: "success", output: "" });
      });
    },
  };
  const w = newTestWorker(m, "readiness", { periodSeconds: 10 });
  m.statusManager.setPodStatus(w.pod, getTestRunningStatus());
  m.addWorker(w);
  const done = w.start();

  await m.clock.step(0);
  assert.equal(calls, 1);
  await m.clock.step(10_000); // t = 10 s: second probe starts and hangs
  assert.equal(calls, 2);
  await m.clock.step(25_000); // t = 35 s: ticks at 20 s and 30 s fell due
  release!();
  await m.clock.step(0);
  assert.equal(calls, 3, "one buffered tick probes at once");
  await m.clock.step(0);
  assert.equal(calls, 3, "the extra tick was dropped");
  await m.clock.step(5_000); // t = 40 s: the cadence continues
  assert.equal(calls, 4);

  w.stop();
  await done;
  assert.equal(m.clock.pendingTimers(), 0);
});

Deno.test("TestStopDuringWait (worker.go stop: idempotent, wakes the waiting worker)", async () => {
  const m = newTestManager();
  const { w, exec, done } = startCountingWorker(m, "readiness", 10);
  await m.clock.step(0);
  assert.equal(exec.calls, 1);
  let exited = false;
  done.then(() => exited = true);
  w.stop();
  w.stop();
  await m.clock.step(0); // no time passes: the stop alone wakes the worker
  assert.equal(exited, true);
  assert.equal(exec.calls, 1, "no probe after stop");
  assert.equal(m.workerCount(), 0);
  assert.equal(m.clock.pendingTimers(), 0);
  w.stop(); // after exit: still harmless
});

Deno.test("TestProberMetrics (worker.go doProbe metrics and clean-up)", async () => {
  const m = newTestManager();
  const pod = getTestPod();
  pod.metadata.namespace = "ns";
  setTestProbe(pod, "readiness", { failureThreshold: 3 });
  const { newWorker } = await import("../../../src/kubelet/prober/mod.ts");
  const w = newWorker(m, { probeType: "readiness", pod, container: pod.spec.containers[0] });
  m.statusManager.setPodStatus(pod, getTestRunningStatus());
  m.addWorker(w);

  const series = async () => {
    const out: Record<string, number> = {};
    for (const metric of await m.metrics.registry.getMetricsAsJSON()) {
      for (const v of metric.values) {
        const labels = v.labels as Record<string, string>;
        const name = (v as { metricName?: string }).metricName ?? metric.name;
        out[`${name}${labels.result ? `{result=${labels.result}}` : ""}`] = v.value;
      }
    }
    return out;
  };

  const done = w.start();
  await m.clock.step(0); // success
  let s = await series();
  assert.equal(s["prober_probe_total{result=successful}"], 1);
  assert.equal(s["prober_probe_duration_seconds_count"], 1);
  const [counter] = (await m.metrics.proberResults.get()).values;
  assert.deepEqual(counter.labels, {
    probe_type: "Readiness",
    result: "successful",
    container: testContainerName,
    pod: "testPod",
    namespace: "ns",
    pod_uid: testPodUID,
  });

  m.prober.exec = fakeExecProber("failure");
  await m.clock.step(1_000); // a failure below threshold still counts, with no duration
  s = await series();
  assert.equal(s["prober_probe_total{result=failed}"], 1);
  assert.equal(s["prober_probe_duration_seconds_count"], 1);

  m.prober.exec = fakeExecProber("unknown", new Error("boom"));
  await m.clock.step(1_000); // an errored probe is not counted at all
  s = await series();
  assert.equal(s["prober_probe_total{result=failed}"], 1);
  assert.equal(s["prober_probe_total{result=successful}"], 1);

  w.stop();
  await done;
  assert.deepEqual(await series(), {}, "the worker's series are deleted when it exits");
});

Deno.test("TestKubeletRestartKeepsCachedState (worker.go: ChangeContainerStatusOnKubeletRestart=false)", async (t) => {
  for (const gate of [false, true]) {
    await t.step(`ChangeContainerStatusOnKubeletRestart=${gate}`, async () => {
      const m = newTestManager({ featureGates: { ChangeContainerStatusOnKubeletRestart: gate } });
      const w = newTestWorker(m, "readiness", { initialDelaySeconds: 1000 });
      // The container started 11 s before this kubelet.
      m.statusManager.setPodStatus(w.pod, getTestRunningStatus({ now: m.clock.now() - 11_000 }));
      await w.doProbe();
      const cached = resultsManager(m, "readiness").get(testContainerID);
      assert.equal(cached, gate ? Result.Failure : undefined);
    });
  }
  await t.step(
    "a container started within 10 s of the kubelet gets the initial value",
    async () => {
      const m = newTestManager();
      const w = newTestWorker(m, "readiness", { initialDelaySeconds: 1000 });
      m.statusManager.setPodStatus(w.pod, getTestRunningStatus({ now: m.clock.now() - 9_000 }));
      await w.doProbe();
      assert.equal(resultsManager(m, "readiness").get(testContainerID), Result.Failure);
    },
  );
});

Deno.test("TestContainerRestartRules (worker.go doProbe: non-running container under ContainerRestartRules)", async (t) => {
  const cases: {
    name: string;
    restartPolicy: "Always" | "OnFailure" | "Never";
    exitCode?: number;
    want: boolean;
  }[] = [
    { name: "OnFailure, exit 0: stop", restartPolicy: "OnFailure", exitCode: 0, want: false },
    { name: "OnFailure, exit 1: go on", restartPolicy: "OnFailure", exitCode: 1, want: true },
    { name: "Never, exit 1: stop", restartPolicy: "Never", exitCode: 1, want: false },
    { name: "Never, waiting: go on", restartPolicy: "Never", want: true },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const m = newTestManager({ featureGates: { ContainerRestartRules: true } });
      const w = newTestWorker(m, "liveness", {});
      w.pod.spec.restartPolicy = c.restartPolicy;
      const status = getTestRunningStatus();
      status.containerStatuses![0].state = c.exitCode === undefined
        ? { waiting: {} }
        : { terminated: { exitCode: c.exitCode } };
      m.statusManager.setPodStatus(w.pod, status);
      assert.equal(await w.doProbe(), c.want);
      expectResult(w, Result.Failure, c.name);
    });
  }
});

// ---- The public surface: what the manager and a worker keep is read-only from outside. ----

Deno.test("ProberManager.workers and a worker's probe state cannot be assigned from outside", () => {
  const m = newTestManager();
  const w = newTestWorker(m, "readiness", {});
  m.addWorker(w);
  assert.equal(m.workers.get(probeKeyString(w.key)), w, "addWorker registers under the key");
  assert.throws(() => {
    // @ts-expect-error: the manager's worker map is read-only; register through addWorker.
    m.workers = new Map();
  }, TypeError);
  for (const field of ["containerID", "lastResult", "resultRun", "onHold"] as const) {
    assert.throws(
      () => {
        (w as unknown as Record<string, unknown>)[field] = undefined;
      },
      TypeError,
      field,
    );
  }
  assert.equal(w.onHold, false);
  assert.equal(w.resultRun, 0);
});
