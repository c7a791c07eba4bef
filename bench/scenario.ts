/**
 * One probe scale scenario, run in a process of its own: the real prober manager (RealClock, real
 * sockets, the production handlers) with N synthetic pods whose probes all hit the target process,
 * their statuses held by the in-memory status manager, the results managers' updates drained.
 *
 * Measurement points, none of them inside the worker:
 * - every probe attempt starts with the worker reading its pod status, so a thin wrapper around the
 *   status manager's `getPodStatus` sees the start of each `doProbe` (one worker per pod);
 * - a wrapper around `prober.probe` counts completed probes and their verdicts.
 *
 * - the manager's clock is a RealClock whose timers also report when they were due and fired, so
 *   each worker's ticks are known exactly (see `TickTracker`).
 *
 * Tick lateness is `start of doProbe − the tick's due time`; a tick the worker never acted on (the
 * ticker's one slot was still full, or the ticker skipped a grid point) is a missed period.
 * @module
 */
import { ProbePool } from "../src/probe/pool/pool.ts";
import type { Container, Pod, PodStatus, Probe } from "../src/api/core/v1/mod.ts";
import { RealClock } from "../src/util/clock.ts";
import { type CommandRunner, parseContainerID } from "../src/kubelet/container/mod.ts";
import { newManager, type ProberManager } from "../src/kubelet/prober/prober_manager.ts";
import { newManager as newResultsManager } from "../src/kubelet/prober/results/mod.ts";
import type { ResultsManager } from "../src/kubelet/prober/results/mod.ts";
import { Result } from "../src/kubelet/prober/results/mod.ts";
import {
  BasicPodManager,
  newManager as newStatusManager,
  type StatusManager,
} from "../src/kubelet/status/mod.ts";
import { HostCommandRunner } from "../src/probe/exec/host_runner.ts";
import { ProbeResult } from "../src/probe/probe.ts";
import type { TargetKind, TargetPorts } from "./floor.ts";
import { collectGarbage, cpuSeconds, quantile, rssBytes, threadCpuSeconds } from "./proc_stats.ts";

/**
 * What a scenario probes. `exec` runs `execCommand` through `runner`; `noop` is a TCP probe whose
 * handler answers Success at once, so the figures are the framework's own cost (worker, prober,
 * status lookup, metrics, results) without any I/O.
 */
export type ScenarioKind = TargetKind | "mix" | "exec" | "noop";

/** The parameters of one scenario. */
export interface ScenarioOptions {
  name: string;
  kind: ScenarioKind;
  /** Number of probe workers (= pods; one container with one probe each). */
  workers: number;
  periodSeconds: number;
  timeoutSeconds: number;
  /** Measurement window after the warm-up. */
  durationS: number;
  /** Seconds of probing before the window opens. */
  warmupS: number;
  targets?: TargetPorts;
  /** For exec scenarios. */
  runner?: CommandRunner;
  execCommand?: string[];
  /** Container ID of the container exec probes run in ("host://bench" for the host runner). */
  containerID?: string;
  /** Several containers to spread the exec probes over (pod i uses `containerIDs[i % length]`). */
  containerIDs?: string[];
  /** Threads of the probe pool (the agent's --probe-workers); 0 or absent: the main thread. */
  probeWorkers?: number;
}

