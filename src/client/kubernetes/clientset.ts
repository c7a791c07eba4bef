/**
 * The typed client interfaces kubelet's code talks to (client-go's `kubernetes.Interface`, cut down to
 * the groups and verbs probelet uses): `coreV1.pods/nodes/events`, `coordinationV1.leases`,
 * `certificatesV1.certificateSigningRequests`. Both the HTTP clientset and the test fake implement
 * them.
 * Mirrors k8s.io/client-go/kubernetes/clientset.go and typed/{core,coordination,certificates}/v1.
 * @module
 */
import type {
  Event,
  EventList,
  Node,
  NodeList,
  Pod,
  PodList,
  Service,
  ServiceList,
} from "../../api/core/v1/mod.ts";
import type { Lease, LeaseList } from "../../api/coordination/v1/mod.ts";
import type {
  CertificateSigningRequest,
  CertificateSigningRequestList,
} from "../../api/certificates/v1/mod.ts";
import type * as metav1 from "../../api/meta/v1/mod.ts";
import { RESTClient, type RESTClientOptions, type RestConfig, type RestRequest } from "../rest.ts";
import { goQuote } from "../../util/go_format.ts";
import { PatchType } from "../../api/types/patch.ts";
import type { Watch } from "../../api/watch/watch.ts";

export { PatchType };
export type { Watch };

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
/** `services` in one namespace ("" = all namespaces, for list and watch). */
export type ServiceInterface = ResourceInterface<Service, ServiceList>;
/** `leases.coordination.k8s.io` in one namespace. */
export type LeaseInterface = ResourceInterface<Lease, LeaseList>;

/** `certificatesigningrequests.certificates.k8s.io` (cluster-scoped). */
export type CertificateSigningRequestInterface = ResourceInterface<
  CertificateSigningRequest,
  CertificateSigningRequestList
>;

/** The core/v1 group. */
export interface CoreV1Interface {
  /** Pods in `namespace` ("" or omitted = all namespaces). */
  pods(namespace?: string): PodInterface;
  /** Nodes. */
  nodes(): NodeInterface;
  /** Events in `namespace`. */
  events(namespace?: string): EventInterface;
  /** Services in `namespace` ("" or omitted = all namespaces). */
  services(namespace?: string): ServiceInterface;
}

/** The coordination.k8s.io/v1 group. */
export interface CoordinationV1Interface {
  /** Leases in `namespace`. */
  leases(namespace: string): LeaseInterface;
}

/** The certificates.k8s.io/v1 group. */
export interface CertificatesV1Interface {
  /** Certificate signing requests. */
  certificateSigningRequests(): CertificateSigningRequestInterface;
}

/**
 * The API groups probelet uses (client-go's `kubernetes.Interface`).
 *
 * @example
 * ```ts
 * declare const clientset: Clientset;
 *
 * const node = await clientset.coreV1.nodes().get("node-1");
 * await clientset.coordinationV1.leases("kube-node-lease").get("node-1");
 * ```
 */
export interface Clientset {
  /** The core/v1 group. */
  coreV1: CoreV1Interface;
  /** The coordination.k8s.io/v1 group. */
  coordinationV1: CoordinationV1Interface;
  /** The certificates.k8s.io/v1 group. */
  certificatesV1: CertificatesV1Interface;
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
  services: {
    group: "",
    version: "v1",
    resource: "services",
    kind: "Service",
    listKind: "ServiceList",
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
  certificatesigningrequests: {
    group: "certificates.k8s.io",
    version: "v1",
    resource: "certificatesigningrequests",
    kind: "CertificateSigningRequest",
    listKind: "CertificateSigningRequestList",
    namespaced: false,
  },
} as const satisfies Record<string, ResourceInfo>;

/** `pods`, `nodes`, `events`, `services`, `leases` or `certificatesigningrequests`. */
export type ResourceName = keyof typeof resources;

/** Options of `newForConfig`. */
export interface NewForConfigOptions extends RESTClientOptions {
  /** Idle timeout of watches (see `WatchRequestOptions`); default 0 (off). */
  watchIdleTimeoutMs?: number;
}

/**
 * A clientset over HTTP for `config` (client-go's `kubernetes.NewForConfig`).
 *
 * @example
 * ```ts
 * import { loadKubeconfig } from "../kubeconfig.ts";
 *
 * const { config } = await loadKubeconfig("/etc/probelet/kubeconfig");
 * const clientset = newForConfig({ ...config, qps: 50, burst: 100 });
 * await clientset.coreV1.nodes().get("node-1");
 * ```
 */
export function newForConfig(config: RestConfig, opts: NewForConfigOptions = {}): HTTPClientset {
  return new HTTPClientset(new RESTClient(config, opts), opts);
}

/** The HTTP clientset; `close()` releases its connections. */
export class HTTPClientset implements Clientset {
  /** The REST client all resources share (and its limiter). */
  readonly rest: RESTClient;
  /** The core/v1 group. */
  readonly coreV1: CoreV1Interface;
  /** The coordination.k8s.io/v1 group. */
  readonly coordinationV1: CoordinationV1Interface;
  /** The certificates.k8s.io/v1 group. */
  readonly certificatesV1: CertificatesV1Interface;

