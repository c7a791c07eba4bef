/**
 * Event recording to the API server: recorder, broadcaster, sink and correlator.
 * @module
 */
export * from "./event.ts";
export * from "./events_cache.ts";
