/**
 * Strategic merge patch for the types kubelet writes: `createTwoWayMergePatch` computes the patch
 * kubelet sends (pod status, node status, events), `strategicMergePatch` applies one (for the fake
 * clientset and the API-server double). Lists merge by the keys in `schema.ts`; directives
 * `$patch` (`delete`, `replace`), `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`
 * follow apimachinery's wire format.
 * Mirrors k8s.io/apimachinery/pkg/util/strategicpatch/patch.go (two-way subset).
 * @module
 */
import { isJsonObject, jsonEqual } from "./json_patch.ts";
import { goJsonMarshal } from "./marshal.ts";
import { isMergeList, type PatchSchema } from "./schema.ts";

/** `$patch`: the directive key. */
export const directiveMarker = "$patch";
/** `$patch: delete` removes a list element or map. */
export const deleteDirective = "delete";
/** `$patch: replace` replaces a list or map instead of merging. */
export const replaceDirective = "replace";
/** `$setElementOrder/<list>`: the order of a merged list's elements. */
export const setElementOrderDirectivePrefix = "$setElementOrder/";
/** `$deleteFromPrimitiveList/<list>`: values to drop from a merged list of scalars. */
export const deleteFromPrimitiveListDirectivePrefix = "$deleteFromPrimitiveList/";
/** `$retainKeys`: the only keys a `retainKeys` map keeps (applied; never produced by this subset). */
export const retainKeysDirective = "$retainKeys";

type JsonMap = Record<string, unknown>;

/** A patch that cannot be applied or computed (a malformed directive, a list without its key). */
export class StrategicPatchError extends Error {
  /** Creates the error with `message`. */
  constructor(message: string) {
    super(message);
    this.name = "StrategicPatchError";
  }
}

function fieldSchema(schema: PatchSchema | undefined, key: string): PatchSchema | undefined {
  return schema?.fields?.[key] ?? (schema?.fields ? undefined : schema?.items);
}

/**
 * Applies the strategic merge patch `patch` to `original` (not modified) and returns the result.
 *
 * @example
 * ```ts
 * import { podSchema } from "./schema.ts";
 *
 * strategicMergePatch(
 *   { status: { conditions: [{ type: "Ready", status: "False" }] } },
 *   { status: { conditions: [{ type: "Ready", status: "True" }] } },
 *   podSchema,
 * ); // { status: { conditions: [{ type: "Ready", status: "True" }] } }
 * ```
 */
export function strategicMergePatch<T extends object>(
  original: T,
  patch: unknown,
  schema: PatchSchema,
): T {
  if (!isJsonObject(patch)) {
    throw new StrategicPatchError("a strategic merge patch must be an object");
  }
  return mergeMap(structuredClone(original) as JsonMap, patch, schema) as T;
}

// Merges `patch` into `original` (owned, may be modified).
function mergeMap(original: JsonMap, patch: JsonMap, schema: PatchSchema | undefined): JsonMap {
  const directive = patch[directiveMarker];
  // A map deleted by directive leaves an empty map behind, as Go's mergeMap does.
  if (directive === deleteDirective) return {};
  if (directive === replaceDirective) return stripDirectives(patch) as JsonMap;
  if (directive !== undefined) {
    throw new StrategicPatchError(`unknown patch directive ${JSON.stringify(directive)}`);
  }
  // $retainKeys: fields of the original not named there are cleared before merging.
  const retain = patch[retainKeysDirective];
  if (retain !== undefined) {
    if (!Array.isArray(retain)) throw new StrategicPatchError("$retainKeys must be a list");
    for (const key of Object.keys(patch)) {
      if (key.startsWith("$")) continue;
      if (!retain.includes(key)) {
        throw new StrategicPatchError(
          `the patch has key ${JSON.stringify(key)} that doesn't match $retainKeys ${
            JSON.stringify(retain)
          }`,
        );
      }
    }
    for (const key of Object.keys(original)) if (!retain.includes(key)) delete original[key];
  }
  const orders = new Map<string, unknown[]>();
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(setElementOrderDirectivePrefix)) {
      if (!Array.isArray(value)) throw new StrategicPatchError(`${key}: must be a list`);
      orders.set(key.slice(setElementOrderDirectivePrefix.length), value);
    }
  }
  // Deletions from scalar lists first, so the merge and ordering below see their result.
  const entries = Object.entries(patch).sort(([a], [b]) =>
    Number(!a.startsWith(deleteFromPrimitiveListDirectivePrefix)) -
    Number(!b.startsWith(deleteFromPrimitiveListDirectivePrefix))
  );
  for (const [key, value] of entries) {
    if (key === retainKeysDirective || key.startsWith(setElementOrderDirectivePrefix)) continue;
    if (key.startsWith(deleteFromPrimitiveListDirectivePrefix)) {
      const field = key.slice(deleteFromPrimitiveListDirectivePrefix.length);
      const drop = Array.isArray(value) ? value : [];
      const current = original[field];
      if (Array.isArray(current)) {
        original[field] = current.filter((v) => !drop.some((d) => jsonEqual(d, v)));
      }
      continue;
    }
    const sub = fieldSchema(schema, key);
    if (value === null) {
      delete original[key];
    } else if (isJsonObject(value)) {
      const base = isJsonObject(original[key]) ? original[key] as JsonMap : {};
      original[key] = mergeMap(base, value, sub);
    } else if (Array.isArray(value) && isMergeList(sub)) {
      const base = Array.isArray(original[key]) ? original[key] as unknown[] : [];
      original[key] = mergeList(base, value, sub!, orders.get(key));
      orders.delete(key);
    } else if (Array.isArray(value)) {
      original[key] = stripDirectives(value);
    } else {
      original[key] = value;
    }
  }
  // An order for a list the patch does not otherwise touch still reorders it.
  for (const [field, order] of orders) {
    const sub = fieldSchema(schema, field);
    const current = original[field];
    if (Array.isArray(current) && isMergeList(sub)) {
      original[field] = mergeList(current, [], sub!, order);
    }
  }
  return original;
}

