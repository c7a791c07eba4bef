/**
 * The event correlator between a recorder and the API: it counts identical events (the next one
 * becomes a PATCH of `count`, `lastTimestamp` and `message` on the first one's Event), folds more
 * than 10 similar events (same source, object, type and reason) within 10 minutes into one
 * "(combined from similar events): ..." event, and drops events beyond a per-object budget (25 at
 * once, then one per 5 minutes). Caches are LRUs of 4096 entries.
 * Mirrors k8s.io/client-go/tools/record/events_cache.go.
 * @module
 */
import type { Event } from "../../api/core/v1/mod.ts";
import { metav1Time } from "../../api/meta/v1/mod.ts";
import type { Clock } from "../../util/clock.ts";
import { TokenBucketRateLimiter } from "../../util/flowcontrol/throttle.ts";
import { createTwoWayMergePatch } from "../../util/strategicpatch/patch.ts";
import { eventSchema } from "../../util/strategicpatch/schema.ts";

/** Entries kept by each of the correlator's caches. */
export const maxLruCacheEntries = 4096;
/** Similar events (differing only in message) tolerated before they are combined. */
export const defaultAggregateMaxEvents = 10;
/** Window in which similar events count towards combining. */
export const defaultAggregateIntervalInSeconds = 600;
/** Events a source may send about one object at once. */
export const defaultSpamBurst = 25;
/** Refill of that budget: one event per 300 s. */
export const defaultSpamQPS = 1 / 300;

/**
 * A least-recently-used map: `get` refreshes an entry, `add` evicts the oldest beyond `maxEntries`
 * (github.com/golang/groupcache/lru).
 */
export class LruCache<V> {
  readonly #max: number;
  readonly #entries = new Map<string, V>();

  /** Holds at most `maxEntries` entries. */
  constructor(maxEntries: number) {
    this.#max = maxEntries;
  }

  /** The value under `key`, marking it as recently used. */
  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Stores `value` as the most recently used entry. */
  add(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#max) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }

  /** Number of entries. */
  get size(): number {
    return this.#entries.size;
  }
}

const src = (e: Event) => e.source ?? {};
const obj = (e: Event) => e.involvedObject ?? {};

/** Identifies identical events: source, object (with field path), type, reason and message. */
export function getEventKey(event: Event): string {
  return [
    src(event).component,
    src(event).host,
    obj(event).kind,
    obj(event).namespace,
    obj(event).name,
    obj(event).fieldPath,
    obj(event).uid,
    obj(event).apiVersion,
    event.type,
    event.reason,
    event.message,
  ].map((s) => s ?? "").join("");
}

/** Identifies the spam budget of an event: its source and object. */
export function getSpamKey(event: Event): string {
  return spamKeyParts(event).map((s) => s ?? "").join("");
}

// The source and the object without its field path: the spam key, and the start of the
// aggregation key.
function spamKeyParts(event: Event): (string | undefined)[] {
  return [
    src(event).component,
    src(event).host,
    obj(event).kind,
    obj(event).namespace,
    obj(event).name,
    obj(event).uid,
    obj(event).apiVersion,
  ];
}

/**
 * The aggregation group of an event (everything but the message and field path) and its key
 * within the group (the message). Go's `EventAggregatorByReasonFunc`.
 */
export function eventAggregatorByReasonFunc(
  event: Event,
): [aggregateKey: string, localKey: string] {
  const aggregateKey = [
    ...spamKeyParts(event),
    event.type,
    event.reason,
    event.reportingComponent,
    event.reportingInstance,
  ].map((s) => s ?? "").join("");
  return [aggregateKey, event.message ?? ""];
}

/** The message of a combined event. */
export function eventAggregatorByReasonMessageFunc(event: Event): string {
  return "(combined from similar events): " + (event.message ?? "");
}

/** Event names: `<object name>.<UnixNano in hex>`, distinct within a millisecond. */
export class EventNamer {
  #lastMs = -1;
  #seq = 0;