/** The figures of one scenario. */
export interface ScenarioResult {
  name: string;
  kind: ScenarioKind;
  workers: number;
  /** Probe pool threads (0 = probes on the main thread). */
  probeWorkers: number;
  periodSeconds: number;
  durationS: number;
  /** Probes completed in the window (any verdict), per second. */
  probesPerSecond: number;
  /** Expected rate: workers / period. */
  expectedPerSecond: number;
  completed: number;
  failures: number;
  errors: number;
  /** User + system CPU seconds of this process per 1,000 completed probes. */
  cpuPer1000: number;
  /** CPU seconds used per wall second in the window (1 = one core busy). */
  cpuUtilisation: number;
  /** Resident memory per worker, bytes: idle (workers armed, no probe yet) and under load. */
  rssPerWorkerIdle: number;
  rssPerWorkerLoad: number;
  /** JS heap per idle worker, bytes (after a full GC when available). */
  heapPerWorkerIdle: number;
  rssBaselineMiB: number;
  rssIdleMiB: number;
  rssLoadMiB: number;
  /** Start of each doProbe minus its tick's due time, ms (1 ms resolution: Date.now(), as the ticker). */
  latenessMs: { p50: number; p99: number; max: number; samples: number };
  /** Ticks in the window the workers never acted on (dropped while one was pending, or skipped). */
  missedPeriods: number;
  /** Probe duration (prober.probe call to verdict) in milliseconds. */
  probeDurationMs: { p50: number; p99: number; max: number };
  /** Updates drained from the three results managers. */
  updates: number;
  gcExposed: boolean;
  /** Most file descriptors open at once (sampled every second in the window). */
  fdsMax: number;
  /** The most frequent probe event messages (digits masked) with their counts. */
  failureReasons: { message: string; count: number }[];
  /** CPU seconds per 1,000 probes in the window by thread name (JS thread = "deno"). */
  threadCpuPer1000: Record<string, number>;
}

const kinds: TargetKind[] = ["http", "https", "tcp", "grpc"];

function probeFor(kind: TargetKind | "exec" | "noop", i: number, o: ScenarioOptions): Probe {
  const base = {
    periodSeconds: o.periodSeconds,
    timeoutSeconds: o.timeoutSeconds,
    successThreshold: 1,
    failureThreshold: 3,
  };
  if (kind === "exec") return { ...base, exec: { command: o.execCommand ?? ["/bin/true"] } };
  if (kind === "noop") return { ...base, tcpSocket: { port: 1 } };
  const ports = o.targets![kind];
  const port = ports[Math.floor(i / 4) % ports.length];
  switch (kind) {
    case "http":
      return { ...base, httpGet: { path: "/healthz", port, scheme: "HTTP" } };
    case "https":
      return { ...base, httpGet: { path: "/healthz", port, scheme: "HTTPS" } };
    case "tcp":
      return { ...base, tcpSocket: { port } };
    case "grpc":
      return { ...base, grpc: { port } };
  }
}

/** Pod i: one container "app" with one probe (readiness and liveness alternate). */
function benchPod(i: number, o: ScenarioOptions): Pod {
  const kind = o.kind === "mix" ? kinds[i % kinds.length] : o.kind;
  const probe = probeFor(kind, i, o);
  const container: Container = { name: "app", image: "bench" };
  if (Math.floor(i / 4) % 2 === 0) container.readinessProbe = probe;
  else container.livenessProbe = probe;
  return {
    metadata: { name: `bench-${i}`, namespace: "bench", uid: `bench-uid-${i}` },
    spec: { containers: [container], restartPolicy: "Always" },
  };
}

function containerIDFor(pod: Pod, o: ScenarioOptions): string {
  if (o.containerIDs?.length) {
    const i = Number(pod.metadata!.name!.slice("bench-".length));
    return o.containerIDs[i % o.containerIDs.length];
  }
  return o.containerID ?? `containerd://${pod.metadata!.uid}`;
}

function runningStatus(pod: Pod, startedAt: string, o: ScenarioOptions): PodStatus {
  return {
    phase: "Running",
    podIP: "127.0.0.1",
    containerStatuses: [{
      name: "app",
      containerID: containerIDFor(pod, o),
      state: { running: { startedAt } },
      started: true,
      ready: false,
      restartCount: 0,
      image: "bench",
      imageID: "",
    }],
  };
}

/** One timer armed on the manager's clock: when it is due, and which worker's ticker it belongs to. */
interface Armed {
  due: number;
  uid?: string;
}

