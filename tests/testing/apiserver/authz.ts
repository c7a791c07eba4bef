/**
 * The node authorizer and the NodeRestriction admission plugin, for the requests a kubelet makes
 * (pods, nodes, leases, events, services), with the real 403 texts:
 * plugin/pkg/auth/authorizer/node/node_authorizer.go (AuthorizeNodeWithSelectors on, as in 1.34+),
 * plugin/pkg/admission/noderestriction/admission.go, and the Forbidden message of
 * k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go.
 *
 * Users in `system:masters` may do anything (the test's admin). Any other non-node user is denied:
 * the double has no RBAC, so a request only a role binding would allow fails loudly.
 * @module
 */
import type { FieldRequirement } from "./selectors.ts";
import { ApiError, forbidden, type JsonObject } from "./status.ts";
import { metaOf, type Storage } from "./storage.ts";

/** An authenticated user (client certificate CN/O, or a bearer token's mapping). */
export interface UserInfo {
  name: string;
  groups: string[];
}

/** Authorization attributes of one request (authorizer.Attributes). */
export interface Attributes {
  user: UserInfo;
  /** get, list, watch, create, update, patch, delete, deletecollection. */
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  /** "" for cluster-scoped requests. */
  namespace: string;
  /** "" for collections and creates (list/watch: the metadata.name field selector's value). */
  name: string;
  fieldSelector: FieldRequirement[];
}

/** An authorization decision with the authorizer's reason. */
export interface Decision {
  allowed: boolean;
  reason: string;
}

const nodeUserPrefix = "system:node:";
const nodesGroup = "system:nodes";
const mastersGroup = "system:masters";
/** The namespace of node leases (api.NamespaceNodeLease). */
export const namespaceNodeLease = "kube-node-lease";
/** Annotation that marks a mirror pod (api.MirrorPodAnnotationKey). */
export const mirrorPodAnnotationKey = "kubernetes.io/config.mirror";

/** nodeidentifier.NodeIdentity: `system:node:<name>` in group `system:nodes`. */
export function nodeIdentity(user: UserInfo): { isNode: boolean; nodeName: string } {
  if (!user.groups.includes(nodesGroup)) return { isNode: false, nodeName: "" };
  if (!user.name.startsWith(nodeUserPrefix)) return { isNode: true, nodeName: "" };
  return { isNode: true, nodeName: user.name.slice(nodeUserPrefix.length) };
}

const deny = (reason: string): Decision => ({ allowed: false, reason });
const allow: Decision = { allowed: true, reason: "" };

/** Decides a request the way the Node,RBAC chain does for nodes and for `system:masters`. */
export function authorize(attrs: Attributes, storage: Storage): Decision {
  if (attrs.user.groups.includes(mastersGroup)) return allow;
  const { isNode, nodeName } = nodeIdentity(attrs.user);
  if (!isNode) return deny("");
  if (nodeName === "") return deny(`unknown node for user "${attrs.user.name}"`);
  const key = `${attrs.apiGroup}/${attrs.resource}`;
  switch (key) {
    case "coordination.k8s.io/leases":
      return authorizeLease(nodeName, attrs);
    case "/nodes":
      return authorizeNode(nodeName, attrs);
    case "/pods":
      return authorizePod(nodeName, attrs, storage);
    case "/services":
      // The static node rules: services may be read (kubelet's service informer).
      return ["get", "list", "watch"].includes(attrs.verb) && attrs.subresource === ""
        ? allow
        : deny("");
    case "/events":
    case "events.k8s.io/events":
      // The static node rules: events may be created, updated and patched in any namespace.
      return ["create", "update", "patch"].includes(attrs.verb) && attrs.subresource === ""
        ? allow
        : deny("");
    default:
      return deny("");
  }
}

function authorizeLease(nodeName: string, attrs: Attributes): Decision {
  if (!["get", "create", "update", "patch", "delete"].includes(attrs.verb)) {
    return deny("can only get, create, update, patch, or delete a node lease");
  }
  if (attrs.namespace !== namespaceNodeLease) {
    return deny(`can only access leases in the "${namespaceNodeLease}" system namespace`);
  }
  if (attrs.verb !== "create" && attrs.name !== nodeName) {
    return deny("can only access node lease with the same name as the requesting node");
  }
  return allow;
}

