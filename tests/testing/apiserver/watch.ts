/**
 * Watch streams as kube-apiserver serves them: a chunked body of one JSON event per line, headers
 * sent before any event, synthetic ADDED events for the current state when the watch starts at
 * resourceVersion "0" or unset, replay of the history after resourceVersion N, an ERROR event with
 * a 410 Expired Status below the compaction mark, BOOKMARK events when asked for, selector
 * transitions (an object leaving the selector is DELETED, one entering it is ADDED), and
 * `timeoutSeconds`. Mirrors k8s.io/apiserver's cacheWatcher (storage/cacher/cache_watcher.go) and
 * endpoints/handlers/watch.go.
 * @module
 */
import type { Clock, ClockTimer } from "../../../src/util/clock.ts";
import { expired, type JsonObject } from "./status.ts";
import { matches, type Selector } from "./selectors.ts";
import {
  apiVersionOf,
  clone,
  metaOf,
  type ResourceInfo,
  type Storage,
  type StoredEvent,
} from "./storage.ts";

/** What a watch request asked for. */
export interface WatchRequest {
  info: ResourceInfo;
  /** Undefined: all namespaces. */
  namespace?: string;
  selector: Selector;
  /** The `resourceVersion` query parameter ("" when absent). */
  resourceVersion: string;
  allowWatchBookmarks: boolean;
  sendInitialEvents: boolean;
  /** Closes the stream after this many seconds (from the injected clock). */
  timeoutSeconds?: number;
}

/** A line written on a watch stream, kept for tests that assert what was sent. */
export interface SentWatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: JsonObject;
}

/** Open watches, so `closeWatches()` can end them all at once. */
export class WatchRegistry {
  #open = new Set<() => void>();

  /** How many watch streams are open now. */
  get size(): number {
    return this.#open.size;
  }

  /** Registers a close function; returns the unregister function. */
  add(close: () => void): () => void {
    this.#open.add(close);
    return () => this.#open.delete(close);
  }

