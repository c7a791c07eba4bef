/**
 * The LIST and WATCH pair a reflector drives, usually built from a typed client with a field
 * selector (kubelet: pods with `spec.nodeName=<node>`).
 * Mirrors k8s.io/client-go/tools/cache/listwatch.go.
 * @module
 */
import type { ListMeta } from "../../api/meta/v1/mod.ts";
import type { ListOptions, Watch } from "../kubernetes/clientset.ts";

/** A LIST result: items and the resourceVersion to watch from. */
export interface ObjectList<T> {
  metadata?: ListMeta;
  items: T[];
}

/** LIST and WATCH of one resource (Go's `ListerWatcher`). */
export interface ListerWatcher<T> {
  /** LIST with `options` (the reflector sets `resourceVersion`). */
  list(options: ListOptions): Promise<ObjectList<T>>;
  /** WATCH with `options` (version, bookmarks, timeout). */
  watch(options: ListOptions): Promise<Watch<T>>;
}

/** The verbs `newListWatchFromClient` needs (any typed resource client has them). */
export interface ListWatchClient<T> {
  /** LIST. */
  list(opts?: ListOptions): Promise<ObjectList<T>>;
  /** WATCH. */
  watch(opts?: ListOptions): Promise<Watch<T>>;
}

/**
 * A `ListerWatcher` over a typed client, adding `fieldSelector` to every call
 * (Go's `NewListWatchFromClient`).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../kubernetes/clientset.ts";
 *
 * declare const clientset: Clientset;
 *
 * const lw = newListWatchFromClient(clientset.coreV1.pods(""), { fieldSelector: "spec.nodeName=node-1" });
 * ```
 */
export function newListWatchFromClient<T>(
  client: ListWatchClient<T>,
  selectors: { fieldSelector?: string; labelSelector?: string } = {},
): ListerWatcher<T> {
  const withSelectors = (options: ListOptions): ListOptions => ({
    ...options,
    ...(selectors.fieldSelector ? { fieldSelector: selectors.fieldSelector } : {}),
    ...(selectors.labelSelector ? { labelSelector: selectors.labelSelector } : {}),
  });
  return {
    list: (options) => client.list(withSelectors(options)),
    watch: (options) => client.watch(withSelectors(options)),
  };
}
