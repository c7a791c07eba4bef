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
/** `$retainKeys`: keys to keep in a `retainKeys` map (not produced by this subset). */
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
  const result = mergeMap(structuredClone(original) as JsonMap, patch, schema);
  return (result ?? {}) as T;
}

// Merges `patch` into `original` (owned, may be modified); undefined means "delete this map".
function mergeMap(original: JsonMap, patch: JsonMap, schema: PatchSchema | undefined) {
  const directive = patch[directiveMarker];
  if (directive === deleteDirective) return undefined;
  if (directive === replaceDirective) return stripDirectives(patch) as JsonMap;
  if (directive !== undefined) {
    throw new StrategicPatchError(`unknown patch directive ${JSON.stringify(directive)}`);
  }
  const orders: [string, unknown][] = [];
  for (const [key, value] of Object.entries(patch)) {
    if (key === retainKeysDirective) continue;
    if (key.startsWith(setElementOrderDirectivePrefix)) {
      orders.push([key.slice(setElementOrderDirectivePrefix.length), value]);
      continue;
    }
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
      const merged = mergeMap(base, value, sub);
      if (merged === undefined) delete original[key];
      else original[key] = merged;
    } else if (Array.isArray(value)) {
      const base = Array.isArray(original[key]) ? original[key] as unknown[] : [];
      original[key] = isMergeList(sub) ? mergeList(base, value, sub!) : stripDirectives(value);
    } else {
      original[key] = value;
    }
  }
  for (const [field, order] of orders) {
    const sub = fieldSchema(schema, field);
    const current = original[field];
    if (Array.isArray(current) && Array.isArray(order)) {
      original[field] = applyElementOrder(current, order, sub?.patchMergeKey);
    }
  }
  return original;
}

function mergeList(original: unknown[], patch: unknown[], schema: PatchSchema): unknown[] {
  const key = schema.patchMergeKey;
  if (patch.some((e) => isJsonObject(e) && e[directiveMarker] === replaceDirective)) {
    return stripDirectives(
      patch.filter((e) => !(isJsonObject(e) && e[directiveMarker] === replaceDirective)),
    ) as unknown[];
  }
  if (!key) {
    const out = [...original];
    for (const v of patch) if (!out.some((o) => jsonEqual(o, v))) out.push(v);
    return out;
  }
  let out = [...original];
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
      out = out.filter((o) => !(isJsonObject(o) && jsonEqual(o[key], id)));
      continue;
    }
    const i = out.findIndex((o) => isJsonObject(o) && jsonEqual(o[key], id));
    if (i >= 0) {
      const merged = mergeMap(out[i] as JsonMap, element, schema.items);
      if (merged === undefined) out.splice(i, 1);
      else out[i] = merged;
    } else {
      out.push(mergeMap({}, element, schema.items));
    }
  }
  return out;
}

// Orders `list` by `order` (elements identified by merge key, or by value for scalars); elements not
// named in `order` keep their place relative to the server's list, as Go's mergeSortedSlice does.
function applyElementOrder(list: unknown[], order: unknown[], key?: string): unknown[] {
  const idOf = (v: unknown) => key && isJsonObject(v) ? v[key] : v;
  const rank = (v: unknown) => order.findIndex((o) => jsonEqual(idOf(o), idOf(v)));
  const listed = list.filter((v) => rank(v) >= 0).sort((a, b) => rank(a) - rank(b));
  const serverOnly = list.filter((v) => rank(v) < 0);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < listed.length && j < serverOnly.length) {
    const li = list.indexOf(listed[i]);
    const sj = list.indexOf(serverOnly[j]);
    if (li < sj) out.push(listed[i++]);
    else out.push(serverOnly[j++]);
  }
  return out.concat(listed.slice(i), serverOnly.slice(j));
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
