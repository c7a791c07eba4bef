/**
 * The pod lifecycle event generator: relists the runtime's containers and sandboxes every second,
 * compares each one's state with the previous listing, and emits `ContainerStarted`,
 * `ContainerDied`, `ContainerRemoved` and `ContainerChanged` events for the pod they belong to, so
 * the agent syncs exactly the pods whose containers changed instead of every pod every second.
 * Mirrors kubelet's pkg/kubelet/pleg/generic.go (GenericPLEG, generateEvents, Relist) and the
 * event types of pleg.go. Reduced: there is no pod status cache (a sync reads the runtime itself)
 * and no watch conditions.
 * @module
 */
import type { Clock, ClockTimer } from "../../util/clock.ts";
import { Channel } from "../../util/channel.ts";
import { goDuration } from "../../util/go_format.ts";
import * as log from "../../util/log.ts";
import type { RuntimeContainer, RuntimeContainerState, RuntimePod } from "../container/runtime.ts";

/** kubelet's relist period (`genericPlegRelistPeriod`). */
export const genericPlegRelistPeriodMs = 1000;
/** kubelet's relist threshold (`genericPlegRelistThreshold`): longer without a relist is unhealthy. */
export const genericPlegRelistThresholdMs = 3 * 60_000;
/** kubelet's PLEG channel capacity (`plegChannelCapacity`); events beyond it are dropped. */
export const plegChannelCapacity = 1000;

/** What happened to a container (kubelet's `PodLifeCycleEventType`). */
export type PodLifeCycleEventType =
  | "ContainerStarted"
  | "ContainerDied"
  | "ContainerRemoved"
  | "ContainerChanged";

/** One event: the pod's UID, what happened, and the container (or sandbox) ID. */
export interface PodLifecycleEvent {
  /** The pod's UID. */
  id: string;
  type: PodLifeCycleEventType;
  /** The container or sandbox ID (without the runtime prefix). */
  data: string;
}

/** Where the PLEG lists pods from: the runtime manager's `getPods`. */
export interface PodLister {
  /** Every pod of this node on the runtime, with its containers' and sandboxes' states. */
  getPods(): Promise<RuntimePod[]>;
}

/** Options of {@linkcode GenericPLEG}. */
export interface GenericPLEGOptions {
  runtime: PodLister;
  clock: Clock;
  /** Relist period (default 1 s). */
  relistPeriodMs?: number;
  /** Relist threshold for {@linkcode GenericPLEG.healthy} (default 3 min). */
  relistThresholdMs?: number;
  /** Event channel capacity (default 1000). */
  capacity?: number;
}

// kubecontainer.State plus "non-existent", as plegContainerState.
type PlegContainerState = "running" | "exited" | "unknown" | "non-existent";

function convertState(state: RuntimeContainerState): PlegContainerState {
  switch (state) {
    case "running":
      return "running";
    case "exited":
      return "exited";
    default:
      // kubelet does not use "created" yet: it counts as unknown.
      return "unknown";
  }
}

/**
 * The events one container's state change yields (kubelet's `generateEvents`): nothing when the
 * state is unchanged; a container that disappears without having been seen exited also dies.
 *
 * @example
 * ```ts
 * generateEvents("uid", "c1", { oldState: "running", newState: "exited" });
 * // [{ id: "uid", type: "ContainerDied", data: "c1" }]
 * ```
 */
export function generateEvents(
  podID: string,
  cid: string,
  states: { oldState: PlegContainerState; newState: PlegContainerState },
): PodLifecycleEvent[] {
  const { oldState, newState } = states;
  if (newState === oldState) return [];
  log.V(4).info("GenericPLEG", { podUID: podID, containerID: cid, oldState, newState });
  switch (newState) {
    case "running":
      return [{ id: podID, type: "ContainerStarted", data: cid }];
    case "exited":
      return [{ id: podID, type: "ContainerDied", data: cid }];
    case "unknown":
      return [{ id: podID, type: "ContainerChanged", data: cid }];
    case "non-existent":
      // A container already reported dead is only removed.
      if (oldState === "exited") return [{ id: podID, type: "ContainerRemoved", data: cid }];
      return [
        { id: podID, type: "ContainerDied", data: cid },
        { id: podID, type: "ContainerRemoved", data: cid },
      ];
  }
}

interface PodRecord {
  old?: RuntimePod;
  current?: RuntimePod;
}

