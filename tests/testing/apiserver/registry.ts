/**
 * REST semantics of the served resources, without HTTP: create / update / patch / delete / get /
 * list with the registry strategies kube-apiserver applies (pkg/registry/core/pod/strategy.go,
 * node/strategy.go, k8s.io/apiserver registry/generic/registry/store.go and rest/{create,update,
 * delete}.go): defaults on create, status subresource rules, the no-op update that writes nothing,
 * optimistic concurrency, UID preconditions, and graceful pod deletion.
 * @module
 */
import type { Clock } from "../../../src/util/clock.ts";
import { admitNodeRestriction, type Attributes, mirrorPodAnnotationKey } from "./authz.ts";
import { applyPatch, jsonEqual, type PatchType } from "./patch.ts";
import {
  alreadyExists,
  ApiError,
  badRequest,
  conflict,
  invalid,
  type JsonObject,
  type JsonValue,
  notFound,
  optimisticLockErrorMsg,
  qualifiedResource,
} from "./status.ts";
import {
  apiVersionOf,
  clone,
  metaOf,
  type ResourceInfo,
  resources,
  type Storage,
} from "./storage.ts";

/** RFC 3339 at second precision, as metav1.Time serialises. */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

// names.SimpleNameGenerator: generateName + 5 characters from this alphabet.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789";
function randomSuffix(): string {
  let out = "";
  for (let i = 0; i < 5; i++) out += nameAlphabet[Math.floor(Math.random() * nameAlphabet.length)];
  return out;
}

/** What the caller of a registry operation is (for NodeRestriction) and when it happens. */
export interface OperationContext {
  attrs: Attributes;
  /** Apply NodeRestriction admission (the server's authz switch). */
  admission: boolean;
}

/** The object an update, patch or delete is for, and who asks. */
export interface Target {
  namespace?: string;
  name: string;
  /** "" or "status" (update and patch). */
  subresource?: string;
  ctx?: OperationContext;
}

/** Options of a DELETE (meta/v1 DeleteOptions). */
export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** Result of a delete: the object (pods) or a Success Status, and whether it is gone. */
export interface DeleteResult {
  body: JsonObject;
  deleted: boolean;
}

/** The REST operations over a Storage, with the strategies of each resource. */
export class Registry {
  readonly storage: Storage;
  readonly clock: Clock;