function mergeList(
  original: unknown[],
  patch: unknown[],
  schema: PatchSchema,
  order?: unknown[],
): unknown[] {
  const key = schema.patchMergeKey;
  const isReplace = (e: unknown) => isJsonObject(e) && e[directiveMarker] === replaceDirective;
  if (patch.some(isReplace)) {
    return stripDirectives(patch.filter((e) => !isReplace(e))) as unknown[];
  }
  let merged: unknown[];
  let patchItems: unknown[];
  if (!key) {
    merged = [...original];
    for (const v of patch) if (!merged.some((o) => jsonEqual(o, v))) merged.push(v);
    patchItems = patch;
  } else {
    merged = [...original];
    patchItems = [];
    for (const element of patch) {
      if (!isJsonObject(element)) {
        throw new StrategicPatchError(`list element ${JSON.stringify(element)} is not an object`);
      }
      if (!(key in element)) {
        throw new StrategicPatchError(
          `map: ${JSON.stringify(element)} does not contain declared merge key: ${key}`,
        );
      }
      const id = element[key];
      if (element[directiveMarker] === deleteDirective) {
        merged = merged.filter((o) => !(isJsonObject(o) && jsonEqual(o[key], id)));
        continue;
      }
      patchItems.push(element);
      const i = merged.findIndex((o) => isJsonObject(o) && jsonEqual(o[key], id));
      if (i >= 0) merged[i] = mergeMap(merged[i] as JsonMap, element, schema.items);
      else merged.push(mergeMap({}, element, schema.items));
    }
  }
  if (order) checkOrderMatches(patchItems, order, key);
  return normalizeElementOrder(merged, order ?? patchItems, original, key);
}

function idOf(v: unknown, key?: string): unknown {
  return key && isJsonObject(v) ? v[key] : v;
}

function indexIn(list: unknown[], v: unknown, key?: string): number {
  const id = idOf(v, key);
  return list.findIndex((o) => jsonEqual(idOf(o, key), id));
}

// The patch list must follow $setElementOrder (Go: "doesn't match" error).
function checkOrderMatches(patchItems: unknown[], order: unknown[], key?: string): void {
  let last = -1;
  for (const item of patchItems) {
    const at = indexIn(order, item, key);
    if (at < 0) continue;
    if (at < last) {
      throw new StrategicPatchError(
        `the order of the patch list doesn't match $setElementOrder list: ${JSON.stringify(order)}`,
      );
    }
    last = at;
  }
}

// Orders a merged list: elements named by the patch (or its $setElementOrder) in that order,
// elements only the server had in their server order, interleaved by their server positions
// (Go's normalizeElementOrder + mergeSortedSlice).
function normalizeElementOrder(
  merged: unknown[],
  patchOrder: unknown[],
  serverOrder: unknown[],
  key?: string,
): unknown[] {
  const byPatch = merged.filter((v) => indexIn(patchOrder, v, key) >= 0)
    .sort((a, b) => indexIn(patchOrder, a, key) - indexIn(patchOrder, b, key));
  const serverOnly = merged.filter((v) => indexIn(patchOrder, v, key) < 0)
    .map((v, n) => ({ v, n, at: indexIn(serverOrder, v, key) }))
    .sort((a, b) => a.at >= 0 && b.at >= 0 ? a.at - b.at : a.n - b.n)
    .map((e) => e.v);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length || j < byPatch.length) {
    if (j >= byPatch.length) out.push(serverOnly[i++]);
    else if (i >= serverOnly.length) out.push(byPatch[j++]);
    else {
      const li = indexIn(serverOrder, serverOnly[i], key);
      const ri = indexIn(serverOrder, byPatch[j], key);
      if (li >= 0 && ri >= 0 && li < ri) out.push(serverOnly[i++]);
      else out.push(byPatch[j++]);
    }
  }
  return out;
}

