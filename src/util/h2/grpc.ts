/**
 * gRPC unary calls over our HTTP/2 client (client_conn.ts): the request headers and message
 * framing, the `grpc-timeout` header, and turning a finished stream into the one response message
 * or the status grpc-go would report (trailers, trailers-only responses, HTTP statuses without
 * grpc-status, RST_STREAM, GOAWAY, EOF). Shared by the gRPC probe and the CRI client.
 * @module
 */
import { goQuote } from "../go_format.ts";
import { GrpcStatus } from "../grpc_codes.ts";
import type { H2Response } from "./client_conn.ts";
import { concat, errorCodeName } from "./frame.ts";
import { statusText } from "../http_status.ts";

/** A gRPC status other than OK: Go's `status.Status` (code and message). */
export interface RpcStatus {
  code: number;
  details: string;
}

/** The headers of a unary call, pseudo-headers first, as grpc-go sends them. */
export function unaryRequestHeaders(
  options: { path: string; authority: string; userAgent: string; timeoutMs?: number },
): [string, string][] {
  const headers: [string, string][] = [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", options.path],
    [":authority", options.authority],
    ["content-type", "application/grpc"],
    ["user-agent", options.userAgent],
    ["te", "trailers"],
  ];
  if (options.timeoutMs !== undefined) {
    headers.push(["grpc-timeout", encodeGrpcTimeout(options.timeoutMs)]);
  }
  return headers;
}

// grpc-timeout's units, finest first, in milliseconds.
const grpcTimeoutUnits: readonly (readonly [string, number])[] = [
  ["n", 1e-6],
  ["u", 1e-3],
  ["m", 1],
  ["S", 1e3],
  ["M", 60e3],
  ["H", 3600e3],
];

/** Go's `encodeTimeout` for the `grpc-timeout` header: at most 8 digits, the finest unit that fits. */
export function encodeGrpcTimeout(ms: number): string {
  if (ms <= 0) return "0n";
  for (const [unit, unitMs] of grpcTimeoutUnits) {
    const value = Math.ceil(ms / unitMs);
    if (value <= 99_999_999) return `${value}${unit}`;
  }
  return "99999999H";
}

/** The gRPC length-prefixed message: flag 0 (uncompressed), 4-byte length, bytes. */
export function grpcFrame(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.length);
  new DataView(out.buffer).setUint32(1, body.length);
  out.set(body, 5);
  return out;
}

// HTTP status → gRPC code when a response carries no grpc-status (grpc-go's HTTPStatusConvTab).
const httpStatusCodes: Record<number, number> = {
  400: GrpcStatus.Internal,
  401: GrpcStatus.Unauthenticated,
  403: GrpcStatus.PermissionDenied,
  404: GrpcStatus.Unimplemented,
  429: GrpcStatus.Unavailable,
  502: GrpcStatus.Unavailable,
  503: GrpcStatus.Unavailable,
  504: GrpcStatus.Unavailable,
};

// RST_STREAM error code → gRPC code (grpc-go's http2ErrConvTab); codes it does not list are Unknown.
function rstStreamCode(http2Code: number): number {
  switch (http2Code) {
    case 0x3: // FLOW_CONTROL_ERROR
    case 0xb: // ENHANCE_YOUR_CALM
      return GrpcStatus.ResourceExhausted;
    case 0x7: // REFUSED_STREAM
      return GrpcStatus.Unavailable;
    case 0x8: // CANCEL
      return GrpcStatus.Canceled;
    case 0xc: // INADEQUATE_SECURITY
      return GrpcStatus.PermissionDenied;
    default:
      return http2Code <= 0xd ? GrpcStatus.Internal : GrpcStatus.Unknown;
  }
}

/** What the header blocks of a stream say: an error that closed it, or the trailers' status. */
interface HeaderVerdict {
  /** grpc-go refused a header block: the stream ended with this status there. */
  error?: RpcStatus;
  /** The status of the block that ended the stream (grpc-status and grpc-message). */
  final?: RpcStatus;
  /** grpc-encoding of the response headers. */
  encoding: string;
}

