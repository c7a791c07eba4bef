/**
 * The interface of an open watch, which the REST client returns and the clientset hands out.
 * Mirrors k8s.io/apimachinery/pkg/watch/watch.go (`Interface`).
 * @module
 */
import type * as metav1 from "../meta/v1/mod.ts";

/**
 * An open watch (client-go's `watch.Interface`): iterate it for events; the iteration ends when the
 * server closes the stream or `stop()` is called, and throws when the connection fails. An `ERROR`
 * event carries a `Status` (e.g. 410 `Expired`).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const clientset: Clientset;
 *
 * const w = await clientset.coreV1.pods("").watch({ resourceVersion: "10", allowWatchBookmarks: true });
 * for await (const event of w) console.log(event.type, event.object.metadata.name);
 * ```
 */
export interface Watch<T> extends AsyncIterable<metav1.WatchEvent<T>> {
  /** Ends the watch; a pending iteration finishes without an error. Safe to call twice. */
  stop(): void;
}