  /** Typed clients over `rest`. */
  constructor(rest: RESTClient, opts: { watchIdleTimeoutMs?: number } = {}) {
    this.rest = rest;
    const client = (name: ResourceName, ns: string) =>
      new ResourceClient(rest, resources[name], ns, opts.watchIdleTimeoutMs ?? 0);
    this.coreV1 = {
      pods: (ns = "") => client("pods", ns) as unknown as PodInterface,
      nodes: () => client("nodes", "") as unknown as NodeInterface,
      events: (ns = "") => client("events", ns) as unknown as EventInterface,
      services: (ns = "") => client("services", ns) as unknown as ServiceInterface,
    };
    this.coordinationV1 = {
      leases: (ns) => client("leases", ns) as unknown as LeaseInterface,
    };
    this.certificatesV1 = {
      certificateSigningRequests: () =>
        client("certificatesigningrequests", "") as unknown as CertificateSigningRequestInterface,
    };
  }

  /** Releases the TLS client. */
  close(): void {
    this.rest.close();
  }

  /** Drops the pooled connections; the next request dials afresh (see `RESTClient`). */
  closeAllConns(): void {
    this.rest.closeAllConns();
  }
}

interface NamedObject {
  metadata?: { name?: string };
}

/** The verbs of one resource over the REST client (client-go's generated typed client). */
class ResourceClient<T extends NamedObject, L> {
  readonly #rest: RESTClient;
  readonly #info: ResourceInfo;
  readonly #namespace: string;
  readonly #idleTimeoutMs: number;

  constructor(rest: RESTClient, info: ResourceInfo, namespace: string, idleTimeoutMs: number) {
    this.#rest = rest;
    this.#info = info;
    this.#namespace = info.namespaced ? namespace : "";
    this.#idleTimeoutMs = idleTimeoutMs;
  }

  // client-go's Request.Namespace/Name checks: a name that cannot be one path segment is refused
  // before anything is sent (a non-conforming server may hand out `..`).
  #path(name?: string, subresource?: string): string {
    const { group, version, resource } = this.#info;
    let path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    if (this.#namespace) {
      const problems = isValidPathSegmentName(this.#namespace);
      if (problems.length) {
        throw new Error(
          `invalid namespace ${goQuote(this.#namespace)}: [${problems.join(" ")}]`,
        );
      }
      path += `/namespaces/${encodeURIComponent(this.#namespace)}`;
    }
    path += `/${resource}`;
    if (name !== undefined) {
      if (name === "") throw new Error("resource name may not be empty");
      const problems = isValidPathSegmentName(name);
      if (problems.length) {
        throw new Error(`invalid resource name ${goQuote(name)}: [${problems.join(" ")}]`);
      }
      path += `/${encodeURIComponent(name)}`;
    }
    if (subresource) path += `/${subresource}`;
    return path;
  }

  #nameOf(obj: T): string {
    return obj.metadata?.name ?? "";
  }