/**
 * grpc-go's `http2Client.operateHeaders` (v1.79) over the header blocks in order. A block after the
 * response headers must end the stream. A block is gRPC when a response was already accepted or
 * it has an `application/grpc` content-type; one that is not fails the stream with its `:status`
 * (missing: Internal; 1xx: skipped, unless it ends the stream; others mapped through
 * HTTPStatusConvTab) and the content-type error, and `:status` is not looked at otherwise. A
 * grpc-status that is not a 32-bit number is Unknown, `-bin` metadata must be base64, and a block
 * that ends the stream carries the final status (Unknown when it has no grpc-status).
 */
function headerVerdict(response: H2Response): HeaderVerdict {
  const verdict: HeaderVerdict = { encoding: "" };
  if (response.invalidHeader !== undefined) {
    verdict.error = { code: GrpcStatus.Internal, details: response.invalidHeader };
  }
  let initial = true;
  for (const { fields, endStream } of response.blocks) {
    if (verdict.error || verdict.final) break;
    const block = blockVerdict(fields, { initial, endStream });
    if (block === "informational") continue;
    initial = false;
    if ("error" in block) verdict.error = block.error;
    else if (endStream) verdict.final = block.final;
    else verdict.encoding = block.encoding;
  }
  return verdict;
}

/** One header block as operateHeaders sees it. */
function blockVerdict(
  fields: [string, string][],
  options: { initial: boolean; endStream: boolean },
): "informational" | { error: RpcStatus } | { final: RpcStatus; encoding: string } {
  const { initial, endStream } = options;
  if (!initial && !endStream) {
    return {
      error: {
        code: GrpcStatus.Internal,
        details: "a HEADERS frame cannot appear in the middle of a stream",
      },
    };
  }
  let isGrpc = !initial;
  let contentTypeError = "malformed header: missing HTTP content-type";
  let encoding = "";
  let code: number = GrpcStatus.Unknown;
  let message = "";
  let headerError = "";
  let httpStatus: string | undefined;
  for (const [name, value] of fields) {
    if (name === "content-type") {
      if (/^application\/grpc([+;]|$)/.test(value)) {
        contentTypeError = "";
        isGrpc = true;
      } else {
        contentTypeError = `transport: received unexpected content-type ${goQuote(value)}`;
      }
    } else if (name === "grpc-encoding") {
      encoding = value;
    } else if (name === "grpc-status") {
      const parsed = parseGoInt(value, "ParseInt", 32);
      if (typeof parsed === "string") {
        return {
          error: {
            code: GrpcStatus.Unknown,
            details: `transport: malformed grpc-status: ${parsed}`,
          },
        };
      }
      code = parsed >>> 0;
    } else if (name === "grpc-message") {
      message = decodeGrpcMessage(value);
    } else if (name === ":status") {
      httpStatus = value;
    } else if (name.endsWith("-bin") && !reservedHeaders.has(name) && !name.startsWith(":")) {
      // Binary metadata must be base64 (grpc-go's decodeMetadataHeader).
      const bad = base64ErrorOffset(value);
      if (bad !== undefined) {
        headerError = `transport: malformed ${name}: illegal base64 data at input byte ${bad}`;
      }
    }
  }
  if (!isGrpc) {
    let errorCode: number = GrpcStatus.Internal;
    let httpStatusError = "";
    if (httpStatus === undefined) {
      httpStatusError = "malformed header: missing HTTP status";
    } else {
      const status = parseGoInt(httpStatus, "Atoi", 64);
      if (typeof status === "string") {
        return {
          error: {
            code: GrpcStatus.Internal,
            details: `transport: malformed http-status: ${status}`,
          },
        };
      }
      if (status >= 100 && status < 200) {
        if (!endStream) return "informational";
        return {
          error: {
            code: GrpcStatus.Internal,
            details:
              `protocol error: informational header with status code ${status} must not have END_STREAM set`,
          },
        };
      }
      httpStatusError = `unexpected HTTP status code received from server: ${status} (${
        statusText(status)
      })`;
      errorCode = httpStatusCodes[status] ?? GrpcStatus.Unknown;
    }
    return {
      error: {
        code: errorCode,
        details: [httpStatusError, contentTypeError].filter((e) => e !== "").join("; "),
      },
    };
  }
  if (headerError !== "") return { error: { code: GrpcStatus.Internal, details: headerError } };
  return { final: { code, details: message }, encoding };
}

