/**
 * The few Go formatting rules that appear in kubelet's user-facing texts: `time.Duration.String()`
 * (`%v` of a duration) and `strconv.Quote` (`%q` of a string); and Go's names for this platform
 * (`GOOS`/`GOARCH`), which node labels, node info and the API client's user agent report.
 * @module
 */

/**
 * Formats milliseconds as Go's `time.Duration.String()` does: `1s`, `500ms`, `1.5s`, `1m0s`, `1h0m0s`.
 *
 * @example
 * ```ts
 * goDuration(1000); // "1s"
 * goDuration(90_000); // "1m30s"
 * ```
 */
export function goDuration(ms: number): string {
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return "0s";
  const sign = ns < 0n ? "-" : "";
  if (ns < 0n) ns = -ns;
  if (ns < 1_000_000_000n) {
    if (ns < 1_000n) return `${sign}${ns}ns`;
    if (ns < 1_000_000n) return `${sign}${fraction(ns, 3)}µs`;
    return `${sign}${fraction(ns, 6)}ms`;
  }
  const seconds = `${fraction(ns % 60_000_000_000n, 9)}s`;
  const minutes = ns / 60_000_000_000n;
  if (minutes === 0n) return `${sign}${seconds}`;
  const hours = minutes / 60n;
  const mins = `${minutes % 60n}m`;
  return hours === 0n ? `${sign}${mins}${seconds}` : `${sign}${hours}h${mins}${seconds}`;
}

// value / 10^digits with the fraction's trailing zeros removed, as Go's fmtFrac does.
function fraction(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits);
  const whole = value / scale;
  const frac = value % scale;
  if (frac === 0n) return `${whole}`;
  return `${whole}.${frac.toString().padStart(digits, "0").replace(/0+$/, "")}`;
}

const shortEscapes: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
  '"': '\\"',
  "\\": "\\\\",
};

/**
 * Quotes a string as Go's `%q` (`strconv.Quote`): double quotes, Go escapes, printable Unicode kept.
 *
 * @example
 * ```ts
 * goQuote('say "hi"\n'); // "\"say \\\"hi\\\"\\n\""
 * ```
 */
export function goQuote(s: string): string {
  // Printable ASCII without quotes or backslashes is copied as is: a URL of megabytes (a hostile
  // redirect) took seconds through the loop below.
  if (plainAscii.test(s)) return `"${s}"`;
  let out = '"';
  for (const ch of s) {
    const short = shortEscapes[ch];
    if (short !== undefined) {
      out += short;
      continue;
    }
    const code = ch.codePointAt(0)!;
    if (code < 0x20 || code === 0x7f) {
      out += `\\x${code.toString(16).padStart(2, "0")}`;
    } else if (isUnprintable(code)) {
      out += code > 0xffff
        ? `\\U${code.toString(16).padStart(8, "0")}`
        : `\\u${code.toString(16).padStart(4, "0")}`;
    } else {
      out += ch;
    }
  }
  return out + '"';
}

/**
 * Quotes bytes as Go's `%q` of a `string` holding them: valid UTF-8 sequences as `goQuote` shows
 * the characters, every byte of an invalid sequence as `\xNN`. For texts about wire data (a
 * malformed header line), which Go quotes byte for byte.
 *
 * @example
 * ```ts
 * goQuoteBytes(new Uint8Array([0x58, 0xe9, 0x00])); // "\"X\\xe9\\x00\""
 * ```
 */
export function goQuoteBytes(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length;) {
    const size = utf8SequenceLength(bytes, i);
    if (size === 0) {
      out += `\\x${bytes[i].toString(16).padStart(2, "0")}`;
      i++;
      continue;
    }
    out += goQuote(utf8.decode(bytes.subarray(i, i + size))).slice(1, -1);
    i += size;
  }
  return `"${out}"`;
}

const utf8 = new TextDecoder();

// The length of the valid UTF-8 sequence starting at `i` (Go's utf8.DecodeRune rules: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 when the byte there starts none.
function utf8SequenceLength(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) =>
    i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80;
    const hi = c === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

const plainAscii = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

// C1 controls, lone surrogates, and the Unicode "other" categories Go's IsPrint rejects.
function isUnprintable(code: number): boolean {
  if (code >= 0x80 && code < 0xa0) return true;
  if (code >= 0xd800 && code <= 0xdfff) return true;
  return /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u.test(String.fromCodePoint(code)) ||
    (/\p{Zs}/u.test(String.fromCodePoint(code)) && code !== 0x20);
}

/**
 * Go's GOARCH for Deno's architecture names.
 *
 * @example
 * ```ts
 * goArch("x86_64"); // "amd64"
 * ```
 */
export function goArch(arch: string = Deno.build.arch): string {
  return ({ x86_64: "amd64", aarch64: "arm64" } as Record<string, string>)[arch] ?? arch;
}

/**
 * Go's GOOS for Deno's OS names (they are the same: `linux`, `darwin`, `windows`, ...).
 *
 * @example
 * ```ts
 * goOS("linux"); // "linux"
 * ```
 */
export function goOS(os: string = Deno.build.os): string {
  return os;
}