  /** Ends every open stream (clients see a clean end of body, as after a server-side timeout). */
  closeAll(): void {
    for (const close of [...this.#open]) close();
  }
}

const encoder = new TextEncoder();

function withTypeMeta(info: ResourceInfo, obj: JsonObject): JsonObject {
  return { kind: info.kind, apiVersion: apiVersionOf(info), ...obj };
}

// A stored event as seen through the watch's namespace and selectors (cacheWatcher's
// convertToWatchEvent): undefined when the watcher does not see it at all.
function visibleEvent(
  request: WatchRequest,
  event: StoredEvent,
): SentWatchEvent | undefined {
  const inScope = (obj: JsonObject | undefined) =>
    obj !== undefined &&
    (request.namespace === undefined || metaOf(obj).namespace === request.namespace) &&
    matches(request.info, obj, request.selector);
  const current = inScope(event.object);
  if (event.type === "DELETED") {
    return current ? { type: "DELETED", object: event.object } : undefined;
  }
  const before = event.type === "MODIFIED" && inScope(event.previous);
  if (current && (event.type === "ADDED" || !before)) {
    return { type: "ADDED", object: event.object };
  }
  if (current) return { type: "MODIFIED", object: event.object };
  if (before && event.previous) {
    // Left the selector: the watcher gets the old object at the new resourceVersion.
    const gone = clone(event.previous);
    metaOf(gone).resourceVersion = String(event.rv);
    return { type: "DELETED", object: gone };
  }
  return undefined;
}

/**
 * Starts a watch and returns its streaming Response (status 200, headers at once).
 * `sent` receives every event written, for tests.
 */
export function serveWatch(
  request: WatchRequest,
  options: {
    storage: Storage;
    clock: Clock;
    registry: WatchRegistry;
    /** Period of BOOKMARK events when allowWatchBookmarks is set. */
    bookmarkIntervalMs: number;
    signal: AbortSignal;
    sent?: (event: SentWatchEvent) => void;
  },
): Response {
  const { storage, clock, info } = { ...options, info: request.info };
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  // The deadline timers, and the periodic bookmark timer re-armed in place (one entry, however
  // long the watch lives).
  const timers: ClockTimer[] = [];
  let bookmarkTimer: ClockTimer | undefined;
  let unsubscribe = () => {};
  let unregister = () => {};

  // The resourceVersion this watcher has caught up to: a periodic bookmark is only worth sending
  // when the store has moved past it (kube-apiserver sends none on a quiet store).
  let caughtUp = 0;
  const write = (event: SentWatchEvent) => {
    if (closed) return;
    options.sent?.(event);
    const rv = Number(metaOf(event.object).resourceVersion);
    if (event.type !== "ERROR" && Number.isInteger(rv) && rv > caughtUp) caughtUp = rv;
    controller.enqueue(encoder.encode(JSON.stringify(event) + "\n"));
  };
  const close = () => {
    if (closed) return;
    closed = true;
    for (const t of timers) t.stop();
    bookmarkTimer?.stop();
    unsubscribe();
    unregister();
    options.signal.removeEventListener("abort", close);
    try {
      controller.close();
    } catch {
      // Already cancelled by the client.
    }
  };
  // A bookmark is the resource's empty object (as Go serialises a zero value) carrying only the
  // resourceVersion, e.g. {"kind":"Pod",...,"spec":{"containers":null},"status":{}}.
  const bookmark = (annotations?: Record<string, string>) =>
    write({
      type: "BOOKMARK",
      object: {
        kind: info.kind,
        apiVersion: apiVersionOf(info),
        metadata: {
          resourceVersion: String(storage.resourceVersion),
          ...(annotations ? { annotations } : {}),
        },
        ...clone(info.emptyObject),
      },
    });
  const periodicBookmark = () => {
    if (storage.resourceVersion > caughtUp) bookmark();
  };

  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      close();
    },
  });

  // Everything below runs synchronously: the history read and the subscription happen in the same
  // turn, so no commit can fall between them.
  const rv = request.resourceVersion === "" ? 0 : Number(request.resourceVersion);
  if (!Number.isInteger(rv) || rv < 0) {
    // The handler validates this; keep the stream sane regardless.
    close();
    return new Response(body, { status: 200, headers: watchHeaders() });
  }
  caughtUp = rv === 0 ? storage.resourceVersion : rv;
  if (rv === 0 || request.sendInitialEvents) {
    const objects = storage.list(info.resource, request.namespace)
      .filter((o) => matches(info, o, request.selector));
    for (const obj of objects) write({ type: "ADDED", object: withTypeMeta(info, obj) });
    if (request.sendInitialEvents && request.allowWatchBookmarks) {
      bookmark({ "k8s.io/initial-events-end": "true" });
    }
  } else {
    const history = storage.eventsAfter(info.resource, rv);
    if (history === undefined) {
      const status = expired(
        `too old resource version: ${rv} (${storage.compactedRevision})`,
      ).status;
      write({ type: "ERROR", object: status });
      close();
      return new Response(body, { status: 200, headers: watchHeaders() });
    }
    for (const event of history) {
      const visible = visibleEvent(request, event);
      if (visible) write(visible);
    }
  }
  unsubscribe = storage.subscribe((event) => {
    if (event.resource !== info.resource) return;
    const visible = visibleEvent(request, event);
    if (visible) write(visible);
  });
  unregister = options.registry.add(close);
  options.signal.addEventListener("abort", close);

  const timeoutMs = (request.timeoutSeconds ?? 0) * 1000;
  if (request.allowWatchBookmarks) {
    // cacheWatcher.nextBookmarkTime: roughly every bookmark interval, and 2 s before the
    // watch's deadline so the client resumes from as late as possible.
    const arm = () => {
      bookmarkTimer = clock.afterFunc(options.bookmarkIntervalMs, () => {
        periodicBookmark();
        if (!closed) arm();
      });
    };
    arm();
    if (timeoutMs > 2000) timers.push(clock.afterFunc(timeoutMs - 2000, periodicBookmark));
  }
  if (timeoutMs > 0) timers.push(clock.afterFunc(timeoutMs, close));
  return new Response(body, { status: 200, headers: watchHeaders() });
}

function watchHeaders(): Headers {
  return new Headers({
    "Content-Type": "application/json",
    "Cache-Control": "no-cache, private",
  });
}
