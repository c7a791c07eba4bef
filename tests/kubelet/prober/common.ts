/**
 * Test builders for the prober tests, mirroring kubelet's pkg/kubelet/prober/common_test.go.
 * @module
 */
import type { Pod, PodStatus, Probe } from "../../../src/api/core/v1/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";
import type { ContainerID } from "../../../src/kubelet/container/mod.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import {
  type FeatureGates,
  newManager,
  newResultsManager,
  newWorker,
  type ProberManager,
  type ProbeType,
  type ResultsManager,
  type Worker,
} from "../../../src/kubelet/prober/mod.ts";
import {
  BasicPodManager,
  newManager as newStatusManager,
} from "../../../src/kubelet/status/mod.ts";
import type { Cmd, ExecProber } from "../../../src/probe/exec/exec.ts";
import type { ProbeOutcome, ProbeResult } from "../../../src/probe/probe.ts";

/** The container name every test pod uses. */
export const testContainerName = "cOnTaInEr_NaMe";
/** The UID of the test pod. */
export const testPodUID = "pOd_UiD";
/** The container ID in every test status (`test://cOnTaInEr_Id`). */
export const testContainerID: ContainerID = { type: "test", id: "cOnTaInEr_Id" };
/** Where every FakeClock of these tests starts (and the default "now" of the status builders). */
export const testEpoch = Date.UTC(2026, 0, 1, 0, 0, 0);

// Keep test output readable: the prober logs every probe at high verbosity only, but errors and
// "already exists"-style info lines would still reach stderr.
setLogSink(() => {});

/** A running pod status whose one container has `started` set as given. */
export function getTestRunningStatusWithStarted(
  started: boolean,
  options: { now?: number } = {},
): PodStatus {
  return {
    phase: "Running",
    containerStatuses: [{
      name: testContainerName,
      containerID: "test://cOnTaInEr_Id",
      state: { running: { startedAt: new Date(options.now ?? testEpoch).toISOString() } },
      started,
      ready: false,
      restartCount: 0,
    }],
  };
}

/** Running and started. */
export function getTestRunningStatus(options: { now?: number } = {}): PodStatus {
  return getTestRunningStatusWithStarted(true, options);
}

/** Running but not started (as kubelet's helper of the same name: the container still runs). */
export function getTestNotRunningStatus(options: { now?: number } = {}): PodStatus {
  return getTestRunningStatusWithStarted(false, options);
}

/** The test pod: one container, restart policy Never. */
export function getTestPod(): Pod {
  return {
    metadata: { name: "testPod", uid: testPodUID },
    spec: { containers: [{ name: testContainerName }], restartPolicy: "Never" },
  };
}

/**
 * Puts a probe of the given type on the test pod's container: an exec handler (the tests fake the
 * exec prober) and 1 for every unset timeout/period/threshold (test values, not API defaults).
 */
export function setTestProbe(pod: Pod, probeType: ProbeType, probeSpec: Probe): void {
  const spec: Probe = { ...probeSpec, exec: {} };
  spec.timeoutSeconds ||= 1;
  spec.periodSeconds ||= 1;
  spec.successThreshold ||= 1;
  spec.failureThreshold ||= 1;
  const c = pod.spec.containers[0];
  if (probeType === "readiness") c.readinessProbe = spec;
  else if (probeType === "liveness") c.livenessProbe = spec;
  else c.startupProbe = spec;
}

/** Options of `newTestManager`. */
export interface TestManagerOptions {
  featureGates?: Partial<FeatureGates>;
  /** Jitter source (default: always 0, so a first probe needs only `clock.step(0)`). */
  random?: () => number;
}

/** A manager on a FakeClock, with the test pod known to the status manager's pod source. */
export interface TestManager extends ProberManager {
  readonly clock: FakeClock;
  podManager: BasicPodManager;
  recorder: FakeRecorder;
}

/**
 * kubelet's newTestManager: real status manager (with the test pod in its pod source), three results
 * managers, no runner, a FakeRecorder, and an exec prober that always succeeds.
 */
export function newTestManager(options: TestManagerOptions = {}): TestManager {
  const clock = new FakeClock(testEpoch);
  const podManager = new BasicPodManager();
  // The status manager looks pods up here when readiness or startup changes.
  podManager.addPod(getTestPod());
  const recorder = new FakeRecorder();
  const m = newManager({
    statusManager: newStatusManager({ podManager, clock }),
    livenessManager: newResultsManager(),
    readinessManager: newResultsManager(),
    startupManager: newResultsManager(),
    recorder,
    clock,
    featureGates: options.featureGates,
    random: options.random ?? (() => 0),
  }) as TestManager;
  m.podManager = podManager;
  m.recorder = recorder;
  // Don't actually execute probes.
  m.prober.exec = fakeExecProber("success");
  return m;
}

/** A fresh status manager for `m` with an empty pod source (kubelet's tests swap it this way). */
export function resetStatusManager(m: TestManager): void {
  m.podManager = new BasicPodManager();
  m.statusManager = newStatusManager({ podManager: m.podManager, clock: m.clock });
}

/** A worker (not started) for a fresh test pod carrying the given probe. */
export function newTestWorker(m: ProberManager, probeType: ProbeType, probeSpec: Probe): Worker {
  const pod = getTestPod();
  setTestProbe(pod, probeType, probeSpec);
  return newWorker(m, { probeType, pod, container: pod.spec.containers[0] });
}

/** The results manager of the probe type. */
export function resultsManager(m: ProberManager, probeType: ProbeType): ResultsManager {
  switch (probeType) {
    case "readiness":
      return m.readinessManager;
    case "liveness":
      return m.livenessManager;
    case "startup":
      return m.startupManager;
  }
}

/** An exec prober that answers `(result, "", error)` without running anything. */
export function fakeExecProber(result: ProbeResult | string, error?: Error): ExecProber {
  return {
    probe: (_cmd: Cmd): Promise<ProbeOutcome> =>
      Promise.resolve({ result: result as ProbeResult, output: "", error }),
  };
}

/** A settable fake exec prober that also counts its calls. */
export class SyncExecProber implements ExecProber {
  result: ProbeResult = "success";
  error: Error | undefined;
  calls = 0;

  /** Changes what the next probes answer. */
  set(result: ProbeResult, error?: Error): void {
    this.result = result;
    this.error = error;
  }

  /** Answers the current result. */
  probe(_cmd: Cmd): Promise<ProbeOutcome> {
    this.calls++;
    return Promise.resolve({ result: this.result, output: "", error: this.error });
  }
}

/** kubelet's syncExecProber. */
export function syncExecProber(): SyncExecProber {
  return new SyncExecProber();
}
