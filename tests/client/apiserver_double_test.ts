/**
 * The client against the strict API-server double (tests/testing/apiserver): a node kubeconfig over
 * HTTPS with a client certificate, typed verbs and errors as the node authorizer answers them,
 * the pod status patch on the wire, and the reflector through a compaction (410 Expired → exactly
 * one re-LIST, no pod lost or added twice).
 * @module
 */
import assert from "node:assert/strict";
import { loadKubeconfig } from "../../src/client/kubeconfig.ts";
import { newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { isAlreadyExists, isForbidden, isInvalid, isNotFound } from "../../src/client/errors.ts";
import { newListWatchFromClient } from "../../src/client/cache/listwatch.ts";
import { Reflector } from "../../src/client/cache/reflector.ts";
import { UndeltaStore } from "../../src/client/cache/undelta_store.ts";
import { patchPodStatus } from "../../src/util/pod/pod.ts";
import { AlwaysAcceptRateLimiter } from "../../src/util/flowcontrol/throttle.ts";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import {
  adminUser,
  type JsonObject,
  kubeconfigYaml,
  makeTestPki,
  nodeUser,
  opensslAvailable,
  startApiServer,
} from "../testing/apiserver/mod.ts";

const nodeName = "node-1";
const unlimited = { rateLimiter: new AlwaysAcceptRateLimiter() };

const boundPod = (name: string, node = nodeName): JsonObject => ({
  metadata: { name, namespace: "default" },
  spec: { nodeName: node, containers: [{ name: "app", image: "busybox" }] },
});

const hasOpenssl = await opensslAvailable();
if (!hasOpenssl) console.log("apiserver_double_test: openssl not found; the HTTPS case is skipped");

Deno.test({
  name: "client over HTTPS with the node's client certificate from a kubeconfig",
  ignore: !hasOpenssl,
  async fn() {
    const pki = await makeTestPki({
      node: { cn: `system:node:${nodeName}`, groups: ["system:nodes"] },
    });
    const server = await startApiServer({
      tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
    });
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(
        `${dir}/kubeconfig`,
        kubeconfigYaml({ server: server.url, caCert: pki.ca.cert, client: pki.clients.node }),
      );
      const { config } = await loadKubeconfig(`${dir}/kubeconfig`);
      const client = newForConfig({ ...config, ...unlimited });
      try {
        const node = await client.coreV1.nodes().create({ metadata: { name: nodeName } });
        assert.equal(node.metadata.name, nodeName);
        assert.equal(
          isAlreadyExists(await client.coreV1.nodes().create(node).catch((e) => e)),
          true,
        );
        // The node authorizer refuses a cluster-wide pod list without the node's field selector.
        const err = await client.coreV1.pods().list().catch((e) => e);
        assert.equal(isForbidden(err), true, String(err));
        const pods = await client.coreV1.pods().list({
          fieldSelector: `spec.nodeName=${nodeName}`,
        });
        assert.deepStrictEqual(pods.items, []);
        assert.ok(server.double.requests.every((r) => r.user === `system:node:${nodeName}`));
      } finally {
        client.close();
      }
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("pod status patch with the UID precondition, as the double sees it", async () => {
  const server = await startApiServer({ tokens: { node: nodeUser(nodeName), admin: adminUser } });
  const client = newForConfig({ host: server.url, bearerToken: "node", ...unlimited });
  try {
    const created = server.double.create("pods", boundPod("web")) as unknown as Pod;
    const uid = created.metadata.uid!;
    const result = await patchPodStatus(client, {
      namespace: "default",
      name: "web",
      uid,
      oldPodStatus: created.status ?? {},
      newPodStatus: {
        ...created.status,
        phase: "Running",
        conditions: [{ type: "Ready", status: "True" }],
      },
    });
    assert.equal(result.unchanged, false);
    assert.equal(result.pod?.status?.phase, "Running");
    const [sent] = server.double.requestsTo("PATCH", "/api/v1/namespaces/default/pods/web/status");
    assert.equal(sent.contentType, "application/strategic-merge-patch+json");
    assert.equal(sent.body, result.patchBytes);
    assert.ok(sent.body.startsWith(`{"metadata":{"uid":"${uid}"},"status":{`), sent.body);

    // A pod recreated under the same name: the API server refuses the stale UID as an immutable
    // field (422 Invalid; kube-apiserver 1.36 answers so, as the double does), not a 409.
    server.double.delete("pods", { name: "web" }, { gracePeriodSeconds: 0 });
    server.double.create("pods", boundPod("web"));
    const err = await patchPodStatus(client, {
      namespace: "default",
      name: "web",
      uid,
      oldPodStatus: {},
      newPodStatus: { phase: "Running" },
    }).catch((e) => e);
    assert.equal(isInvalid(err), true, String(err));
    assert.match(err.message, /metadata\.uid: Invalid value: .*: field is immutable/);
    // The node authorizer answers 403 for a pod it cannot relate to the node, even a missing one.
    assert.equal(
      isForbidden(await client.coreV1.pods("default").get("nope").catch((e) => e)),
      true,
    );
    assert.equal(isNotFound(await client.coreV1.nodes().get(nodeName).catch((e) => e)), true);
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("reflector through a compaction: one re-LIST, no pod lost or duplicated", async () => {
  const server = await startApiServer({ tokens: { node: nodeUser(nodeName) } });
  const client = newForConfig({ host: server.url, bearerToken: "node", ...unlimited });
  const sets: string[][] = [];
  let notify: (() => void) | undefined;
  const store = new UndeltaStore<Pod>((pods) => {
    sets.push(pods.map((p) => p.metadata.name!).sort());
    notify?.();
  });
  const until = async (cond: () => boolean) => {
    while (!cond()) await new Promise<void>((r) => notify = r);
  };
  const reflector = new Reflector(
    newListWatchFromClient(client.coreV1.pods(""), { fieldSelector: `spec.nodeName=${nodeName}` }),
    store,
    { name: "pods", backoff: { initialMs: 10 } },
  );
  const stop = new AbortController();
  server.double.create("pods", boundPod("a"));
  server.double.create("pods", boundPod("elsewhere", "node-2"));
  const done = reflector.run(stop.signal);
  try {
    await until(() => sets.length >= 1);
    assert.deepStrictEqual(sets.at(-1), ["a"]);
    server.double.create("pods", boundPod("b"));
    await until(() => sets.at(-1)?.includes("b") ?? false);

    // End the watch, then (in the same tick, before the reflector can re-watch) create a pod and
    // compact past it: the re-watch from the last version gets 410 and the re-LIST brings it.
    server.double.closeWatches();
    server.double.create("pods", boundPod("c-while-away"));
    server.double.compact();
    await until(() => sets.at(-1)?.includes("c-while-away") ?? false);
    server.double.create("pods", boundPod("d"));
    await until(() => sets.at(-1)?.includes("d") ?? false);

    const lists = server.double.requestsTo("GET", "/api/v1/pods")
      .filter((r) => !r.query.includes("watch="));
    assert.equal(lists.length, 2, "the initial LIST and one re-LIST after 410");
    assert.deepStrictEqual(sets.at(-1), ["a", "b", "c-while-away", "d"]);
    for (const set of sets) assert.equal(new Set(set).size, set.length, "no duplicates");
    assert.ok(!sets.flat().includes("elsewhere"));
  } finally {
    stop.abort();
    await done;
    client.close();
    await server.close();
  }
});