function authorizeNode(nodeName: string, attrs: Attributes): Decision {
  if (attrs.subresource === "") {
    if (["create", "update", "patch"].includes(attrs.verb)) return allow;
    if (["get", "list", "watch"].includes(attrs.verb)) {
      if (attrs.name === nodeName) return allow;
      if (attrs.name === "") {
        return deny(`node '${nodeName}' cannot read all nodes, only its own Node object`);
      }
      return deny(`node '${nodeName}' cannot read '${attrs.name}', only its own Node object`);
    }
  } else if (attrs.subresource === "status" && ["update", "patch"].includes(attrs.verb)) {
    return allow;
  }
  return deny("");
}

function authorizePod(nodeName: string, attrs: Attributes, storage: Storage): Decision {
  if (attrs.subresource === "") {
    switch (attrs.verb) {
      case "get":
        return related(nodeName, attrs, storage);
      case "list":
      case "watch":
        if (
          attrs.fieldSelector.some((r) =>
            r.field === "spec.nodeName" && r.operator === "=" && r.value === nodeName
          )
        ) {
          return allow;
        }
        if (attrs.name !== "") return related(nodeName, attrs, storage);
        return deny("can only list/watch pods with spec.nodeName field selector");
      case "create":
      case "delete":
        // NodeRestriction limits these to mirror pods / pods bound to the node.
        return allow;
    }
  } else if (attrs.subresource === "status" && ["update", "patch"].includes(attrs.verb)) {
    return allow;
  }
  return deny("");
}

// The node authorizer's graph has an edge pod -> node when the pod is bound to the node.
function related(nodeName: string, attrs: Attributes, storage: Storage): Decision {
  if (attrs.name === "") return deny("No Object name found");
  const pod = storage.get("pods", attrs.namespace, attrs.name);
  const bound = (pod?.spec as JsonObject | undefined)?.nodeName;
  if (pod && bound === nodeName) return allow;
  return deny(`no relationship found between node '${nodeName}' and this object`);
}

/** The 403 the authorization filter writes (responsewriters.Forbidden + forbiddenMessage). */
export function forbiddenByAuthorizer(attrs: Attributes, reason: string): ApiError {
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const scope = attrs.namespace ? `in the namespace "${attrs.namespace}"` : "at the cluster scope";
  const message =
    `User "${attrs.user.name}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" ${scope}`;
  // list/watch answers name no object even when a metadata.name selector narrowed the request.
  const name = attrs.verb === "list" || attrs.verb === "watch" ? "" : attrs.name;
  return forbidden(
    { group: attrs.apiGroup, resource: attrs.resource },
    name,
    reason ? `${message}: ${reason}` : message,
  );
}

// ---------------------------------------------------------------------------------------------
// NodeRestriction admission

/** An admission request: the operation and the objects it would write. */
export interface AdmissionRequest {
  operation: "CREATE" | "UPDATE" | "DELETE";
  attrs: Attributes;
  /** The object after the change (CREATE/UPDATE). */
  object?: JsonObject;
  /** The stored object (UPDATE/DELETE). */
  oldObject?: JsonObject;
}

// Labels a kubelet may set on its Node (k8s.io/kubelet/pkg/apis: IsKubeletLabel).
const kubeletLabels = new Set([
  "kubernetes.io/hostname",
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "failure-domain.beta.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "topology.kubernetes.io/zone",
]);
const kubeletLabelNamespaces = ["kubelet.kubernetes.io", "node.kubernetes.io"];
const nodeRestrictionNamespace = "node-restriction.kubernetes.io";

function labelNamespace(key: string): string {
  const slash = key.indexOf("/");
  return slash >= 0 ? key.slice(0, slash) : "";
}

function inNamespace(namespace: string, parent: string): boolean {
  return namespace === parent || namespace.endsWith(`.${parent}`);
}

