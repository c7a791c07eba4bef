/**
 * The double's storage: objects per resource, one global resourceVersion counter bumped by every
 * write (creates, updates, status writes, delete marking and deletes), and the event history that
 * watches replay from, with a compaction mark like etcd's. Objects are plain JSON, kept exactly as
 * written so the wire shape round-trips; every read hands out a copy.
 * Plays the part of k8s.io/apiserver's storage (etcd3 store + watch cache) for the double.
 * @module
 */
import { type GroupResource, type JsonObject, notFound } from "./status.ts";

/** What the double knows about a served resource. */
export interface ResourceInfo extends GroupResource {
  version: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  /** Serves the `status` subresource (spec and status written separately). */
  hasStatus: boolean;
  /** Storage key prefix as kube-apiserver's etcd layout spells it (nodes live under "minions"). */
  etcdPrefix: string;
  /** DELETE answers with the object (pods) rather than a Success Status. */
  returnDeletedObject: boolean;
  /** Field selector labels the resource accepts (besides metadata.name/metadata.namespace). */
  fieldLabels: string[];
  /** The fields besides metadata that Go writes for an empty object (bookmark events carry it). */
  emptyObject: JsonObject;
}

const emptyNodeStatus: JsonObject = {
  daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
  nodeInfo: {
    machineID: "",
    systemUUID: "",
    bootID: "",
    kernelVersion: "",
    osImage: "",
    containerRuntimeVersion: "",
    kubeletVersion: "",
    kubeProxyVersion: "",
    operatingSystem: "",
    architecture: "",
  },
};

/** Resources the double serves, by plural name. */
export const resources: Record<string, ResourceInfo> = {
  pods: {
    group: "",
    version: "v1",
    resource: "pods",
    kind: "Pod",
    listKind: "PodList",
    namespaced: true,
    hasStatus: true,
    etcdPrefix: "pods",
    emptyObject: { spec: { containers: null }, status: {} },
    returnDeletedObject: true,
    fieldLabels: [
      "spec.nodeName",
      "spec.restartPolicy",
      "spec.schedulerName",
      "spec.serviceAccountName",
      "spec.hostNetwork",
      "status.phase",
      "status.podIP",
      "status.nominatedNodeName",
    ],
  },
  nodes: {
    group: "",
    version: "v1",
    resource: "nodes",
    kind: "Node",
    listKind: "NodeList",
    namespaced: false,
    hasStatus: true,
    etcdPrefix: "minions",
    emptyObject: { spec: {}, status: emptyNodeStatus },
    returnDeletedObject: false,
    fieldLabels: ["spec.unschedulable"],
  },
  services: {
    group: "",
    version: "v1",
    resource: "services",
    kind: "Service",
    listKind: "ServiceList",
    namespaced: true,
    hasStatus: true,
    etcdPrefix: "services/specs",
    emptyObject: { spec: {}, status: { loadBalancer: {} } },
    returnDeletedObject: true,
    fieldLabels: ["spec.clusterIP", "spec.type"],
  },
  leases: {
    group: "coordination.k8s.io",
    version: "v1",
    resource: "leases",
    kind: "Lease",
    listKind: "LeaseList",
    namespaced: true,
    hasStatus: false,
    etcdPrefix: "leases",
    emptyObject: { spec: {} },
    returnDeletedObject: false,
    fieldLabels: [],
  },
  events: {
    group: "",
    version: "v1",
    resource: "events",
    kind: "Event",
    listKind: "EventList",
    namespaced: true,
    hasStatus: false,
    etcdPrefix: "events",
    emptyObject: {
      involvedObject: {},
      source: {},
      firstTimestamp: null,
      lastTimestamp: null,
      eventTime: null,
      reportingComponent: "",
      reportingInstance: "",
    },
    returnDeletedObject: false,
    fieldLabels: [
      "involvedObject.kind",
      "involvedObject.namespace",
      "involvedObject.name",
      "involvedObject.uid",
      "involvedObject.apiVersion",
      "involvedObject.resourceVersion",
      "involvedObject.fieldPath",
      "reason",
      "reportingComponent",
      "source",
      "type",
    ],
  },
  namespaces: {
    group: "",
    version: "v1",
    resource: "namespaces",
    kind: "Namespace",
    listKind: "NamespaceList",
    namespaced: false,
    hasStatus: true,
    etcdPrefix: "namespaces",
    emptyObject: { spec: {}, status: {} },
    returnDeletedObject: false,
    fieldLabels: ["status.phase"],
  },
};

