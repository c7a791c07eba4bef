/**
 * Our HTTP/2 client on `Deno.connect` and the gRPC unary call on top of it, shared by the gRPC
 * probe (TCP, one connection per probe) and the CRI client (a unix socket, one long-lived
 * connection per service with concurrent streams).
 * @module
 */
export {
  H2ClientConn,
  H2ConnectionClosedError,
  type H2RequestOptions,
  type H2Response,
} from "./client_conn.ts";
export {
  base64ErrorOffset,
  decodeGrpcMessage,
  encodeGrpcMessage,
  encodeGrpcTimeout,
  grpcFrame,
  grpcHeadersRejected,
  type RpcStatus,
  unaryRequestHeaders,
  unaryResult,
} from "./grpc.ts";
export { H2ProtocolError } from "./frame.ts";