// Removes directive keys from a patch fragment that becomes a value as it is.
function stripDirectives(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.filter((e) =>
      !(isJsonObject(e) && Object.keys(e).length === 1 && directiveMarker in e)
    )
      .map(stripDirectives);
  }
  if (!isJsonObject(value)) return value;
  const out: JsonMap = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === directiveMarker || k === retainKeysDirective) continue;
    if (k.startsWith(setElementOrderDirectivePrefix)) continue;
    if (k.startsWith(deleteFromPrimitiveListDirectivePrefix)) continue;
    if (v === null) continue;
    out[k] = stripDirectives(v);
  }
  return out;
}

/** Options of `diffMaps` (apimachinery's `DiffOptions`; two-way patches use the defaults). */
interface DiffOptions {
  setElementOrder: boolean;
}

/**
 * The strategic merge patch that turns `original` into `modified`, as JSON text with Go's byte
 * layout (sorted keys): merge lists get changed elements plus `$setElementOrder/<list>`, removed
 * elements become `{"$patch":"delete", <key>: ...}`, removed fields `null`, other lists are sent
 * whole when they differ. Inputs are the JSON forms of the objects (as Go marshals them).
 *
 * @example
 * ```ts
 * import { podSchema } from "./schema.ts";
 *
 * createTwoWayMergePatch(
 *   { status: { conditions: [{ type: "Ready", status: "True" }] } },
 *   { status: { conditions: [{ type: "Ready", status: "False" }] } },
 *   podSchema,
 * ); // '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"status":"False","type":"Ready"}]}}'
 * ```
 */
export function createTwoWayMergePatch(
  original: object,
  modified: object,
  schema: PatchSchema,
): string {
  return goJsonMarshal(createTwoWayMergeMap(original, modified, schema));
}

/** `createTwoWayMergePatch` before marshalling: the patch as a JSON object. */
export function createTwoWayMergeMap(
  original: object,
  modified: object,
  schema: PatchSchema,
): Record<string, unknown> {
  // Round-trip through JSON so undefined members vanish as they do on the wire.
  const o = JSON.parse(JSON.stringify(original)) as JsonMap;
  const m = JSON.parse(JSON.stringify(modified)) as JsonMap;
  if (!isJsonObject(o) || !isJsonObject(m)) {
    throw new StrategicPatchError("both documents of a two-way merge patch must be objects");
  }
  return diffMaps(o, m, schema, { setElementOrder: true });
}

function jsonKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function diffMaps(
  original: JsonMap,
  modified: JsonMap,
  schema: PatchSchema | undefined,
  options: DiffOptions,
): JsonMap {
  const patch: JsonMap = {};
  for (const [key, modifiedValue] of Object.entries(modified)) {
    if (!(key in original)) {
      patch[key] = modifiedValue;
      continue;
    }
    const originalValue = original[key];
    if (key === directiveMarker) {
      if (!jsonEqual(originalValue, modifiedValue)) patch[key] = modifiedValue;
      continue;
    }
    if (jsonKind(originalValue) !== jsonKind(modifiedValue)) {
      patch[key] = modifiedValue;
      continue;
    }
    const sub = fieldSchema(schema, key);
    if (isJsonObject(originalValue)) {
      if (sub?.patchStrategy === replaceDirective) {
        if (!jsonEqual(originalValue, modifiedValue)) patch[key] = modifiedValue;
        continue;
      }
      const value = diffMaps(originalValue, modifiedValue as JsonMap, sub, options);
      if (Object.keys(value).length > 0) patch[key] = value;
    } else if (Array.isArray(originalValue)) {
      diffSliceInto(patch, key, originalValue, modifiedValue as unknown[], sub, options);
    } else if (!jsonEqual(originalValue, modifiedValue)) {
      patch[key] = modifiedValue;
    }
  }
  // Fields only the original has are deleted with null.
  for (const key of Object.keys(original)) {
    if (!(key in modified)) patch[key] = null;
  }
  return patch;
}

function diffSliceInto(
  patch: JsonMap,
  key: string,
  original: unknown[],
  modified: unknown[],
  schema: PatchSchema | undefined,
  options: DiffOptions,
): void {
  if (!isMergeList(schema)) {
    if (!jsonEqual(original, modified)) patch[key] = modified;
    return;
  }
  const { patchList, deleteList, setOrderList } = diffLists(original, modified, schema!, options);
  if (patchList.length > 0) patch[key] = patchList;
  if (deleteList.length > 0) patch[deleteFromPrimitiveListDirectivePrefix + key] = deleteList;
  if (setOrderList.length > 0) patch[setElementOrderDirectivePrefix + key] = setOrderList;
}

