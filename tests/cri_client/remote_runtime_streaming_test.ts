/**
 * `RemoteRuntimeService.exec()`, `attach()` and `portForward()` against a fake CRI server: the
 * request as the runtime receives it, the URL back, cri-client's `URL is not set`, and the
 * runtime's own error passed on (its gRPC code is what kubelet's server maps to a status).
 * cri-client has no Go test for these calls; the checks are those of its execV1, attachV1 and
 * portForwardV1.
 */
import assert from "node:assert/strict";
import { CriError, RemoteRuntimeService } from "../../src/cri_client/mod.ts";
import { RpcError, startFakeCriServer } from "../testing/fake_cri_server.ts";

Deno.test("TestRemoteRuntimeStreaming", async (t) => {
  const requests: Record<string, unknown[]> = { Exec: [], Attach: [], PortForward: [] };
  let url = "http://127.0.0.1:4000/exec/tok";
  const server = await startFakeCriServer({
    Exec: (request) => {
      requests.Exec.push(request);
      if ((request as { containerId: string }).containerId === "gone") {
        throw new RpcError(5, `an error occurred when try to find container "gone": not found`);
      }
      return { url };
    },
    Attach: (request) => {
      requests.Attach.push(request);
      return { url };
    },
    PortForward: (request) => {
      requests.PortForward.push(request);
      return { url };
    },
  });
  const runtime = new RemoteRuntimeService(server.endpoint, { connectTimeoutMs: 2_000 });
  try {
    await t.step("Exec: the request as sent, the URL back", async () => {
      const res = await runtime.exec({
        containerId: "c1",
        cmd: ["sh", "-c", "echo hi"],
        tty: true,
        stdin: true,
        stdout: true,
        stderr: false,
      });
      assert.deepEqual(res, { url: "http://127.0.0.1:4000/exec/tok" });
      assert.deepEqual(requests.Exec, [{
        containerId: "c1",
        cmd: ["sh", "-c", "echo hi"],
        tty: true,
        stdin: true,
        stdout: true,
        stderr: false,
      }]);
    });
    await t.step("Attach and PortForward", async () => {
      await runtime.attach({
        containerId: "c1",
        stdin: false,
        tty: false,
        stdout: true,
        stderr: true,
      });
      assert.deepEqual(requests.Attach, [{
        containerId: "c1",
        stdin: false,
        tty: false,
        stdout: true,
        stderr: true,
      }]);
      await runtime.portForward({ podSandboxId: "s1", port: [8080, 9090] });
      assert.deepEqual(requests.PortForward, [{ podSandboxId: "s1", port: [8080, 9090] }]);
    });
    await t.step("an empty URL: URL is not set", async () => {
      url = "";
      for (
        const call of [
          () =>
            runtime.exec({
              containerId: "c1",
              cmd: ["true"],
              tty: false,
              stdin: false,
              stdout: true,
              stderr: false,
            }),
          () =>
            runtime.attach({
              containerId: "c1",
              stdin: false,
              tty: false,
              stdout: true,
              stderr: false,
            }),
          () => runtime.portForward({ podSandboxId: "s1", port: [] }),
        ]
      ) {
        await assert.rejects(call, { message: "URL is not set" });
      }
    });
    await t.step("the runtime's error, with its code", async () => {
      const err = await runtime.exec({
        containerId: "gone",
        cmd: ["true"],
        tty: false,
        stdin: false,
        stdout: true,
        stderr: false,
      }).catch((e) => e);
      assert.ok(err instanceof CriError);
      assert.equal(err.code, 5);
      assert.equal(
        err.message,
        `rpc error: code = NotFound desc = an error occurred when try to find container "gone": not found`,
      );
    });
  } finally {
    runtime.close();
    await server.close();
  }
});
