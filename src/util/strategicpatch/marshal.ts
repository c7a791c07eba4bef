/**
 * JSON text exactly as Go's `encoding/json` writes an unmarshalled `map[string]interface{}`: object
 * keys sorted, `<` `>` `&` U+2028 U+2029 escaped as `\u003c`-style sequences. Patches kubelet sends
 * are such maps, so this is how their bytes are compared with kubelet's.
 * Mirrors encoding/json's map encoding and HTML escaping (the parts JSON values can reach).
 * @module
 */

/**
 * Marshals `value` as Go would; `undefined` object members are left out.
 *
 * @example
 * ```ts
 * goJsonMarshal({ b: 1, a: "<x>" }); // '{"a":"\u003cx\u003e","b":1}'
 * ```
 */
export function goJsonMarshal(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return `[${value.map(goJsonMarshal).join(",")}]`;
  if (typeof value === "object") {
    const obj = value as Record<string, unknown>;
    const members = Object.keys(obj).sort(compareGoStrings)
      .filter((k) => obj[k] !== undefined)
      .map((k) => `${goJsonString(k)}:${goJsonMarshal(obj[k])}`);
    return `{${members.join(",")}}`;
  }
  if (typeof value === "string") return goJsonString(value);
  return JSON.stringify(value);
}

// Go sorts map keys by bytes (UTF-8); for the ASCII keys of API objects that is code-unit order.
function compareGoStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function goJsonString(s: string): string {
  return JSON.stringify(s).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
