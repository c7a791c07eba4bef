/**
 * A keyed object store (client-go's `cache.Store` over its thread-safe map): objects by
 * `namespace/name`, replaced wholesale after a LIST, changed one by one from a watch.
 * Mirrors k8s.io/client-go/tools/cache/store.go.
 * @module
 */
import type { ObjectMeta } from "../../api/meta/v1/mod.ts";

/** Anything with object metadata. */
export interface MetaObject {
  metadata?: ObjectMeta;
}

/** `namespace/name`, or `name` for cluster-scoped objects (Go's `MetaNamespaceKeyFunc`). */
export function metaNamespaceKeyFunc(obj: MetaObject): string {
  const meta = obj.metadata;
  if (!meta?.name) throw new Error("object has no metadata.name");
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

/** The store a reflector fills. */
export interface Store<T> {
  add(obj: T): void;
  update(obj: T): void;
  delete(obj: T): void;
  /** Replaces the whole content with `list`, seen at `resourceVersion`. */
  replace(list: T[], resourceVersion: string): void;
  list(): T[];
  listKeys(): string[];
  getByKey(key: string): T | undefined;
}

/**
 * A plain in-memory `Store`.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const store = new MemoryStore<Pod>();
 * store.add(pod);
 * store.getByKey("default/web");
 * ```
 */
export class MemoryStore<T extends MetaObject> implements Store<T> {
  readonly #items = new Map<string, T>();
  readonly #keyFunc: (obj: T) => string;

  /** An empty store keyed by `keyFunc` (default `namespace/name`). */
  constructor(keyFunc: (obj: T) => string = metaNamespaceKeyFunc) {
    this.#keyFunc = keyFunc;
  }

  /** Inserts or replaces `obj`. */
  add(obj: T): void {
    this.#items.set(this.#keyFunc(obj), obj);
  }

  /** Same as `add`. */
  update(obj: T): void {
    this.#items.set(this.#keyFunc(obj), obj);
  }

  /** Removes the object with `obj`'s key. */
  delete(obj: T): void {
    this.#items.delete(this.#keyFunc(obj));
  }

  /** Replaces everything with `list`. */
  replace(list: T[], _resourceVersion: string): void {
    this.#items.clear();
    for (const obj of list) this.#items.set(this.#keyFunc(obj), obj);
  }

  /** All objects, in insertion order. */
  list(): T[] {
    return [...this.#items.values()];
  }

  /** All keys. */
  listKeys(): string[] {
    return [...this.#items.keys()];
  }

  /** The object under `key`. */
  getByKey(key: string): T | undefined {
    return this.#items.get(key);
  }
}
