/**
 * An in-memory `Clientset` for unit tests, shaped like client-go's `fake.NewSimpleClientset`: an
 * object tracker serves get/list/watch/create/update/patch/delete, every call is recorded in
 * `actions`, and reactors (`prependReactor`) can answer or fail a call before the tracker sees it.
 *
 * Like client-go's tracker it does not assign resourceVersions or check them, ignores field
 * selectors (label selectors `k=v,k2=v2` filter), treats a subresource write like a write of the
 * whole object, and a watch reports changes from its start on (no replay). Tests that need API
 * server semantics use the double in tests/testing/apiserver/.
 * Mirrors k8s.io/client-go/kubernetes/fake and k8s.io/client-go/testing (fixture.go, actions.go).
 * @module
 */
import type {
  CallOptions,
  CertificateSigningRequestInterface,
  CertificatesV1Interface,
  Clientset,
  CoordinationV1Interface,
  CoreV1Interface,
  DeleteOptions,
  EventInterface,
  LeaseInterface,
  ListOptions,
  NodeInterface,
  PatchType,
  PodInterface,
  ResourceInfo,
  ResourceName,
  ServiceInterface,
  Watch,
} from "../../src/client/kubernetes/clientset.ts";
import { resources } from "../../src/client/kubernetes/clientset.ts";
import { newAlreadyExists, newBadRequest, newNotFound } from "../../src/client/errors.ts";
import type { ObjectMeta, WatchEvent, WatchEventType } from "../../src/api/meta/v1/mod.ts";
import { applyJsonPatch, applyMergePatch } from "../../src/util/strategicpatch/json_patch.ts";
import { strategicMergePatch } from "../../src/util/strategicpatch/patch.ts";
import {
  eventSchema,
  leaseSchema,
  nodeSchema,
  type PatchSchema,
  podSchema,
} from "../../src/util/strategicpatch/schema.ts";

/** `get`, `list`, `watch`, `create`, `update`, `patch` or `delete`. */
export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete";

/** One recorded call (client-go's `testing.Action`, flattened). */
export interface Action {
  verb: Verb;
  /** `pods`, `nodes`, `events` or `leases`. */
  resource: ResourceName;
  /** `status` for the status subresource, else "". */
  subresource: string;
  /** The namespace ("" for nodes, or for all namespaces). */
  namespace: string;
  /** The object name for get/patch/delete and for create/update (from the object). */
  name: string;
  /** A copy of the object sent by create/update. */
  object?: KubeObject;
  /** The patch type and bytes of a patch. */
  patchType?: PatchType;
  patch?: string;
  /** Options of list/watch. */
  listOptions?: ListOptions;
  /** Options of delete. */
  deleteOptions?: DeleteOptions;
}

/** Whether `action` is `verb` on `resource` (`"*"` matches any), Go's `Action.Matches`. */
export function actionMatches(action: Action, verb: string, resource: string): boolean {
  return (verb === "*" || action.verb === verb) &&
    (resource === "*" || action.resource === resource);
}

/** An object the tracker stores. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/**
 * What a reactor decided: `handled: false` passes the call on to the next reactor (and finally the
 * tracker); otherwise `err` fails the call or `ret` is its result.
 */
export interface Reaction {
  handled: boolean;
  ret?: unknown;
  err?: Error;
}

/** Answers a call before the tracker (Go's `ReactionFunc`). */
export type ReactionFunc = (
  action: Action,
  call: { signal?: AbortSignal },
) => Reaction | Promise<Reaction>;

/** Answers a watch before the tracker (Go's `WatchReactionFunc`); return undefined to pass. */
export type WatchReactionFunc = (
  action: Action,
) => Watch<KubeObject> | undefined | Promise<Watch<KubeObject> | undefined>;

interface Reactor {
  verb: string;
  resource: string;
  fn: ReactionFunc;
}

/**
 * A watch whose events the test (or the tracker) pushes, like client-go's `watch.FakeWatcher`.
 *
 * @example
 * ```ts
 * const w = new FakeWatcher<Pod>();
 * w.add(pod);
 * w.stop();
 * for await (const e of w) e.type; // "ADDED"
 * ```
 */
