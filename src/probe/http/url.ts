/**
 * The subset of Go's `net/url` that HTTP probes depend on. The WHATWG `URL` cannot stand in: it drops
 * an explicit default port (`http://10.0.0.1:80/` → `http://10.0.0.1/`), adds a slash before a bare
 * query (`http://h:93?foo` → `http://h:93/?foo`) and normalises paths, while kubelet's users see Go's
 * `URL.String()` in probe output and the server sees Go's request line.
 * Mirrors Go's net/url/url.go (Parse, String, ResolveReference, Hostname, Port, RequestURI).
 * @module
 */

import { goQuote } from "../../util/go_format.ts";

type EncodeMode = "path" | "host" | "zone" | "fragment";

/** A parsed URL with Go's field names; `host` is `host:port` exactly as written. */
export class ProbeURL {
  /** Lower-case scheme without the colon (`http`), or `""` for a relative reference. */
  scheme = "";
  /** Opaque data after `scheme:` when the URL has no `//` authority and no leading slash. */
  opaque = "";
  /** `host` or `host:port`; an IPv6 literal is bracketed. Never percent-encoded. */
  host = "";
  /** Decoded path. */
  path = "";
  /** Path as written when its encoding differs from the default escaping of `path`. */
  rawPath = "";
  /** The query without `?`, as written. */
  rawQuery = "";
  /** Whether a `?` with an empty query was written. */
  forceQuery = false;
  /** Decoded fragment. */
  fragment = "";
  /** Whether the URL was written with `scheme:/path` (no `//`). */
  omitHost = false;
  /** Userinfo as written (before `@`), or `undefined` when absent. */
  user?: string;

  /**
   * Parses a URL or relative reference as Go's `url.Parse` does; throws `Error` with Go's message
   * (`invalid URL escape "%zz"`, `net/url: invalid control character in URL`, ...).
   *
   * @example
   * ```ts
   * ProbeURL.parse("http://localhost:93?foo").toString(); // "http://localhost:93?foo"
   * ```
   */
  static parse(rawURL: string): ProbeURL {
    const hash = rawURL.indexOf("#");
    const u = parseWithoutFragment(hash < 0 ? rawURL : rawURL.slice(0, hash));
    if (hash >= 0) u.fragment = unescape(rawURL.slice(hash + 1), "fragment");
    return u;
  }

  /** The host without port or brackets (Go's `URL.Hostname()`). */
  get hostname(): string {
    const { host } = splitHostPort(this.host);
    return host;
  }

  /** The port digits, or `""` (Go's `URL.Port()`). */
  get port(): string {
    return splitHostPort(this.host).port;
  }

  /** `toString()`, under the name the WHATWG `URL` uses. */
  get href(): string {
    return this.toString();
  }

  /** Whether the URL has a scheme (Go's `URL.IsAbs()`). */
  isAbs(): boolean {
    return this.scheme !== "";
  }

  /** The path as it goes on the wire (Go's `URL.EscapedPath()`). */
  escapedPath(): string {
    if (this.rawPath !== "" && validEncoded(this.rawPath, "path")) {
      try {
        if (unescape(this.rawPath, "path") === this.path) return this.rawPath;
      } catch {
        // Fall through to the default escaping, as Go does for an unusable RawPath.
      }
    }
    if (this.path === "*") return "*";
    return escape(this.path, "path");
  }

  /** The request target of an HTTP/1.1 request line (Go's `URL.RequestURI()`). */
  requestURI(): string {
    let result = this.opaque;
    if (result === "") {
      result = this.escapedPath();
      if (result === "") result = "/";
    } else if (result.startsWith("//")) {
      result = `${this.scheme}:${result}`;
    }
    if (this.forceQuery || this.rawQuery !== "") result += `?${this.rawQuery}`;
    return result;
  }

  /** A copy of this URL. */
  clone(): ProbeURL {
    return Object.assign(new ProbeURL(), this);
  }