/** `v1` or `coordination.k8s.io/v1`. */
export function apiVersionOf(info: ResourceInfo): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** A watch event type as sent on the wire. */
export type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** One change in the history: the object after the change (for DELETED: the last state, new RV). */
export interface StoredEvent {
  type: EventType;
  resource: string;
  rv: number;
  object: JsonObject;
  /** The object before the change (MODIFIED, DELETED), for selector transitions. */
  previous?: JsonObject;
}

/** Metadata fields the double reads and writes. */
export interface Meta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: JsonObject[];
  finalizers?: string[];
}

/** The metadata of an object (created empty when missing). */
export function metaOf(obj: JsonObject): Meta {
  if (typeof obj.metadata !== "object" || obj.metadata === null || Array.isArray(obj.metadata)) {
    obj.metadata = {};
  }
  return obj.metadata as Meta;
}

/** A deep copy of a JSON object. */
export function clone<T>(value: T): T {
  return structuredClone(value);
}

function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Listener for committed changes (watches subscribe here). */
export type StorageListener = (event: StoredEvent) => void;

/**
 * Objects of every resource under one resourceVersion counter, with a history for watches.
 *
 * @example
 * ```ts
 * const storage = new Storage();
 * storage.commit("ADDED", "pods", pod);
 * storage.get("pods", "default", "web");
 * ```
 */
export class Storage {
  #rv = 0;
  #objects = new Map<string, Map<string, JsonObject>>();
  #history: StoredEvent[] = [];
  #compactedRv = 0;
  #listeners = new Set<StorageListener>();

  /** The latest resourceVersion handed out (what a list reports). */
  get resourceVersion(): number {
    return this.#rv;
  }

  /** Events at or below this resourceVersion are gone; watching from below it is 410 Expired. */
  get compactedRevision(): number {
    return this.#compactedRv;
  }

  /** A copy of the stored object, or undefined. */
  get(resource: string, namespace: string | undefined, name: string): JsonObject | undefined {
    const found = this.#objects.get(resource)?.get(keyOf(namespace, name));
    return found ? clone(found) : undefined;
  }

  /** The stored object or a NotFound ApiError. */
  mustGet(info: ResourceInfo, namespace: string | undefined, name: string): JsonObject {
    const found = this.get(info.resource, namespace, name);
    if (!found) throw notFound(info, name);
    return found;
  }

  /** Copies of the stored objects of a resource (one namespace, or all), ordered by key like etcd. */
  list(resource: string, namespace?: string): JsonObject[] {
    const all = this.#objects.get(resource);
    if (!all) return [];
    return [...all.entries()]
      .filter(([, obj]) => namespace === undefined || metaOf(obj).namespace === namespace)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, obj]) => clone(obj));
  }

  /**
   * Writes a change: bumps the global resourceVersion, stamps it on the object, stores (or, for
   * DELETED, removes) it, records the event and tells the watchers. Returns a copy as stored.
   */
  commit(type: EventType, resource: string, object: JsonObject): JsonObject {
    const meta = metaOf(object);
    const key = keyOf(meta.namespace, meta.name ?? "");
    let objects = this.#objects.get(resource);
    if (!objects) {
      objects = new Map();
      this.#objects.set(resource, objects);
    }
    const previous = objects.get(key);
    this.#rv++;
    const stored = clone(object);
    metaOf(stored).resourceVersion = String(this.#rv);
    if (type === "DELETED") objects.delete(key);
    else objects.set(key, stored);
    const event: StoredEvent = {
      type,
      resource,
      rv: this.#rv,
      object: stored,
      ...(previous ? { previous } : {}),
    };
    this.#history.push(event);
    for (const listener of [...this.#listeners]) listener(event);
    return clone(stored);
  }

  /**
   * Events of `resource` after `rv`, oldest first; undefined when `rv` is below the compaction mark
   * (the caller answers 410 Expired).
   */
  eventsAfter(resource: string, rv: number): StoredEvent[] | undefined {
    if (rv < this.#compactedRv) return undefined;
    return this.#history.filter((e) => e.resource === resource && e.rv > rv);
  }

  /** Forgets history at or below `rv`, like an etcd compaction (default: everything so far). */
  compact(rv: number = this.#rv): void {
    this.#compactedRv = Math.max(this.#compactedRv, Math.min(rv, this.#rv));
    this.#history = this.#history.filter((e) => e.rv > this.#compactedRv);
  }

  /** Calls `listener` for every later commit; returns the unsubscribe function. */
  subscribe(listener: StorageListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