/** Headers grpc-go does not treat as metadata (its isReservedHeader), besides pseudo-headers. */
const reservedHeaders = new Set([
  "content-type",
  "user-agent",
  "grpc-message-type",
  "grpc-encoding",
  "grpc-message",
  "grpc-status",
  "grpc-timeout",
  "te",
]);

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * Where Go's base64 decoding of a `-bin` value fails (its CorruptInputError offset), or undefined:
 * grpc-go's decodeBinHeader uses the padded standard encoding when the length is a multiple of 4,
 * the unpadded one otherwise; CR and LF are skipped, trailing bits need not be zero.
 */
export function base64ErrorOffset(v: string): number | undefined {
  const padded = v.length % 4 === 0;
  let si = 0;
  while (si < v.length) {
    let j = 0;
    for (; j < 4; j++) {
      if (si === v.length) {
        if (j === 0) return undefined;
        if (j === 1 || padded) return si - j;
        return undefined;
      }
      const c = v[si++];
      if (base64Alphabet.includes(c)) continue;
      if (c === "\n" || c === "\r") {
        j--;
        continue;
      }
      if (!padded || c !== "=") return si - 1;
      // Padding: "=" may stand only in the last two places of a quantum, and ends the input.
      if (j === 0 || j === 1) return si - 1;
      if (j === 2) {
        while (si < v.length && (v[si] === "\n" || v[si] === "\r")) si++;
        if (si === v.length) return v.length;
        if (v[si] !== "=") return si - 1;
        si++;
      }
      while (si < v.length && (v[si] === "\n" || v[si] === "\r")) si++;
      return si < v.length ? si : undefined;
    }
  }
  return undefined;
}

/**
 * Go's strconv.ParseInt(s, 10, bits) (or Atoi, `fn`): the number, or the error's text. 64-bit
 * values beyond 2^53 lose precision here, which no caller can see (they are out of any range used).
 */
function parseGoInt(s: string, fn: "ParseInt" | "Atoi", bits: 32 | 64): number | string {
  const quoted = goQuote(s);
  if (!/^[+-]?[0-9]+$/.test(s)) return `strconv.${fn}: parsing ${quoted}: invalid syntax`;
  const n = Number(s);
  if (n < -(2 ** (bits - 1)) || n > 2 ** (bits - 1) - 1) {
    return `strconv.${fn}: parsing ${quoted}: value out of range`;
  }
  return n;
}

/**
 * True when grpc-go would close the stream on the header blocks received so far; pass it as a
 * request's `rejectHeaders` so such a stream ends at once, as in grpc-go, not at the deadline.
 */
export function grpcHeadersRejected(response: H2Response): boolean {
  return headerVerdict(response).error !== undefined;
}

/**
 * The response message of a finished unary stream, or the status grpc-go reports instead
 * (its operateHeaders, then csAttempt.recvMsg reading exactly one message and then EOF): header
 * errors first; then the first message (none: the final status, or Internal "cardinality
 * violation" when that is OK); a length above `maxReceiveMessageLength` is ResourceExhausted, a
 * compressed flag without grpc-encoding or an unknown flag Internal; a second message is
 * Internal "cardinality violation"; a non-OK final status wins over a well-formed message.
 */
