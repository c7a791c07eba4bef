/**
 * The differential test's allow-list (tests/probe/differential_test.ts, `deno task fuzz:kubelet`):
 * every class of difference between kubelet v1.36.3's HTTP/gRPC probe handlers and probelet's that
 * the fuzzers find on purpose-built hostile responses, with why, who is right, and the issue-21 row.
 * Three sections, checked in this order; a difference in none of them fails the test:
 * - `allowed`: differences kept on purpose (documented deviations).
 * - `knownBeingFixed`: real bugs named by an issue-21 row, still open. Empty entries as fixes
 *   merge: the report lists entries that no longer match anything.
 * - `notInIssue`: real differences found by this test that no issue-21 row names yet.
 * Variants are those of tests/testing/differential/http1_cases.ts and grpc_cases.ts.
 * Mirrors nothing upstream: test data.
 * @module
 */
import type { AllowEntry } from "../testing/differential/run.ts";

const both: AllowEntry["differences"] = ["verdict", "text"];

/** Differences kept on purpose. None today: every difference found is a bug on one side. */
export const allowed: AllowEntry[] = [];

/**
 * Real bugs named by an issue-21 row and still open. The rows 7 and 8 (HTTP/1.1) and most of
 * row 10 (gRPC) entries were emptied when `http1-verdicts` (256cff5) and `h2-bounds` (85be45f)
 * merged: nothing on main matched them any more. These two row-10 ones still differ after the
 * h2-bounds merge.
 */
export const knownBeingFixed: AllowEntry[] = [
  {
    kind: "grpc",
    cls: "grpc-status",
    variants: ["in-headers"],
    differences: ["text"],
    why: "grpc-status in the response headers, then DATA with END_STREAM and no trailers: both " +
      "fail now, but grpc-go says Internal 'server closed the stream without sending trailers' " +
      "and probelet Unavailable 'error reading from server: EOF'",
    right: "kubelet",
    row: "10",
  },
];

/** Real differences this test found that no issue-21 row names yet (nobody is fixing them). */
export const notInIssue: AllowEntry[] = [
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
    cls: "rst-stream",
    variants: ["before-headers", "after-headers"],
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
    variants: ["no-trailers-end-on-data"],
    differences: ["text"],
    why: "texts only (both Failure): DATA with END_STREAM and no trailers is grpc-go's Internal " +
      "'server closed the stream without sending trailers'; probelet says Unavailable 'error " +
      "reading from server: EOF'",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "framing",
    variants: ["bad-padding", "length-shorter"],
    differences: ["text"],
    why:
      "texts only (both Failure): grpc-go prints a padding error as the bare 'connection error: " +
      "PROTOCOL_ERROR' and a message cut short as Go protobuf's 'cannot parse invalid wire-format " +
      "data'; probelet says 'padding too long' and 'unexpected EOF'",
    right: "kubelet",
    row: "",
  },
  {
    kind: "grpc",
    cls: "frames",
    variants: [
      "continuation-without-headers",
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
