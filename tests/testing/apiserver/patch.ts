/**
 * PATCH bodies applied the way kube-apiserver applies them: strategic merge patch (the subset of
 * k8s.io/apimachinery/pkg/util/strategicpatch that pods, nodes, leases and events need, with their
 * merge keys), JSON merge patch (RFC 7386) and JSON patch (RFC 6902).
 *
 * Written independently of src/util/strategicpatch so the double checks the client's patches
 * rather than agreeing with them by construction.
 * @module
 */
import { ApiError, badRequest, type JsonObject, type JsonValue } from "./status.ts";

/** The PATCH content types the double applies. */
export const patchTypes = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
] as const;

/** One of {@link patchTypes}. */
export type PatchType = typeof patchTypes[number];

/** How a list field merges under strategic merge patch (from the Go struct tags). */
export interface ListStrategy {
  /** `patchMergeKey`: elements merge by this field. */
  mergeKey?: string;
  /** Primitive list with `patchStrategy:"merge"`: union instead of replace (finalizers). */
  primitiveMerge?: boolean;
}

const metadataLists: Record<string, ListStrategy> = {
  "metadata.ownerReferences": { mergeKey: "uid" },
  "metadata.finalizers": { primitiveMerge: true },
};

const containerLists = (prefix: string): Record<string, ListStrategy> => ({
  [prefix]: { mergeKey: "name" },
  [`${prefix}.ports`]: { mergeKey: "containerPort" },
  [`${prefix}.env`]: { mergeKey: "name" },
  [`${prefix}.volumeMounts`]: { mergeKey: "mountPath" },
  [`${prefix}.volumeDevices`]: { mergeKey: "devicePath" },
  [`${prefix}.resizePolicy`]: {},
});

/**
 * Merge keys per resource and field path (list elements add no path segment). Lists not named
 * here are replaced whole, like a Go field without a patch strategy: `status.containerStatuses`,
 * `spec.tolerations`, `spec.taints`, `status.images`.
 */
export const mergeKeys: Record<string, Record<string, ListStrategy>> = {
  pods: {
    ...metadataLists,
    ...containerLists("spec.containers"),
    ...containerLists("spec.initContainers"),
    ...containerLists("spec.ephemeralContainers"),
    "spec.volumes": { mergeKey: "name" },
    "spec.imagePullSecrets": { mergeKey: "name" },
    "spec.hostAliases": { mergeKey: "ip" },
    "spec.resourceClaims": { mergeKey: "name" },
    "status.conditions": { mergeKey: "type" },
    "status.podIPs": { mergeKey: "ip" },
    "status.hostIPs": { mergeKey: "ip" },
    "status.resourceClaimStatuses": { mergeKey: "name" },
  },
  nodes: {
    ...metadataLists,
    "status.conditions": { mergeKey: "type" },
    "status.addresses": { mergeKey: "type" },
  },
  leases: { ...metadataLists },
  events: { ...metadataLists },
  namespaces: { ...metadataLists },
};

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/**
 * Applies a PATCH body of the given type to `original` (not modified) of `resource` (whose merge
 * keys a strategic merge patch uses); returns the result.
 */
export function applyPatch(
  original: JsonObject,
  patch: { resource: string; type: PatchType; body: string },
): JsonObject {
  const { resource, type: patchType, body } = patch;
  return applyParsed(original, { resource, patchType, parsed: parseJson(body) });
}

function parseJson(body: string): JsonValue {
  try {
    return JSON.parse(body);
  } catch (e) {
    throw badRequest(`error decoding patch: ${(e as Error).message}`);
  }
}