  /**
   * Resolves `ref` against this URL per RFC 3986 §5.2 (Go's `URL.ResolveReference`).
   *
   * @example
   * ```ts
   * ProbeURL.parse("http://h:80/a/b").resolveReference(ProbeURL.parse("../c")).toString(); // "http://h:80/c"
   * ```
   */
  resolveReference(ref: ProbeURL): ProbeURL {
    const url = ref.clone();
    if (ref.scheme === "") url.scheme = this.scheme;
    if (ref.scheme !== "" || ref.host !== "" || ref.user !== undefined) {
      setPath(url, resolvePath(ref.escapedPath(), ""));
      return url;
    }
    if (ref.opaque !== "") {
      url.user = undefined;
      url.host = "";
      url.path = "";
      return url;
    }
    if (ref.path === "" && !ref.forceQuery && ref.rawQuery === "") {
      url.rawQuery = this.rawQuery;
      if (ref.fragment === "") url.fragment = this.fragment;
    }
    if (ref.path === "" && this.opaque !== "") {
      url.opaque = this.opaque;
      url.user = undefined;
      url.host = "";
      url.path = "";
      return url;
    }
    url.host = this.host;
    url.user = this.user;
    setPath(url, resolvePath(this.escapedPath(), ref.escapedPath()));
    return url;
  }

  /**
   * Reassembles the URL as Go's `URL.String()`: a bare query keeps no slash (`http://h:93?foo`), an
   * IPv6 zone's `%` is written `%25`.
   */
  toString(): string {
    let out = "";
    if (this.scheme !== "") out += `${this.scheme}:`;
    if (this.opaque !== "") {
      out += this.opaque;
    } else {
      if (this.scheme !== "" || this.host !== "" || this.user !== undefined) {
        if (!(this.omitHost && this.host === "" && this.user === undefined)) {
          if (this.host !== "" || this.path !== "" || this.user !== undefined) out += "//";
          if (this.user !== undefined) out += `${this.user}@`;
          if (this.host !== "") out += escape(this.host, "host");
        }
      }
      const path = this.escapedPath();
      if (path !== "" && path[0] !== "/" && this.host !== "") out += "/";
      // A first segment with a colon would read as a scheme: Go prefixes "./".
      if (out === "" && path.split("/", 1)[0].includes(":")) out += "./";
      out += path;
    }
    if (this.forceQuery || this.rawQuery !== "") out += `?${this.rawQuery}`;
    if (this.fragment !== "") out += `#${escape(this.fragment, "fragment")}`;
    return out;
  }
}

/**
 * Joins host and port as Go's `net.JoinHostPort`: a host containing `:` (IPv6) is bracketed.
 *
 * @example
 * ```ts
 * joinHostPort("fd00::1", "8080"); // "[fd00::1]:8080"
 * ```
 */
export function joinHostPort(host: string, port: string): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function parseWithoutFragment(rawURL: string): ProbeURL {
  // deno-lint-ignore no-control-regex
  if (/[\x00-\x1f\x7f]/.test(rawURL)) throw new Error("net/url: invalid control character in URL");
  const url = new ProbeURL();
  if (rawURL === "*") {
    url.path = "*";
    return url;
  }
  const [scheme, afterScheme] = getScheme(rawURL);
  url.scheme = scheme.toLowerCase();
  let rest = afterScheme;
  if (rest.endsWith("?") && rest.indexOf("?") === rest.length - 1) {
    url.forceQuery = true;
    rest = rest.slice(0, -1);
  } else {
    const q = rest.indexOf("?");
    if (q >= 0) {
      url.rawQuery = rest.slice(q + 1);
      rest = rest.slice(0, q);
    }
  }
  if (!rest.startsWith("/")) {
    if (url.scheme !== "") {
      // Rootless paths after a scheme are opaque (RFC 3986).
      url.opaque = rest;
      return url;
    }
    if (rest.split("/", 1)[0].includes(":")) {
      throw new Error("first path segment in URL cannot contain colon");
    }
  }
  if (rest.startsWith("//") && (url.scheme !== "" || !rest.startsWith("///"))) {
    let authority = rest.slice(2);
    rest = "";
    const slash = authority.indexOf("/");
    if (slash >= 0) {
      rest = authority.slice(slash);
      authority = authority.slice(0, slash);
    }
    parseAuthority(url, authority);
  } else if (url.scheme !== "" && rest.startsWith("/")) {
    url.omitHost = true;
  }
  setPath(url, rest);
  return url;
}