  /** Creates the registry and the namespaces every cluster has. */
  constructor(storage: Storage, clock: Clock) {
    this.storage = storage;
    this.clock = clock;
    for (const name of ["default", "kube-system", "kube-public", "kube-node-lease"]) {
      if (storage.get("namespaces", undefined, name)) continue;
      this.#commitCreate(resources.namespaces, {
        metadata: { name, labels: { "kubernetes.io/metadata.name": name } },
        spec: { finalizers: ["kubernetes"] },
        status: { phase: "Active" },
      });
    }
  }

  /** GET of one object, with kind and apiVersion. */
  get(info: ResourceInfo, namespace: string | undefined, name: string): JsonObject {
    return withTypeMeta(info, this.storage.mustGet(info, namespace, name));
  }

  /** POST: defaults, admission, AlreadyExists, then ADDED. */
  create(
    info: ResourceInfo,
    body: JsonObject,
    options: { namespace?: string; ctx?: OperationContext } = {},
  ): JsonObject {
    const { namespace, ctx } = options;
    const obj = clone(body);
    checkTypeMeta(info, obj);
    const meta = metaOf(obj);
    if (info.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== "" && meta.namespace !== namespace) {
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      meta.namespace = namespace;
      if (!this.storage.get("namespaces", undefined, namespace ?? "")) {
        throw notFound(resources.namespaces, namespace ?? "");
      }
    } else {
      delete meta.namespace;
    }
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomSuffix();
    if (!meta.name) {
      throw invalid({ kind: info.kind, group: info.group, name: "" }, [{
        reason: "FieldValueRequired",
        message: "Required value: name or generateName is required",
        field: "metadata.name",
      }]);
    }
    for (const field of ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"]) {
      delete (meta as Record<string, unknown>)[field];
    }
    delete meta.deletionGracePeriodSeconds;
    delete meta.generation;
    prepareForCreate(info, obj);
    if (ctx?.admission) {
      admitNodeRestriction({ operation: "CREATE", attrs: ctx.attrs, object: obj }, this.storage);
    }
    if (this.storage.get(info.resource, meta.namespace, meta.name)) {
      throw alreadyExists(info, meta.name);
    }
    return this.#commitCreate(info, obj);
  }

  #commitCreate(info: ResourceInfo, obj: JsonObject): JsonObject {
    goZeroValues(info, obj);
    const meta = metaOf(obj);
    meta.uid = crypto.randomUUID();
    meta.creationTimestamp = formatTime(this.clock.now());
    return withTypeMeta(info, this.storage.commit("ADDED", info.resource, withTypeMeta(info, obj)));
  }

  /** PUT of the object or its status subresource. */
  update(info: ResourceInfo, body: JsonObject, target: Target): JsonObject {
    const { ctx } = target;
    const obj = clone(body);
    checkTypeMeta(info, obj);
    checkName(info, obj, target);
    const current = this.storage.get(info.resource, target.namespace, target.name);
    if (!current) {
      // Only events may be created by PUT (AllowCreateOnUpdate).
      if (info.resource === "events" && (target.subresource ?? "") === "") {
        return this.create(info, obj, { namespace: target.namespace, ctx });
      }
      throw notFound(info, target.name);
    }
    const meta = metaOf(obj);
    const currentMeta = metaOf(current);
    if (meta.uid && meta.uid !== currentMeta.uid) {
      throw conflict(info, target.name, storageUidError(info, target, meta.uid, currentMeta.uid));
    }
    if (meta.resourceVersion && meta.resourceVersion !== currentMeta.resourceVersion) {
      throw conflict(info, target.name, optimisticLockErrorMsg);
    }
    return this.#finishUpdate(info, target, { next: obj, current, ctx });
  }

  /** PATCH of the object or its status subresource. */
  patch(info: ResourceInfo, patch: { type: PatchType; body: string }, target: Target): JsonObject {
    const { ctx } = target;
    const current = this.storage.mustGet(info, target.namespace, target.name);
    const patched = applyPatch(withTypeMeta(info, current), { resource: info.resource, ...patch });
    checkName(info, patched, target);
    const meta = metaOf(patched);
    const currentMeta = metaOf(current);
    if (meta.resourceVersion && meta.resourceVersion !== currentMeta.resourceVersion) {
      throw conflict(info, target.name, optimisticLockErrorMsg);
    }
    if (meta.uid !== currentMeta.uid) {
      // The patch handler sets no UID precondition (patcher.Preconditions() is nil); the changed
      // UID fails metadata validation in rest.BeforeUpdate.
      // Both the common metadata check and the strategy's ValidateUpdate report it: the message
      // names it once, the causes twice (as kube-apiserver 1.36 answers).
      const cause = {
        reason: "FieldValueInvalid",
        message: `Invalid value: ${JSON.stringify(meta.uid ?? "")}: field is immutable`,
        field: "metadata.uid",
      };
      throw invalid({ kind: info.kind, group: info.group, name: target.name }, [cause, cause]);
    }
    return this.#finishUpdate(info, target, { next: patched, current, ctx });
  }

  // The common tail of PUT and PATCH: strategy PrepareForUpdate, immutable metadata, admission,
  // validation, and the write (skipped when nothing changed, as etcd3's GuaranteedUpdate does).
  #finishUpdate(
    info: ResourceInfo,
    target: Target,
    update: { next: JsonObject; current: JsonObject; ctx?: OperationContext },
  ): JsonObject {
    const { current, ctx } = update;
    const subresource = target.subresource ?? "";
    let next = update.next;
    if (subresource === "status") {
      next = prepareForStatusUpdate(info, next, current);
    } else if (subresource === "") {
      if (info.hasStatus) next.status = clone(current.status ?? {});
    } else {
      throw badRequest(`subresource ${subresource} is not served`);
    }
    const meta = metaOf(next);
    const currentMeta = metaOf(current);
    meta.uid = currentMeta.uid;
    meta.name = currentMeta.name;
    if (info.namespaced) meta.namespace = currentMeta.namespace;
    meta.creationTimestamp = currentMeta.creationTimestamp;
    setOrDelete(meta, "deletionTimestamp", currentMeta.deletionTimestamp);
    setOrDelete(meta, "deletionGracePeriodSeconds", currentMeta.deletionGracePeriodSeconds);
    setOrDelete(meta, "generation", currentMeta.generation);
    if (info.resource === "pods") {
      defaultPodSpec(next);
      next.status = normalizePodIPs(asObject(next.status));
    }
    if (info.resource === "pods" && subresource === "") {
      validatePodSpecUpdate(info, target.name, next, current);
      if (!jsonEqual(next.spec, current.spec) && currentMeta.generation !== undefined) {
        meta.generation = currentMeta.generation + 1;
      }
    }
    if (ctx?.admission) {
      admitNodeRestriction(
        { operation: "UPDATE", attrs: ctx.attrs, object: next, oldObject: current },
        this.storage,
      );
    }
    meta.resourceVersion = currentMeta.resourceVersion;
    goZeroValues(info, next);
    const typed = withTypeMeta(info, next);
    if (jsonEqual(typed, withTypeMeta(info, current))) return typed;
    return withTypeMeta(info, this.storage.commit("MODIFIED", info.resource, typed));
  }

  /** DELETE with DeleteOptions: preconditions, admission, graceful pod deletion. */
  delete(info: ResourceInfo, target: Target & { options?: DeleteOptions }): DeleteResult {
    const { ctx } = target;
    const options = target.options ?? {};
    const current = this.storage.mustGet(info, target.namespace, target.name);
    const meta = metaOf(current);
    const pre = options.preconditions ?? {};
    const kindResource = info.group ? `${info.kind}.${info.group}` : info.kind;
    if (pre.uid !== undefined && pre.uid !== meta.uid) {
      throw conflict(
        { group: "", resource: kindResource },
        target.name,
        `the UID in the precondition (${pre.uid}) does not match the UID in record (${meta.uid}). The object might have been deleted and then recreated`,
      );
    }
    if (pre.resourceVersion !== undefined && pre.resourceVersion !== meta.resourceVersion) {
      throw conflict(
        { group: "", resource: kindResource },
        target.name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${meta.resourceVersion}). The object might have been modified`,
      );
    }
    if (ctx?.admission) {
      admitNodeRestriction(
        { operation: "DELETE", attrs: ctx.attrs, oldObject: current },
        this.storage,
      );
    }
    let last = current;
    const hasFinalizers = (meta.finalizers ?? []).length > 0;
    if (info.resource === "pods") {
      // Pods always delete gracefully (podStrategy.CheckGracefulDelete): the deletion mark is
      // written first (MODIFIED), even for grace 0, and a second DELETE may only shorten it.
      const grace = podGracePeriod(current, options);
      if (meta.deletionTimestamp !== undefined && grace >= (meta.deletionGracePeriodSeconds ?? 0)) {
        return { body: withTypeMeta(info, current), deleted: false };
      }
      last = this.#markDeleting(info, current, grace);
      if (grace > 0 || hasFinalizers) return { body: withTypeMeta(info, last), deleted: false };
    } else if (hasFinalizers) {
      if (meta.deletionTimestamp !== undefined) {
        return { body: withTypeMeta(info, current), deleted: false };
      }
      return { body: withTypeMeta(info, this.#markDeleting(info, current, 0)), deleted: false };
    }
    const gone = this.storage.commit("DELETED", info.resource, withTypeMeta(info, last));
    if (info.returnDeletedObject) return { body: withTypeMeta(info, gone), deleted: true };
    return {
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Success",
        details: {
          name: target.name,
          ...(info.group ? { group: info.group } : {}),
          kind: info.resource,
          uid: meta.uid ?? "",
        },
      },
      deleted: true,
    };
  }

  // The deletion mark (rest.BeforeDelete): deletionTimestamp = now + grace and the grace period;
  // the generation moves only when the mark is first set.
  #markDeleting(info: ResourceInfo, current: JsonObject, grace: number): JsonObject {
    const marked = clone(current);
    const meta = metaOf(marked);
    if (
      meta.deletionTimestamp === undefined && meta.generation !== undefined && meta.generation > 0
    ) {
      meta.generation++;
    }
    meta.deletionTimestamp = formatTime(this.clock.now() + grace * 1000);
    meta.deletionGracePeriodSeconds = grace;
    return this.storage.commit("MODIFIED", info.resource, withTypeMeta(info, marked));
  }
}

function setOrDelete<K extends string>(
  target: Partial<Record<K, unknown>>,
  key: K,
  value: unknown,
): void {
  if (value === undefined) delete target[key];
  else target[key] = value;
}

/** Adds kind and apiVersion first, as the API serialises single objects. */
export function withTypeMeta(info: ResourceInfo, obj: JsonObject): JsonObject {
  const { kind: _k, apiVersion: _a, ...rest } = obj;
  return { kind: info.kind, apiVersion: apiVersionOf(info), ...rest };
}

function checkTypeMeta(info: ResourceInfo, obj: JsonObject): void {
  if (obj.kind !== undefined && obj.kind !== info.kind) {
    throw badRequest(
      `${apiVersionOf(info)}, Kind=${
        String(obj.kind)
      } is not a ${info.kind} (the request body kind does not match the resource)`,
    );
  }
  if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(info)) {
    throw badRequest(
      `the API version in the data (${
        String(obj.apiVersion)
      }) does not match the expected API version (${apiVersionOf(info)})`,
    );
  }
}

function checkName(
  info: ResourceInfo,
  obj: JsonObject,
  target: { namespace?: string; name: string },
): void {
  const meta = metaOf(obj);
  if (meta.name !== undefined && meta.name !== target.name) {
    throw badRequest(
      `the name of the object (${meta.name}) does not match the name on the URL (${target.name})`,
    );
  }
  if (
    info.namespaced && meta.namespace !== undefined && meta.namespace !== "" &&
    meta.namespace !== target.namespace
  ) {
    throw badRequest(
      "the namespace of the provided object does not match the namespace sent on the request",
    );
  }
}

// The message an UID precondition failure carries out of the etcd3 store (StorageError).
function storageUidError(
  info: ResourceInfo,
  target: { namespace?: string; name: string },
  want: string,
  have: string | undefined,
): string {
  const key = info.namespaced
    ? `/registry/${info.etcdPrefix}/${target.namespace}/${target.name}`
    : `/registry/${info.etcdPrefix}/${target.name}`;
  return `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${want}, UID in object meta: ${
    have ?? ""
  }`;
}

// ---------------------------------------------------------------------------------------------
// Strategies

function asObject(value: JsonValue | undefined): JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
}

function prepareForCreate(info: ResourceInfo, obj: JsonObject): void {
  if (info.resource === "pods") {
    defaultPod(obj);
    metaOf(obj).generation = 1;
    // podStrategy.PrepareForCreate: a new pod's status is the server's, not the client's.
    obj.status = { phase: "Pending", qosClass: qosClass(asObject(obj.spec)) };
  } else if (info.resource === "nodes") {
    const spec = asObject(obj.spec);
    obj.spec = spec;
    // TaintNodesByCondition admission: a new node is not-ready until the node lifecycle
    // controller says otherwise.
    const taints = Array.isArray(spec.taints) ? spec.taints : [];
    if (!taints.some((t) => asObject(t).key === "node.kubernetes.io/not-ready")) {
      taints.push({ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" });
    }
    spec.taints = taints;
    obj.status = defaultNodeStatus(asObject(obj.status));
  } else if (info.resource === "leases" && obj.spec === undefined) {
    obj.spec = {};
  } else if (info.resource === "events") {
    // Fields of core/v1 Event that Go writes even when unset.
    obj.involvedObject ??= {};
    obj.source ??= {};
    obj.firstTimestamp ??= null;
    obj.lastTimestamp ??= null;
    obj.eventTime ??= null;
    obj.reportingComponent ??= "";
    obj.reportingInstance ??= "";
  } else if (info.resource === "namespaces") {
    const meta = metaOf(obj);
    meta.labels = { ...meta.labels, "kubernetes.io/metadata.name": meta.name ?? "" };
    obj.spec ??= { finalizers: ["kubernetes"] };
    obj.status = { phase: "Active" };
  }
}

// The v1 <-> internal conversion of pod status IPs (Convert_v1_PodStatus_To_core_PodStatus and
// back): podIP wins over a podIPs list that disagrees with it, a lone podIP becomes the list, and
// podIP is always podIPs[0]. The same holds for hostIP/hostIPs.
function normalizePodIPs(status: JsonObject): JsonObject {
  for (const [single, plural] of [["podIP", "podIPs"], ["hostIP", "hostIPs"]]) {
    const one = typeof status[single] === "string" ? status[single] as string : "";
    let list = Array.isArray(status[plural]) ? status[plural] as JsonValue[] : [];
    const first = list.length > 0 ? asObject(list[0]).ip : undefined;
    if (one !== "" && (list.length === 0 || first !== one)) list = [{ ip: one }];
    if (list.length > 0) {
      status[plural] = list;
      status[single] = asObject(list[0]).ip ?? "";
    }
  }
  return status;
}

// SetDefaults_NodeStatus (allocatable from capacity) and the struct fields Go always serialises
// (daemonEndpoints, nodeInfo), so a read-back node has the real server's shape.
function defaultNodeStatus(status: JsonObject): JsonObject {
  if (status.capacity !== undefined && status.allocatable === undefined) {
    status.allocatable = clone(status.capacity);
  }
  const endpoints = asObject(status.daemonEndpoints);
  const kubelet = asObject(endpoints.kubeletEndpoint);
  kubelet.Port ??= 0;
  endpoints.kubeletEndpoint = kubelet;
  status.daemonEndpoints = endpoints;
  const info = asObject(status.nodeInfo);
  for (
    const field of [
      "machineID",
      "systemUUID",
      "bootID",
      "kernelVersion",
      "osImage",
      "containerRuntimeVersion",
      "kubeletVersion",
      "kubeProxyVersion",
      "operatingSystem",
      "architecture",
    ]
  ) info[field] ??= "";
  status.nodeInfo = info;
  return status;
}

function prepareForStatusUpdate(
  info: ResourceInfo,
  next: JsonObject,
  current: JsonObject,
): JsonObject {
  const out = clone(next);
  // Status writes never change the spec (pod and node statusStrategy.PrepareForUpdate).
  if (current.spec !== undefined) out.spec = clone(current.spec);
  else delete out.spec;
  if (info.resource === "nodes") out.status = defaultNodeStatus(asObject(out.status));
  if (info.resource === "pods") {
    // qosClass is the server's: an empty one keeps the old value, another value is refused.
    const status = asObject(out.status);
    const oldQos = asObject(current.status).qosClass;
    if (status.qosClass === undefined || status.qosClass === null || status.qosClass === "") {
      setOrDelete(status, "qosClass", oldQos);
    } else if (oldQos !== undefined && status.qosClass !== oldQos) {
      throw invalid({ kind: info.kind, group: info.group, name: metaOf(current).name ?? "" }, [{
        reason: "FieldValueInvalid",
        message: `Invalid value: ${JSON.stringify(status.qosClass)}: field is immutable`,
        field: "status.qosClass",
      }]);
    }
    out.status = status;
    // ...nor the owner references (old kubelets corrupted them).
    setOrDelete(metaOf(out), "ownerReferences", clone(metaOf(current).ownerReferences));
  }
  return out;
}

// SetDefaults_Pod / PodSpec / Container and the admission plugins every cluster runs
// (DefaultTolerationSeconds, ServiceAccount's name default): the fields a client reading back its
// pod finds filled in.
function defaultPod(pod: JsonObject): void {
  defaultPodSpec(pod);
  const spec = asObject(pod.spec);
  const isMirror = Object.hasOwn(metaOf(pod).annotations ?? {}, mirrorPodAnnotationKey);
  if (!isMirror) {
    spec.serviceAccountName ??= "default";
    spec.serviceAccount ??= spec.serviceAccountName;
    if (spec.automountServiceAccountToken !== false) addServiceAccountTokenVolume(spec);
  }
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations : [];
  for (const key of ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]) {
    const tolerated = tolerations.some((t) => {
      const o = asObject(t);
      return (o.key === key || (o.key === undefined && o.operator === "Exists")) &&
        (o.effect === undefined || o.effect === "" || o.effect === "NoExecute");
    });
    if (!tolerated) {
      tolerations.push({ key, operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 });
    }
  }
  spec.tolerations = tolerations;
}

// Fields of the status structs that Go's encoder writes even when unset (no omitempty, or a
// struct value): a client reading back what it wrote sees them, so the double writes them too.
function goZeroValues(info: ResourceInfo, obj: JsonObject): void {
  if (info.resource !== "pods" && info.resource !== "nodes") return;
  const status = asObject(obj.status);
  if (obj.status === undefined) return;
  const conditionTimes = info.resource === "pods"
    ? ["lastProbeTime", "lastTransitionTime"]
    : ["lastHeartbeatTime", "lastTransitionTime"];
  for (const c of Array.isArray(status.conditions) ? status.conditions : []) {
    const condition = asObject(c);
    condition.status ??= "";
    for (const field of conditionTimes) condition[field] ??= null;
  }
  if (info.resource === "nodes") {
    for (const a of Array.isArray(status.addresses) ? status.addresses : []) {
      asObject(a).address ??= "";
    }
    for (const i of Array.isArray(status.images) ? status.images : []) asObject(i).names ??= null;
    return;
  }
  for (
    const field of ["initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"]
  ) {
    const list = status[field];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const cs = asObject(item);
      cs.name ??= "";
      cs.state = containerStateZero(cs.state);
      cs.lastState = containerStateZero(cs.lastState);
      cs.ready ??= false;
      cs.restartCount ??= 0;
      cs.image ??= "";
      cs.imageID ??= "";
    }
  }
}

function containerStateZero(value: JsonValue | undefined): JsonObject {
  const state = asObject(value);
  if (state.running !== undefined) asObject(state.running).startedAt ??= null;
  if (state.terminated !== undefined) {
    const t = asObject(state.terminated);
    t.exitCode ??= 0;
    t.startedAt ??= null;
    t.finishedAt ??= null;
  }
  return state;
}

// The ServiceAccount admission plugin's projected token volume, mounted into every container
// (the double assumes the service account allows automounting, as the default one does).
function addServiceAccountTokenVolume(spec: JsonObject): void {
  const name = `kube-api-access-${randomSuffix()}`;
  const volumes = Array.isArray(spec.volumes) ? spec.volumes : [];
  volumes.push({
    name,
    projected: {
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
        {
          downwardAPI: {
            items: [{
              path: "namespace",
              fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" },
            }],
          },
        },
      ],
      defaultMode: 420,
    },
  });
  spec.volumes = volumes;
  for (const field of ["initContainers", "containers"]) {
    const list = spec[field];
    if (!Array.isArray(list)) continue;
    for (const c of list) {
      const container = asObject(c);
      const mounts = Array.isArray(container.volumeMounts) ? container.volumeMounts : [];
      mounts.push({
        name,
        readOnly: true,
        mountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
      });
      container.volumeMounts = mounts;
    }
  }
}

// The defaulting every decode applies (create, update and the result of a patch alike).
function defaultPodSpec(pod: JsonObject): void {
  const spec = asObject(pod.spec);
  pod.spec = spec;
  spec.restartPolicy ??= "Always";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.securityContext ??= {};
  spec.schedulerName ??= "default-scheduler";
  spec.enableServiceLinks ??= true;
  spec.priority ??= 0;
  spec.preemptionPolicy ??= "PreemptLowerPriority";
  if (spec.serviceAccount && !spec.serviceAccountName) {
    spec.serviceAccountName = spec.serviceAccount;
  }
  for (const field of ["initContainers", "containers"]) {
    const list = spec[field];
    if (!Array.isArray(list)) continue;
    for (const c of list) {
      if (typeof c === "object" && c !== null && !Array.isArray(c)) defaultContainer(c);
    }
  }
}

function defaultContainer(c: JsonObject): void {
  c.terminationMessagePath ??= "/dev/termination-log";
  c.terminationMessagePolicy ??= "File";
  const image = typeof c.image === "string" ? c.image : "";
  const tagged = /:[^/]+$/.test(image.split("@")[0]) && !image.split("@")[0].endsWith(":latest");
  c.imagePullPolicy ??= image.includes("@") || tagged ? "IfNotPresent" : "Always";
  c.resources ??= {};
  if (Array.isArray(c.ports)) {
    for (const p of c.ports) {
      const port = asObject(p);
      port.protocol ??= "TCP";
    }
  }
  for (const probeName of ["livenessProbe", "readinessProbe", "startupProbe"]) {
    const probe = c[probeName];
    if (typeof probe !== "object" || probe === null || Array.isArray(probe)) continue;
    probe.timeoutSeconds ??= 1;
    probe.periodSeconds ??= 10;
    probe.successThreshold ??= 1;
    probe.failureThreshold ??= 3;
    const http = probe.httpGet;
    if (typeof http === "object" && http !== null && !Array.isArray(http)) {
      http.path ??= "/";
      http.scheme ??= "HTTP";
    }
  }
}

// qos.GetPodQOS, for the cpu/memory requests and limits of regular containers.
function qosClass(spec: JsonObject): string {
  const containers = [
    ...(Array.isArray(spec.containers) ? spec.containers : []),
    ...(Array.isArray(spec.initContainers) ? spec.initContainers : []),
  ].map(asObject);
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const res = asObject(c.resources);
    const requests = asObject(res.requests);
    const limits = asObject(res.limits);
    for (const name of ["cpu", "memory"]) {
      if (requests[name] !== undefined || limits[name] !== undefined) any = true;
      const request = requests[name] ?? limits[name];
      if (limits[name] === undefined || request !== limits[name]) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

// ValidatePodUpdate: after creation only images, activeDeadlineSeconds, added tolerations and a
// negative terminationGracePeriodSeconds may change.
function validatePodSpecUpdate(
  info: ResourceInfo,
  name: string,
  next: JsonObject,
  current: JsonObject,
): void {
  const a = clone(asObject(next.spec));
  const b = clone(asObject(current.spec));
  for (const spec of [a, b]) {
    delete spec.activeDeadlineSeconds;
    delete spec.tolerations;
    for (const field of ["containers", "initContainers"]) {
      const list = spec[field];
      if (Array.isArray(list)) { for (const c of list) delete asObject(c).image; }
    }
  }
  if ((b.terminationGracePeriodSeconds as number) < 0) delete a.terminationGracePeriodSeconds;
  if ((b.terminationGracePeriodSeconds as number) < 0) delete b.terminationGracePeriodSeconds;
  if (jsonEqual(a, b)) return;
  throw invalid({ kind: info.kind, group: info.group, name: name }, [{
    reason: "FieldValueForbidden",
    message:
      "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    field: "spec",
  }]);
}

// podStrategy.CheckGracefulDelete: the requested grace (default: the pod's
// terminationGracePeriodSeconds), 0 for unbound and terminal pods, negative treated as 1.
function podGracePeriod(pod: JsonObject, options: DeleteOptions): number {
  const spec = asObject(pod.spec);
  const status = asObject(pod.status);
  let grace = options.gracePeriodSeconds ??
    (typeof spec.terminationGracePeriodSeconds === "number"
      ? spec.terminationGracePeriodSeconds
      : 30);
  if (grace < 0) grace = 1;
  if (!spec.nodeName) grace = 0;
  if (status.phase === "Failed" || status.phase === "Succeeded") grace = 0;
  return grace;
}

/** The qualified name used in messages (`leases.coordination.k8s.io`). */
export function resourceName(info: ResourceInfo): string {
  return qualifiedResource(info);
}

/** Parses an ApiError-shaped value out of any thrown value (unknown errors become 500). */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError({
    code: 500,
    reason: "InternalError",
    message: `Internal error occurred: ${String(err)}`,
  });
}