function isKubeletLabel(key: string): boolean {
  if (kubeletLabels.has(key)) return true;
  return kubeletLabelNamespaces.some((ns) => inNamespace(labelNamespace(key), ns));
}

function forbiddenLabels(
  labels: Record<string, string> | undefined,
  old: Record<string, string> | undefined,
): string[] {
  const a = labels ?? {};
  const b = old ?? {};
  const modified = new Set<string>();
  for (const [k, v] of Object.entries(a)) if (b[k] !== v) modified.add(k);
  for (const [k, v] of Object.entries(b)) if (a[k] !== v) modified.add(k);
  const out = [...modified].filter((label) => {
    const ns = labelNamespace(label);
    if (inNamespace(ns, nodeRestrictionNamespace)) return true;
    const isKubernetes = inNamespace(ns, "kubernetes.io") || inNamespace(ns, "k8s.io");
    return isKubernetes && !isKubeletLabel(label);
  });
  return out.sort();
}

function jsonEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * Throws the NodeRestriction plugin's 403 (admission.NewForbidden) when a node's write is not
 * allowed; returns quietly for non-node users and allowed writes.
 */
export function admitNodeRestriction(request: AdmissionRequest, storage: Storage): void {
  const { attrs } = request;
  const { isNode, nodeName } = nodeIdentity(attrs.user);
  if (!isNode) return;
  const objectName = request.object ? metaOf(request.object).name ?? "" : "";
  const fail = (why: string) =>
    forbidden({ group: attrs.apiGroup, resource: attrs.resource }, attrs.name || objectName, why);
  if (nodeName === "") throw fail(`could not determine node from user "${attrs.user.name}"`);
  const key = `${attrs.apiGroup}/${attrs.resource}`;
  if (key === "/pods") {
    if (attrs.subresource === "status") return admitPodStatus(nodeName, request, fail);
    if (attrs.subresource !== "") {
      throw fail(
        `unexpected pod subresource "${attrs.subresource}", only 'status' and 'eviction' are allowed`,
      );
    }
    if (request.operation === "CREATE") return admitPodCreate(nodeName, request, storage, fail);
    if (request.operation === "DELETE") {
      const bound = (request.oldObject?.spec as JsonObject | undefined)?.nodeName;
      if (bound !== nodeName) {
        throw fail(`node "${nodeName}" can only delete pods with spec.nodeName set to itself`);
      }
      return;
    }
    throw fail(
      `unexpected operation "${request.operation}", node "${nodeName}" can only create and delete mirror pods`,
    );
  }
  if (key === "/nodes") return admitNode(nodeName, request, fail);
  if (key === "coordination.k8s.io/leases") {
    if (attrs.namespace !== namespaceNodeLease) {
      throw fail(`can only access leases in the "${namespaceNodeLease}" system namespace`);
    }
    const name = request.operation === "CREATE" ? objectName : attrs.name;
    if (name !== nodeName) {
      throw fail("can only access node lease with the same name as the requesting node");
    }
  }
}

function admitPodStatus(
  nodeName: string,
  request: AdmissionRequest,
  fail: (why: string) => ApiError,
): void {
  if (request.operation !== "UPDATE") throw fail(`unexpected operation "${request.operation}"`);
  const old = request.oldObject ?? {};
  if ((old.spec as JsonObject | undefined)?.nodeName !== nodeName) {
    throw fail(
      `node "${nodeName}" can only update pod status for pods with spec.nodeName set to itself`,
    );
  }
  if (!jsonEqual(metaOf(old).labels ?? {}, metaOf(request.object ?? {}).labels ?? {})) {
    throw fail(`node "${nodeName}" cannot update labels through pod status`);
  }
}

