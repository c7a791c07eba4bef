/**
 * A store that, after every change, pushes its complete content to a callback: kubelet's API pod
 * source turns each push into one full `SET` update.
 * Mirrors k8s.io/client-go/tools/cache/undelta_store.go.
 * @module
 */
import { MemoryStore, metaNamespaceKeyFunc, type MetaObject, type Store } from "./store.ts";

/**
 * Calls `pushFunc` with all objects after each add/update/delete/replace.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * const store = new UndeltaStore<Pod>((pods) => console.log(`${pods.length} pods`));
 * ```
 */
export class UndeltaStore<T extends MetaObject> implements Store<T> {
  readonly #store: MemoryStore<T>;
  readonly #pushFunc: (objs: T[]) => void;

  /** A store pushing to `pushFunc`, keyed by `keyFunc` (default `namespace/name`). */
  constructor(pushFunc: (objs: T[]) => void, keyFunc: (obj: T) => string = metaNamespaceKeyFunc) {
    this.#store = new MemoryStore(keyFunc);
    this.#pushFunc = pushFunc;
  }

  /** Adds `obj`, then pushes. */
  add(obj: T): void {
    this.#store.add(obj);
    this.#pushFunc(this.#store.list());
  }

  /** Updates `obj`, then pushes. */
  update(obj: T): void {
    this.#store.update(obj);
    this.#pushFunc(this.#store.list());
  }

  /** Deletes `obj`, then pushes. */
  delete(obj: T): void {
    this.#store.delete(obj);
    this.#pushFunc(this.#store.list());
  }

  /** Replaces everything, then pushes (also when the list is empty: "no pods" is news). */
  replace(list: T[], resourceVersion: string): void {
    this.#store.replace(list, resourceVersion);
    this.#pushFunc(this.#store.list());
  }

  /** All objects. */
  list(): T[] {
    return this.#store.list();
  }

  /** All keys. */
  listKeys(): string[] {
    return this.#store.listKeys();
  }

  /** The object under `key`. */
  getByKey(key: string): T | undefined {
    return this.#store.getByKey(key);
  }
}