  /** The name for an event about `objectName` at `ms`. */
  name(objectName: string, ms: number): string {
    if (ms !== this.#lastMs) {
      this.#lastMs = ms;
      this.#seq = 0;
    }
    const nanos = BigInt(Math.floor(ms)) * 1_000_000n + BigInt(this.#seq++);
    return `${objectName}.${nanos.toString(16)}`;
  }
}

/** Drops events beyond a token-bucket budget per source and object. */
export class EventSourceObjectSpamFilter {
  readonly #cache: LruCache<TokenBucketRateLimiter>;
  readonly #burst: number;
  readonly #qps: number;
  readonly #clock: Clock;
  readonly #spamKeyFunc: (e: Event) => string;

  /** A filter with a bucket of `burst` refilled at `qps` per key. */
  constructor(
    clock: Clock,
    options: { cacheSize: number; burst: number; qps: number; spamKeyFunc: (e: Event) => string },
  ) {
    this.#cache = new LruCache(options.cacheSize);
    this.#burst = options.burst;
    this.#qps = options.qps;
    this.#clock = clock;
    this.#spamKeyFunc = options.spamKeyFunc;
  }

  /** True when `event` must be dropped. */
  filter(event: Event): boolean {
    const key = this.#spamKeyFunc(event);
    let limiter = this.#cache.get(key);
    if (!limiter) {
      limiter = new TokenBucketRateLimiter(this.#clock, { qps: this.#qps, burst: this.#burst });
    }
    const drop = !limiter.tryAccept();
    this.#cache.add(key, limiter);
    return drop;
  }
}

interface AggregateRecord {
  localKeys: Set<string>;
  lastTimestamp: number;
}

/** Combines similar events into one once there are too many of them. */
export class EventAggregator {
  readonly #cache: LruCache<AggregateRecord>;
  readonly #clock: Clock;
  readonly #maxEvents: number;
  readonly #maxIntervalMs: number;
  readonly #namer: EventNamer;
  readonly #keyFunc: (e: Event) => [string, string];
  readonly #messageFunc: (e: Event) => string;

  /** An aggregator over an LRU of `cacheSize` groups. */
  constructor(
    clock: Clock,
    options: {
      cacheSize: number;
      maxEvents: number;
      maxIntervalInSeconds: number;
      namer: EventNamer;
      keyFunc: (e: Event) => [string, string];
      messageFunc: (e: Event) => string;
    },
  ) {
    this.#cache = new LruCache(options.cacheSize);
    this.#clock = clock;
    this.#maxEvents = options.maxEvents;
    this.#maxIntervalMs = options.maxIntervalInSeconds * 1000;
    this.#namer = options.namer;
    this.#keyFunc = options.keyFunc;
    this.#messageFunc = options.messageFunc;
  }

  /**
   * The event to record and its cache key: `newEvent` with its full key while its group is small,
   * else a fresh combined event keyed by the group (so later ones count on it).
   */
  eventAggregate(newEvent: Event): { event: Event; key: string } {
    const now = this.#clock.now();
    const eventKey = getEventKey(newEvent);
    const [aggregateKey, localKey] = this.#keyFunc(newEvent);
    let record = this.#cache.get(aggregateKey);
    if (!record || now - record.lastTimestamp > this.#maxIntervalMs) {
      record = { localKeys: new Set(), lastTimestamp: 0 };
    }
    record.localKeys.add(localKey);
    record.lastTimestamp = now;
    this.#cache.add(aggregateKey, record);
    if (record.localKeys.size < this.#maxEvents) return { event: newEvent, key: eventKey };
    // Keep the set from growing past the threshold (Go pops an arbitrary member).
    record.localKeys.delete(record.localKeys.values().next().value!);
    const t = metav1Time(now);
    const combined: Event = {
      metadata: {
        name: this.#namer.name(newEvent.involvedObject?.name ?? "", now),
        namespace: newEvent.metadata?.namespace,
      },
      count: 1,
      firstTimestamp: t,
      involvedObject: newEvent.involvedObject,
      lastTimestamp: t,
      message: this.#messageFunc(newEvent),
      type: newEvent.type,
      reason: newEvent.reason,
      source: newEvent.source,
    };
    return { event: combined, key: aggregateKey };
  }
}

interface EventLog {
  count: number;
  firstTimestamp?: string | null;
  name?: string;
  resourceVersion?: string;
}

/** Counts occurrences of identical events and prepares the PATCH for a repeat. */
class EventLogger {
  readonly #cache: LruCache<EventLog>;

  constructor(cacheSize: number) {
    this.#cache = new LruCache(cacheSize);
  }