export class FakeWatcher<T> implements Watch<T> {
  #queue: WatchEvent<T>[] = [];
  #waiting?: {
    resolve: (r: IteratorResult<WatchEvent<T>>) => void;
    reject: (err: Error) => void;
  };
  #stopped = false;
  #error?: Error;
  /** Called once when the watch stops (the tracker unregisters it). */
  onStop?: () => void;

  /** True once stopped (by the consumer or the test). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Sends an `ADDED` event. */
  add(obj: T): void {
    this.action("ADDED", obj);
  }

  /** Sends a `MODIFIED` event. */
  modify(obj: T): void {
    this.action("MODIFIED", obj);
  }

  /** Sends a `DELETED` event. */
  delete(obj: T): void {
    this.action("DELETED", obj);
  }

  /** Sends an `ERROR` event (the object is a `Status`). */
  error(status: unknown): void {
    this.action("ERROR", status as T);
  }

  /** Sends an event of any type; ignored once stopped. */
  action(type: WatchEventType, object: T): void {
    if (this.#stopped) return;
    const event = { type, object };
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) waiting.resolve({ value: event, done: false });
    else this.#queue.push(event);
  }

  /** Ends the stream as a broken connection would: iteration throws `err` after queued events. */
  fail(err: Error): void {
    if (this.#stopped) return;
    this.#error = err;
    this.stop();
  }

  /** Ends the stream; queued events are still delivered. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.onStop?.();
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (!waiting) return;
    if (this.#error) waiting.reject(this.#error);
    else waiting.resolve({ value: undefined, done: true });
  }

  /** Iterates the events until the watch stops. */
  [Symbol.asyncIterator](): AsyncIterator<WatchEvent<T>> {
    return {
      next: () => {
        const event = this.#queue.shift();
        if (event) return Promise.resolve({ value: event, done: false });
        if (this.#stopped) {
          return this.#error
            ? Promise.reject(this.#error)
            : Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => this.#waiting = { resolve, reject });
      },
      return: () => {
        this.stop();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

const schemas: Record<ResourceName, PatchSchema> = {
  pods: podSchema,
  nodes: nodeSchema,
  events: eventSchema,
  leases: leaseSchema,
  services: eventSchema,
  certificatesigningrequests: eventSchema,
};

const byKind = new Map<string, ResourceInfo & { name: ResourceName }>(
  Object.entries(resources).flatMap(([name, info]) => [
    [info.kind, { ...info, name: name as ResourceName }],
    [info.listKind, { ...info, name: name as ResourceName }],
  ]),
);

interface TrackerWatch {
  namespace: string;
  watcher: FakeWatcher<KubeObject>;
}

/**
 * The in-memory store behind `FakeClientset` (client-go's `testing.ObjectTracker`).
 */
export class ObjectTracker {
  readonly #objects = new Map<ResourceName, Map<string, KubeObject>>();
  readonly #watches = new Map<ResourceName, TrackerWatch[]>();
  #nameSeq = 0;

  /** Adds `obj` (a Pod/Node/Event/Lease or a list of them, by `kind`) without recording an action. */
  add(obj: KubeObject): void {
    const info = obj.kind ? byKind.get(obj.kind) : undefined;
    if (!info) {
      throw new Error(
        `fake clientset: cannot tell the resource of kind ${JSON.stringify(obj.kind)}`,
      );
    }
    if (obj.kind === info.listKind) {
      for (const item of ((obj as { items?: KubeObject[] }).items) ?? []) {
        this.#store(info.name).set(keyOf(item.metadata), structuredClone(item));
      }
      return;
    }
    this.#store(info.name).set(keyOf(obj.metadata), structuredClone(obj));
  }

  /** The stored object, or undefined. */
  get(resource: ResourceName, namespace: string, name: string): KubeObject | undefined {
    const obj = this.#store(resource).get(`${namespace}/${name}`);
    return obj && structuredClone(obj);
  }

  /** Stored objects of `resource` in `namespace` ("" = all), in insertion order. */
  list(resource: ResourceName, namespace: string): KubeObject[] {
    return [...this.#store(resource).values()]
      .filter((o) => namespace === "" || (o.metadata.namespace ?? "") === namespace)
      .map((o) => structuredClone(o));
  }

  /** Stores a new object; AlreadyExists when the name is taken. */
  create(resource: ResourceName, namespace: string, obj: KubeObject): KubeObject {
    const info = resources[resource];
    const stored = structuredClone(obj);
    if (info.namespaced) stored.metadata.namespace = namespace || stored.metadata.namespace;
    if (!stored.metadata.name && stored.metadata.generateName) {
      stored.metadata.name = `${stored.metadata.generateName}${(++this.#nameSeq).toString(36)}`;
    }
    const key = keyOf(stored.metadata);
    if (this.#store(resource).has(key)) {
      throw newAlreadyExists(info, stored.metadata.name ?? "");
    }
    this.#store(resource).set(key, stored);
    this.#notify(resource, "ADDED", stored);
    return structuredClone(stored);
  }

  /** Replaces an existing object; NotFound when there is none. */
  update(resource: ResourceName, namespace: string, obj: KubeObject): KubeObject {
    const info = resources[resource];
    const stored = structuredClone(obj);
    if (info.namespaced) stored.metadata.namespace = namespace || stored.metadata.namespace;
    const key = keyOf(stored.metadata);
    if (!this.#store(resource).has(key)) throw newNotFound(info, stored.metadata.name ?? "");
    this.#store(resource).set(key, stored);
    this.#notify(resource, "MODIFIED", stored);
    return structuredClone(stored);
  }

  /** Removes an object; NotFound when there is none. */
  delete(resource: ResourceName, namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const old = this.#store(resource).get(key);
    if (!old) throw newNotFound(resources[resource], name);
    this.#store(resource).delete(key);
    this.#notify(resource, "DELETED", old);
  }

  /** A watch of changes to `resource` in `namespace` ("" = all) from now on. */
  watch(resource: ResourceName, namespace: string): FakeWatcher<KubeObject> {
    const watcher = new FakeWatcher<KubeObject>();
    const entry = { namespace, watcher };
    const list = this.#watches.get(resource) ?? [];
    list.push(entry);
    this.#watches.set(resource, list);
    watcher.onStop = () => {
      const current = this.#watches.get(resource) ?? [];
      this.#watches.set(resource, current.filter((w) => w !== entry));
    };
    return watcher;
  }

  /** Open tracker watches of `resource` (tests assert a consumer stopped its watch). */
  watchCount(resource: ResourceName): number {
    return this.#watches.get(resource)?.length ?? 0;
  }

  #notify(resource: ResourceName, type: WatchEventType, obj: KubeObject): void {
    for (const w of this.#watches.get(resource) ?? []) {
      if (w.namespace === "" || w.namespace === (obj.metadata.namespace ?? "")) {
        w.watcher.action(type, structuredClone(obj));
      }
    }
  }

  #store(resource: ResourceName): Map<string, KubeObject> {
    let store = this.#objects.get(resource);
    if (!store) {
      store = new Map();
      this.#objects.set(resource, store);
    }
    return store;
  }
}

function keyOf(meta: ObjectMeta): string {
  return `${meta.namespace ?? ""}/${meta.name ?? ""}`;
}

/**
 * client-go's `fake.Clientset`: typed clients over an `ObjectTracker`, recorded actions, reactors.
 *
 * @example
 * ```ts
 * const client = new FakeClientset({ kind: "Node", metadata: { name: "node-1" } });
 * client.prependReactor("patch", "nodes", () => ({ handled: true, err: newInternalError("boom") }));
 * await client.coreV1.nodes().get("node-1");
 * client.actions.map((a) => `${a.verb} ${a.resource}`); // ["get nodes"]
 * ```
 */
export class FakeClientset implements Clientset {
  /** Every call, oldest first (Go's `Actions()`); copies, safe to inspect. */
  readonly actions: Action[] = [];
  /** The object store. */
  readonly tracker: ObjectTracker = new ObjectTracker();
  readonly #reactors: Reactor[] = [];
  readonly #watchReactors: { resource: string; fn: WatchReactionFunc }[] = [];

  /** core/v1. */
  readonly coreV1: CoreV1Interface;
  /** coordination.k8s.io/v1. */
  readonly coordinationV1: CoordinationV1Interface;
  /** certificates.k8s.io/v1. */
  readonly certificatesV1: CertificatesV1Interface;

  /** Creates the fake holding `objects` (Pod, Node, Event, Lease or their lists, by `kind`). */
  constructor(...objects: KubeObject[]) {
    for (const obj of objects) this.tracker.add(obj);
    this.coreV1 = {
      pods: (ns = "") => this.#client("pods", ns) as unknown as PodInterface,
      nodes: () => this.#client("nodes", "") as unknown as NodeInterface,
      events: (ns = "") => this.#client("events", ns) as unknown as EventInterface,
      services: (ns = "") => this.#client("services", ns) as unknown as ServiceInterface,
    };
    this.coordinationV1 = {
      leases: (ns) => this.#client("leases", ns) as unknown as LeaseInterface,
    };
    this.certificatesV1 = {
      certificateSigningRequests: () =>
        this.#client(
          "certificatesigningrequests",
          "",
        ) as unknown as CertificateSigningRequestInterface,
    };
  }

  /** Runs `fn` before the reactors added so far (Go's `PrependReactor`). */
  prependReactor(verb: Verb | "*", resource: ResourceName | "*", fn: ReactionFunc): void {
    this.#reactors.unshift({ verb, resource, fn });
  }

  /** Runs `fn` after the reactors added so far, before the tracker (Go's `AddReactor`). */
  addReactor(verb: Verb | "*", resource: ResourceName | "*", fn: ReactionFunc): void {
    this.#reactors.push({ verb, resource, fn });
  }

  /** Answers watches of `resource` before the tracker (Go's `PrependWatchReactor`). */
  prependWatchReactor(resource: ResourceName | "*", fn: WatchReactionFunc): void {
    this.#watchReactors.unshift({ resource, fn });
  }

  /** Forgets the recorded actions (Go's `ClearActions`). */
  clearActions(): void {
    this.actions.length = 0;
  }

  // `signal` is the call's, for reactors that act like a server a client may hang up on.
  async #invoke(action: Action, fallback: () => unknown, signal?: AbortSignal): Promise<unknown> {
    this.actions.push(structuredClone(action));
    for (const r of this.#reactors) {
      if (!actionMatches(action, r.verb, r.resource)) continue;
      const reaction = await r.fn(structuredClone(action), { signal });
      if (!reaction.handled) continue;
      if (reaction.err) throw reaction.err;
      return structuredClone(reaction.ret);
    }
    return fallback();
  }

  #client(resource: ResourceName, namespace: string) {
    const info = resources[resource];
    const ns = info.namespaced ? namespace : "";
    const base = { resource, namespace: ns, subresource: "", name: "" };
    const t = this.tracker;
    const getOrThrow = (name: string) => {
      const obj = t.get(resource, ns, name);
      if (!obj) throw newNotFound(info, name);
      return obj;
    };
    const patch = (subresource: string) =>
    (
      name: string,
      patchType: PatchType,
      data: string,
      opts?: CallOptions,
    ) =>
      this.#invoke({ ...base, verb: "patch", subresource, name, patchType, patch: data }, () => {
        const current = getOrThrow(name);
        let body: unknown;
        try {
          body = JSON.parse(data);
        } catch (err) {
          throw newBadRequest(`error decoding patch: ${(err as Error).message}`);
        }
        const patched = patchType === "application/json-patch+json"
          ? applyJsonPatch(current, body)
          : patchType === "application/merge-patch+json"
          ? applyMergePatch(current, body)
          : strategicMergePatch(current, body, schemas[resource]);
        return t.update(resource, ns, patched as KubeObject);
      }, opts?.signal);
    const update = (subresource: string) => (obj: KubeObject, opts?: CallOptions) =>
      this.#invoke(
        { ...base, verb: "update", subresource, name: obj.metadata.name ?? "", object: obj },
        () => t.update(resource, ns, obj),
        opts?.signal,
      );
    return {
      get: (name: string, opts?: CallOptions) =>
        this.#invoke({ ...base, verb: "get", name }, () => getOrThrow(name), opts?.signal),
      list: (opts: ListOptions = {}) =>
        this.#invoke(
          { ...base, verb: "list", listOptions: withoutSignal(opts) },
          () => ({
            kind: info.listKind,
            apiVersion: info.group ? `${info.group}/${info.version}` : info.version,
            metadata: { resourceVersion: "" },
            items: t.list(resource, ns).filter((o) => matchesLabels(o, opts.labelSelector)),
          }),
        ),
      watch: async (opts: ListOptions = {}) => {
        const action: Action = { ...base, verb: "watch", listOptions: withoutSignal(opts) };
        this.actions.push(structuredClone(action));
        for (const r of this.#watchReactors) {
          if (r.resource !== "*" && r.resource !== resource) continue;
          const w = await r.fn(structuredClone(action));
          if (w) return w;
        }
        return t.watch(resource, ns);
      },
      create: (obj: KubeObject, _opts?: CallOptions) =>
        this.#invoke(
          { ...base, verb: "create", name: obj.metadata.name ?? "", object: obj },
          () => t.create(resource, ns, obj),
        ),
      update: update(""),
      updateStatus: update("status"),
      patch: patch(""),
      patchStatus: patch("status"),
      delete: async (name: string, opts: DeleteOptions = {}) => {
        await this.#invoke(
          { ...base, verb: "delete", name, deleteOptions: withoutSignal(opts) },
          () => t.delete(resource, ns, name),
        );
      },
    };
  }
}

function withoutSignal<T extends CallOptions>(opts: T): Omit<T, "signal"> {
  const { signal: _signal, ...rest } = opts;
  return rest;
}

function matchesLabels(obj: KubeObject, selector?: string): boolean {
  if (!selector) return true;
  const labels = obj.metadata.labels ?? {};
  return selector.split(",").every((term) => {
    const [k, v] = term.split(/==?/, 2).map((s) => s.trim());
    if (v === undefined) return k in labels;
    if (k.endsWith("!")) return labels[k.slice(0, -1)] !== v;
    return labels[k] === v;
  });
}
