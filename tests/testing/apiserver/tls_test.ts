// The double over HTTPS: the client certificate's CN/O become the user, as in kube-apiserver's x509
// authenticator, so a kubeconfig with client-certificate-data drives the node authorizer.
import { deepStrictEqual as assertEquals, match as assertMatch } from "node:assert/strict";
import { kubeconfigYaml, makeTestPki, opensslAvailable, startApiServer } from "./mod.ts";

const haveOpenssl = await opensslAvailable();
if (!haveOpenssl) {
  console.log("tls_test: skipped: openssl not found (needed to make test certificates)");
}

Deno.test({
  name: "HTTPS: client certificate identity reaches the node authorizer; no certificate is 401",
  ignore: !haveOpenssl,
  fn: async () => {
    const pki = await makeTestPki({
      node: { cn: "system:node:node-a", groups: ["system:nodes"] },
    });
    const server = await startApiServer({
      tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
    });
    const nodeClient = Deno.createHttpClient({
      caCerts: [pki.ca.cert],
      cert: pki.clients.node.cert,
      key: pki.clients.node.key,
    });
    const anonymous = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
    try {
      assertMatch(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const denied = await fetch(`${server.url}/api/v1/pods`, { client: nodeClient });
      assertEquals(denied.status, 403);
      assertMatch((await denied.json()).message, /User "system:node:node-a" cannot list/);
      server.double.create("pods", {
        metadata: { name: "web", namespace: "default" },
        spec: { nodeName: "node-a", containers: [{ name: "c", image: "busybox" }] },
      });
      const rv = server.double.storage.resourceVersion;
      const watch = await fetch(
        `${server.url}/api/v1/pods?watch=true&resourceVersion=${rv}&fieldSelector=spec.nodeName%3Dnode-a`,
        { client: nodeClient },
      );
      assertEquals(watch.status, 200);
      const reader = watch.body!.pipeThrough(new TextDecoderStream()).getReader();
      const pod = server.double.get("pods", "default", "web")!;
      pod.status = { phase: "Running" };
      server.double.update("pods", pod, { status: true });
      const { value } = await reader.read();
      assertEquals(JSON.parse(value!.split("\n")[0]).type, "MODIFIED");
      await reader.cancel();
      const none = await fetch(`${server.url}/api/v1/nodes/node-a`, { client: anonymous });
      assertEquals(none.status, 401);
      await none.body?.cancel();
      assertEquals(server.double.requests.map((r) => r.user), [
        "system:node:node-a",
        "system:node:node-a",
        "",
      ]);
    } finally {
      nodeClient.close();
      anonymous.close();
      await server.close();
    }
  },
});

Deno.test("kubeconfigYaml: inline certificate data, as kind writes it", () => {
  const yaml = kubeconfigYaml({
    server: "https://127.0.0.1:6443",
    caCert: "CA",
    client: { cert: "CERT", key: "KEY" },
    user: "system:node:node-a",
  });
  assertMatch(yaml, /server: https:\/\/127\.0\.0\.1:6443/);
  assertMatch(yaml, new RegExp(`certificate-authority-data: ${btoa("CA")}`));
  assertMatch(yaml, new RegExp(`client-certificate-data: ${btoa("CERT")}`));
  assertMatch(yaml, new RegExp(`client-key-data: ${btoa("KEY")}`));
  assertMatch(yaml, /current-context: probelet-test/);
});
