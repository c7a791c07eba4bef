/**
 * The agent's event sink: keeps the most recent events in a bounded in-memory list (served at
 * `/events` and shown by the live view) and passes each one on to other recorders (the structured
 * log). Counts repeats of the same event like client-go's event correlator, without its spam filter.
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
  /** Occurrences folded into this entry (identical object, type, reason and message in a row). */
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
    const last = this.#events.at(-1);
    this.#seq++;
    let stored: StoredEvent;
    if (
      last && last.type === options.type && last.reason === options.reason &&
      last.message === options.message && sameObject(last.involvedObject, ref)
    ) {
      last.count++;
      last.lastTimestamp = rfc3339(now);
      last.lastMs = now;
      last.seq = this.#seq;
      stored = last;
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
      if (this.#events.length > this.limit) {
        this.#events.splice(0, this.#events.length - this.limit);
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

function sameObject(a: ObjectReference, b: ObjectReference): boolean {
  return a.uid === b.uid && a.name === b.name && a.namespace === b.namespace &&
    a.fieldPath === b.fieldPath;
}