function admitPodCreate(
  nodeName: string,
  request: AdmissionRequest,
  storage: Storage,
  fail: (why: string) => ApiError,
): void {
  const pod = request.object ?? {};
  const meta = metaOf(pod);
  const spec = (pod.spec ?? {}) as JsonObject;
  if (!Object.hasOwn(meta.annotations ?? {}, mirrorPodAnnotationKey)) {
    throw fail(
      `pod does not have "${mirrorPodAnnotationKey}" annotation, node "${nodeName}" can only create mirror pods`,
    );
  }
  if (spec.nodeName !== nodeName) {
    throw fail(`node "${nodeName}" can only create pods with spec.nodeName set to itself`);
  }
  const owners = meta.ownerReferences ?? [];
  if (owners.length > 1) {
    throw fail(
      `node "${nodeName}" can only create pods with a single owner reference set to itself`,
    );
  }
  if (owners.length === 0) {
    throw fail(`node "${nodeName}" can only create pods with an owner reference set to itself`);
  }
  const owner = owners[0];
  if (owner.apiVersion !== "v1" || owner.kind !== "Node" || owner.name !== nodeName) {
    throw fail(`node "${nodeName}" can only create pods with an owner reference set to itself`);
  }
  if (owner.controller !== true) {
    throw fail(
      `node "${nodeName}" can only create pods with a controller owner reference set to itself`,
    );
  }
  if (owner.blockOwnerDeletion === true) {
    throw fail(`node "${nodeName}" must not set blockOwnerDeletion on an owner reference`);
  }
  const node = storage.get("nodes", undefined, nodeName);
  if (!node) {
    // The plugin returns the lister's NotFound as is.
    throw new ApiError({ code: 404, reason: "NotFound", message: `node "${nodeName}" not found` }, {
      details: { name: nodeName, kind: "node" },
    });
  }
  if (owner.uid !== metaOf(node).uid) {
    throw fail(`node ${nodeName} UID mismatch: expected ${owner.uid} got ${metaOf(node).uid}`);
  }
  if (typeof spec.serviceAccountName === "string" && spec.serviceAccountName !== "") {
    throw fail(`node "${nodeName}" can not create pods that reference a service account`);
  }
  const text = JSON.stringify(spec);
  if (
    /"secret(Ref|KeyRef|Name)?"\s*:/.test(text) || /"imagePullSecrets"\s*:\s*\[\s*\{/.test(text)
  ) {
    throw fail(`node "${nodeName}" can not create pods that reference secrets`);
  }
  if (/"configMap(Ref|KeyRef)?"\s*:/.test(text)) {
    throw fail(`node "${nodeName}" can not create pods that reference configmaps`);
  }
  if (/"persistentVolumeClaim"\s*:/.test(text)) {
    throw fail(`node "${nodeName}" can not create pods that reference persistentvolumeclaims`);
  }
}

function admitNode(
  nodeName: string,
  request: AdmissionRequest,
  fail: (why: string) => ApiError,
): void {
  const requested = request.operation === "CREATE"
    ? metaOf(request.object ?? {}).name ?? ""
    : request.attrs.name;
  if (requested !== nodeName) {
    throw fail(`node "${nodeName}" is not allowed to modify node "${requested}"`);
  }
  const node = request.object ?? {};
  const spec = (node.spec ?? {}) as JsonObject;
  if (request.operation === "CREATE") {
    if (spec.configSource) {
      throw fail(`node "${nodeName}" is not allowed to create pods with a non-nil configSource`);
    }
    const bad = forbiddenLabels(metaOf(node).labels, undefined);
    if (bad.length > 0) {
      throw fail(
        `node "${nodeName}" is not allowed to set the following labels: ${bad.join(", ")}`,
      );
    }
  }
  if (request.operation === "UPDATE") {
    const old = request.oldObject ?? {};
    const oldSpec = (old.spec ?? {}) as JsonObject;
    if (spec.configSource && !jsonEqual(spec.configSource, oldSpec.configSource)) {
      throw fail(
        `node "${nodeName}" is not allowed to update configSource to a new non-nil configSource`,
      );
    }
    if (!jsonEqual(spec.taints ?? [], oldSpec.taints ?? [])) {
      throw fail(`node "${nodeName}" is not allowed to modify taints`);
    }
    const bad = forbiddenLabels(metaOf(node).labels, metaOf(old).labels);
    if (bad.length > 0) throw fail(`is not allowed to modify labels: ${bad.join(", ")}`);
  }
}
