/**
 * A CRI v1 `RuntimeService` on a unix socket in a temporary folder, answering with the handlers a
 * test gives (by method name, taking and returning proto-loader objects), for testing the CRI client
 * without a runtime. Served by the hand-written HTTP/2 server in h2_grpc_server.ts (not grpc-js,
 * whose `node:net` unix sockets Deno 2.9.3 closes twice); messages go through @grpc/proto-loader.
 * @module
 */
import * as protoLoader from "@grpc/proto-loader";
import {
  type H2GrpcServer,
  type H2GrpcServerOptions,
  type Handler,
  type ServerCall,
  startH2GrpcServer,
} from "./h2_grpc_server.ts";

/** Thrown by a handler to answer with a gRPC status instead of a message. */
export class RpcError extends Error {
  constructor(readonly code: number, readonly details: string, readonly trailersOnly = true) {
    super(details);
  }
}

/** A CRI handler: the decoded request in, the response object out (or an RpcError thrown). */
export type CriHandler = (request: unknown, call: ServerCall) => unknown | Promise<unknown>;

/** A started fake: the underlying server's endpoint, counters and controls. */
export type FakeCriServer = H2GrpcServer;

interface MethodDefinition {
  path: string;
  requestDeserialize(bytes: Uint8Array): unknown;
  responseSerialize(value: unknown): Uint8Array;
}

let methods: Record<string, MethodDefinition> | undefined;

/**
 * Serves `handlers` as `runtime.v1.RuntimeService` (from proto/runtime/v1/api.proto).
 *
 * @example
 * ```ts
 * const server = await startFakeCriServer({ Status: () => ({ status: { conditions: [] } }) });
 * const runtime = new RemoteRuntimeService(server.endpoint);
 * ```
 */
export function startFakeCriServer(
  handlers: Record<string, CriHandler>,
  options: H2GrpcServerOptions = {},
): Promise<FakeCriServer> {
  methods ??= protoLoader.loadSync(
    new URL("../../proto/runtime/v1/api.proto", import.meta.url).pathname,
    { keepCase: false, longs: String, enums: String, defaults: true, arrays: true, objects: true },
  )["runtime.v1.RuntimeService"] as unknown as Record<string, MethodDefinition>;
  const routes: Record<string, Handler> = {};
  for (const [name, handler] of Object.entries(handlers)) {
    const definition = methods[name];
    if (!definition) throw new Error(`RuntimeService has no method ${name}`);
    routes[definition.path] = async (call) => {
      try {
        const response = await handler(definition.requestDeserialize(call.message), call);
        if (response === undefined) return undefined;
        return { message: definition.responseSerialize(response) };
      } catch (err) {
        if (err instanceof RpcError) {
          return { code: err.code, details: err.details, trailersOnly: err.trailersOnly };
        }
        return { code: 2, details: String(err) };
      }
    };
  }
  return startH2GrpcServer(routes, options);
}
