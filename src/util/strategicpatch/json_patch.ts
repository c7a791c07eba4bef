/**
 * Applying the two plain JSON patch formats the API accepts: JSON Merge Patch (RFC 7386,
 * `application/merge-patch+json`) and JSON Patch (RFC 6902, `application/json-patch+json`).
 * Used by the fake clientset and the API-server double; probelet itself sends strategic merge patches.
 * Mirrors what k8s.io/apiserver's patch handler does with github.com/evanphx/json-patch.
 * @module
 */

/** A JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/** Plain object (not an array, not null). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Applies a JSON Merge Patch: objects merge key by key, `null` deletes a key, anything else
 * (arrays included) replaces.
 *
 * @example
 * ```ts
 * applyMergePatch({ a: 1, b: { c: 2 } }, { b: { c: null, d: 3 } }); // { a: 1, b: { d: 3 } }
 * ```
 */
export function applyMergePatch(original: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isJsonObject(original) ? { ...original } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/** One RFC 6902 operation. */
export interface JsonPatchOperation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  value?: unknown;
  from?: string;
}

/** A JSON Patch that cannot be applied (bad pointer, failed `test`, malformed operation). */
export class JsonPatchError extends Error {
  /** Creates the error with `message`. */
  constructor(message: string) {
    super(message);
    this.name = "JsonPatchError";
  }
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new JsonPatchError(`invalid JSON pointer "${pointer}"`);
  return pointer.slice(1).split("/").map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function parentOf(doc: unknown, tokens: string[], pointer: string): unknown {
  let node = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(node)) node = node[arrayIndex(token, node.length - 1, pointer)];
    else if (isJsonObject(node) && token in node) node = node[token];
    else throw new JsonPatchError(`path "${pointer}" does not exist`);
  }
  if (!Array.isArray(node) && !isJsonObject(node)) {
    throw new JsonPatchError(`path "${pointer}" does not exist`);
  }
  return node;
}

function arrayIndex(token: string, max: number, pointer: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(token)) {
    throw new JsonPatchError(`invalid array index "${token}" in "${pointer}"`);
  }
  const i = Number(token);
  if (i > max) throw new JsonPatchError(`array index ${i} out of range in "${pointer}"`);
  return i;
}

function getAt(doc: unknown, pointer: string): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return doc;
  const parent = parentOf(doc, tokens, pointer);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) return parent[arrayIndex(last, parent.length - 1, pointer)];
  const obj = parent as Record<string, unknown>;
  if (!(last in obj)) throw new JsonPatchError(`path "${pointer}" does not exist`);
  return obj[last];
}

function removeAt(doc: unknown, pointer: string): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) throw new JsonPatchError("cannot remove the whole document");
  const parent = parentOf(doc, tokens, pointer);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) {
    return parent.splice(arrayIndex(last, parent.length - 1, pointer), 1)[0];
  }
  const obj = parent as Record<string, unknown>;
  if (!(last in obj)) throw new JsonPatchError(`path "${pointer}" does not exist`);
  const old = obj[last];
  delete obj[last];
  return old;
}

function addAt(doc: unknown, pointer: string, value: unknown, replace: boolean): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return value;
  const parent = parentOf(doc, tokens, pointer);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) {
    if (replace) parent[arrayIndex(last, parent.length - 1, pointer)] = value;
    else if (last === "-") parent.push(value);
    else parent.splice(arrayIndex(last, parent.length, pointer), 0, value);
  } else {
    const obj = parent as Record<string, unknown>;
    if (replace && !(last in obj)) throw new JsonPatchError(`path "${pointer}" does not exist`);
    obj[last] = value;
  }
  return doc;
}

/**
 * Applies a JSON Patch (a list of operations) to a copy of `original`.
 *
 * @example
 * ```ts
 * applyJsonPatch({ a: [1] }, [{ op: "add", path: "/a/-", value: 2 }]); // { a: [1, 2] }
 * ```
 */
export function applyJsonPatch(original: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw new JsonPatchError("a JSON patch must be a list");
  let doc = structuredClone(original);
  for (const raw of operations) {
    if (!isJsonObject(raw) || typeof raw.op !== "string" || typeof raw.path !== "string") {
      throw new JsonPatchError(`invalid operation ${JSON.stringify(raw)}`);
    }
    const op = raw as unknown as JsonPatchOperation;
    switch (op.op) {
      case "add":
        doc = addAt(doc, op.path, structuredClone(op.value), false);
        break;
      case "replace":
        doc = addAt(doc, op.path, structuredClone(op.value), true);
        break;
      case "remove":
        removeAt(doc, op.path);
        break;
      case "move": {
        const value = removeAt(doc, requireFrom(op));
        doc = addAt(doc, op.path, value, false);
        break;
      }
      case "copy":
        doc = addAt(doc, op.path, structuredClone(getAt(doc, requireFrom(op))), false);
        break;
      case "test":
        if (!jsonEqual(getAt(doc, op.path), op.value)) {
          throw new JsonPatchError(`test failed at "${op.path}"`);
        }
        break;
      default:
        throw new JsonPatchError(`unknown operation "${(op as { op: string }).op}"`);
    }
  }
  return doc;
}

function requireFrom(op: JsonPatchOperation): string {
  if (typeof op.from !== "string") throw new JsonPatchError(`"${op.op}" needs "from"`);
  return op.from;
}

/** Deep equality of JSON values (key order does not matter, array order does). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}
