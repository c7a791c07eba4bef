/** `RemoteRuntimeService.status()` against a fake CRI server: the conditions behind node Ready. */
import assert from "node:assert/strict";
import { RemoteRuntimeService } from "../../src/cri_client/mod.ts";
import { startFakeCriServer } from "../testing/fake_cri_server.ts";

Deno.test({
  name: "TestRemoteRuntimeStatus",
  fn: async () => {
    const requests: unknown[] = [];
    const server = await startFakeCriServer({
      Status: (request) => {
        requests.push(request);
        return {
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
        };
      },
    });
    const runtime = new RemoteRuntimeService(server.endpoint, { connectTimeoutMs: 2_000 });
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
      await server.close();
    }
  },
});