/**
 * The workers' real schedule, read off the manager's clock. Every timer on that clock is a worker's
 * ticker (or its start-up jitter sleep); a ticker re-arms itself inside its own callback, so each
 * re-armed timer inherits the worker of the timer that fired, and a worker's first timer is the one
 * armed right before its first status read. A fired tick stays pending until the worker's next
 * status read (= the start of its doProbe): lateness = start − due. A tick that fires while the
 * previous one is still pending is dropped by the worker (one-slot ticker), and a ticker that fires
 * more than a period late skips grid points: both count as missed periods.
 */
class TickTracker {
  #periodMs: number;
  #pending = new Map<string, number>();
  #known = new Set<string>();
  #lastArmed: Armed | undefined;
  #firing: Armed | undefined;
  samples: Float64Array = new Float64Array(1 << 16);
  count = 0;
  missed = 0;
  recording = false;

  constructor(periodMs: number) {
    this.#periodMs = periodMs;
  }

  /** A RealClock whose timers report to this tracker. */
  clock(): RealClock {
    // deno-lint-ignore no-this-alias
    const tracker = this;
    return new class extends RealClock {
      override afterFunc(ms: number, fn: () => void) {
        const armed: Armed = { due: Date.now() + Math.max(0, ms), uid: tracker.#firing?.uid };
        tracker.#armed(armed);
        return super.afterFunc(ms, () => {
          tracker.#fired(armed);
          tracker.#firing = armed;
          try {
            fn();
          } finally {
            tracker.#firing = undefined;
          }
        });
      }
    }();
  }

  #armed(armed: Armed): void {
    this.#lastArmed = armed;
    const firing = this.#firing;
    if (firing?.uid !== undefined && this.recording) {
      // The ticker moved to the first grid point after now: the ones in between were skipped.
      const skipped = Math.round((armed.due - firing.due) / this.#periodMs) - 1;
      if (skipped > 0) this.missed += skipped;
    }
  }

  #fired(armed: Armed): void {
    if (armed.uid === undefined) return;
    // The worker keeps one pending tick; a second one before it starts a probe is dropped.
    if (this.#pending.has(armed.uid) && this.recording) this.missed++;
    this.#pending.set(armed.uid, armed.due);
  }

  /** A worker read its pod status: a doProbe starts. */
  start(uid: string): void {
    const due = this.#pending.get(uid);
    if (due === undefined) {
      // The worker's first doProbe follows its ticker's creation synchronously.
      if (!this.#known.has(uid) && this.#lastArmed && this.#lastArmed.uid === undefined) {
        this.#known.add(uid);
        this.#lastArmed.uid = uid;
      }
      return;
    }
    this.#pending.delete(uid);
    if (!this.recording) return;
    if (this.count === this.samples.length) {
      const bigger = new Float64Array(this.samples.length * 2);
      bigger.set(this.samples);
      this.samples = bigger;
    }
    this.samples[this.count++] = Math.max(0, Date.now() - due);
  }

  /** Forget history before the window (keeps the workers' timers and pending ticks). */
  reset(): void {
    this.count = 0;
    this.missed = 0;
  }
}

/** A status manager that notes when each worker reads its pod status (= a doProbe starts). */
function instrumentedStatusManager(inner: StatusManager, tracker: TickTracker): StatusManager {
  return {
    getPodStatus(uid, options) {
      tracker.start(uid);
      return inner.getPodStatus(uid, options);
    },
    setPodStatus: (pod, status) => inner.setPodStatus(pod, status),
    setContainerReadiness: (uid, id, ready) => inner.setContainerReadiness(uid, id, ready),
    setContainerStartup: (uid, id, started) => inner.setContainerStartup(uid, id, started),
    deletePodStatus: (uid) => inner.deletePodStatus(uid),
    subscribe: (listener) => inner.subscribe(listener),
    terminatePod: (pod) => inner.terminatePod(pod),
    removeOrphanedStatuses: (uids) => inner.removeOrphanedStatuses(uids),
    start: () => inner.start(),
    stop: () => inner.stop(),
  };
}

function drain(m: ResultsManager, onUpdate: () => void): void {
  (async () => {
    for await (const _ of m.updates()) onUpdate();
  })();
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Warms up the code paths and module loading of the handlers used, so the baseline includes them. */
async function warmUp(
  manager: ProberManager,
  pods: Pod[],
  status: (p: Pod) => PodStatus,
  containerID: string,
) {
  const seen = new Set<string>();
  for (const pod of pods) {
    const c = pod.spec!.containers[0];
    const p = (c.readinessProbe ?? c.livenessProbe)!;
    const kind = p.exec ? "exec" : p.grpc ? "grpc" : p.tcpSocket ? "tcp" : p.httpGet!.scheme!;
    if (seen.has(kind)) continue;
    seen.add(kind);
    for (let i = 0; i < 3; i++) {
      await manager.prober.probe(c.readinessProbe ? "readiness" : "liveness", {
        pod,
        status: status(pod),
        container: c,
        containerID: parseContainerID(containerID),
      });
    }
  }
}

/**
 * Runs one scenario and returns its figures. Call it in a fresh process: it leaves the workers it
 * started running (the process is expected to exit afterwards).
 *
 * @example
 * ```ts
 * const r = await runScenario({ name: "tcp", kind: "tcp", workers: 100, periodSeconds: 1,
 *   timeoutSeconds: 1, durationS: 5, warmupS: 2, targets });
 * ```
 */
export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const periodMs = o.periodSeconds * 1000;
  const clock = new RealClock();
  const podManager = new BasicPodManager();
  const tracker = new TickTracker(periodMs);
  const statusManager = newStatusManager({ podManager, clock });
  const livenessManager = newResultsManager();
  const readinessManager = newResultsManager();
  const startupManager = newResultsManager();
  let updates = 0;
  for (const m of [livenessManager, readinessManager, startupManager]) {
    drain(m, () => updates++);
  }
  // The agent's path: HTTP, TCP and gRPC handlers on the pool's threads.
  const probePool = o.probeWorkers ? new ProbePool(o.probeWorkers) : undefined;
  const manager = newManager({
    probePool,
    statusManager: instrumentedStatusManager(statusManager, tracker),
    livenessManager,
    readinessManager,
    startupManager,
    runner: o.runner ?? new HostCommandRunner(),
    recorder: { event: () => {} },
    // A RealClock that also tells the tracker when each worker's ticks are due.
    clock: tracker.clock(),
  });
  // Events of failed probes, counted by message with digits masked (ports, durations), so the
  // report says why probes failed without keeping every event.
  const failureReasons = new Map<string, number>();
  manager.prober.recorder = {
    event(_ref, event) {
      const key = event.message.replace(/\d+/g, "N").slice(0, 160);
      failureReasons.set(key, (failureReasons.get(key) ?? 0) + 1);
    },
  };

  // Count verdicts and durations at the prober (outside the worker).
  const prober = manager.prober;
  if (o.kind === "noop") {
    prober.tcp = { probe: () => Promise.resolve({ result: ProbeResult.Success, output: "" }) };
  }
  const probe = prober.probe.bind(prober);
  let completed = 0;
  let failures = 0;
  let errors = 0;
  let inWindow = false;
  let durations = new Float64Array(1 << 16);
  let durationCount = 0;
  prober.probe = async (probeType, target) => {
    const t0 = performance.now();
    const r = await probe(probeType, target);
    if (inWindow) {
      completed++;
      if (r.error) errors++;
      else if (r.result !== Result.Success) failures++;
      if (durationCount === durations.length) {
        const bigger = new Float64Array(durations.length * 2);
        bigger.set(durations);
        durations = bigger;
      }
      durations[durationCount++] = performance.now() - t0;
    }
    return r;
  };

  const pods: Pod[] = [];
  for (let i = 0; i < o.workers; i++) pods.push(benchPod(i, o));
  const startedAt = new Date(manager.start).toISOString();
  await warmUp(
    manager,
    pods,
    (p) => runningStatus(p, startedAt, o),
    o.containerIDs?.[0] ?? o.containerID ?? "containerd://warmup",
  );

  const gcExposed = collectGarbage();
  await sleep(200);
  collectGarbage();
  const rssBaseline = rssBytes();
  const heapBaseline = Deno.memoryUsage().heapUsed;

  // Idle: every worker exists with its ticker armed, but no pod has a status yet, so each
  // doProbe returns right after the status lookup.
  for (const pod of pods) {
    podManager.addPod(pod);
    manager.addPod(pod);
  }
  // Jitter spreads the first doProbe over one period.
  await sleep(periodMs * 1.2);
  collectGarbage();
  const rssIdle = rssBytes();
  const heapIdle = Deno.memoryUsage().heapUsed;

  // Load: statuses say every container is running and started.
  for (const pod of pods) statusManager.setPodStatus(pod, runningStatus(pod, startedAt, o));
  await sleep(o.warmupS * 1000);

  tracker.reset();
  tracker.recording = true;
  inWindow = true;
  const cpu0 = cpuSeconds();
  const threads0 = threadCpuSeconds();
  const wall0 = performance.now();
  const rssSamples: number[] = [];
  let fdsMax = 0;
  const sampler = setInterval(() => {
    rssSamples.push(rssBytes());
    fdsMax = Math.max(fdsMax, openFileDescriptors());
  }, 1000);
  await sleep(o.durationS * 1000);
  inWindow = false;
  tracker.recording = false;
  const cpu = cpuSeconds() - cpu0;
  const threads1 = threadCpuSeconds();
  const threadCpuPer1000: Record<string, number> = {};
  for (const [name, seconds] of Object.entries(threads1)) {
    const used = seconds - (threads0[name] ?? 0);
    if (used > 0 && completed > 0) {
      threadCpuPer1000[name] = Math.round(used / completed * 1e6) / 1000;
    }
  }
  const wall = (performance.now() - wall0) / 1000;
  clearInterval(sampler);
  manager.cleanupPods(undefined);
  probePool?.close();

  const lateness = tracker.samples.subarray(0, tracker.count).sort();
  const durs = durations.subarray(0, durationCount).sort();
  const rssLoad = rssSamples.length > 0
    ? rssSamples.reduce((a, b) => a + b, 0) / rssSamples.length
    : rssBytes();
  const mib = (b: number) => Math.round(b / 1048576 * 10) / 10;
  return {
    name: o.name,
    kind: o.kind,
    workers: o.workers,
    probeWorkers: probePool?.size ?? 0,
    periodSeconds: o.periodSeconds,
    durationS: o.durationS,
    probesPerSecond: completed / wall,
    expectedPerSecond: o.workers / o.periodSeconds,
    completed,
    failures,
    errors,
    cpuPer1000: completed > 0 ? cpu / completed * 1000 : NaN,
    cpuUtilisation: cpu / wall,
    rssPerWorkerIdle: (rssIdle - rssBaseline) / o.workers,
    rssPerWorkerLoad: (rssLoad - rssBaseline) / o.workers,
    heapPerWorkerIdle: (heapIdle - heapBaseline) / o.workers,
    rssBaselineMiB: mib(rssBaseline),
    rssIdleMiB: mib(rssIdle),
    rssLoadMiB: mib(rssLoad),
    latenessMs: {
      p50: quantile(lateness, 0.5),
      p99: quantile(lateness, 0.99),
      max: lateness.length ? lateness[lateness.length - 1] : NaN,
      samples: lateness.length,
    },
    missedPeriods: tracker.missed,
    probeDurationMs: {
      p50: round2(quantile(durs, 0.5)),
      p99: round2(quantile(durs, 0.99)),
      max: round2(durs.length ? durs[durs.length - 1] : NaN),
    },
    updates,
    gcExposed,
    fdsMax,
    failureReasons: [...failureReasons].sort((x, y) => y[1] - x[1]).slice(0, 5)
      .map(([message, count]) => ({ message, count })),
    threadCpuPer1000,
  };
}

function openFileDescriptors(): number {
  let n = 0;
  for (const _ of Deno.readDirSync("/proc/self/fd")) n++;
  return n;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