/**
 * Kubelet's `GenericPLEG`: relists periodically and sends events on {@linkcode GenericPLEG.watch}.
 * Sandboxes count as containers of their pod, as in kubelet.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 *
 * declare const runtimeManager: ConstructorParameters<typeof GenericPLEG>[0]["runtime"];
 * const pleg = new GenericPLEG({ runtime: runtimeManager, clock });
 * pleg.start();
 * for await (const e of pleg.watch()) console.log(e.type, e.id);
 * ```
 */
export class GenericPLEG {
  readonly #runtime: PodLister;
  readonly #clock: Clock;
  readonly #periodMs: number;
  readonly #thresholdMs: number;
  readonly #events: Channel<PodLifecycleEvent>;
  #records = new Map<string, PodRecord>();
  #relistTime?: number;
  #timer?: ClockTimer;
  #running = false;
  #relisting?: Promise<void>;
  /**
   * When the last successful relist began (kubelet's pod cache timestamp, which Relist sets with
   * `UpdateTime` once it is done); -Infinity before the first.
   */
  #cacheTimestamp = -Infinity;
  /** How many relists have begun (a count the wall clock cannot step back). */
  #relistsBegun = 0;
  /**
   * Callers of {@linkcode waitNewerThan}, each with the time it waits past and the number of
   * relists begun when it started waiting.
   */
  #newerThanWaiters: { minTime: number; relistsBegun: number; resolve: () => void }[] = [];

  /** Creates a stopped PLEG. */
  constructor(options: GenericPLEGOptions) {
    this.#runtime = options.runtime;
    this.#clock = options.clock;
    this.#periodMs = options.relistPeriodMs ?? genericPlegRelistPeriodMs;
    this.#thresholdMs = options.relistThresholdMs ?? genericPlegRelistThresholdMs;
    this.#events = new Channel(options.capacity ?? plegChannelCapacity);
  }

  /** The events, in the order they were generated. Closed by {@linkcode stop}. */
  watch(): Channel<PodLifecycleEvent> {
    return this.#events;
  }

