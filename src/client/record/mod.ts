/**
 * Event recording to the API server: recorder, broadcaster, sink and correlator.
 * @module
 */
export {
  defaultSleepDurationMs,
  EventBroadcaster,
  type EventBroadcasterOptions,
  type EventOptions,
  type EventRecorder,
  type EventSink,
  EventSinkImpl,
  type EventType,
  type EventWatcher,
  makeEvent,
  maxQueuedEvents,
  maxTriesPerEvent,
} from "./event.ts";
export {
  type CorrelatorOptions,
  defaultAggregateIntervalInSeconds,
  defaultAggregateMaxEvents,
  defaultSpamBurst,
  defaultSpamQPS,
  EventAggregator,
  eventAggregatorByReasonFunc,
  eventAggregatorByReasonMessageFunc,
  type EventCorrelateResult,
  EventCorrelator,
  EventNamer,
  EventSourceObjectSpamFilter,
  getEventKey,
  getSpamKey,
  LruCache,
  maxLruCacheEntries,
} from "./events_cache.ts";
