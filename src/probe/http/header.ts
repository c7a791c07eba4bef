/**
 * Go's `http.Header` for probe requests: an ordered map from canonical header name to its values.
 * Deno's `Headers` lower-cases names and joins repeated values with ", ", which loses what kubelet's
 * header rules look at (a present-but-empty `User-Agent`, the first `Accept` value, repeated names).
 * Mirrors the parts of Go's net/http header.go and net/textproto that kubelet's prober relies on.
 * @module
 */

/** What a header set can be built from: a `HeaderMap`, a record, or name/value pairs in order. */
export type HeaderInit =
  | HeaderMap
  | Record<string, string | readonly string[]>
  | Iterable<readonly [string, string]>;

// RFC 7230 "tchar": the bytes Go accepts in a header name.
const tokenChars = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

// Whether canonicalising would change no letter: upper case first and after each hyphen, lower
// case elsewhere. Such a name canonicalises to itself, token characters or not.
function isCanonicalCase(name: string): boolean {
  let upper = true;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (upper ? c >= 0x61 && c <= 0x7a : c >= 0x41 && c <= 0x5a) return false;
    upper = c === 0x2d;
  }
  return true;
}

/**
 * Canonicalises a header name as Go's `textproto.CanonicalMIMEHeaderKey`: the first letter and every
 * letter after a hyphen upper-cased, the rest lower-cased. A name holding a byte that is not a token
 * character is returned unchanged, as Go does.
 *
 * @example
 * ```ts
 * canonicalHeaderKey("X-forwarded-for"); // "X-Forwarded-For"
 * canonicalHeaderKey("HOST"); // "Host"
 * ```
 */
export function canonicalHeaderKey(name: string): string {
  // Already canonical (the usual case): the same string, no new one built.
  if (isCanonicalCase(name)) return name;
  if (!tokenChars.test(name)) return name;
  let out = "";
  let upper = true;
  for (const ch of name) {
    out += upper ? ch.toUpperCase() : ch.toLowerCase();
    upper = ch === "-";
  }
  return out;
}

/**
 * Whether `name` is a valid header field name (a non-empty token), Go's `httpguts.ValidHeaderFieldName`.
 *
 * @example
 * ```ts
 * validHeaderFieldName("X-Probe"); // true
 * validHeaderFieldName("bad name"); // false
 * ```
 */
export function validHeaderFieldName(name: string): boolean {
  return tokenChars.test(name);
}

/**
 * Whether `value` may be sent as a header value: no control characters other than horizontal tab,
 * Go's `httpguts.ValidHeaderFieldValue`.
 *
 * @example
 * ```ts
 * validHeaderFieldValue("a\tb"); // true
 * validHeaderFieldValue("a\r\nb"); // false
 * ```
 */
export function validHeaderFieldValue(value: string): boolean {
  // deno-lint-ignore no-control-regex
  return !/[\x00-\x08\x0a-\x1f\x7f]/.test(value);
}

/**
 * Go's `http.Header`: names are canonicalised by `add`, `set`, `get`, `has` and `del`; each name keeps
 * its values in the order they were added; names keep their first-insertion order.
 *
 * @example
 * ```ts
 * const h = new HeaderMap();
 * h.add("accept", "application/json");
 * h.add("Accept", "*\/*");
 * h.values("Accept"); // ["application/json", "*\/*"]
 * h.get("ACCEPT"); // "application/json"
 * ```
 */
export class HeaderMap {
  #entries = new Map<string, string[]>();

  /** Builds a header set; record keys and pair names are canonicalised as `add` does. */
  constructor(init?: HeaderInit) {
    if (init === undefined) return;
    if (init instanceof HeaderMap) {
      for (const [name, values] of init.entries()) this.#entries.set(name, [...values]);
      return;
    }
    if (isPairs(init)) {
      for (const [name, value] of init) this.add(name, value);
      return;
    }
    for (const [name, value] of Object.entries(init)) {
      if (typeof value === "string") {
        this.add(name, value);
      } else {
        // An empty list keeps the name present, as a Go map literal with `{}` would.
        const key = canonicalHeaderKey(name);
        this.#entries.set(key, [...(this.#entries.get(key) ?? []), ...value]);
      }
    }
  }

  /** Appends a value to the name's values (Go's `Header.Add`). */
  add(name: string, value: string): void {
    const key = canonicalHeaderKey(name);
    const values = this.#entries.get(key);
    if (values) values.push(value);
    else this.#entries.set(key, [value]);
  }

  /** Replaces the name's values with the single value (Go's `Header.Set`). */
  set(name: string, value: string): void {
    this.#entries.set(canonicalHeaderKey(name), [value]);
  }

  /** The first value, or `""` when the name is absent or has no values (Go's `Header.Get`). */
  get(name: string): string {
    return this.#entries.get(canonicalHeaderKey(name))?.[0] ?? "";
  }

  /** All values of the name, in order; empty when absent (Go's `Header.Values`). */
  values(name: string): string[] {
    return [...(this.#entries.get(canonicalHeaderKey(name)) ?? [])];
  }

  /** Whether the name is present, even with an empty value (Go's `_, ok := h[key]`). */
  has(name: string): boolean {
    return this.#entries.has(canonicalHeaderKey(name));
  }

  /** Removes the name and all its values (Go's `Header.Del`). */
  del(name: string): void {
    this.#entries.delete(canonicalHeaderKey(name));
  }

  /** Number of distinct names (Go's `len(h)`). */
  get size(): number {
    return this.#entries.size;
  }

  /** Names and copies of their values, in insertion order. */
  *entries(): IterableIterator<[string, string[]]> {
    for (const [name, values] of this.#entries) yield [name, [...values]];
  }

  /** A deep copy (Go's `Header.Clone`). */
  clone(): HeaderMap {
    return new HeaderMap(this);
  }

  /** A plain object of name → values, for assertions and logs. */
  toJSON(): Record<string, string[]> {
    return Object.fromEntries(this.entries());
  }
}

function isPairs(
  init: Record<string, string | readonly string[]> | Iterable<readonly [string, string]>,
): init is Iterable<readonly [string, string]> {
  return typeof (init as Iterable<unknown>)[Symbol.iterator] === "function";
}