  /** Relists now and then every period after the previous relist ended (`wait.Until`). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    const loop = () => {
      if (!this.#running) return;
      this.#relisting = this.relist().catch((e) => {
        log.error(e, "GenericPLEG: Relist failed");
      }).finally(() => {
        this.#relisting = undefined;
        if (this.#running) this.#timer = this.#clock.afterFunc(this.#periodMs, loop);
      });
    };
    loop();
  }

  /** Stops relisting, waits for a relist in progress and closes the event channel. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#timer?.stop();
    await this.#relisting;
    this.#events.close();
    // Nothing will relist any more: no one waits for it.
    for (const w of this.#newerThanWaiters.splice(0)) w.resolve();
  }

  /**
   * Resolves once a relist that began after `minTime` (ms) has completed, or when the PLEG
   * stops: kubelet's `cache.GetNewerThan`, with which the pod worker takes the pod status for its
   * next sync (newer than the end of its last one). probelet's syncs read the runtime themselves,
   * so what is kept is the wait: the next sync starts after the next relist. Go's times carry a
   * monotonic reading and `Date.now()` does not: a relist begun after the call also counts when its
   * start reads earlier than `minTime` (the wall clock stepped back), so a step back cannot hold a
   * terminating pod for its length.
   *
   * @example
   * ```ts
   * import type { Clock } from "../../util/clock.ts";
   *
   * declare const clock: Clock;
   * declare const pleg: GenericPLEG;
   *
   * const lastSyncTime = clock.now();
   * await pleg.waitNewerThan(lastSyncTime); // up to one relist period later
   * ```
   */
  waitNewerThan(minTime: number): Promise<void> {
    if (this.#cacheTimestamp > minTime || !this.#running) return Promise.resolve();
    return new Promise((resolve) =>
      this.#newerThanWaiters.push({ minTime, relistsBegun: this.#relistsBegun, resolve })
    );
  }

  // kubelet's cache.UpdateTime: the relist that began at `timestamp`, the `relist`-th, is done.
  #updateTime(timestamp: number, relist: number): void {
    this.#cacheTimestamp = timestamp;
    if (this.#newerThanWaiters.length === 0) return;
    const waiting = this.#newerThanWaiters;
    this.#newerThanWaiters = [];
    for (const w of waiting) {
      const steppedBack = relist > w.relistsBegun && timestamp < w.minTime;
      if (timestamp > w.minTime || steppedBack) w.resolve();
      else this.#newerThanWaiters.push(w);
    }
  }

  /** Whether a relist succeeded within the threshold (kubelet's `Healthy`). */
  healthy(): { ok: boolean; message: string } {
    if (this.#relistTime === undefined) {
      return { ok: false, message: "pleg has yet to be successful" };
    }
    const elapsed = this.#clock.since(this.#relistTime);
    if (elapsed > this.#thresholdMs) {
      return {
        ok: false,
        message: `pleg was last seen active ${goDuration(elapsed)} ago; threshold is ${
          goDuration(this.#thresholdMs)
        }`,
      };
    }
    return { ok: true, message: "" };
  }

  /**
   * Lists the runtime's pods, compares every container and sandbox with the previous listing and
   * sends the events (kubelet's `Relist`). A failed listing is logged and changes nothing.
   */
  async relist(): Promise<void> {
    log.V(5).info("GenericPLEG: Relisting");
    const timestamp = this.#clock.now();
    const relist = ++this.#relistsBegun;
    let pods: RuntimePod[];
    try {
      pods = await this.#runtime.getPods();
    } catch (e) {
      log.error(e, "GenericPLEG: Unable to retrieve pods");
      return;
    }
    this.#relistTime = timestamp;
    this.#setCurrent(pods);
    for (const [pid, record] of this.#records) {
      // Every container and sandbox ID of the old and the current listing once, old ones first
      // (kubelet's getContainersFromPods), without building a set of them: most relists change
      // nothing, and then nothing is allocated for the pod.
      const { old, current } = record;
      let events = changedContainers(pid, record, old?.containers, undefined);
      events = changedContainers(pid, record, old?.sandboxes, events);
      events = changedContainers(pid, record, current?.containers, events);
      events = changedContainers(pid, record, current?.sandboxes, events);
      // Nothing to re-inspect here: a sync reads the runtime itself, so the record moves on.
      this.#update(pid);
      for (const event of events ?? []) {
        // ContainerChanged is not reliable enough for anyone to use yet (as in kubelet).
        if (event.type === "ContainerChanged") continue;
        if (!this.#events.trySend(event)) {
          log.error(undefined, "Event channel is full, discard this relist() cycle event");
        }
        if (event.type === "ContainerDied") {
          const exited = record.current?.containers.find((c) => c.id.id === event.data);
          if (exited) {
            log.V(2).info("Generic (PLEG): container finished", {
              podID: pid,
              containerID: event.data,
            });
          }
        }
      }
    }
    this.#updateTime(timestamp, relist);
  }

  #setCurrent(pods: RuntimePod[]): void {
    for (const record of this.#records.values()) record.current = undefined;
    for (const pod of pods) {
      const record = this.#records.get(pod.id);
      if (record) record.current = pod;
      else this.#records.set(pod.id, { current: pod });
    }
  }

  #update(pid: string): void {
    const record = this.#records.get(pid);
    if (!record) return;
    if (!record.current) this.#records.delete(pid);
    else record.old = record.current;
  }
}

// The events of the containers in `list` (of the record's old or current listing) whose state
// changed, appended to `events` (made on the first one). An ID of the current listing that the
// old one has too was handled with the old one.
function changedContainers(
  pid: string,
  record: PodRecord,
  list: RuntimeContainer[] | undefined,
  events: PodLifecycleEvent[] | undefined,
): PodLifecycleEvent[] | undefined {
  if (!list) return events;
  const fromOld = list === record.old?.containers || list === record.old?.sandboxes;
  for (const c of list) {
    const cid = c.id.id;
    if (!fromOld && findContainer(record.old, cid)) continue;
    const oldState = stateOf(record.old, cid);
    const newState = stateOf(record.current, cid);
    if (oldState === newState) continue;
    (events ??= []).push(...generateEvents(pid, cid, { oldState, newState }));
  }
  return events;
}

function findContainer(pod: RuntimePod | undefined, cid: string): RuntimeContainer | undefined {
  if (!pod) return undefined;
  for (const c of pod.containers) if (c.id.id === cid) return c;
  for (const s of pod.sandboxes) if (s.id.id === cid) return s;
  return undefined;
}

function stateOf(pod: RuntimePod | undefined, cid: string): PlegContainerState {
  const c = findContainer(pod, cid);
  return c ? convertState(c.state) : "non-existent";
}
