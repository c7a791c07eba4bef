/**
 * A CRI v1 `RuntimeService` served by grpc-js on a unix socket in a temporary folder, answering
 * with the handlers a test gives (grpc-js unary handlers by method name), for testing the CRI
 * client without a runtime.
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/** A started fake: `endpoint` is `unix:///...`; `close()` stops it and removes its folder. */
export interface FakeCriServer {
  endpoint: string;
  close(): Promise<void>;
}

/**
 * Serves `handlers` as `runtime.v1.RuntimeService` (from proto/runtime/v1/api.proto).
 *
 * @example
 * ```ts
 * const server = await startFakeCriServer({ Status: (_call, cb) => cb(null, { status: { conditions: [] } }) });
 * const runtime = new RemoteRuntimeService(server.endpoint);
 * ```
 */
export async function startFakeCriServer(
  handlers: grpc.UntypedServiceImplementation,
): Promise<FakeCriServer> {
  const definition = protoLoader.loadSync(
    new URL("../../proto/runtime/v1/api.proto", import.meta.url).pathname,
    { keepCase: false, longs: String, enums: String, defaults: true, arrays: true, objects: true },
  );
  const v1 = (grpc.loadPackageDefinition(definition).runtime as grpc.GrpcObject)
    .v1 as grpc.GrpcObject;
  const service = (v1.RuntimeService as grpc.ServiceClientConstructor).service;
  const server = new grpc.Server();
  server.addService(service, handlers);
  const dir = await Deno.makeTempDir();
  const path = `${dir}/cri.sock`;
  await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `unix://${path}`,
      grpc.ServerCredentials.createInsecure(),
      (err, port) => err ? reject(err) : resolve(port),
    )
  );
  return {
    endpoint: `unix://${path}`,
    close: async () => {
      server.forceShutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
