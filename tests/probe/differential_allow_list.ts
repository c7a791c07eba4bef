/**
 * The differential test's allow-list (tests/probe/differential_test.ts, `deno task fuzz:kubelet`):
 * every class of difference between kubelet v1.36.3's HTTP/gRPC probe handlers and probelet's that
 * the fuzzers find on purpose-built hostile responses, with why, who is right, and the issue-21 row.
 * Three sections, checked in this order; a difference in none of them fails the test:
 * - `allowed`: differences kept on purpose (documented deviations).
 * - `knownBeingFixed`: real bugs in an issue-21 row that a branch is fixing (`http1-verdicts`,
 *   `h2-bounds`). Empty it as they merge: the report lists entries that no longer match anything.
 * - `notInIssue`: real differences found by this test that no issue-21 row names yet.
 * Variants are those of tests/testing/differential/http1_cases.ts and grpc_cases.ts.
 * Mirrors nothing upstream: test data.
 * @module
 */
import type { AllowEntry } from "../testing/differential/run.ts";

const both: AllowEntry["differences"] = ["verdict", "text"];

/** Differences kept on purpose. None today: every difference found is a bug on one side. */
export const allowed: AllowEntry[] = [];

/** Real bugs named by an issue-21 row, being fixed on `http1-verdicts` and `h2-bounds`. */
export const knownBeingFixed: AllowEntry[] = [
  // ---- HTTP/1.1 (branch http1-verdicts) -------------------------------------------------------
  {
    kind: "http",
    cls: "content-length",
    variants: [
      "non-numeric",
      "negative",
      "plus-sign",
      "hex",
      "empty",
      "huge",
      "conflicting",
      "comma-list-equal",
      "comma-list-conflicting",
    ],
    differences: both,
    why: "Go refuses a Content-Length that is not plain digits, is empty, overflows int64, or " +
      "differs between headers ('bad Content-Length', 'message cannot contain multiple " +
      "Content-Length headers'; a comma list in one header is not split); probelet reads the body " +
      "anyway and reports the status",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "transfer-encoding",
    variants: [
      "chunked-twice-list",
      "two-headers",
      "gzip",
      "gzip-chunked",
      "identity",
      "xchunked",
      "empty",
    ],
    differences: both,
    why:
      "Go accepts only a single 'chunked' ('unsupported transfer encoding', 'too many transfer " +
      "encodings'); probelet ignores or de-chunks other values",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "transfer-encoding",
    variants: ["http10-chunked"],
    differences: ["text"],
    why:
      "Go ignores Transfer-Encoding on an HTTP/1.0 response and returns the chunked bytes as the " +
      "body; probelet de-chunks them (same verdict, different output)",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "status-line",
    variants: ["http10"],
    differences: ["text"],
    why:
      "an HTTP/1.0 status line on a chunked response: Go ignores Transfer-Encoding for HTTP/1.0 " +
      "and returns the chunked bytes as the body; probelet de-chunks them",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "chunking",
    variants: [
      "over-16-hex-digits",
      "bare-lf-size",
      "bad-trailer",
      "no-final-crlf",
      "empty-size-line",
    ],
    differences: both,
    why:
      "Go's chunked reader refuses chunk sizes over 16 hex digits, a bare LF ending a size line, " +
      "a trailer line without a colon, and EOF before the final CRLF (a body read error: " +
      "Failure with an error); probelet returns the body as Success, or another error text",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "chunking",
    variants: ["stalled-trailer"],
    differences: both,
    why:
      "the trailer never ends: Go's body read hits the client timeout (Failure, error); probelet " +
      "stops reading once it has the body and reports the status (Success/Warning)",
    right: "kubelet",
    row: "7",
  },
  {
    kind: "http",
    cls: "control-bytes",
    variants: [
      "bare-cr-in-value",
      "nul-in-name",
      "nul-in-value",
      "del-in-value",
      "bare-cr-line-end",
    ],
    differences: both,
    why:
      "Go's textproto refuses CR, NUL and other CTL bytes in header lines ('malformed MIME header " +
      "line'); probelet accepts them, or names another line in the error",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "header-name",
    variants: ["parens", "utf8-name", "space-in-name", "space-before-colon", "no-colon"],
    differences: both,
    why: "header-name bytes: Go refuses non-token bytes such as '(' or UTF-8 but accepts a space " +
      "inside a name or before the colon; probelet does the opposite; 'missing colon' is Go's text",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "folding",
    differences: both,
    why:
      "Go joins obs-fold continuation lines (even for Content-Length) and names a folded first " +
      "line 'malformed MIME header initial line'; probelet refuses folded headers",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "bare-lf",
    differences: both,
    why:
      "Go accepts a bare LF as a line end in the status line, header lines and the blank line; " +
      "probelet waits for CRLF and fails at EOF",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "informational",
    variants: ["six", "many"],
    differences: both,
    why: "Go skips more than five 1xx responses here (its limit counts header bytes); probelet " +
      "stops after five and reports the 1xx status as a Failure",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "status-line",
    variants: ["signed", "tab"],
    differences: ["text"],
    why:
      "Go parses '+20' as status 20 (strconv.Atoi, three characters) and splits the status line " +
      "on the first space only; probelet's errors name another part of the line (same Failure)",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "truncation",
    variants: ["mid-status-line", "mid-headers", "random-cut"],
    differences: ["text"],
    why:
      "at EOF inside the head Go reports the partial line ('malformed HTTP response', 'missing " +
      "colon', 'malformed MIME header line'); probelet says 'unexpected EOF' (same Failure)",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "truncation",
    variants: ["random-cut"],
    differences: ["verdict"],
    why: "a cut after the last chunk's size line: Go's body read fails ('unexpected EOF reading " +
      "trailer': Failure with an error); probelet reports the status without one",
    right: "kubelet",
    row: "8",
  },
  {
    kind: "http",
    cls: "redirect",
    variants: ["control-in-location"],
    differences: ["text"],
    why:
      "Go refuses the CTL byte while reading the header ('malformed MIME header line'); probelet " +
      "reads it and fails on parsing the Location (same Failure)",
    right: "kubelet",
    row: "8",
  },
  // ---- gRPC over HTTP/2 (branch h2-bounds) ----------------------------------------------------
  {
    kind: "grpc",
    cls: "content-type",
    differences: both,
    why: "grpc-go requires content-type application/grpc or application/grpc+x / ;params (case-" +
      "sensitive) and fails the RPC with Unknown 'received unexpected content-type'; probelet " +
      "takes any content-type, including text/html with grpc-status 0",
    right: "kubelet",
    row: "10",
  },
  {
    kind: "grpc",
    cls: "framing",
    variants: ["two-messages"],
    differences: both,
    why: "a unary call with two response messages is an Internal 'cardinality violation' in " +
      "grpc-go; probelet uses the first",
    right: "kubelet",
    row: "10",
  },
  {
    kind: "grpc",
    cls: "grpc-status",
    variants: ["in-headers"],
    differences: both,
    why:
      "grpc-status in the response headers followed by DATA with END_STREAM: grpc-go fails with " +
      "'server closed the stream without sending trailers'; probelet takes the headers' status",
    right: "kubelet",
    row: "10",
  },
  {
    kind: "grpc",
    cls: "hpack",
    variants: [
      "bad-value-bytes",
      "pseudo-after-regular",
      "request-pseudo",
      "unknown-pseudo",
      "uppercase-name",
    ],
    differences: both,
    why: "x/net/http2 validates decoded header fields (names lower-case tokens, values without " +
      "CTLs, pseudo-headers first and only response ones) and grpc-go fails the stream (Internal); " +
      "probelet accepts them",
    right: "kubelet",
    row: "10",
  },
  {
    kind: "grpc",
    cls: "grpc-status",
    variants: ["padded-zero", "empty"],
    differences: both,
    why: "grpc-go parses grpc-status with strconv.ParseInt, so ' 0', '0 ', '\\t0' and '' are " +
      "'malformed grpc-status' (Unknown); probelet reads them as 0 (JavaScript's Number() trims " +
      "and takes '' as 0) and reports the SERVING message as healthy",
    right: "kubelet",
    row: "10",
  },
  {
    kind: "grpc",
    cls: "rst-stream",
    variants: ["stream-0"],
    differences: both,
    why:
      "RST_STREAM on stream 0 is a connection PROTOCOL_ERROR for x/net/http2; probelet ignores it",
    right: "kubelet",
    row: "10",
  },
];