  // kind/apiVersion first, as Go's encoder writes TypeMeta.
  #withTypeMeta(obj: T): unknown {
    const { group, version, kind } = this.#info;
    return { kind, apiVersion: group ? `${group}/${version}` : version, ...obj };
  }

  async get(name: string, opts: GetOptions = {}): Promise<T> {
    return await this.#rest.json<T>({
      method: "GET",
      path: this.#path(name),
      query: { resourceVersion: opts.resourceVersion },
      signal: opts.signal,
    });
  }

  async list(opts: ListOptions = {}): Promise<L> {
    return await this.#rest.json<L>({
      method: "GET",
      path: this.#path(),
      query: listQuery(opts),
      signal: opts.signal,
    });
  }

  async watch(opts: ListOptions = {}): Promise<Watch<T>> {
    return await this.#rest.watch<T>(
      { method: "GET", path: this.#path(), query: listQuery(opts), signal: opts.signal },
      { idleTimeoutMs: this.#idleTimeoutMs },
    );
  }

  async create(obj: T, opts: CreateOptions = {}): Promise<T> {
    return await this.#rest.json<T>({
      method: "POST",
      path: this.#path(),
      query: writeQuery(opts),
      body: this.#withTypeMeta(obj),
      signal: opts.signal,
    });
  }

  update(obj: T, opts: UpdateOptions = {}): Promise<T> {
    return this.#put(obj, "", opts);
  }

  updateStatus(obj: T, opts: UpdateOptions = {}): Promise<T> {
    return this.#put(obj, "status", opts);
  }

  async #put(obj: T, subresource: string, opts: UpdateOptions): Promise<T> {
    return await this.#rest.json<T>({
      method: "PUT",
      path: this.#path(this.#nameOf(obj), subresource),
      query: writeQuery(opts),
      body: this.#withTypeMeta(obj),
      signal: opts.signal,
    });
  }

  patch(name: string, patchType: PatchType, data: string, opts: PatchOptions = {}): Promise<T> {
    return this.#patch(name, "", patchType, data, opts);
  }

  patchStatus(name: string, patchType: PatchType, data: string, opts: PatchOptions = {}) {
    return this.#patch(name, "status", patchType, data, opts);
  }

  async #patch(
    name: string,
    subresource: string,
    patchType: PatchType,
    data: string,
    opts: PatchOptions,
  ): Promise<T> {
    return await this.#rest.json<T>({
      method: "PATCH",
      path: this.#path(name, subresource),
      query: { ...writeQuery(opts), force: opts.force },
      body: data,
      contentType: patchType,
      signal: opts.signal,
    });
  }

  async delete(name: string, opts: DeleteOptions = {}): Promise<void> {
    const { signal, ...body } = opts;
    await this.#rest.json<unknown>({
      method: "DELETE",
      path: this.#path(name),
      body,
      signal,
    });
  }
}

/** Names that cannot be a path segment (apimachinery's `NameMayNotBe`). */
export const nameMayNotBe = [".", ".."] as const;
/** Substrings a path segment name may not contain (apimachinery's `NameMayNotContain`). */
export const nameMayNotContain = ["/", "%"] as const;

/**
 * Why `name` cannot be used as one segment of a REST path; empty when it can
 * (apimachinery's `IsValidPathSegmentName`).
 *
 * @example
 * ```ts
 * isValidPathSegmentName(".."); // ["may not be '..'"]
 * isValidPathSegmentName("a/b%"); // ["may not contain '/'", "may not contain '%'"]
 * ```
 */
export function isValidPathSegmentName(name: string): string[] {
  for (const illegal of nameMayNotBe) {
    if (name === illegal) return [`may not be '${illegal}'`];
  }
  return nameMayNotContain.filter((c) => name.includes(c)).map((c) => `may not contain '${c}'`);
}

function listQuery(opts: ListOptions): RestRequest["query"] {
  return {
    labelSelector: opts.labelSelector,
    fieldSelector: opts.fieldSelector,
    resourceVersion: opts.resourceVersion,
    resourceVersionMatch: opts.resourceVersionMatch,
    timeoutSeconds: opts.timeoutSeconds,
    limit: opts.limit,
    continue: opts.continue,
    allowWatchBookmarks: opts.allowWatchBookmarks,
    sendInitialEvents: opts.sendInitialEvents,
  };
}

function writeQuery(opts: CreateOptions | UpdateOptions | PatchOptions): RestRequest["query"] {
  return {
    dryRun: opts.dryRun?.length ? opts.dryRun.join(",") : undefined,
    fieldManager: opts.fieldManager,
    fieldValidation: opts.fieldValidation,
  };
}
