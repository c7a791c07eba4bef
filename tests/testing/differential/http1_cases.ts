/**
 * A seeded mutation generator of HTTP/1.1 responses for the differential test against kubelet's
 * HTTP handler: a plain response (random status, body and framing) with one hostile mutation of a
 * named class — status lines, Content-Length, Transfer-Encoding, chunking, folding, bare LF/CR, NUL,
 * header names, 1xx, redirects, truncation, stalls, sizes. Each case is labelled `class/variant`,
 * the allow-list's unit. Mirrors nothing upstream: the classes follow issue 21 row 8 and Go's
 * net/http response reader (readResponse, readTransfer, chunked.go).
 * @module
 */
import { Rng } from "./rng.ts";
import type { Step } from "./raw_server.ts";

/** One generated HTTP/1.1 case: what each connection is answered with, and its label. */
export interface Http1Case {
  /** The mutation class, e.g. `content-length`. */
  cls: string;
  /** The variant within the class, e.g. `conflicting`. */
  variant: string;
  /** Path the probe requests. */
  path: string;
  /** `responses[i]` answers the i-th connection (redirects open new ones); the last repeats. */
  responses: Step[][];
}

const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s);

interface Base {
  status: number;
  reason: string;
  headers: [string, string][];
  body: string;
  framing: "length" | "chunked" | "close";
}

const statuses: [number, string][] = [
  [200, "OK"],
  [200, "OK"],
  [201, "Created"],
  [204, "No Content"],
  [299, "Custom"],
  [300, "Multiple Choices"],
  [304, "Not Modified"],
  [399, "Custom"],
  [400, "Bad Request"],
  [404, "Not Found"],
  [500, "Internal Server Error"],
  [503, "Service Unavailable"],
];

function randomBase(rng: Rng): Base {
  const [status, reason] = rng.chance(0.6) ? [200, "OK"] : rng.pick(statuses);
  const body = rng.pick(["ok", "", "healthy\n", "x".repeat(rng.int(1, 300)), '{"status":"up"}']);
  const headers: [string, string][] = [];
  if (rng.chance(0.5)) headers.push(["Content-Type", "text/plain; charset=utf-8"]);
  if (rng.chance(0.3)) headers.push(["Date", "Mon, 02 Jan 2006 15:04:05 GMT"]);
  if (rng.chance(0.2)) headers.push(["X-Probe", "a b c"]);
  return {
    status,
    reason,
    headers,
    body,
    framing: rng.pick(["length", "length", "chunked", "close"]),
  };
}

function statusLine(b: Base): string {
  return `HTTP/1.1 ${b.status} ${b.reason}`;
}

function headerLines(b: Base): string[] {
  const lines = b.headers.map(([n, v]) => `${n}: ${v}`);
  if (b.framing === "length") lines.push(`Content-Length: ${enc.encode(b.body).length}`);
  if (b.framing === "chunked") lines.push("Transfer-Encoding: chunked");
  return lines;
}

function chunked(body: string): string {
  if (body === "") return "0\r\n\r\n";
  const size = enc.encode(body).length.toString(16);
  return `${size}\r\n${body}\r\n0\r\n\r\n`;
}

function bodyBytes(b: Base): string {
  return b.framing === "chunked" ? chunked(b.body) : b.body;
}

/** Serializes a response: status line, header lines, blank line, body (framed). */
function serialize(
  b: Base,
  options: { eol?: string; head?: string[]; body?: string } = {},
): string {
  const eol = options.eol ?? "\r\n";
  const lines = options.head ?? [statusLine(b), ...headerLines(b)];
  return lines.map((l) => l + eol).join("") + eol + (options.body ?? bodyBytes(b));
}

/** One response on a connection, then close. */
function once(text: string | Uint8Array): Step[][] {
  return [[typeof text === "string" ? bytes(text) : text, "close"]];
}

type Variant = (rng: Rng, b: Base) => Step[][];

const ok200 = (b: Base): Base => ({ ...b, status: 200, reason: "OK" });