// Splits "scheme:" off the front; a leading character that cannot start a scheme means no scheme.
function getScheme(rawURL: string): [string, string] {
  for (let i = 0; i < rawURL.length; i++) {
    const c = rawURL[i];
    if (/[a-zA-Z]/.test(c)) continue;
    if (/[0-9+\-.]/.test(c)) {
      if (i === 0) return ["", rawURL];
      continue;
    }
    if (c === ":") {
      if (i === 0) throw new Error("missing protocol scheme");
      return [rawURL.slice(0, i), rawURL.slice(i + 1)];
    }
    return ["", rawURL];
  }
  return ["", rawURL];
}

function parseAuthority(url: ProbeURL, authority: string): void {
  const at = authority.lastIndexOf("@");
  let host = authority;
  if (at >= 0) {
    url.user = authority.slice(0, at);
    host = authority.slice(at + 1);
  }
  url.host = parseHost(host);
}

function parseHost(host: string): string {
  if (host.startsWith("[")) {
    const close = host.lastIndexOf("]");
    if (close < 0) throw new Error("missing ']' in host");
    const colonPort = host.slice(close + 1);
    if (!validOptionalPort(colonPort)) {
      throw new Error(`invalid port ${goQuote(colonPort)} after host`);
    }
    const zone = host.slice(0, close).indexOf("%25");
    if (zone >= 0) {
      // The zone may hold any percent-escaped bytes; the address part may not.
      return unescape(host.slice(0, zone), "host") + unescape(host.slice(zone, close), "zone") +
        unescape(host.slice(close), "host");
    }
  } else {
    const colon = host.lastIndexOf(":");
    if (colon >= 0 && !validOptionalPort(host.slice(colon))) {
      throw new Error(`invalid port ${goQuote(host.slice(colon))} after host`);
    }
  }
  return unescape(host, "host");
}

function validOptionalPort(port: string): boolean {
  return port === "" || /^:[0-9]*$/.test(port);
}

function setPath(url: ProbeURL, p: string): void {
  url.path = unescape(p, "path");
  url.rawPath = escape(url.path, "path") === p ? "" : p;
}

// RFC 3986 §5.2.4 dot-segment removal over "base" merged with "ref", as Go's resolvePath.
function resolvePath(base: string, ref: string): string {
  let full: string;
  if (ref === "") full = base;
  else if (ref[0] !== "/") full = base.slice(0, base.lastIndexOf("/") + 1) + ref;
  else full = ref;
  if (full === "") return "";
  const segments = full.split("/");
  let dst = "/";
  let first = true;
  let elem = "";
  for (elem of segments) {
    if (elem === ".") {
      first = false;
      continue;
    }
    if (elem === "..") {
      const str = dst.slice(1);
      const index = str.lastIndexOf("/");
      dst = "/";
      if (index === -1) first = true;
      else dst += str.slice(0, index);
    } else {
      if (!first) dst += "/";
      dst += elem;
      first = false;
    }
  }
  if (elem === "." || elem === "..") dst += "/";
  return dst.length > 1 && dst[1] === "/" ? dst.slice(1) : dst;
}

function unreserved(c: string): boolean {
  return /[A-Za-z0-9\-_.~]/.test(c);
}