function diffLists(
  original: unknown[],
  modified: unknown[],
  schema: PatchSchema,
  options: DiffOptions,
): { patchList: unknown[]; deleteList: unknown[]; setOrderList: unknown[] } {
  const none = { patchList: [], deleteList: [], setOrderList: [] };
  if (original.length === 0) {
    return modified.length === 0 ? none : { ...none, patchList: modified };
  }
  const sample = original[0] ?? modified[0];
  if (Array.isArray(sample)) throw new StrategicPatchError("lists of lists are not supported");
  if (isJsonObject(sample)) {
    const key = schema.patchMergeKey;
    if (!key) throw new StrategicPatchError("a merge list of objects needs a merge key");
    const { changed, deleted } = diffListsOfMaps(original, modified, schema, key, options);
    const patchList = [...orderLike(changed, modified, key), ...deleted];
    const orderSame = sameOrder(original, modified, key);
    let setOrderList: unknown[] = [];
    if (options.setElementOrder && (patchList.length > 0 || !orderSame)) {
      setOrderList = modified.map((v) => ({ [key]: (v as JsonMap)[key] }));
    }
    return { patchList, deleteList: [], setOrderList };
  }
  // Lists of scalars: additions in the list, removals in $deleteFromPrimitiveList.
  const added = unique(modified.filter((v) => !original.some((o) => jsonEqual(o, v))));
  const deleted = unique(original.filter((v) => !modified.some((m) => jsonEqual(m, v))))
    .sort(compareScalars);
  const setOrderList = options.setElementOrder &&
      (deleted.length > 0 || !jsonEqual(original, modified))
    ? modified
    : [];
  return { patchList: added, deleteList: deleted, setOrderList };
}

// Walks both lists sorted by merge key, as Go's diffListsOfMaps does.
function diffListsOfMaps(
  original: unknown[],
  modified: unknown[],
  schema: PatchSchema,
  key: string,
  options: DiffOptions,
): { changed: unknown[]; deleted: unknown[] } {
  const keyString = (v: unknown) => {
    if (!isJsonObject(v) || !(key in v)) {
      throw new StrategicPatchError(
        `map: ${JSON.stringify(v)} does not contain declared merge key: ${key}`,
      );
    }
    return goValueString(v[key]);
  };
  const byKey = (list: unknown[]) =>
    [...list].map((v) => ({ v: v as JsonMap, k: keyString(v) }))
      .sort((a, b) => a.k < b.k ? -1 : a.k > b.k ? 1 : 0);
  const os = byKey(original);
  const ms = byKey(modified);
  const changed: unknown[] = [];
  const deleted: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < os.length || j < ms.length) {
    if (i < os.length && j < ms.length && os[i].k === ms[j].k) {
      const value = diffMaps(os[i].v, ms[j].v, schema.items, options);
      if (Object.keys(value).length > 0) {
        value[key] = ms[j].v[key];
        changed.push(value);
      }
      i++;
      j++;
    } else if (i >= os.length || (j < ms.length && os[i].k > ms[j].k)) {
      changed.push(ms[j].v);
      j++;
    } else {
      deleted.push({ [directiveMarker]: deleteDirective, [key]: os[i].v[key] });
      i++;
    }
  }
  return { changed, deleted };
}

// Orders patch elements as the modified list orders them (Go's normalizeSliceOrder).
function orderLike(items: unknown[], order: unknown[], key: string): unknown[] {
  const indexIn = (v: unknown) =>
    order.findIndex((o) => jsonEqual((o as JsonMap)[key], (v as JsonMap)[key]));
  return items.map((v, n) => ({ v, n, at: indexIn(v) }))
    .sort((a, b) => a.at >= 0 && b.at >= 0 ? a.at - b.at : a.n - b.n)
    .map((e) => e.v);
}

// Whether the elements both lists share come in the same order (Go's isOrderSame).
function sameOrder(original: unknown[], modified: unknown[], key: string): boolean {
  if (original.length !== modified.length) return false;
  return original.every((o, i) => jsonEqual((o as JsonMap)[key], (modified[i] as JsonMap)[key]));
}

function unique(values: unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const v of values) if (!out.some((o) => jsonEqual(o, v))) out.push(v);
  return out;
}

function compareScalars(a: unknown, b: unknown): number {
  const x = goValueString(a);
  const y = goValueString(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

// fmt's %v of a JSON scalar, which Go uses to compare merge keys.
function goValueString(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}