// Status lines Go's ReadResponse parses or rejects (three-digit code, "HTTP/x.y" proto).
const statusLineVariants: Record<string, Variant> = {
  "http10": (_r, b) =>
    once(serialize(b, { head: [`HTTP/1.0 ${b.status} ${b.reason}`, ...headerLines(b)] })),
  "no-reason": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 ${b.status}`, ...headerLines(b)] })),
  "no-reason-space": (_r, b) =>
    once(serialize(b, { head: [`HTTP/1.1 ${b.status} `, ...headerLines(b)] })),
  "four-digits": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 2000 OK`, ...headerLines(b)] })),
  "two-digits": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 20 OK`, ...headerLines(b)] })),
  "signed": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 +20 OK`, ...headerLines(b)] })),
  "status-099": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 099 Low`, ...headerLines(b)] })),
  "status-600": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 600 High`, ...headerLines(b)] })),
  "status-999": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 999 High`, ...headerLines(b)] })),
  "double-space": (_r, b) => once(serialize(b, { head: [`HTTP/1.1  200 OK`, ...headerLines(b)] })),
  "lowercase-proto": (_r, b) =>
    once(serialize(b, { head: [`http/1.1 200 OK`, ...headerLines(b)] })),
  "http2-proto": (_r, b) => once(serialize(b, { head: [`HTTP/2.0 200 OK`, ...headerLines(b)] })),
  "http11-garbage": (_r, b) => once(serialize(b, { head: [`HTTP/1.x 200 OK`, ...headerLines(b)] })),
  "icy": (_r, b) => once(serialize(b, { head: [`ICY 200 OK`, ...headerLines(b)] })),
  "no-space": (_r, b) => once(serialize(b, { head: [`HTTP/1.1`, ...headerLines(b)] })),
  "tab": (_r, b) => once(serialize(b, { head: [`HTTP/1.1\t200 OK`, ...headerLines(b)] })),
  "leading-blank-line": (_r, b) => once("\r\n" + serialize(b)),
  "utf8-reason": (_r, b) => once(serialize(b, { head: [`HTTP/1.1 200 Ölçü`, ...headerLines(b)] })),
};

const clHead = (b: Base, ...cl: string[]) => [
  statusLine(b),
  ...b.headers.map(([n, v]) => `${n}: ${v}`),
  ...cl,
];

// Content-Length values Go's readTransfer/fixLength accept or refuse.
const contentLengthVariants: Record<string, Variant> = {
  "non-numeric": (_r, b) =>
    once(serialize(b, { head: clHead(b, "Content-Length: abc"), body: b.body })),
  "negative": (_r, b) =>
    once(serialize(b, { head: clHead(b, "Content-Length: -1"), body: b.body })),
  "plus-sign": (_r, b) =>
    once(serialize(b, { head: clHead(b, `Content-Length: +${b.body.length}`), body: b.body })),
  "hex": (_r, b) => once(serialize(b, { head: clHead(b, "Content-Length: 0x2"), body: b.body })),
  "leading-space": (_r, b) =>
    once(serialize(b, { head: clHead(b, `Content-Length:    ${b.body.length}`), body: b.body })),
  "trailing-space": (_r, b) =>
    once(serialize(b, { head: clHead(b, `Content-Length: ${b.body.length}  `), body: b.body })),
  "duplicate-equal": (_r, b) =>
    once(
      serialize(b, {
        head: clHead(b, `Content-Length: ${b.body.length}`, `Content-Length: ${b.body.length}`),
        body: b.body,
      }),
    ),
  "conflicting": (_r, b) =>
    once(
      serialize(b, {
        head: clHead(b, `Content-Length: ${b.body.length}`, `Content-Length: ${b.body.length + 1}`),
        body: b.body,
      }),
    ),
  "comma-list-equal": (_r, b) =>
    once(
      serialize(b, {
        head: clHead(b, `Content-Length: ${b.body.length}, ${b.body.length}`),
        body: b.body,
      }),
    ),
  "comma-list-conflicting": (_r, b) =>
    once(serialize(b, { head: clHead(b, `Content-Length: ${b.body.length}, 9`), body: b.body })),
  "empty": (_r, b) => once(serialize(b, { head: clHead(b, "Content-Length: "), body: b.body })),
  "huge": (_r, b) =>
    once(serialize(b, { head: clHead(b, "Content-Length: 99999999999999999999"), body: b.body })),
  "longer-than-body": (_r, b) =>
    once(
      serialize(ok200(b), {
        head: clHead(ok200(b), `Content-Length: ${b.body.length + 5}`),
        body: b.body,
      }),
    ),
  "shorter-than-body": (_r, b) =>
    once(serialize(b, { head: clHead(b, `Content-Length: 1`), body: b.body + "extra" })),
  "leading-zeros": (_r, b) =>
    once(serialize(b, { head: clHead(b, `Content-Length: 000${b.body.length}`), body: b.body })),
  "lowercase-name": (_r, b) =>
    once(serialize(b, { head: clHead(b, `content-length: ${b.body.length}`), body: b.body })),
};

const teHead = (
  b: Base,
  ...te: string[]
) => [statusLine(b), ...b.headers.map(([n, v]) => `${n}: ${v}`), ...te];

// Transfer-Encoding values: Go supports only "chunked" (case-insensitive), once.
const transferEncodingVariants: Record<string, Variant> = {
  "uppercase": (_r, b) =>
    once(serialize(b, { head: teHead(b, "Transfer-Encoding: CHUNKED"), body: chunked(b.body) })),
  "chunked-twice-list": (_r, b) =>
    once(
      serialize(b, {
        head: teHead(b, "Transfer-Encoding: chunked, chunked"),
        body: chunked(b.body),
      }),
    ),
  "two-headers": (_r, b) =>
    once(
      serialize(b, {
        head: teHead(b, "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"),
        body: chunked(b.body),
      }),
    ),
  "gzip-chunked": (_r, b) =>
    once(
      serialize(b, { head: teHead(b, "Transfer-Encoding: gzip, chunked"), body: chunked(b.body) }),
    ),
  "identity": (_r, b) =>
    once(serialize(b, { head: teHead(b, "Transfer-Encoding: identity"), body: b.body })),
  "gzip": (_r, b) =>
    once(serialize(b, { head: teHead(b, "Transfer-Encoding: gzip"), body: b.body })),
  "xchunked": (_r, b) =>
    once(serialize(b, { head: teHead(b, "Transfer-Encoding: xchunked"), body: chunked(b.body) })),
  "empty": (_r, b) => once(serialize(b, { head: teHead(b, "Transfer-Encoding: "), body: b.body })),
  "with-content-length": (_r, b) =>
    once(
      serialize(b, {
        head: teHead(b, "Transfer-Encoding: chunked", "Content-Length: 3"),
        body: chunked(b.body),
      }),
    ),
  "leading-space-value": (_r, b) =>
    once(serialize(b, { head: teHead(b, "Transfer-Encoding:   chunked"), body: chunked(b.body) })),
  "http10-chunked": (_r, b) =>
    once(
      serialize(b, {
        head: [`HTTP/1.0 ${b.status} ${b.reason}`, "Transfer-Encoding: chunked"],
        body: chunked(b.body),
      }),
    ),
};

const chunkedHead = (b: Base) => teHead(b, "Transfer-Encoding: chunked");
const body5 = "hello";

// Chunk framing per Go's internal chunked reader.
const chunkingVariants: Record<string, Variant> = {
  "extension": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `5;name=value\r\n${body5}\r\n0\r\n\r\n` })),
  "uppercase-hex": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `A\r\n0123456789\r\n0\r\n\r\n` })),
  "leading-zeros": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `0005\r\n${body5}\r\n0\r\n\r\n` })),
  "over-16-hex-digits": (_r, b) =>
    once(
      serialize(b, { head: chunkedHead(b), body: `00000000000000005\r\n${body5}\r\n0\r\n\r\n` }),
    ),
  "huge-size": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `fffffffffffffff\r\n${body5}` })),
  "negative": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `-5\r\n${body5}\r\n0\r\n\r\n` })),
  "0x-prefix": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `0x5\r\n${body5}\r\n0\r\n\r\n` })),
  "space-after-size": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `5 \r\n${body5}\r\n0\r\n\r\n` })),
  "tab-after-size": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `5\t\r\n${body5}\r\n0\r\n\r\n` })),
  "bare-lf-size": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `5\n${body5}\r\n0\r\n\r\n` })),
  "bare-lf-after-data": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `5\r\n${body5}\n0\r\n\r\n` })),
  "data-longer": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `3\r\n${body5}\r\n0\r\n\r\n` })),
  "data-shorter": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `9\r\n${body5}\r\n0\r\n\r\n` })),
  "no-last-chunk": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `5\r\n${body5}\r\n` })),
  "no-final-crlf": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `5\r\n${body5}\r\n0\r\n` })),
  "trailer": (_r, b) =>
    once(
      serialize(b, { head: chunkedHead(b), body: `5\r\n${body5}\r\n0\r\nX-Trailer: 1\r\n\r\n` }),
    ),
  "bad-trailer": (_r, b) =>
    once(
      serialize(b, { head: chunkedHead(b), body: `5\r\n${body5}\r\n0\r\nnot a header\r\n\r\n` }),
    ),
  "stalled-trailer": (
    _r,
    b,
  ) => [[bytes(serialize(b, { head: chunkedHead(b), body: `5\r\n${body5}\r\n0\r\n` })), "stall"]],
  "empty-size-line": (_r, b) =>
    once(serialize(b, { head: chunkedHead(b), body: `\r\n${body5}\r\n0\r\n\r\n` })),
  "many-small-chunks": (r, b) => {
    const n = r.int(50, 400);
    return once(serialize(b, { head: chunkedHead(b), body: "1\r\nx\r\n".repeat(n) + "0\r\n\r\n" }));
  },
};

// Obsolete line folding (RFC 7230 §3.2.4): Go's textproto joins continuation lines.
const foldingVariants: Record<string, Variant> = {
  "space": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-Folded: a", " b", ...headerLines(b)] })),
  "tab": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-Folded: a", "\tb", ...headerLines(b)] })),
  "first-line": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), " X-Folded: a", ...headerLines(b)] })),
  "content-length-folded": (_r, b) =>
    once(
      serialize(b, { head: [statusLine(b), "Content-Length:", ` ${b.body.length}`], body: b.body }),
    ),
};

// Line endings: Go's textproto accepts a bare LF as the end of a line.
const bareLfVariants: Record<string, Variant> = {
  "all-lines": (_r, b) => once(serialize(b, { eol: "\n" })),
  "status-line": (_r, b) =>
    once(
      `${statusLine(b)}\n` + headerLines(b).map((l) => l + "\r\n").join("") + "\r\n" + bodyBytes(b),
    ),
  "one-header": (_r, b) =>
    once(
      `${statusLine(b)}\r\nX-A: 1\n` + headerLines(b).map((l) => l + "\r\n").join("") + "\r\n" +
        bodyBytes(b),
    ),
  "blank-line": (_r, b) =>
    once(
      `${statusLine(b)}\r\n` + headerLines(b).map((l) => l + "\r\n").join("") + "\n" + bodyBytes(b),
    ),
};

// Control bytes: Go rejects CR and NUL inside header values and names.
const controlVariants: Record<string, Variant> = {
  "bare-cr-in-value": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-A: a\rb", ...headerLines(b)] })),
  "bare-cr-line-end": (_r, b) => once(serialize(b, { eol: "\r" })),
  "nul-in-value": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-A: a\0b", ...headerLines(b)] })),
  "nul-in-name": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X\0A: b", ...headerLines(b)] })),
  "nul-in-reason": (_r, b) =>
    once(serialize(b, { head: [`HTTP/1.1 ${b.status} O\0K`, ...headerLines(b)] })),
  "del-in-value": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-A: a\x7fb", ...headerLines(b)] })),
  "tab-in-value": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-A: a\tb", ...headerLines(b)] })),
  "high-byte-in-value": (_r, b) =>
    once(
      new Uint8Array([
        ...bytes(`${statusLine(b)}\r\nX-A: a`),
        0xff,
        ...bytes("\r\n" + headerLines(b).map((l) => l + "\r\n").join("") + "\r\n" + bodyBytes(b)),
      ]),
    ),
  "nul-in-body": (_r, b) =>
    once(serialize(ok200(b), { head: [statusLine(ok200(b)), "Content-Length: 3"], body: "a\0b" })),
};

// Header names: Go requires RFC 7230 tokens and refuses a space before the colon.
const headerNameVariants: Record<string, Variant> = {
  "space-in-name": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X A: b", ...headerLines(b)] })),
  "space-before-colon": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-A : b", ...headerLines(b)] })),
  "parens": (_r, b) => once(serialize(b, { head: [statusLine(b), "X(A): b", ...headerLines(b)] })),
  "empty-name": (_r, b) => once(serialize(b, { head: [statusLine(b), ": b", ...headerLines(b)] })),
  "no-colon": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "Garbage", ...headerLines(b)] })),
  "utf8-name": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-Ä: b", ...headerLines(b)] })),
  "no-space-after-colon": (_r, b) =>
    once(serialize(b, { head: [statusLine(b), "X-A:b", ...headerLines(b)] })),
  "many-headers": (r, b) =>
    once(
      serialize(b, {
        head: [
          statusLine(b),
          ...Array.from({ length: r.int(100, 2000) }, (_, i) => `X-${i}: ${i}`),
          ...headerLines(b),
        ],
      }),
    ),
};

const info = (code: number, extra: string[] = []) =>
  [`HTTP/1.1 ${code} Info`, ...extra].map((l) => l + "\r\n").join("") + "\r\n";

// 1xx: Go skips up to 5 informational responses (101 ends the exchange) before the final one.
const informationalVariants: Record<string, Variant> = {
  "100-continue": (_r, b) => once(info(100) + serialize(b)),
  "103-early-hints": (_r, b) => once(info(103, ["Link: </a.css>; rel=preload"]) + serialize(b)),
  "five": (_r, b) => once(info(100).repeat(5) + serialize(b)),
  "six": (_r, b) => once(info(103).repeat(6) + serialize(b)),
  "many": (r, b) => once(info(103).repeat(r.int(7, 50)) + serialize(b)),
  "101": (_r, b) => once(info(101, ["Upgrade: websocket", "Connection: Upgrade"]) + serialize(b)),
  "only-1xx": (_r, _b) => once(info(100)),
  "1xx-with-body-length": (_r, b) => once(info(102, ["Content-Length: 3"]) + serialize(b)),
};

const redirect = (code: number, location?: string) =>
  [
    `HTTP/1.1 ${code} Redirect`,
    ...(location === undefined ? [] : [`Location: ${location}`]),
    "Content-Length: 5",
  ]
    .map((l) => l + "\r\n").join("") + "\r\nmoved";

// Redirects: followed by Go's client under kubelet's policy (same host name, at most 10).
const redirectVariants: Record<string, Variant> = {
  "relative": (
    r,
    b,
  ) => [[bytes(redirect(r.pick([301, 302, 303, 307, 308]), "/next")), "close"], [
    bytes(serialize(b)),
    "close",
  ]],
  "absolute-same-host": (
    r,
    b,
  ) => [[bytes(redirect(r.pick([301, 302, 307]), "http://127.0.0.1:1/next")), "close"], [
    bytes(serialize(b)),
    "close",
  ]],
  "other-host": (r, _b) =>
    once(redirect(r.pick([301, 302, 303, 307, 308]), "http://example.invalid/next")),
  "no-location": (r, _b) => once(redirect(r.pick([301, 302, 303, 307, 308]))),
  "empty-location": (r, _b) => once(redirect(r.pick([301, 302]), "")),
  "bad-location": (_r, _b) => once(redirect(302, "http://[::1")),
  "space-in-location": (
    _r,
    b,
  ) => [[bytes(redirect(302, "/a b")), "close"], [bytes(serialize(b)), "close"]],
  "control-in-location": (
    _r,
    b,
  ) => [[bytes(redirect(302, "/a\x01b")), "close"], [bytes(serialize(b)), "close"]],
  "loop": (r, _b) => once(redirect(r.pick([302, 307]), "/again")),
  "300-with-location": (_r, _b) => once(redirect(300, "/next")),
  "304-with-location": (_r, _b) => once(redirect(304, "/next")),
  "scheme-relative": (_r, _b) => once(redirect(302, "//example.invalid/next")),
  "unsupported-scheme": (_r, _b) => once(redirect(302, "ftp://127.0.0.1/next")),
  "query-only": (
    _r,
    b,
  ) => [[bytes(redirect(302, "?a=1")), "close"], [bytes(serialize(b)), "close"]],
  "two-locations": (
    _r,
    b,
  ) => [[
    bytes(redirect(302, "/first").replace("Content-Length", "Location: /second\r\nContent-Length")),
    "close",
  ], [bytes(serialize(b)), "close"]],
};

// Connection ends early at different points of the response.
const truncationVariants: Record<string, Variant> = {
  "empty": () => [["close"]],
  "mid-status-line": (_r, b) => once(statusLine(b).slice(0, 7)),
  "after-status-line": (_r, b) => once(statusLine(b) + "\r\n"),
  "mid-headers": (_r, b) => once(serialize(b).slice(0, statusLine(b).length + 6)),
  "no-blank-line": (_r, b) =>
    once([statusLine(b), ...headerLines(b)].map((l) => l + "\r\n").join("")),
  "random-cut": (r, b) => {
    const text = serialize(b);
    return once(text.slice(0, r.int(0, text.length)));
  },
  "close-delimited-body": (_r, b) =>
    once(
      serialize(b, {
        head: [
          statusLine(b),
          ...b.headers.map(([n, v]) => `${n}: ${v}`),
        ],
        body: b.body,
      }),
    ),
};

// Stalls: the probe's single deadline must end them.
const stallVariants: Record<string, Variant> = {
  "before-head": () => [["stall"]],
  "mid-head": (_r, b) => [[bytes(statusLine(b) + "\r\nX-A: 1\r\n"), "stall"]],
  "mid-body": (
    _r,
    b,
  ) => [[
    bytes(
      serialize(ok200(b), { head: [statusLine(ok200(b)), "Content-Length: 100"], body: "partial" }),
    ),
    "stall",
  ]],
  "after-full-body-keepalive": (_r, b) => [[bytes(serialize(b)), "stall"]],
  // A 200 whose body runs to EOF (no Content-Length, not chunked), and EOF never comes.
  "close-delimited-body": (
    _r,
    b,
  ) => [[bytes(serialize({ ...ok200(b), framing: "close" })), "stall"]],
};

// Sizes: bodies beyond kubelet's 10 KiB read, long header lines (under Go's 10 MiB limit).
const sizeVariants: Record<string, Variant> = {
  "body-over-10k": (r, b) =>
    once(serialize({ ...ok200(b), body: "y".repeat(r.int(10 * 1024 + 1, 64 * 1024)) })),
  "body-exactly-10k": (_r, b) => once(serialize({ ...ok200(b), body: "z".repeat(10 * 1024) })),
  "long-header-value": (r, b) =>
    once(
      serialize(b, {
        head: [statusLine(b), `X-Long: ${"v".repeat(r.int(4096, 256 * 1024))}`, ...headerLines(b)],
      }),
    ),
  "utf8-body": (_r, b) => once(serialize({ ...ok200(b), body: "héllo ✓ 世界" })),
};

/** The mutation classes and their variants, by name. */
export const http1Classes: Record<string, Record<string, Variant>> = {
  "baseline": { "valid": (_r, b) => once(serialize(b)) },
  "status-line": statusLineVariants,
  "content-length": contentLengthVariants,
  "transfer-encoding": transferEncodingVariants,
  "chunking": chunkingVariants,
  "folding": foldingVariants,
  "bare-lf": bareLfVariants,
  "control-bytes": controlVariants,
  "header-name": headerNameVariants,
  "informational": informationalVariants,
  "redirect": redirectVariants,
  "truncation": truncationVariants,
  "stall": stallVariants,
  "size": sizeVariants,
};

const havocBytes = [13, 10, 0, 32, 58, 9, 0x7f, 0xff, 0x2c, 0x30, 0x66];

/**
 * Byte-level havoc on a valid response: 1–4 random flips, inserts of framing-relevant bytes (CR,
 * LF, NUL, space, colon, tab, DEL, 0xff, comma, digits), deletions and duplicated spans. Not part
 * of the CI set: its differences have no class to reason about, so they are for triage.
 */
const havocClass: Record<string, Variant> = {
  "bytes": (r, b) => {
    let out = [...bytes(serialize(b))];
    for (let n = r.int(1, 4); n > 0; n--) {
      const at = r.int(0, Math.max(0, out.length - 1));
      const op = r.int(0, 3);
      if (op === 0) out[at] = r.pick(havocBytes);
      else if (op === 1) out.splice(at, 0, r.pick(havocBytes));
      else if (op === 2) out.splice(at, 1);
      else out = [...out.slice(0, at), ...out.slice(at, at + r.int(1, 16)), ...out.slice(at)];
    }
    return once(new Uint8Array(out));
  },
};

/**
 * Generates `count` cases from `seed`. With `everyVariant`, the first cases walk every variant of
 * every class once (so a small fixed set still covers each), then random picks follow; `havoc`
 * makes half the random picks byte-level `havoc/bytes` cases.
 *
 * @example
 * ```ts
 * const cases = generateHttp1Cases(1, 10);
 * cases[0].cls; // "baseline"
 * ```
 */
export function generateHttp1Cases(
  seed: number,
  count: number,
  options: { everyVariant?: boolean; havoc?: boolean } = {},
): Http1Case[] {
  const rng = new Rng(seed);
  const all = Object.entries(http1Classes).flatMap(([cls, variants]) =>
    Object.entries(variants).map(([variant, make]) => ({ cls, variant, make }))
  );
  const havoc = { cls: "havoc", variant: "bytes", make: havocClass.bytes };
  const cases: Http1Case[] = [];
  for (let i = 0; i < count; i++) {
    const pick = options.everyVariant && i < all.length
      ? all[i]
      : options.havoc && rng.chance(0.5)
      ? havoc
      : rng.pick(all);
    const base = randomBase(rng);
    cases.push({
      cls: pick.cls,
      variant: pick.variant,
      path: rng.pick(["/", "/healthz", "/ready?x=1"]),
      responses: pick.make(rng, base),
    });
  }
  return cases;
}
