/**
 * The reflector: keeps a store equal to the API server's view of one resource. LIST (resourceVersion
 * "0", served from the watch cache), then WATCH from the list's resourceVersion with bookmarks and a
 * server timeout drawn from [300 s, 600 s); each event moves the store and the last resourceVersion;
 * a closed stream is re-watched from there; `410 Expired` (too old resource version) re-lists;
 * failures back off 0.8 s doubling to 30 s with jitter. A watch that ends in under a second with no
 * events counts as a failure, so a server that keeps dropping watches is not hammered.
 * Mirrors k8s.io/client-go/tools/cache/reflector.go (ListAndWatch, watchHandler, Run).
 * @module
 */
import type { Status } from "../../api/meta/v1/mod.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import { info, V } from "../../util/log.ts";
import {
  asStatusError,
  isGone,
  isResourceExpired,
  isTooManyRequests,
  StatusError,
} from "../errors.ts";
import type { Watch } from "../kubernetes/clientset.ts";
import type { ListerWatcher } from "./listwatch.ts";
import type { MetaObject, Store } from "./store.ts";
import { errorText } from "../../util/errors.ts";

/** Shortest server-side watch timeout; each watch asks for [min, 2 × min) (client-go: 5 min). */
export const minWatchTimeoutSeconds = 300;

/** Options of `Reflector`. */
export interface ReflectorOptions {
  /** Names the reflector in logs (Go: `file:line` of the caller; kubelet's is the pod source). */
  name?: string;
  /** The clock for back-off sleeps and short-watch detection. */
  clock?: Clock;
  /** Randomness in [0, 1) for watch timeouts and back-off jitter. */
  random?: () => number;
  /** First back-off (0.8 s), cap (30 s), and the quiet time after which it resets (2 min). */
  backoff?: { initialMs?: number; capMs?: number; resetMs?: number };
}

/**
 * Exponential back-off shared across failures, reset after a quiet period
 * (client-go's `exponentialBackoffManagerImpl` with factor 2 and jitter 1.0).
 */
class BackoffManager {
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #initialMs: number;
  readonly #capMs: number;
  readonly #resetMs: number;
  #durationMs: number;
  #lastStart = -Infinity;

  constructor(clock: Clock, random: () => number, o: ReflectorOptions["backoff"] = {}) {
    this.#clock = clock;
    this.#random = random;
    this.#initialMs = o.initialMs ?? 800;
    this.#capMs = o.capMs ?? 30_000;
    this.#resetMs = o.resetMs ?? 120_000;
    this.#durationMs = this.#initialMs;
  }

  /** The next delay: the current step plus up to 100 % jitter; then the step doubles. */
  next(): number {
    const now = this.#clock.now();
    if (now - this.#lastStart > this.#resetMs) this.#durationMs = this.#initialMs;
    this.#lastStart = now;
    const step = this.#durationMs;
    this.#durationMs = Math.min(step * 2, this.#capMs);
    return step + this.#random() * step;
  }
}

/**
 * Mirrors the API server's objects into `store`.
 *
 * @example
 * ```ts
 * import { newListWatchFromClient } from "./listwatch.ts";
 * import { UndeltaStore } from "./undelta_store.ts";
 * import type { Node } from "../../api/core/v1/mod.ts";
 * import type { Clientset } from "../kubernetes/clientset.ts";
 *
 * declare const clientset: Clientset;
 * declare const node: Node;
 *
 * const lw = newListWatchFromClient(clientset.coreV1.pods(""), { fieldSelector: `spec.nodeName=${node}` });
 * const reflector = new Reflector(lw, new UndeltaStore((pods) => console.log(pods.length)));
 * const stop = new AbortController();
 * const done = reflector.run(stop.signal);
 * // ...
 * stop.abort();
 * await done;
 * ```
 */
export class Reflector<T extends MetaObject> {
  /** Names the reflector in logs. */
  readonly name: string;
  readonly #lw: ListerWatcher<T>;
  readonly #store: Store<T>;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #backoff: BackoffManager;
  #lastSyncResourceVersion = "";
  #lastSyncResourceVersionUnavailable = false;
  #synced = false;
  /** How many LISTs and WATCHes were started (for tests and metrics). */
  readonly stats = { lists: 0, watches: 0, events: 0 };

  /** A reflector from `lw` into `store`. */
  constructor(lw: ListerWatcher<T>, store: Store<T>, options: ReflectorOptions = {}) {
    this.#lw = lw;
    this.#store = store;
    this.name = options.name ?? "reflector";
    this.#clock = options.clock ?? new RealClock();
    this.#random = options.random ?? Math.random;
    this.#backoff = new BackoffManager(this.#clock, this.#random, options.backoff);
  }

  /** The resourceVersion of the last LIST or event applied ("" before the first LIST). */
  lastSyncResourceVersion(): string {
    return this.#lastSyncResourceVersion;
  }

  /** True once a LIST filled the store. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /**
   * Lists and watches until `signal` aborts, backing off between attempts (Go's `Run` with
   * `wait.BackoffUntil`); resolves after the abort.
   */
  async run(signal: AbortSignal): Promise<void> {
    V(3).info("Starting reflector", { reflector: this.name });
    while (!signal.aborted) {
      try {
        await this.listAndWatch(signal);
      } catch (err) {
        if (signal.aborted) break;
        info("Failed to watch", { reflector: this.name, err: errorText(err) });
      }
      if (signal.aborted) break;
      try {
        await this.#clock.sleep(this.#backoff.next(), { signal });
      } catch {
        break;
      }
    }
    V(3).info("Stopping reflector", { reflector: this.name });
  }

