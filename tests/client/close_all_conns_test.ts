/**
 * `closeAllConns()` (kubelet's reaction to repeated heartbeat failures): requests reuse one TLS
 * connection until it is called, then the next request dials a new one; `close()` still ends the
 * client for good.
 */
import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import https from "node:https";
import { newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { makeTestPki, opensslAvailable } from "../testing/apiserver/mod.ts";

const haveOpenssl = await opensslAvailable();
if (!haveOpenssl) console.log("close_all_conns_test: skipped: openssl is needed for TLS");

Deno.test({
  name: "TestCloseAllConns",
  ignore: !haveOpenssl,
  fn: async () => {
    const pki = await makeTestPki({});
    let connections = 0;
    const server = https.createServer(
      { cert: pki.server.cert, key: pki.server.key },
      (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ kind: "Node", apiVersion: "v1", metadata: { name: "n1" } }));
      },
    );
    server.on("secureConnection", () => connections++);
    const port = await new Promise<number>((resolve) =>
      server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port))
    );
    const client = newForConfig({
      host: `https://127.0.0.1:${port}`,
      caData: pki.ca.cert,
      qps: -1,
    });
    try {
      await client.coreV1.nodes().get("n1");
      await client.coreV1.nodes().get("n1");
      assertEquals(connections, 1, "requests share one connection");
      client.closeAllConns();
      assertEquals((await client.coreV1.nodes().get("n1")).metadata.name, "n1");
      assertEquals(connections, 2, "a new connection after closeAllConns");
      client.close();
      await rejects(client.coreV1.nodes().get("n1"), /closed/);
    } finally {
      client.close();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    }
  },
});
