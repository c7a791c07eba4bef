/**
 * The agent's event sink: keeps the most recent events in a bounded in-memory list (served at
 * `/events` and shown by the live view) and passes each one on to other recorders (the structured
 * log). Counts repeats of the same event like client-go's event correlator (keyed by object, type,
 * reason and message, whatever came in between), without its spam filter.
 * There is no API server, so this list is the node's whole event history.
 * @module
 */
import type { ObjectReference } from "../api/core/v1/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { EventOptions, EventRecorder, EventType } from "./events/mod.ts";
import { rfc3339 } from "./kubelet_pods.ts";

/** One stored event, shaped like a core/v1 Event's interesting fields. */
export interface StoredEvent {
  type: EventType;
  reason: string;
  message: string;
  involvedObject: ObjectReference;
  /** RFC 3339 time of the first occurrence. */
  firstTimestamp: string;
  /** RFC 3339 time of the latest occurrence. */
  lastTimestamp: string;
  /** Occurrences folded into this entry (identical object, type, reason and message). */
  count: number;
  /** Epoch milliseconds of the latest occurrence. */
  lastMs: number;
  /** Monotonic sequence number of the latest occurrence. */
  seq: number;
}

/**
 * A bounded, newest-last list of events that also forwards every event.
 *
 * @example
 * ```ts
 * import { LogRecorder } from "./events/event.ts";
 * import { RealClock } from "../util/clock.ts";
 * import type { ObjectReference } from "../api/core/v1/mod.ts";
 *
 * declare const ref: ObjectReference;
 *
 * const events = new EventStore({ clock: new RealClock(), limit: 1000, forward: [new LogRecorder()] });
 * events.event(ref, { type: "Normal", reason: "Killing", message: "Container app failed liveness probe, will be restarted" });
 * events.list().at(-1)?.reason; // "Killing"
 * ```
 */
export class EventStore implements EventRecorder {
  readonly limit: number;
  #clock: Clock;
  #forward: EventRecorder[];
  #events: StoredEvent[] = [];
  /** The stored event of each (object, type, reason, message), as the correlator's cache. */
  #byKey = new Map<string, StoredEvent>();
  #seq = 0;
  #listeners = new Set<(e: StoredEvent) => void>();

  /** `limit` defaults to 1000 events. */
  constructor(options: { clock: Clock; limit?: number; forward?: EventRecorder[] }) {
    this.#clock = options.clock;
    this.limit = options.limit ?? 1000;
    this.#forward = options.forward ?? [];
  }

  /** Stores (or folds) the event, then forwards it. */
  event(ref: ObjectReference, options: EventOptions): void {
    const now = this.#clock.now();
    const key = eventKey(ref, options);
    const existing = this.#byKey.get(key);
    this.#seq++;
    let stored: StoredEvent;
    if (existing) {
      existing.count++;
      existing.lastTimestamp = rfc3339(now);
      existing.lastMs = now;
      existing.seq = this.#seq;
      stored = existing;
      // The list stays ordered by latest occurrence.
      const i = this.#events.lastIndexOf(existing);
      if (i !== this.#events.length - 1) {
        this.#events.splice(i, 1);
        this.#events.push(existing);
      }
    } else {
      stored = {
        type: options.type,
        reason: options.reason,
        message: options.message,
        involvedObject: { ...ref },
        firstTimestamp: rfc3339(now),
        lastTimestamp: rfc3339(now),
        count: 1,
        lastMs: now,
        seq: this.#seq,
      };
      this.#events.push(stored);
      this.#byKey.set(key, stored);
      if (this.#events.length > this.limit) {
        for (const e of this.#events.splice(0, this.#events.length - this.limit)) {
          this.#byKey.delete(eventKey(e.involvedObject, e));
        }
      }
    }
    for (const r of this.#forward) r.event(ref, options);
    for (const l of this.#listeners) l(stored);
  }

  /** Copies of the stored events, oldest first; optionally only those of one pod UID. */
  list(filter: { podUID?: string } = {}): StoredEvent[] {
    return this.#events
      .filter((e) => filter.podUID === undefined || e.involvedObject.uid === filter.podUID)
      .map((e) => ({ ...e, involvedObject: { ...e.involvedObject } }));
  }

  /** Calls `listener` after every event; returns the function that unsubscribes. */
  subscribe(listener: (e: StoredEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

// client-go's getEventKey, reduced to the fields probelet's events set.
function eventKey(ref: ObjectReference, e: { type: string; reason: string; message: string }) {
  return JSON.stringify([
    ref.uid ?? "",
    ref.name ?? "",
    ref.namespace ?? "",
    ref.fieldPath ?? "",
    e.type,
    e.reason,
    e.message,
  ]);
}
