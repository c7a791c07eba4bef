/**
 * gRPC unary calls over our HTTP/2 client (client_conn.ts): the request headers and message
 * framing, the `grpc-timeout` header, and turning a finished stream into the one response message
 * or the status grpc-go would report (trailers, trailers-only responses, HTTP statuses without
 * grpc-status, RST_STREAM, GOAWAY, EOF). Shared by the gRPC probe and the CRI client.
 * @module
 */
import { STATUS_CODES } from "node:http";
import { goQuote } from "../go_format.ts";
import { GrpcStatus } from "../grpc_codes.ts";
import type { H2Response } from "./client_conn.ts";
import { concat, errorCodeName } from "./frame.ts";

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

/** Go's `encodeTimeout` for the `grpc-timeout` header: at most 8 digits, the finest unit that fits. */
export function encodeGrpcTimeout(ms: number): string {
  if (ms <= 0) return "0n";
  const units: [string, number][] = [
    ["n", 1e-6],
    ["u", 1e-3],
    ["m", 1],
    ["S", 1e3],
    ["M", 60e3],
    ["H", 3600e3],
  ];
  for (const [unit, unitMs] of units) {
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

// RST_STREAM error code → gRPC code (grpc-go's http2ErrConvTab).
function rstStreamCode(http2Code: number): number {
  switch (http2Code) {
    case 0x7: // REFUSED_STREAM
      return GrpcStatus.Unavailable;
    case 0x8: // CANCEL
      return GrpcStatus.Canceled;
    case 0xb: // ENHANCE_YOUR_CALM
      return GrpcStatus.ResourceExhausted;
    case 0xc: // INADEQUATE_SECURITY
      return GrpcStatus.PermissionDenied;
    default:
      return GrpcStatus.Internal;
  }
}

/**
 * The response message of a finished unary stream, or the status grpc-go reports instead. A
 * message above `maxReceiveMessageLength` is ResourceExhausted, as in grpc-go.
 */
export function unaryResult(
  response: H2Response,
  options: { maxReceiveMessageLength: number },
): Uint8Array | RpcStatus {
  const { httpStatus, headers, rstCode } = response;
  const max = options.maxReceiveMessageLength;
  if (response.received > max + 5) {
    return {
      code: GrpcStatus.ResourceExhausted,
      details: `grpc: received message larger than max (${response.received - 5} vs. ${max})`,
    };
  }
  if (response.headerListTooLarge) {
    return { code: GrpcStatus.Internal, details: "peer header list size exceeded limit" };
  }
  const headerStatus = headers.get("grpc-status");
  if (headerStatus === undefined) {
    if (response.refusedByGoAway) {
      return {
        code: GrpcStatus.Unavailable,
        details: "the stream is rejected because server is draining the connection",
      };
    }
    if (httpStatus !== 0 && httpStatus !== 200) {
      return {
        code: httpStatusCodes[httpStatus] ?? GrpcStatus.Unknown,
        details: `unexpected HTTP status code received from server: ${httpStatus} (${
          STATUS_CODES[httpStatus] ?? ""
        })`,
      };
    }
    const contentType = headers.get("content-type") ?? "";
    if (httpStatus === 200 && !/^application\/grpc([+;]|$)/.test(contentType)) {
      return {
        code: GrpcStatus.Unknown,
        details: `transport: received unexpected content-type ${goQuote(contentType)}`,
      };
    }
    if (rstCode !== undefined && rstCode !== 0) {
      return {
        code: rstStreamCode(rstCode),
        details: `stream terminated by RST_STREAM with error code: ${errorCodeName(rstCode)}`,
      };
    }
    return { code: GrpcStatus.Unavailable, details: "error reading from server: EOF" };
  }
  const code = Number(headerStatus);
  if (!Number.isInteger(code)) {
    return {
      code: GrpcStatus.Internal,
      details: `transport: malformed grpc-status: ${goQuote(headerStatus)}`,
    };
  }
  if (code !== GrpcStatus.OK) {
    return { code, details: decodeGrpcMessage(headers.get("grpc-message") ?? "") };
  }
  const data = concat(response.data);
  if (data.length < 5) return { code: GrpcStatus.Internal, details: "unexpected EOF" };
  if (data[0] !== 0) {
    return {
      code: GrpcStatus.Internal,
      details: "grpc: compressed flag set with identity or empty encoding",
    };
  }
  const length = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1);
  if (data.length < 5 + length) return { code: GrpcStatus.Internal, details: "unexpected EOF" };
  return data.subarray(5, 5 + length);
}

/** grpc-message is percent-encoded by the server (gRPC's HTTP/2 protocol spec). */
export function decodeGrpcMessage(message: string): string {
  if (!message.includes("%")) return message;
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
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