  /** The event to send (a repeat takes the first one's name and a higher count) and its patch. */
  eventObserve(newEvent: Event, key: string): { event: Event; patch?: string } {
    const event: Event = { ...newEvent, metadata: { ...newEvent.metadata } };
    const last = this.#cache.get(key);
    let patch: string | undefined;
    if (last && last.count > 0) {
      event.metadata.name = last.name;
      event.metadata.resourceVersion = last.resourceVersion;
      event.firstTimestamp = last.firstTimestamp;
      event.count = last.count + 1;
      // The patch carries exactly what changes on a repeat: count, lastTimestamp, message.
      const base: Event = { ...event, lastTimestamp: metav1Time(0) };
      delete base.count;
      delete base.message;
      patch = createTwoWayMergePatch(base, event, eventSchema);
    }
    this.#cache.add(key, {
      count: event.count ?? 0,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata.name,
      resourceVersion: event.metadata.resourceVersion,
    });
    return { event, patch };
  }

  /** Records the server's answer (name, resourceVersion, count) for the next repeat. */
  updateState(event: Event): void {
    this.#cache.add(getEventKey(event), {
      count: event.count ?? 0,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata?.name,
      resourceVersion: event.metadata?.resourceVersion,
    });
  }
}

/** Options of `EventCorrelator` (client-go's `CorrelatorOptions`; zero values take defaults). */
export interface CorrelatorOptions {
  lruCacheSize?: number;
  burstSize?: number;
  qps?: number;
  keyFunc?: (e: Event) => [string, string];
  messageFunc?: (e: Event) => string;
  maxEvents?: number;
  maxIntervalInSeconds?: number;
  spamKeyFunc?: (e: Event) => string;
  /** Names combined events (shared with the recorder so names stay distinct). */
  namer?: EventNamer;
}

/** What the correlator decided for one event. */
export interface EventCorrelateResult {
  /** The event to write (absent when skipped). */
  event?: Event;
  /** The strategic merge patch for a repeat (then `event.count > 1`). */
  patch?: string;
  /** Drop the event (over the spam budget). */
  skip: boolean;
}

/**
 * Filters, combines and counts events before they go to the API.
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * import type { Event } from "../../api/core/v1/mod.ts";
 *
 * declare const clock: Clock;
 * declare const event: Event;
 *
 * const correlator = new EventCorrelator(clock);
 * const result = correlator.eventCorrelate(event);
 * if (!result.skip) console.log(result.event, result.patch);
 * ```
 */
export class EventCorrelator {
  readonly #filter: EventSourceObjectSpamFilter;
  readonly #aggregator: EventAggregator;
  readonly #logger: EventLogger;

  /** A correlator on `clock` with client-go's defaults unless `options` say otherwise. */
  constructor(clock: Clock, options: CorrelatorOptions = {}) {
    const cacheSize = options.lruCacheSize || maxLruCacheEntries;
    this.#filter = new EventSourceObjectSpamFilter(clock, {
      cacheSize,
      burst: options.burstSize || defaultSpamBurst,
      qps: options.qps || defaultSpamQPS,
      spamKeyFunc: options.spamKeyFunc ?? getSpamKey,
    });
    this.#aggregator = new EventAggregator(clock, {
      cacheSize,
      maxEvents: options.maxEvents || defaultAggregateMaxEvents,
      maxIntervalInSeconds: options.maxIntervalInSeconds || defaultAggregateIntervalInSeconds,
      namer: options.namer ?? new EventNamer(),
      keyFunc: options.keyFunc ?? eventAggregatorByReasonFunc,
      messageFunc: options.messageFunc ?? eventAggregatorByReasonMessageFunc,
    });
    this.#logger = new EventLogger(cacheSize);
  }

  /** Aggregates, counts, then applies the spam filter (Go's `EventCorrelate`). */
  eventCorrelate(newEvent: Event): EventCorrelateResult {
    const { event: aggregated, key } = this.#aggregator.eventAggregate(newEvent);
    const { event, patch } = this.#logger.eventObserve(aggregated, key);
    if (this.#filter.filter(event)) return { skip: true };
    return { event, patch, skip: false };
  }

  /** Remembers what the server returned for `event` (Go's `UpdateState`). */
  updateState(event: Event): void {
    this.#logger.updateState(event);
  }
}