/** Real differences this test found that no issue-21 row names yet (nobody is fixing them). */
export const notInIssue: AllowEntry[] = [
  {
    kind: "https",
    cls: "stall",
    variants: ["before-head", "mid-head", "mid-body", "after-full-body-keepalive"],
    differences: both,
    why: "over TLS probelet sees the deadline's close of the connection as a clean EOF: a stall " +
      "before or inside the head reads 'EOF' / 'unexpected EOF' instead of Go's 'context deadline " +
      "exceeded (Client.Timeout exceeded while awaiting headers)', and a close-delimited body " +
      "that never ends is taken as complete at the deadline: Success (or the status) where Go " +
      "fails the body read with 'Client.Timeout or context cancellation while reading body'. " +
      "Row 7's symptom (Success at the deadline) by another path; plain HTTP is right",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "truncation",
    variants: ["stall-before-settings"],
    differences: ["text"],
    why: "texts only (both Failure at the deadline): a port that accepts TCP and never sends an " +
      "HTTP/2 frame. grpc-go's blocking dial returns before any server frame arrives, so kubelet " +
      "says 'timeout: health rpc did not complete within 1s'; probelet waits for the server's " +
      "SETTINGS and says 'timeout: failed to connect service ... within 1s' (the same leniency " +
      "makes frames/no-server-settings healthy in kubelet)",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "frames",
    variants: ["no-server-settings", "settings-frame-size-small", "push-promise"],
    differences: both,
    why:
      "probelet's HTTP/2 client is stricter than grpc-go's: grpc-go takes a SETTINGS ACK as the " +
      "server preface, ignores an invalid SETTINGS_MAX_FRAME_SIZE, and ignores PUSH_PROMISE; " +
      "probelet fails such healthy servers (dial timeout or connection error)",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "protobuf",
    variants: [
      "group-then-serving",
      "unknown-bytes-field-then-serving",
      "status-as-bytes-then-serving",
      "group-wire-type",
      "status-as-bytes",
    ],
    differences: both,
    why: "Go's protobuf skips groups and a field with an unexpected wire type as unknown fields; " +
      "probelet's hand decoder (src/probe/grpc/grpc.ts decodeHealthCheckResponse) refuses groups, " +
      "and mis-skips every length-delimited field: in `off += varint()` the left `off` is read " +
      "before varint() advances it, so the next key is read from inside the field. A SERVING " +
      "answer with any bytes field before the status is a Failure",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "protobuf",
    variants: ["negative-enum", "field-0", "truncated-varint", "length-past-end", "wire-type-7"],
    differences: ["text"],
    why:
      "texts only (both Failure): probelet reads a 10-byte negative enum as UNKNOWN instead of " +
      "-1 (the varint loses precision in a double), and its decode errors are not Go protobuf's " +
      "single 'proto: cannot parse invalid wire-format data'",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "rst-stream",
    variants: ["before-headers", "after-headers", "after-data"],
    differences: ["text"],
    why: "texts only (both Failure): grpc-go retries a REFUSED_STREAM transparently until the " +
      "deadline and reports RST_STREAM codes as 'stream terminated by RST_STREAM with error code: " +
      "X' (Internal for NO_ERROR); probelet reports the RST at once or the connection's EOF",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "grpc-status",
    variants: [
      "missing",
      "negative",
      "non-numeric",
      "percent-message",
      "status-details-bin",
      "no-trailers-end-on-data",
      "trailers-only",
    ],
    differences: ["text"],
    why:
      "texts only (both Failure): grpc-go's status texts — Unknown for a missing or unparsable " +
      "grpc-status, the code as uint32, grpc-message percent-decoded, grpc-status-details-bin " +
      "decoded, 'server closed the stream without sending trailers', 'cardinality violation' for " +
      "no message — differ from probelet's",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "framing",
    variants: [
      "bad-padding",
      "compressed-flag-gzip-header",
      "flag-2",
      "length-shorter",
      "no-message",
      "partial-message-then-trailers",
    ],
    differences: ["text"],
    why: "texts only (both Failure): grpc-go's 'cardinality violation', 'Decompressor is not " +
      "installed', 'unexpected payload format' and connection-error texts differ from probelet's",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "http-status",
    variants: ["302", "404-no-grpc-status", "503-no-grpc-status"],
    differences: ["text"],
    why: "texts only (both Failure): grpc-go appends the content-type complaint ('; malformed " +
      "header: missing HTTP content-type', '; transport: received unexpected content-type')",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "content-type",
    variants: ["text-html-trailers-only"],
    differences: ["text"],
    why: "texts only (both Failure): grpc-go names the content-type, probelet an unexpected EOF",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "frames",
    variants: [
      "continuation-without-headers",
      "data-on-stream-0",
      "headers-then-data-mid-block",
      "oversized-frame",
      "window-update-zero-conn",
      "window-update-zero-stream",
    ],
    differences: ["text"],
    why: "texts only (both Failure): grpc-go prints HTTP/2 connection errors as the bare code " +
      "('connection error: PROTOCOL_ERROR', 'received invalid frame', 'http2: frame too large'); " +
      "probelet describes them",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "hpack",
    variants: ["index-out-of-range", "table-size-too-big", "truncated-block"],
    differences: ["text"],
    why:
      "texts only (both Failure): grpc-go says 'connection error: COMPRESSION_ERROR'; probelet " +
      "passes hpack.js's message",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "goaway",
    variants: ["on-connect", "before-response-last-0", "after-headers-then-close"],
    differences: ["text"],
    why:
      "texts only (both Failure): grpc-go's 'the connection is draining' and 'closing transport " +
      "due to: ...' differ from probelet's",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "truncation",
    variants: ["close-at-random-byte"],
    differences: ["text"],
    why:
      "texts only (both Failure): grpc-go 'error reading from server: unexpected EOF', probelet " +
      "'connection error: desc = \"unexpected EOF\"'",
    right: "kubelet",
    row: "",
  },
];
