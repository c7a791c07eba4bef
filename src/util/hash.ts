/**
 * The canonical text of an object that kubelet hashes: JSON with object keys sorted at every
 * level, so that key order in a manifest does not change a hash.
 * Plays the part of k8s.io/kubernetes/pkg/util/hash (`DeepHashObject`, which prints the object
 * with sorted map keys before hashing); the hashes built on it are probelet's own.
 * @module
 */

/**
 * JSON with object keys sorted at every level (`Object.keys(...).sort()`), so that key order in
 * the input does not matter. Keys holding `undefined` are left out and `undefined` array items
 * become `null`, as `JSON.stringify` does; typed arrays are left as `JSON.stringify` prints them.
 * Keys that are array indices (`"10"`, `"9"`) print in numeric order, as a JavaScript object
 * holds them: static pod UIDs and container hashes already made depend on this exact text.
 *
 * @example
 * ```ts
 * canonicalJSON({ b: 1, a: [{ d: 2, c: 3 }] }); // '{"a":[{"c":3,"d":2}],"b":1}'
 * ```
 */
export function canonicalJSON(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object" && !ArrayBuffer.isView(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      out[key] = sortKeys((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  return value;
}
