/**
 * `deno task probe --watch`: keeps probing a pod manifest with the real prober manager and prints
 * every readiness, liveness and startup transition as it happens. There is no runtime here: each
 * container is taken to be running at the given pod IP (exec probes run on this machine), and a
 * liveness or startup failure "restarts" a container by giving it a new container ID, which is
 * what lifts kubelet's on-hold state.
 * @module
 */
import type { ContainerStatus, Pod, PodStatus } from "../../api/core/v1/mod.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import { containerIDString, parseContainerID } from "../../kubelet/container/mod.ts";
import { type EventOptions, type EventRecorder } from "../../kubelet/events/mod.ts";
import type { ObjectReference } from "../../api/core/v1/mod.ts";
import {
  newManager,
  newResultsManager,
  type ProbeType,
  probeTypeString,
  Result,
  resultString,
  type Update,
} from "../../kubelet/prober/mod.ts";
import { BasicPodManager, newManager as newStatusManager } from "../../kubelet/status/mod.ts";
import { HostCommandRunner } from "../../probe/exec/host_runner.ts";
import { StopSignal } from "../../util/stop_signal.ts";
import { probedContainers } from "../../kubelet/prober/prober_manager.ts";

/** Options of {@link watchProbes}. */
export interface WatchOptions {
  /** The pod IP the probes target. */
  podIP: string;
  /** Ends the watch: workers are stopped and the promise resolves. */
  signal: AbortSignal;
  /** Where lines go (default: console.log). */
  print?: (line: string) => void;
  /** Clock of the manager and its workers (default: the wall clock). */
  clock?: Clock;
}

/**
 * Probes `pods` until `signal` aborts, printing transitions and probe events.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pods: Pod[];
 * const ac = new AbortController();
 * Deno.addSignalListener("SIGINT", () => ac.abort());
 * await watchProbes(pods, { podIP: "127.0.0.1", signal: ac.signal });
 * ```
 */
export async function watchProbes(pods: Pod[], options: WatchOptions): Promise<void> {
  const print = options.print ?? ((line: string) => console.log(line));
  const clock = options.clock ?? new RealClock();
  const stamp = () => new Date(clock.now()).toISOString().slice(11, 19);
  const podManager = new BasicPodManager();
  const statusManager = newStatusManager({ podManager, clock });
  const recorder: EventRecorder = {
    event(ref: ObjectReference, e: EventOptions) {
      print(
        `${stamp()} event  ${ref.namespace}/${ref.name} ${
          ref.fieldPath ?? ""
        }: ${e.type} ${e.reason} ${e.message}`,
      );
    },
  };
  const manager = newManager({
    statusManager,
    livenessManager: newResultsManager(),
    readinessManager: newResultsManager(),
    startupManager: newResultsManager(),
    runner: new HostCommandRunner(),
    recorder,
    clock,
  });

  for (const pod of pods) {
    podManager.addPod(pod);
    manager.addPod(pod);
    syncStatus(pod, initialStatus(pod, options.podIP, clock));
    print(`${stamp()} watch  ${podName(pod)}: ${probedContainers(pod).length} container(s) probed`);
  }

  // As kubelet does when it generates a pod's API status: the prober fills in Started and Ready.
  function syncStatus(pod: Pod, status: PodStatus) {
    manager.updatePodStatus(pod, status);
    statusManager.setPodStatus(pod, status);
  }

  // kubelet's syncLoopIteration, reduced to what a probe-only run can do.
  const handle = (probeType: ProbeType, u: Update) => {
    const pod = podManager.getPodByUID(u.podUID);
    const status = statusManager.getPodStatus(u.podUID);
    if (!pod || !status) return;
    const cs = findStatus(status, containerIDString(u.containerID));
    if (!cs) return;
    print(
      `${stamp()} ${probeTypeString(probeType).padEnd(9)} ${podName(pod)} ${cs.name}: ${
        resultString(u.result)
      }`,
    );
    if (probeType === "readiness") {
      statusManager.setContainerReadiness(u.podUID, u.containerID, u.result === Result.Success);
    } else if (probeType === "startup") {
      statusManager.setContainerStartup(u.podUID, u.containerID, u.result === Result.Success);
    }
    const next = statusManager.getPodStatus(u.podUID) ?? status;
    if (u.result === Result.Failure && probeType !== "readiness") {
      print(
        `${stamp()} restart ${
          podName(pod)
        } ${cs.name}: Container ${cs.name} failed ${probeType} probe, will be restarted (probe-only run: a new container ID stands in for the restart)`,
      );
      restartContainer(pod, next, cs.name, clock);
    }
    syncStatus(pod, next);
  };
  // One waiter per consumer on the abort, not one listener per update received.
  const stop = new StopSignal();
  void aborted(options.signal).then(() => stop.stop());
  const consumers = (["liveness", "readiness", "startup"] as const).map(async (probeType) => {
    const updates = {
      liveness: manager.livenessManager,
      readiness: manager.readinessManager,
      startup: manager.startupManager,
    }[probeType].updates();
    while (!options.signal.aborted) {
      const next = await stop.race(updates.receive());
      if (!next || next.done) return;
      handle(probeType, next.value);
    }
  });

  await aborted(options.signal);
  for (const pod of pods) manager.removePod(pod);
  await Promise.all([...manager.workers.values()].map((w) => w.done));
  await Promise.all(consumers);
}

function initialStatus(pod: Pod, podIP: string, clock: Clock): PodStatus {
  const startedAt = new Date(clock.now()).toISOString();
  const running = (name: string): ContainerStatus => ({
    name,
    ready: false,
    started: false,
    restartCount: 0,
    containerID: `host://${pod.metadata.uid}/${name}/0`,
    state: { running: { startedAt } },
  });
  return {
    phase: "Running",
    conditions: [
      { type: "ContainersReady", status: "False", reason: "ContainersNotReady" },
      { type: "Ready", status: "False", reason: "ContainersNotReady" },
    ],
    podIP,
    podIPs: [{ ip: podIP }],
    containerStatuses: pod.spec.containers.map((c) => running(c.name)),
    initContainerStatuses: (pod.spec.initContainers ?? []).map((c) =>
      c.restartPolicy === "Always" ? running(c.name) : {
        name: c.name,
        ready: true,
        restartCount: 0,
        state: { terminated: { exitCode: 0, reason: "Completed" } },
      }
    ),
  };
}

function restartContainer(pod: Pod, status: PodStatus, name: string, clock: Clock): void {
  const cs = [...status.containerStatuses ?? [], ...status.initContainerStatuses ?? []]
    .find((c) => c.name === name);
  if (!cs) return;
  cs.restartCount += 1;
  cs.containerID = `host://${pod.metadata.uid}/${name}/${cs.restartCount}`;
  cs.ready = false;
  cs.started = false;
  cs.state = { running: { startedAt: new Date(clock.now()).toISOString() } };
}

function findStatus(status: PodStatus, id: string): ContainerStatus | undefined {
  return [...status.containerStatuses ?? [], ...status.initContainerStatuses ?? []]
    .find((c) => c.containerID === id && parseContainerID(id).id !== "");
}

function podName(pod: Pod): string {
  return `${pod.metadata.namespace ?? "default"}/${pod.metadata.name ?? ""}`;
}

function aborted(signal: AbortSignal): Promise<undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(undefined), { once: true })
  );
}