function applyParsed(
  original: JsonObject,
  options: { resource: string; patchType: PatchType; parsed: JsonValue },
): JsonObject {
  const { resource, patchType, parsed: patch } = options;
  switch (patchType) {
    case "application/merge-patch+json": {
      if (!isObject(patch)) throw badRequest("invalid JSON patch");
      const out = mergePatch(clone(original), patch);
      if (!isObject(out)) throw badRequest("merge patch must produce an object");
      return out;
    }
    case "application/json-patch+json":
      if (!Array.isArray(patch)) {
        throw badRequest(
          "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        );
      }
      return jsonPatch(clone(original), patch);
    case "application/strategic-merge-patch+json":
      if (!isObject(patch)) throw badRequest("invalid JSON patch");
      return strategicMerge(clone(original), patch, {
        schema: mergeKeys[resource] ?? {},
        path: "",
      });
  }
}

/** RFC 7386 JSON merge patch: objects merge, `null` deletes, everything else replaces. */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? target : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch

const directive = "$patch";
const setElementOrderPrefix = "$setElementOrder/";
const deleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/";
const retainKeys = "$retainKeys";

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/**
 * Merges a strategic merge patch map into `original` (modified and returned). `path` is the field
 * path used to look merge keys up.
 */
export function strategicMerge(
  original: JsonObject,
  patch: JsonObject,
  options: { schema: Record<string, ListStrategy>; path: string },
): JsonObject {
  const { schema, path } = options;
  const mode = patch[directive];
  if (mode !== undefined) {
    if (mode === "replace") {
      const replaced = clone(patch);
      delete replaced[directive];
      return replaced;
    }
    if (mode === "delete") return {};
    if (mode !== "merge") {
      throw badRequest(`Unable to find patch strategy "${String(mode)}"`);
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key === directive || key === retainKeys || key.startsWith(setElementOrderPrefix)) continue;
    if (key.startsWith(deleteFromPrimitiveListPrefix)) {
      const field = key.slice(deleteFromPrimitiveListPrefix.length);
      const current = original[field];
      if (!Array.isArray(value)) throw badRequest("Unable to find list to delete from");
      if (Array.isArray(current)) {
        original[field] = current.filter((v) => !value.some((d) => jsonEqual(d, v)));
      }
      continue;
    }
    const fieldPath = join(path, key);
    if (value === null) {
      delete original[key];
      continue;
    }
    if (isObject(value)) {
      if (value[directive] === "delete") {
        delete original[key];
        continue;
      }
      const base = isObject(original[key]) ? original[key] as JsonObject : {};
      original[key] = strategicMerge(base, value, { schema, path: fieldPath });
      continue;
    }
    if (Array.isArray(value)) {
      const order = patch[`${setElementOrderPrefix}${key}`];
      original[key] = mergeList(
        Array.isArray(original[key]) ? original[key] as JsonValue[] : [],
        value,
        { schema, path: fieldPath, order: Array.isArray(order) ? order : undefined },
      );
      continue;
    }
    original[key] = value;
  }
  // A $setElementOrder without the list itself still reorders the existing list.
  for (const [key, order] of Object.entries(patch)) {
    if (!key.startsWith(setElementOrderPrefix) || !Array.isArray(order)) continue;
    const field = key.slice(setElementOrderPrefix.length);
    if (Object.hasOwn(patch, field)) continue;
    const current = original[field];
    const mergeKey = schema[join(path, field)]?.mergeKey;
    if (Array.isArray(current) && mergeKey) {
      original[field] = normalizeElementOrder(current, {
        order: order.map((o) => (isObject(o) ? o[mergeKey] : o)),
        server: current,
        mergeKey,
      });
    }
  }
  return original;
}

function mergeList(
  original: JsonValue[],
  patch: JsonValue[],
  options: { schema: Record<string, ListStrategy>; path: string; order?: JsonValue[] },
): JsonValue[] {
  const strategy = options.schema[options.path];
  if (strategy?.primitiveMerge) {
    const out = [...original];
    for (const v of patch) if (!out.some((o) => jsonEqual(o, v))) out.push(v);
    return out;
  }
  const mergeKey = strategy?.mergeKey;
  if (!mergeKey) {
    // No patch strategy: the patch's list replaces the original.
    return clone(patch).filter((e) => !(isObject(e) && e[directive] !== undefined));
  }
  if (patch.some((e) => isObject(e) && e[directive] === "replace")) {
    return clone(patch).filter((e) => !(isObject(e) && e[directive] === "replace"));
  }
  const out = clone(original);
  const patchKeys: JsonValue[] = [];
  for (const element of patch) {
    if (!isObject(element)) {
      throw badRequest(
        `merging an object in json but data type is not struct, instead is: ${typeof element}`,
      );
    }
    const key = element[mergeKey];
    if (key === undefined) {
      throw badRequest(
        `map: ${JSON.stringify(element)} does not contain declared merge key: ${mergeKey}`,
      );
    }
    const index = out.findIndex((o) => isObject(o) && jsonEqual(o[mergeKey], key));
    if (element[directive] === "delete") {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    patchKeys.push(key);
    if (index >= 0) {
      out[index] = strategicMerge(out[index] as JsonObject, element, options);
    } else {
      const added = clone(element);
      delete added[directive];
      out.push(strategicMerge({}, added, options));
    }
  }
  const order = options.order
    ? options.order.map((o) => (isObject(o) ? o[mergeKey] : o))
    : patchKeys;
  return normalizeElementOrder(out, { order, server: original, mergeKey });
}

/**
 * Orders a merged list like strategicpatch's normalizeElementOrder + mergeSortedSlice: the
 * elements the patch names (in `$setElementOrder`, else in the patch list) come in that order;
 * elements only the server had keep the server's order; the two runs are merged by server
 * position, and an element the server never had goes before whatever it is compared with.
 */
function normalizeElementOrder(
  merged: JsonValue[],
  options: { order: JsonValue[]; server: JsonValue[]; mergeKey: string },
): JsonValue[] {
  const keyOf = (e: JsonValue) => (isObject(e) ? e[options.mergeKey] : e);
  const indexIn = (list: JsonValue[], e: JsonValue) =>
    list.findIndex((k) => jsonEqual(k, keyOf(e)));
  const serverKeys = options.server.map(keyOf);
  const left = merged.filter((e) => indexIn(options.order, e) >= 0)
    .sort((a, b) => indexIn(options.order, a) - indexIn(options.order, b));
  const right = merged.filter((e) => indexIn(options.order, e) < 0)
    .sort((a, b) => indexIn(serverKeys, a) - indexIn(serverKeys, b));
  const out: JsonValue[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length && j < right.length) {
    const li = indexIn(serverKeys, left[i]);
    const ri = indexIn(serverKeys, right[j]);
    if (li >= 0 && ri >= 0 && ri < li) out.push(right[j++]);
    else out.push(left[i++]);
  }
  return [...out, ...left.slice(i), ...right.slice(j)];
}

/** Structural JSON equality (key order ignored). */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// JSON patch (RFC 6902)

function unprocessable(message: string): ApiError {
  return new ApiError({ code: 422, reason: "Invalid", message: message });
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw unprocessable(`invalid JSON pointer: "${pointer}"`);
  return pointer.slice(1).split("/").map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function parentOf(doc: JsonValue, parts: string[], op: string): JsonValue {
  let current = doc;
  for (const part of parts.slice(0, -1)) {
    if (Array.isArray(current)) current = current[Number(part)];
    else if (isObject(current)) current = current[part];
    else current = undefined as unknown as JsonValue;
    if (current === undefined) {
      throw unprocessable(
        `${op} operation does not apply: doc is missing path: "/${parts.join("/")}"`,
      );
    }
  }
  return current;
}

function getAt(doc: JsonValue, parts: string[]): JsonValue | undefined {
  let current: JsonValue | undefined = doc;
  for (const part of parts) {
    if (Array.isArray(current)) current = current[Number(part)];
    else if (isObject(current)) current = current[part];
    else return undefined;
  }
  return current;
}

function addAt(doc: JsonValue, parts: string[], value: JsonValue, op: string): JsonValue {
  if (parts.length === 0) return value;
  const parent = parentOf(doc, parts, op);
  const last = parts[parts.length - 1];
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : Number(last);
    if (!Number.isInteger(index) || index < 0 || index > parent.length) {
      throw unprocessable(`${op} operation does not apply: index out of bounds: ${last}`);
    }
    parent.splice(index, 0, value);
  } else if (isObject(parent)) {
    parent[last] = value;
  } else {
    throw unprocessable(
      `${op} operation does not apply: doc is missing path: "/${parts.join("/")}"`,
    );
  }
  return doc;
}

function removeAt(doc: JsonValue, parts: string[], op: string): JsonValue {
  const parent = parentOf(doc, parts, op);
  const last = parts[parts.length - 1];
  if (Array.isArray(parent)) {
    const index = Number(last);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length) {
      throw unprocessable(
        `${op} operation does not apply: doc is missing path: "/${parts.join("/")}"`,
      );
    }
    parent.splice(index, 1);
  } else if (isObject(parent) && Object.hasOwn(parent, last)) {
    delete parent[last];
  } else {
    throw unprocessable(
      `${op} operation does not apply: doc is missing path: "/${parts.join("/")}"`,
    );
  }
  return doc;
}

/** Applies an RFC 6902 operation list. Failures are 422, as the API server answers them. */
export function jsonPatch(doc: JsonObject, operations: JsonValue[]): JsonObject {
  let out: JsonValue = doc;
  for (const raw of operations) {
    if (!isObject(raw)) throw badRequest("invalid JSON patch operation");
    const op = String(raw.op ?? "");
    const path = parsePointer(String(raw.path ?? ""));
    switch (op) {
      case "add":
        out = addAt(out, path, clone(raw.value ?? null), op);
        break;
      case "remove":
        out = removeAt(out, path, op);
        break;
      case "replace":
        if (getAt(out, path) === undefined) {
          throw unprocessable(
            `replace operation does not apply: doc is missing key: /${path.join("/")}`,
          );
        }
        out = path.length === 0 ? clone(raw.value ?? null) : removeAt(out, path, op);
        if (path.length > 0) out = addAt(out, path, clone(raw.value ?? null), op);
        break;
      case "test":
        if (!jsonEqual(getAt(out, path), raw.value)) {
          throw unprocessable(`testing value /${path.join("/")} failed: test failed`);
        }
        break;
      case "move":
      case "copy": {
        const from = parsePointer(String(raw.from ?? ""));
        const value = getAt(out, from);
        if (value === undefined) {
          throw unprocessable(
            `${op} operation does not apply: doc is missing from path: /${from.join("/")}`,
          );
        }
        if (op === "move") out = removeAt(out, from, op);
        out = addAt(out, path, clone(value), op);
        break;
      }
      default:
        throw badRequest(`Unexpected kind: ${op}`);
    }
  }
  if (!isObject(out)) throw unprocessable("patch must produce an object");
  return out;
}