  /**
   * One LIST followed by WATCHes until an error, a 410, or `signal`. Resolves on a re-list
   * condition or the abort; rejects on other failures.
   */
  async listAndWatch(signal: AbortSignal): Promise<void> {
    await this.#list(signal);
    while (!signal.aborted) {
      const timeoutSeconds = Math.floor(minWatchTimeoutSeconds * (this.#random() + 1));
      let w: Watch<T>;
      try {
        this.stats.watches++;
        w = await this.#lw.watch({
          resourceVersion: this.#lastSyncResourceVersion,
          timeoutSeconds,
          allowWatchBookmarks: true,
          signal,
        });
      } catch (err) {
        if (signal.aborted) return;
        if (isResourceExpired(err) || isGone(err)) {
          V(4).info("Watch failed; re-listing", { reflector: this.name, err: errorText(err) });
          return;
        }
        // The server is unreachable or busy: the objects are fine, so watch again after a pause.
        if (!(asStatusError(err)) || isTooManyRequests(err)) {
          info("Watch failed; retrying", { reflector: this.name, err: errorText(err) });
          await this.#clock.sleep(this.#backoff.next(), { signal }).catch(() => {});
          continue;
        }
        throw err;
      }
      try {
        await this.#watchHandler(w, signal);
      } catch (err) {
        if (signal.aborted) return;
        if (isResourceExpired(err) || isGone(err)) {
          V(4).info("Watch closed with too old resource version; re-listing", {
            reflector: this.name,
            err: errorText(err),
          });
          return;
        }
        // Any other ERROR event (a Status from the server, or the client's own when a line could
        // not be decoded or was too large) ends this round: client-go logs it and lists again.
        if (err instanceof StatusError) {
          info("Warning: watch ended with error", { reflector: this.name, err: errorText(err) });
          return;
        }
        throw err;
      } finally {
        w.stop();
      }
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    const resourceVersion = this.#relistResourceVersion();
    let list;
    try {
      this.stats.lists++;
      list = await this.#lw.list({ resourceVersion, signal });
    } catch (err) {
      if (!signal.aborted && (isResourceExpired(err) || isGone(err)) && resourceVersion !== "") {
        // The version we asked for is compacted away: read the latest instead.
        this.#lastSyncResourceVersionUnavailable = true;
        this.stats.lists++;
        list = await this.#lw.list({ resourceVersion: "", signal });
      } else {
        throw new Error(`failed to list: ${errorText(err)}`, { cause: err });
      }
    }
    const listResourceVersion = list.metadata?.resourceVersion ?? "";
    this.#store.replace(list.items ?? [], listResourceVersion);
    this.#lastSyncResourceVersion = listResourceVersion;
    this.#lastSyncResourceVersionUnavailable = false;
    this.#synced = true;
    V(4).info("Listed", {
      reflector: this.name,
      items: list.items?.length ?? 0,
      resourceVersion: listResourceVersion,
    });
  }

  // "0" the first time (any cached state will do), the last seen version after that, and ""
  // (a consistent read) when that version is gone.
  #relistResourceVersion(): string {
    if (this.#lastSyncResourceVersionUnavailable) return "";
    if (this.#lastSyncResourceVersion === "") return "0";
    return this.#lastSyncResourceVersion;
  }

  // Applies events until the stream ends; throws the Status of an ERROR event.
  async #watchHandler(w: Watch<T>, signal: AbortSignal): Promise<void> {
    const start = this.#clock.now();
    let eventCount = 0;
    const onAbort = () => w.stop();
    signal.addEventListener("abort", onAbort, { once: true });
    let streamError: unknown;
    try {
      for await (const event of w) {
        if (event.type === "ERROR") {
          throw new StatusError(event.object as unknown as Status);
        }
        const obj = event.object;
        if (!obj || typeof obj !== "object") {
          info("Unable to understand watch event", { reflector: this.name, type: event.type });
          continue;
        }
        // Like client-go, an object without a resourceVersion is still applied (and its empty
        // version recorded): only something that is not an object at all is skipped.
        const resourceVersion = obj.metadata?.resourceVersion ?? "";
        switch (event.type) {
          case "ADDED":
            this.#store.add(obj);
            break;
          case "MODIFIED":
            this.#store.update(obj);
            break;
          case "DELETED":
            this.#store.delete(obj);
            break;
          case "BOOKMARK":
            break;
          default:
            info("Unknown watch event type", { reflector: this.name, type: event.type });
            continue;
        }
        this.#lastSyncResourceVersion = resourceVersion;
        eventCount++;
        this.stats.events++;
      }
    } catch (err) {
      if (err instanceof StatusError) throw err;
      // A broken stream is handled like a closed one: watch again from the last version.
      streamError = err;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    if (signal.aborted) return;
    const elapsed = this.#clock.since(start);
    if (elapsed < 1000 && eventCount === 0) {
      throw new Error(
        `very short watch: ${this.name}: unexpected watch close - watch lasted less than a second and no items received` +
          (streamError ? ` (${errorText(streamError)})` : ""),
      );
    }
    V(4).info("Watch closed", {
      reflector: this.name,
      items: eventCount,
      resourceVersion: this.#lastSyncResourceVersion,
      ...(streamError ? { err: errorText(streamError) } : {}),
    });
  }
}