// Go's shouldEscape for the modes used here.
function shouldEscape(c: string, mode: EncodeMode): boolean {
  if (unreserved(c)) return false;
  if (mode === "host" || mode === "zone") {
    return !"!$&'()*+,;=:[]<>\"".includes(c);
  }
  if ("$&+,/:;=?@".includes(c)) {
    // In a path only "?" must be escaped; "/" and ";" keep their meaning.
    if (mode === "path") return c === "?";
    return false;
  }
  if (mode === "fragment" && "!()*".includes(c)) return false;
  return true;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Per mode, the ASCII characters escape() keeps as they are (a table, so that a long clean string
// is checked in one pass without a call per character).
const keptByMode = Object.fromEntries(
  (["path", "host", "zone", "fragment"] as const).map((mode) => {
    const kept = new Uint8Array(128);
    for (let code = 0; code < 128; code++) {
      kept[code] = shouldEscape(String.fromCharCode(code), mode) ? 0 : 1;
    }
    return [mode, kept];
  }),
) as Record<EncodeMode, Uint8Array>;

// Whether every character of `s` is an ASCII one `kept` marks.
function allKept(s: string, kept: Uint8Array): boolean {
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if (code >= 128 || kept[code] === 0) return false;
  }
  return true;
}

function escape(s: string, mode: EncodeMode): string {
  // Nothing to escape: the common case, and linear in the length (a 1 MB Location).
  if (allKept(s, keptByMode[mode])) return s;
  let out = "";
  // ASCII text is its own UTF-8: skip the encoder, which costs a native call per use.
  for (const byte of isASCII(s) ? asciiBytes(s) : encoder.encode(s)) {
    const c = String.fromCharCode(byte);
    if (byte < 0x80 && !shouldEscape(c, mode)) out += c;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function unescape(s: string, mode: EncodeMode): string {
  // Nothing to decode or to check: the common case of a plain ASCII path.
  if (mode !== "host" && mode !== "zone" && !s.includes("%") && isASCII(s)) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "%") {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) {
        throw new Error(`invalid URL escape ${goQuote(s.slice(i, i + 3))}`);
      }
      // Outside a zone, a host may only percent-encode non-ASCII bytes (RFC 6874 keeps %25 for zones).
      if (mode === "host" && parseInt(hex, 16) < 0x80 && hex !== "25") {
        throw new Error(`invalid URL escape ${goQuote(s.slice(i, i + 3))}`);
      }
      bytes.push(parseInt(hex, 16));
      i += 2;
      continue;
    }
    if ((mode === "host" || mode === "zone") && c.charCodeAt(0) < 0x80 && shouldEscape(c, mode)) {
      throw new Error(`invalid character ${goQuote(c)} in host name`);
    }
    // ASCII is its own UTF-8 byte; only other characters need the (per-call costly) encoder.
    const code = c.charCodeAt(0);
    if (code < 0x80) bytes.push(code);
    else for (const b of encoder.encode(c)) bytes.push(b);
  }
  return decoder.decode(new Uint8Array(bytes));
}

// deno-lint-ignore no-control-regex
const asciiOnly = /^[\x00-\x7f]*$/;

function isASCII(s: string): boolean {
  return asciiOnly.test(s);
}

function asciiBytes(s: string): number[] {
  const bytes = new Array<number>(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

// The characters validEncoded() accepts without a shouldEscape check.
const validEncodedExtra = "!$&'()*+,;=:@[]%";

function validEncoded(s: string, mode: EncodeMode): boolean {
  const kept = keptByMode[mode];
  let plain = true;
  for (let i = 0; i < s.length && plain; i++) {
    const code = s.charCodeAt(i);
    plain = code < 128 && (kept[code] === 1 || validEncodedExtra.includes(s[i]));
  }
  if (plain) return true;
  for (const c of s) {
    if (validEncodedExtra.includes(c)) continue;
    if (shouldEscape(c, mode)) return false;
  }
  return true;
}

// Go's url.splitHostPort: the port must be numeric; brackets come off an IPv6 literal.
function splitHostPort(hostPort: string): { host: string; port: string } {
  let host = hostPort;
  let port = "";
  const colon = host.lastIndexOf(":");
  if (colon !== -1 && validOptionalPort(host.slice(colon))) {
    port = host.slice(colon + 1);
    host = host.slice(0, colon);
  }
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return { host, port };
}
