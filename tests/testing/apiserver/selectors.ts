/**
 * Field and label selectors as the API server parses and applies them
 * (k8s.io/apimachinery/pkg/fields/selector.go, pkg/labels/selector.go, and each registry's
 * field-label set: pkg/registry/core/pod/strategy.go `ToSelectableFields` and friends).
 * @module
 */
import { badRequest, type JsonObject, type JsonValue } from "./status.ts";
import { metaOf, type ResourceInfo } from "./storage.ts";

/** One field selector term: `spec.nodeName=x`, `status.phase!=Failed`. */
export interface FieldRequirement {
  field: string;
  operator: "=" | "!=";
  value: string;
}

// Splits on an unescaped separator; the API escapes `\`, `,` and `=` in values with a backslash.
function splitUnescaped(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "\\" && i + 1 < text.length) {
      current += c + text[i + 1];
      i++;
    } else if (c === separator) {
      parts.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts;
}

function unescapeValue(value: string): string {
  return value.replace(/\\(.)/g, "$1");
}

/**
 * Parses `a=b,c!=d` (`==` is `=`). Terms AND together. Throws a 400 ApiError on bad syntax, in
 * fields.ParseSelector's words.
 */
export function parseFieldSelector(text: string): FieldRequirement[] {
  if (text.trim() === "") return [];
  return splitUnescaped(text, ",").map((term) => {
    for (const op of ["!=", "==", "="] as const) {
      const at = findUnescaped(term, op);
      if (at >= 0) {
        return {
          field: term.slice(0, at).trim(),
          operator: op === "!=" ? "!=" : "=",
          value: unescapeValue(term.slice(at + op.length)),
        };
      }
    }
    throw badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
  });
}

function findUnescaped(text: string, needle: string): number {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\") {
      i++;
      continue;
    }
    if (text.startsWith(needle, i)) return i;
  }
  return -1;
}

function valueAt(obj: JsonObject, path: string): JsonValue | undefined {
  let current: JsonValue | undefined = obj;
  for (const part of path.split(".")) {
    if (typeof current !== "object" || current === null || Array.isArray(current)) return undefined;
    current = current[part];
  }
  return current;
}

/** The string a field label has on an object, as the registry's selectable fields render it. */
export function fieldValue(info: ResourceInfo, obj: JsonObject, field: string): string {
  if (field === "metadata.name") return metaOf(obj).name ?? "";
  if (field === "metadata.namespace") return metaOf(obj).namespace ?? "";
  if (info.resource === "events" && field === "source") {
    return String(valueAt(obj, "source.component") ?? "");
  }
  const value = valueAt(obj, field);
  if (value === undefined || value === null) {
    return field === "spec.hostNetwork" || field === "spec.unschedulable" ? "false" : "";
  }
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/**
 * Throws the API's 400 for a field label the resource does not support
 * (`field label not supported: spec.foo`).
 */
export function checkFieldLabels(info: ResourceInfo, requirements: FieldRequirement[]): void {
  for (const r of requirements) {
    const ok = r.field === "metadata.name" || r.field === "metadata.namespace" ||
      info.fieldLabels.includes(r.field);
    if (!ok) throw badRequest(`field label not supported: ${r.field}`);
  }
}

/** True when the object satisfies every term. */
export function matchesFields(
  info: ResourceInfo,
  obj: JsonObject,
  requirements: FieldRequirement[],
): boolean {
  return requirements.every((r) => {
    const actual = fieldValue(info, obj, r.field);
    return r.operator === "=" ? actual === r.value : actual !== r.value;
  });
}

/** One label selector requirement. */
export interface LabelRequirement {
  key: string;
  operator: "=" | "!=" | "in" | "notin" | "exists" | "!";
  values: string[];
}

/**
 * Parses the label selector forms clients send: `k=v`, `k==v`, `k!=v`, `k`, `!k`,
 * `k in (a,b)`, `k notin (a,b)`, comma-separated. Throws a 400 ApiError on bad syntax.
 */
export function parseLabelSelector(text: string): LabelRequirement[] {
  const out: LabelRequirement[] = [];
  // Commas inside parentheses belong to a set, not to the term list.
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const c of text) {
    if (c === "(") depth++;
    if (c === ")") depth--;
    if (c === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else current += c;
  }
  terms.push(current);
  for (const raw of terms) {
    const term = raw.trim();
    if (term === "") {
      if (text.trim() === "") continue;
      throw badRequest(`unable to parse requirement: found '', expected: identifier`);
    }
    const set = term.match(/^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/);
    if (set) {
      out.push({
        key: set[1],
        operator: set[2] as "in" | "notin",
        values: set[3].split(",").map((v) => v.trim()).filter((v) => v !== ""),
      });
      continue;
    }
    const cmp = term.match(/^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/);
    if (cmp) {
      out.push({ key: cmp[1], operator: cmp[2] === "!=" ? "!=" : "=", values: [cmp[3]] });
      continue;
    }
    if (/^![^=!\s(),]+$/.test(term)) {
      out.push({ key: term.slice(1), operator: "!", values: [] });
      continue;
    }
    if (/^[^=!\s(),]+$/.test(term)) {
      out.push({ key: term, operator: "exists", values: [] });
      continue;
    }
    throw badRequest(`unable to parse requirement: invalid label selector term '${term}'`);
  }
  return out;
}

/** True when the object's labels satisfy every requirement. */
export function matchesLabels(obj: JsonObject, requirements: LabelRequirement[]): boolean {
  const labels = metaOf(obj).labels ?? {};
  return requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    const value = labels[r.key];
    switch (r.operator) {
      case "=":
        return has && value === r.values[0];
      case "!=":
        return !has || value !== r.values[0];
      case "in":
        return has && r.values.includes(value);
      case "notin":
        return !has || !r.values.includes(value);
      case "exists":
        return has;
      case "!":
        return !has;
    }
  });
}

/** A parsed `fieldSelector` + `labelSelector` pair for one request. */
export interface Selector {
  fields: FieldRequirement[];
  labels: LabelRequirement[];
}

/** True when the object passes both selectors. */
export function matches(info: ResourceInfo, obj: JsonObject, selector: Selector): boolean {
  return matchesFields(info, obj, selector.fields) && matchesLabels(obj, selector.labels);
}