export function unaryResult(
  response: H2Response,
  options: { maxReceiveMessageLength: number },
): Uint8Array | RpcStatus {
  const max = options.maxReceiveMessageLength;
  const verdict = headerVerdict(response);
  if (verdict.error) return verdict.error;
  if (response.headerListTooLarge) {
    return { code: GrpcStatus.Internal, details: "peer header list size exceeded limit" };
  }
  const final = verdict.final ?? endedWithout(response);
  const data = concat(response.data);
  const first = readMessage(data, 0, { max, encoding: verdict.encoding });
  if (first === "eof") {
    if (final.code !== GrpcStatus.OK) return final;
    return {
      code: GrpcStatus.Internal,
      details: "cardinality violation: received no response message from non-server-streaming RPC",
    };
  }
  if (!(first instanceof Uint8Array)) return first;
  const second = readMessage(data, 5 + first.length, { max, encoding: verdict.encoding });
  if (second === "eof") return final.code === GrpcStatus.OK ? first : final;
  if (!(second instanceof Uint8Array)) return second;
  return {
    code: GrpcStatus.Internal,
    details:
      "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message",
  };
}

/** The status of a stream that ended without END_STREAM: GOAWAY, RST_STREAM, or EOF. */
function endedWithout(response: H2Response): RpcStatus {
  if (response.refusedByGoAway) {
    return {
      code: GrpcStatus.Unavailable,
      details: "the stream is rejected because server is draining the connection",
    };
  }
  if (response.rstCode !== undefined) {
    return {
      code: rstStreamCode(response.rstCode),
      details: `stream terminated by RST_STREAM with error code: ${
        errorCodeName(response.rstCode)
      }`,
    };
  }
  return { code: GrpcStatus.Unavailable, details: "error reading from server: EOF" };
}

/**
 * The message at `off` of the DATA bytes (grpc-go's parser.recvMsg and checkRecvPayload): "eof"
 * when none starts there, its bytes, or the status for a message grpc-go refuses.
 */
function readMessage(
  data: Uint8Array,
  off: number,
  options: { max: number; encoding: string },
): Uint8Array | RpcStatus | "eof" {
  // grpc-go reads a cut-off 5-byte prefix as a clean EOF (its transportReader drops the count
  // of the bytes it did read); only a cut-off message body is "unexpected EOF".
  if (data.length - off < 5) return "eof";
  const flag = data[off];
  const length = new DataView(data.buffer, data.byteOffset + off, 5).getUint32(1);
  if (length > options.max) {
    return {
      code: GrpcStatus.ResourceExhausted,
      details: `grpc: received message larger than max (${length} vs. ${options.max})`,
    };
  }
  if (data.length - off - 5 < length) {
    return { code: GrpcStatus.Internal, details: "unexpected EOF" };
  }
  if (flag === 1) {
    if (options.encoding === "" || options.encoding === "identity") {
      return {
        code: GrpcStatus.Internal,
        details: "grpc: compressed flag set with identity or empty encoding",
      };
    }
    // kubelet registers no decompressor; grpc-go's client says Internal (a server Unimplemented).
    return {
      code: GrpcStatus.Internal,
      details: `grpc: Decompressor is not installed for grpc-encoding ${goQuote(options.encoding)}`,
    };
  }
  if (flag !== 0) {
    return {
      code: GrpcStatus.Internal,
      details: `grpc: received unexpected payload format ${flag}`,
    };
  }
  return data.subarray(off + 5, off + 5 + length);
}

/**
 * The status message of a grpc-message header value (one character per byte, as HPACK decoded
 * it), as grpc-go's decodeGrpcMessage: each `%` followed by two hex digits is that byte, any other
 * `%` stays; the bytes are then read as UTF-8 (where Go prints the bytes as they are, invalid UTF-8
 * shows U+FFFD here).
 *
 * @example
 * ```ts
 * decodeGrpcMessage("caf%C3%A9 100%"); // "café 100%"
 * ```
 */
export function decodeGrpcMessage(message: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    const hex = message.slice(i + 1, i + 3);
    if (c === 0x25 && i + 2 < message.length && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(c & 0xff);
    }
  }
  return new TextDecoder().decode(Uint8Array.from(bytes));
}

/** Percent-encodes a status message for the grpc-message header, as grpc-go's encodeGrpcMessage. */
export function encodeGrpcMessage(message: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(message)) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25
      ? String.fromCharCode(b)
      : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
