/** `RemoteRuntimeService.status()` against a fake CRI server: the conditions behind node Ready. */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { RemoteRuntimeService } from "../../src/cri_client/mod.ts";

Deno.test({
  name: "TestRemoteRuntimeStatus",
  // grpc-js keeps reconnect timers and sockets of its own; the test closes its client.
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const definition = protoLoader.loadSync(
      new URL("../../proto/runtime/v1/api.proto", import.meta.url).pathname,
      {
        keepCase: false,
        longs: String,
        enums: String,
        defaults: true,
        arrays: true,
        objects: true,
      },
    );
    const v1 = (grpc.loadPackageDefinition(definition).runtime as grpc.GrpcObject)
      .v1 as grpc.GrpcObject;
    const service = (v1.RuntimeService as grpc.ServiceClientConstructor).service;
    const requests: unknown[] = [];
    const server = new grpc.Server();
    server.addService(service, {
      Status: (
        call: { request: unknown },
        callback: (err: null, response: unknown) => void,
      ) => {
        requests.push(call.request);
        callback(null, {
          status: {
            conditions: [
              { type: "RuntimeReady", status: true, reason: "", message: "" },
              {
                type: "NetworkReady",
                status: false,
                reason: "NetworkPluginNotReady",
                message: "Network plugin returns error: cni plugin not initialized",
              },
            ],
          },
          info: {},
        });
      },
    });
    const dir = await Deno.makeTempDir();
    const path = `${dir}/cri.sock`;
    await new Promise<number>((resolve, reject) =>
      server.bindAsync(
        `unix://${path}`,
        grpc.ServerCredentials.createInsecure(),
        (err, port) => err ? reject(err) : resolve(port),
      )
    );
    const runtime = new RemoteRuntimeService(`unix://${path}`, { connectTimeoutMs: 2_000 });
    try {
      const status = await runtime.status();
      assert.deepEqual(status.status.conditions, [
        { type: "RuntimeReady", status: true, reason: "", message: "" },
        {
          type: "NetworkReady",
          status: false,
          reason: "NetworkPluginNotReady",
          message: "Network plugin returns error: cni plugin not initialized",
        },
      ]);
      assert.deepEqual(requests, [{ verbose: false }]);
    } finally {
      runtime.close();
      server.forceShutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
