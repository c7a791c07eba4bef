/**
 * Events to the API server, as kubelet records them: a recorder makes core/v1 Events (name
 * `<object>.<hex UnixNano>`, source and reporting component/instance, namespace of the object or
 * `default`) and hands them to a broadcaster, whose watchers log them and write them to a sink
 * through the correlator: POST a new event, PATCH a repeat (re-create it if it is gone), drop one
 * the server rejects, retry transport failures up to 12 times 10 s apart (the first wait random).
 * Mirrors k8s.io/client-go/tools/record/event.go and typed/core/v1/event_expansion.go (the sink).
 * @module
 */
import type { Event, EventSource, ObjectReference } from "../../api/core/v1/mod.ts";
import { metav1Time } from "../../api/meta/v1/mod.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import { error as logError, info, V } from "../../util/log.ts";
import { apiDrainTimeoutMs, DrainingStop } from "../../util/wait/wait.ts";
import { asStatusError, isAlreadyExists } from "../errors.ts";
import { type Clientset, PatchType } from "../kubernetes/clientset.ts";
import { type CorrelatorOptions, EventCorrelator, EventNamer } from "./events_cache.ts";

/** Attempts per event before giving up (the first try included). */
export const maxTriesPerEvent = 12;
/** Pause between attempts. */
export const defaultSleepDurationMs = 10_000;
/** Events queued per watcher before new ones are dropped. */
export const maxQueuedEvents = 1000;

/** `Normal` or `Warning`. */
export type EventType = "Normal" | "Warning";

/** What one event says (the same shape as kubelet's in-process recorder interface). */
export interface EventOptions {
  type: EventType;
  reason: string;
  message: string;
  annotations?: Record<string, string>;
}

/** Records events about objects (client-go's `record.EventRecorder`). */
export interface EventRecorder {
  /** Records one event about the object `ref` points to. */
  event(ref: ObjectReference, options: EventOptions): void;
}

/** Where events are written (client-go's `EventSink`). */
export interface EventSink {
  /** Writes a new Event. */
  create(event: Event): Promise<Event>;
  /** Replaces an Event. */
  update(event: Event): Promise<Event>;
  /** Applies a strategic merge patch `data` to the Event `oldEvent` names. */
  patch(oldEvent: Event, data: string): Promise<Event>;
}

/**
 * The sink over a clientset: each event goes to its own namespace (client-go's `EventSinkImpl`
 * with `CreateWithEventNamespace`/`PatchWithEventNamespace`).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../kubernetes/clientset.ts";
 *
 * declare const eventClientset: Clientset;
 *
 * const broadcaster = new EventBroadcaster();
 * broadcaster.startRecordingToSink(new EventSinkImpl(eventClientset));
 * ```
 */
export class EventSinkImpl implements EventSink {
  readonly #client: Clientset;
  /** Options passed to each call (a signal that cancels them at shutdown). */
  signal?: AbortSignal;

  /** A sink writing with `client`. */
  constructor(client: Clientset) {
    this.#client = client;
  }

  /** POST `/api/v1/namespaces/<ns>/events`. */
  create(event: Event): Promise<Event> {
    return this.#client.coreV1.events(event.metadata.namespace ?? "").create(event, {
      signal: this.signal,
    });
  }

  /** PUT the event. */
  update(event: Event): Promise<Event> {
    return this.#client.coreV1.events(event.metadata.namespace ?? "").update(event, {
      signal: this.signal,
    });
  }

  /** PATCH the event with a strategic merge patch. */
  patch(oldEvent: Event, data: string): Promise<Event> {
    return this.#client.coreV1.events(oldEvent.metadata.namespace ?? "").patch(
      oldEvent.metadata.name ?? "",
      PatchType.StrategicMergePatch,
      data,
      { signal: this.signal },
    );
  }
}

/** A running watcher of the broadcaster; `stop()` ends it. */
export interface EventWatcher {
  /** Stops delivering events to this watcher. */
  stop(): void;
}

interface WatcherState {
  queue: Event[];
  handler: (event: Event) => Promise<void> | void;
  running: boolean;
  stopped: boolean;
  idle: (() => void)[];
}

/** Options of `EventBroadcaster`. */
export interface EventBroadcasterOptions {
  clock?: Clock;
  /** Pause between attempts to write an event (10 s). */
  sleepDurationMs?: number;
  correlatorOptions?: CorrelatorOptions;
  /** Randomness in [0, 1) for the first retry pause. */
  random?: () => number;
}

/**
 * Fans events out to watchers (a sink writer, a logger, tests), each with its own bounded queue.
 *
 * @example
 * ```ts
 * import type { ObjectReference } from "../../api/core/v1/mod.ts";
 * import type { Clientset } from "../kubernetes/clientset.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 * declare const clientset: Clientset;
 * declare const nodeName: string;
 * declare const nodeRef: ObjectReference;
 *
 * const broadcaster = new EventBroadcaster({ clock });
 * broadcaster.startStructuredLogging(3);
 * broadcaster.startRecordingToSink(new EventSinkImpl(clientset));
 * const recorder = broadcaster.newRecorder({ component: "kubelet", host: nodeName });
 * recorder.event(nodeRef, { type: "Normal", reason: "NodeReady", message: `Node ${nodeName} status is now: NodeReady` });
 * ```
 */
