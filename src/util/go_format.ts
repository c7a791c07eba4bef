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
