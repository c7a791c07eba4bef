/**
 * The grpc.health.v1 package loaded with grpc-js, for gRPC health servers (test targets, fixture
 * apps). Apart from grpc.ts so that the probe, which encodes its two messages by hand, does not load
 * grpc-js and the proto loader (≈ 12 MiB resident in a Deno process, docs/benchmarks/memory.md).
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fileURLToPath } from "node:url";

/**
 * The loaded grpc.health.v1 package: the `Health` client constructor and its service definition
 * (servers pass `health.service` to `addService`). For servers and tests: the probe itself encodes
 * its messages by hand and never loads it.
 *
 * @example
 * ```ts
 * import * as grpc from "@grpc/grpc-js";
 *
 * const server = new grpc.Server();
 * server.addService(healthPackage().service, {
 *   check: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { status: "SERVING" }),
 * });
 * ```
 */
export function healthPackage(): grpc.ServiceClientConstructor {
  if (!loadedHealth) {
    const path = fileURLToPath(
      new URL("../../../proto/grpc/health/v1/health.proto", import.meta.url),
    );
    // Enums as names and defaults filled in, so an omitted status reads "UNKNOWN" as in Go.
    const definition = protoLoader.loadSync(path, { enums: String, defaults: true });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as {
      grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
    };
    loadedHealth = loaded.grpc.health.v1.Health;
  }
  return loadedHealth;
}

let loadedHealth: grpc.ServiceClientConstructor | undefined;