export class EventBroadcaster {
  readonly #clock: Clock;
  readonly #sleepMs: number;
  readonly #correlatorOptions: CorrelatorOptions;
  readonly #random: () => number;
  readonly #watchers = new Set<WatcherState>();
  /** Shutdown: retries end at once; a write in flight gets `apiDrainTimeoutMs` to finish. */
  readonly #stop = new DrainingStop();
  readonly #namer = new EventNamer();
  /** Counters for tests and metrics. */
  readonly stats = { dropped: 0, written: 0, patched: 0, failed: 0, skipped: 0 };

  /** A broadcaster on `options.clock` (default: the wall clock). */
  constructor(options: EventBroadcasterOptions = {}) {
    this.#clock = options.clock ?? new RealClock();
    this.#sleepMs = options.sleepDurationMs ?? defaultSleepDurationMs;
    this.#correlatorOptions = { namer: this.#namer, ...options.correlatorOptions };
    this.#random = options.random ?? Math.random;
  }

  /** Calls `handler` with each event, in order (Go's `StartEventWatcher`). */
  startEventWatcher(handler: (event: Event) => Promise<void> | void): EventWatcher {
    const state: WatcherState = { queue: [], handler, running: false, stopped: false, idle: [] };
    if (!this.#stop.stopping.aborted) this.#watchers.add(state);
    return {
      stop: () => {
        state.stopped = true;
        state.queue.length = 0;
        this.#watchers.delete(state);
        this.#wakeIdle(state);
      },
    };
  }

  /** Writes every event to `sink` through a correlator (Go's `StartRecordingToSink`). */
  startRecordingToSink(sink: EventSink): EventWatcher {
    const correlator = new EventCorrelator(this.#clock, this.#correlatorOptions);
    if (sink instanceof EventSinkImpl) sink.signal ??= this.#stop.requests;
    return this.startEventWatcher((event) => this.#recordToSink(sink, event, correlator));
  }

  /** Logs every event at verbosity `verbosity` (Go's `StartStructuredLogging`). */
  startStructuredLogging(verbosity: number): EventWatcher {
    return this.startEventWatcher((e) => {
      const ref = e.involvedObject ?? {};
      V(verbosity).info("Event occurred", {
        object: ref.namespace ? `${ref.namespace}/${ref.name ?? ""}` : ref.name ?? "",
        fieldPath: ref.fieldPath ?? "",
        kind: ref.kind ?? "",
        apiVersion: ref.apiVersion ?? "",
        type: e.type,
        reason: e.reason,
        message: e.message,
      });
    });
  }

  /** A recorder whose events carry `source` (Go's `NewRecorder`). */
  newRecorder(source: EventSource): EventRecorder {
    return new Recorder(this, source, this.#clock, this.#namer);
  }

  /** Queues `event` on every watcher; false when a full queue dropped it (Go's `ActionOrDrop`). */
  actionOrDrop(event: Event): boolean {
    if (this.#stop.stopping.aborted) return false;
    let sent = true;
    for (const w of this.#watchers) {
      if (w.queue.length >= maxQueuedEvents) {
        sent = false;
        this.stats.dropped++;
        continue;
      }
      w.queue.push(event);
      if (!w.running) void this.#drain(w);
    }
    return sent;
  }

  /**
   * Stops all watchers (Go's `Shutdown`): queued events are dropped and an event waiting to be
   * retried is given up; resolves once the writes in flight ended (cut after `apiDrainTimeoutMs`).
   */
  async shutdown(): Promise<void> {
    const writing: Promise<void>[] = [];
    for (const w of [...this.#watchers]) {
      w.stopped = true;
      w.queue.length = 0;
      this.#watchers.delete(w);
      this.#wakeIdle(w);
      if (w.running) writing.push(new Promise<void>((r) => w.idle.push(r)));
    }
    await this.#stop.stop(Promise.all(writing), { clock: this.#clock, drainMs: apiDrainTimeoutMs });
  }

  /** Resolves once every watcher has handled what is queued now (for tests and shutdown). */
  async flush(): Promise<void> {
    await Promise.all(
      [...this.#watchers].map((w) =>
        w.running || w.queue.length > 0 ? new Promise<void>((r) => w.idle.push(r)) : undefined
      ),
    );
  }

  #wakeIdle(w: WatcherState): void {
    const waiters = w.idle.splice(0);
    for (const r of waiters) r();
  }

  async #drain(w: WatcherState): Promise<void> {
    w.running = true;
    try {
      while (!w.stopped && w.queue.length > 0) {
        const event = w.queue.shift()!;
        try {
          await w.handler(event);
        } catch (err) {
          logError(err, "Event handler failed", { reason: event.reason });
        }
      }
    } finally {
      w.running = false;
      this.#wakeIdle(w);
    }
  }

  // Correlates, then writes with retries (Go's recordToSink).
  async #recordToSink(sink: EventSink, original: Event, correlator: EventCorrelator) {
    const result = correlator.eventCorrelate(structuredClone(original));
    if (result.skip || !result.event) {
      this.stats.skipped++;
      return;
    }
    const event = result.event;
    for (let tries = 1;; tries++) {
      if (await this.#recordEvent(sink, event, result.patch, correlator)) return;
      if (tries >= maxTriesPerEvent) {
        this.stats.failed++;
        logError(undefined, "Unable to write event (retry limit exceeded!)", eventFields(event));
        return;
      }
      // The first pause is random so that clients do not all come back at once.
      const delay = tries === 1 ? this.#sleepMs * this.#random() : this.#sleepMs;
      try {
        await this.#clock.sleep(delay, { signal: this.#stop.stopping });
      } catch {
        logError(undefined, "Unable to write event (broadcaster is shut down)", eventFields(event));
        return;
      }
    }
  }

  // True when written or abandoned, false to retry (Go's recordEvent).
  async #recordEvent(
    sink: EventSink,
    event: Event,
    patch: string | undefined,
    correlator: EventCorrelator,
  ): Promise<boolean> {
    const update = (event.count ?? 0) > 1;
    let written: Event | undefined;
    let err: unknown;
    if (update) {
      try {
        written = await sink.patch(event, patch ?? "{}");
        this.stats.patched++;
      } catch (e) {
        err = e;
      }
    }
    // A repeat whose Event was deleted (or expired) is created again.
    if (!update || (err !== undefined && asStatusError(err)?.code === 404)) {
      err = undefined;
      const fresh: Event = { ...event, metadata: { ...event.metadata } };
      delete fresh.metadata.resourceVersion;
      try {
        written = await sink.create(fresh);
        this.stats.written++;
      } catch (e) {
        err = e;
      }
    }
    if (err === undefined && written) {
      correlator.updateState(written);
      return true;
    }
    if (this.#stop.stopping.aborted) return true;
    if (asStatusError(err)) {
      // Something about the event is wrong: retrying would fail the same way.
      if (isAlreadyExists(err)) {
        V(5).info("Server rejected event (will not retry!)", {
          ...eventFields(event),
          err: String(err),
        });
      } else {
        logError(err, "Server rejected event (will not retry!)", eventFields(event));
      }
      return true;
    }
    logError(err, "Unable to write event (may retry after sleeping)", eventFields(event));
    return false;
  }
}

function eventFields(e: Event): Record<string, unknown> {
  const ref = e.involvedObject ?? {};
  return {
    event: e.metadata?.name ?? "",
    object: ref.namespace ? `${ref.namespace}/${ref.name ?? ""}` : ref.name ?? "",
    reason: e.reason,
  };
}

/** Makes Events and gives them to the broadcaster (Go's `recorderImpl`). */
class Recorder implements EventRecorder {
  readonly #broadcaster: EventBroadcaster;
  readonly #source: EventSource;
  readonly #clock: Clock;
  readonly #namer: EventNamer;

  constructor(broadcaster: EventBroadcaster, source: EventSource, clock: Clock, namer: EventNamer) {
    this.#broadcaster = broadcaster;
    this.#source = source;
    this.#clock = clock;
    this.#namer = namer;
  }

  event(ref: ObjectReference, options: EventOptions): void {
    if (options.type !== "Normal" && options.type !== "Warning") {
      logError(undefined, "Unsupported event type", { eventType: options.type });
      return;
    }
    const event = makeEvent(ref, options, this.#clock.now(), this.#namer);
    event.source = { ...this.#source };
    event.reportingComponent = this.#source.component ?? "";
    event.reportingInstance = this.#source.host ?? "";
    if (!this.#broadcaster.actionOrDrop(event)) {
      info("Unable to record event: too many queued events, dropped event", eventFields(event));
    }
  }
}

/**
 * The Event for `ref` at `ms`, before source and reporting fields are set (Go's `makeEvent`).
 * Field order follows Go's struct, so the POST body reads like kubelet's.
 */
export function makeEvent(
  ref: ObjectReference,
  options: EventOptions,
  ms: number,
  namer: EventNamer = new EventNamer(),
): Event {
  const t = metav1Time(ms);
  const metadata: Event["metadata"] = {
    name: namer.name(ref.name ?? "", ms),
    namespace: ref.namespace || "default",
  };
  if (options.annotations) metadata.annotations = { ...options.annotations };
  return {
    metadata,
    involvedObject: { ...ref },
    reason: options.reason,
    message: options.message,
    source: {},
    firstTimestamp: t,
    lastTimestamp: t,
    count: 1,
    type: options.type,
    eventTime: null,
    reportingComponent: "",
    reportingInstance: "",
  };
}
