/**
 * The typed client interfaces kubelet's code talks to (client-go's `kubernetes.Interface`, cut down to
 * the groups and verbs probelet uses): `coreV1.pods/nodes/events`, `coordinationV1.leases`. Both the
 * HTTP clientset and the test fake implement them.
 * Mirrors k8s.io/client-go/kubernetes/clientset.go and typed/{core,coordination}/v1.
 * @module
 */
import type { Event, EventList, Node, NodeList, Pod, PodList } from "../../api/core/v1/mod.ts";
import type { Lease, LeaseList } from "../../api/coordination/v1/mod.ts";
import type * as metav1 from "../../api/meta/v1/mod.ts";

/** The patch formats the API server accepts for the resources probelet writes. */
export type PatchType =
  | "application/strategic-merge-patch+json"
  | "application/merge-patch+json"
  | "application/json-patch+json";

/** The patch types by client-go's names (`types.StrategicMergePatchType`, ...). */
export const PatchType = {
  StrategicMergePatch: "application/strategic-merge-patch+json",
  MergePatch: "application/merge-patch+json",
  JSONPatch: "application/json-patch+json",
} as const satisfies Record<string, PatchType>;

/** What every call accepts besides its verb's options: a signal that cancels it (Go's context). */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of `get`. */
export type GetOptions = metav1.GetOptions & CallOptions;
/** Options of `list` and `watch`. */
export type ListOptions = metav1.ListOptions & CallOptions;
/** Options of `create`. */
export type CreateOptions = metav1.CreateOptions & CallOptions;
/** Options of `update` and `updateStatus`. */
export type UpdateOptions = metav1.UpdateOptions & CallOptions;
/** Options of `patch` and `patchStatus`. */
export type PatchOptions = metav1.PatchOptions & CallOptions;
/** Options of `delete`: the `DeleteOptions` body (`gracePeriodSeconds`, `preconditions`, ...). */
export type DeleteOptions = metav1.DeleteOptions & CallOptions;

/**
 * An open watch (client-go's `watch.Interface`): iterate it for events; the iteration ends when the
 * server closes the stream or `stop()` is called, and throws when the connection fails. An `ERROR`
 * event carries a `Status` (e.g. 410 `Expired`).
 *
 * @example
 * ```ts
 * const w = await clientset.coreV1.pods("").watch({ resourceVersion: "10", allowWatchBookmarks: true });
 * for await (const event of w) console.log(event.type, event.object.metadata.name);
 * ```
 */
export interface Watch<T> extends AsyncIterable<metav1.WatchEvent<T>> {
  /** Ends the watch; a pending iteration finishes without an error. Safe to call twice. */
  stop(): void;
}

/** The verbs of one resource (namespaced or not). */
export interface ResourceInterface<T, L> {
  /** GET one object by name. */
  get(name: string, opts?: GetOptions): Promise<T>;
  /** LIST objects; the list's `metadata.resourceVersion` is where a watch starts. */
  list(opts?: ListOptions): Promise<L>;
  /** WATCH from `opts.resourceVersion`; resolves once the server accepted the watch. */
  watch(opts?: ListOptions): Promise<Watch<T>>;
  /** POST a new object. */
  create(obj: T, opts?: CreateOptions): Promise<T>;
  /** PUT the object (conditional on `metadata.resourceVersion` when set). */
  update(obj: T, opts?: UpdateOptions): Promise<T>;
  /** PATCH the object with `data`, sent byte for byte with `patchType` as its content type. */
  patch(name: string, patchType: PatchType, data: string, opts?: PatchOptions): Promise<T>;
  /** DELETE the object; `opts` is sent as the `DeleteOptions` body. */
  delete(name: string, opts?: DeleteOptions): Promise<void>;
}

/** The verbs of a `status` subresource. */
export interface StatusInterface<T> {
  /** PUT `<name>/status`: only `.status` changes. */
  updateStatus(obj: T, opts?: UpdateOptions): Promise<T>;
  /** PATCH `<name>/status`: only `.status` changes. */
  patchStatus(name: string, patchType: PatchType, data: string, opts?: PatchOptions): Promise<T>;
}

/** `pods` in one namespace ("" = all namespaces, for list and watch). */
export type PodInterface = ResourceInterface<Pod, PodList> & StatusInterface<Pod>;
/** `nodes` (cluster-scoped). */
export type NodeInterface = ResourceInterface<Node, NodeList> & StatusInterface<Node>;
/** core/v1 `events` in one namespace. */
export type EventInterface = ResourceInterface<Event, EventList>;
/** `leases.coordination.k8s.io` in one namespace. */
export type LeaseInterface = ResourceInterface<Lease, LeaseList>;

/** The core/v1 group. */
export interface CoreV1Interface {
  /** Pods in `namespace` ("" or omitted = all namespaces). */
  pods(namespace?: string): PodInterface;
  /** Nodes. */
  nodes(): NodeInterface;
  /** Events in `namespace`. */
  events(namespace?: string): EventInterface;
}

/** The coordination.k8s.io/v1 group. */
export interface CoordinationV1Interface {
  /** Leases in `namespace`. */
  leases(namespace: string): LeaseInterface;
}

/**
 * The API groups probelet uses (client-go's `kubernetes.Interface`).
 *
 * @example
 * ```ts
 * const node = await clientset.coreV1.nodes().get("node-1");
 * await clientset.coordinationV1.leases("kube-node-lease").get("node-1");
 * ```
 */
export interface Clientset {
  coreV1: CoreV1Interface;
  coordinationV1: CoordinationV1Interface;
}

/** How one resource is addressed on the wire. */
export interface ResourceInfo {
  /** API group ("" = core). */
  group: string;
  version: string;
  /** Plural lower-case name in the path (`pods`). */
  resource: string;
  /** The object's `kind` (`Pod`). */
  kind: string;
  /** The list's `kind` (`PodList`). */
  listKind: string;
  namespaced: boolean;
}

/** The resources the clientset serves. */
export const resources = {
  pods: {
    group: "",
    version: "v1",
    resource: "pods",
    kind: "Pod",
    listKind: "PodList",
    namespaced: true,
  },
  nodes: {
    group: "",
    version: "v1",
    resource: "nodes",
    kind: "Node",
    listKind: "NodeList",
    namespaced: false,
  },
  events: {
    group: "",
    version: "v1",
    resource: "events",
    kind: "Event",
    listKind: "EventList",
    namespaced: true,
  },
  leases: {
    group: "coordination.k8s.io",
    version: "v1",
    resource: "leases",
    kind: "Lease",
    listKind: "LeaseList",
    namespaced: true,
  },
} as const satisfies Record<string, ResourceInfo>;

/** `pods`, `nodes`, `events` or `leases`. */
export type ResourceName = keyof typeof resources;
