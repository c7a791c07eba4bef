/**
 * The client on both API-server targets (tests/testing/apiserver_targets.ts): the double over HTTPS,
 * and the real kube-apiserver that `bash scripts/kube-apiserver.sh up` starts (CI does; elsewhere the
 * real case is skipped with the reason printed). Everything goes through the node's kubeconfig
 * (client certificate `system:node:<node>`, HTTP/2 on the real server), and no request of the node
 * may be refused. What only the real server proves: its TLS/HTTP/2 stack with Deno's fetch, how it
 * ends a watch at `timeoutSeconds` (the stream end must reach the iteration), its answers to the
 * status patch and event PATCH, and the 422 for a stale UID.
 * @module
 */
import assert from "node:assert/strict";
import { loadKubeconfig } from "../../src/client/kubeconfig.ts";
import { type HTTPClientset, newForConfig } from "../../src/client/kubernetes/clientset.ts";
import { StreamWatcher } from "../../src/client/rest.ts";
import { isAlreadyExists, isConflict, isInvalid, isNotFound } from "../../src/client/errors.ts";
import { newListWatchFromClient } from "../../src/client/cache/listwatch.ts";
import { Reflector } from "../../src/client/cache/reflector.ts";
import { UndeltaStore } from "../../src/client/cache/undelta_store.ts";
import { EventBroadcaster, EventSinkImpl } from "../../src/client/record/event.ts";
import { patchPodStatus } from "../../src/util/pod/pod.ts";
import { createTwoWayMergePatch } from "../../src/util/strategicpatch/patch.ts";
import { nodeSchema } from "../../src/util/strategicpatch/schema.ts";
import { AlwaysAcceptRateLimiter } from "../../src/util/flowcontrol/throttle.ts";
import type { Event, Node, Pod } from "../../src/api/core/v1/mod.ts";
import type { Lease } from "../../src/api/coordination/v1/mod.ts";
import {
  type ApiTarget,
  opensslAvailable,
  realKubeApiServer,
  startDoubleTarget,
} from "../testing/apiserver_targets.ts";

async function clientFor(kubeconfig: string): Promise<HTTPClientset> {
  const { config } = await loadKubeconfig(kubeconfig);
  return newForConfig({ ...config, rateLimiter: new AlwaysAcceptRateLimiter() });
}

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

/** The steps, the same on both targets. */
async function clientScenario(target: ApiTarget, t: Deno.TestContext): Promise<void> {
  const node = await clientFor(target.nodeKubeconfig);
  const admin = await clientFor(target.adminKubeconfig);
  const nodeName = target.nodeName;
  const suffix = crypto.randomUUID().slice(0, 8);
  try {
    await t.step("the Node: get or create, then a status patch of a condition", async () => {
      let current: Node;
      try {
        current = await node.coreV1.nodes().create({ metadata: { name: nodeName } });
      } catch (err) {
        assert.equal(isAlreadyExists(err), true, String(err));
        current = await node.coreV1.nodes().get(nodeName);
      }
      const type = `ProbeletClientTest${suffix}`;
      const modified: Node = structuredClone(current);
      modified.status ??= {};
      modified.status.conditions = [
        ...(current.status?.conditions ?? []),
        { type, status: "True", reason: "Testing", message: "api-client test" },
      ];
      const patch = createTwoWayMergePatch(current, modified, nodeSchema);
      const patched = await node.coreV1.nodes().patchStatus(
        nodeName,
        "application/strategic-merge-patch+json",
        patch,
      );
      assert.ok(patched.status?.conditions?.some((c) => c.type === type), patch);
      // And away again with $patch: delete.
      const removed = await node.coreV1.nodes().patchStatus(
        nodeName,
        "application/strategic-merge-patch+json",
        JSON.stringify({ status: { conditions: [{ type, $patch: "delete" }] } }),
      );
      assert.ok(!removed.status?.conditions?.some((c) => c.type === type));
    });

    await t.step("the Lease: get or create, PUT, and a stale PUT is 409 Conflict", async () => {
      const leases = node.coordinationV1.leases("kube-node-lease");
      let lease: Lease;
      try {
        lease = await leases.get(nodeName);
      } catch (err) {
        assert.equal(isNotFound(err), true, String(err));
        lease = await leases.create({
          metadata: { name: nodeName, namespace: "kube-node-lease" },
          spec: { holderIdentity: nodeName, leaseDurationSeconds: 40 },
        });
      }
      const renewTime = new Date().toISOString().replace(/Z$/, "000Z");
      const renewed = await leases.update({ ...lease, spec: { ...lease.spec, renewTime } });
      assert.equal(renewed.spec?.renewTime, renewTime, "MicroTime comes back as sent");
      const stale = await leases.update({ ...lease, spec: { ...lease.spec, renewTime } })
        .catch((e) => e);
      assert.equal(isConflict(stale), true, String(stale));
    });

    await t.step(
      "pods: the reflector sees a bound pod come and go; status patch; stale UID is 422",
      async () => {
        const name = `client-test-${suffix}`;
        const seen: string[][] = [];
        let changed = deferred();
        const store = new UndeltaStore<Pod>((pods) => {
          seen.push(pods.map((p) => p.metadata.name!));
          changed.resolve();
        });
        const reflector = new Reflector(
          newListWatchFromClient(node.coreV1.pods(""), {
            fieldSelector: `spec.nodeName=${nodeName}`,
          }),
          store,
          { name: "pods" },
        );
        const stop = new AbortController();
        const done = reflector.run(stop.signal);
        try {
          while (!reflector.hasSynced()) {
            await changed.promise;
            changed = deferred();
          }
          if (target.kind === "kube-apiserver") {
            // No controller-manager runs there to create the namespace's default ServiceAccount,
            // which pod admission looks up (201 or 409 AlreadyExists are both fine).
            const sa = await target.admin("POST", "/api/v1/namespaces/default/serviceaccounts", {
              body: { metadata: { name: "default" } },
            });
            assert.ok(sa.status === 201 || sa.status === 409, JSON.stringify(sa.body));
          }
          const created = await admin.coreV1.pods("default").create({
            metadata: { name, namespace: "default" },
            spec: {
              nodeName,
              containers: [{ name: "app", image: "busybox" }],
              tolerations: [{ key: "probelet.io/agent", operator: "Exists" }],
            },
          });
          while (!seen.at(-1)?.includes(name)) {
            await changed.promise;
            changed = deferred();
          }
          const result = await patchPodStatus(node, {
            namespace: "default",
            name,
            uid: created.metadata.uid!,
            oldPodStatus: created.status ?? {},
            newPodStatus: {
              ...created.status,
              phase: "Running",
              conditions: [
                ...(created.status?.conditions ?? []),
                { type: "Ready", status: "True", lastProbeTime: null },
              ],
            },
          });
          assert.equal(result.pod?.status?.phase, "Running");
          const stale = await patchPodStatus(node, {
            namespace: "default",
            name,
            uid: "00000000-0000-0000-0000-000000000000",
            oldPodStatus: {},
            newPodStatus: { phase: "Failed" },
          }).catch((e) => e);
          assert.equal(isInvalid(stale), true, String(stale));
          assert.match(stale.message, /metadata\.uid: Invalid value: .*field is immutable/);
          await admin.coreV1.pods("default").delete(name, { gracePeriodSeconds: 0 });
          while (seen.at(-1)?.includes(name)) {
            await changed.promise;
            changed = deferred();
          }
        } finally {
          stop.abort();
          await done;
        }
      },
    );

    await t.step(
      "a watch ends by itself at timeoutSeconds and the end reaches the iteration",
      async () => {
        const list = await node.coreV1.pods("").list({
          fieldSelector: `spec.nodeName=${nodeName}`,
        });
        const start = Date.now();
        const w = await node.coreV1.pods("").watch({
          fieldSelector: `spec.nodeName=${nodeName}`,
          resourceVersion: list.metadata.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: 2,
        });
        const types: string[] = [];
        for await (const e of w) types.push(e.type);
        const elapsed = Date.now() - start;
        assert.ok(elapsed >= 1500 && elapsed < 10_000, `ended after ${elapsed} ms`);
        assert.equal((w as StreamWatcher<Pod>).endReason, "server-closed");
        assert.ok(types.every((t) => t === "BOOKMARK"), types.join(","));
      },
    );

    await t.step("events: POST, then a PATCH that raises the count", async () => {
      const broadcaster = new EventBroadcaster();
      broadcaster.startRecordingToSink(new EventSinkImpl(node));
      const recorder = broadcaster.newRecorder({ component: "kubelet", host: nodeName });
      const ref = { kind: "Node", name: nodeName, uid: nodeName, namespace: "" };
      const options = {
        type: "Normal" as const,
        reason: "ProbeletClientTest",
        message: `client test ${suffix}`,
      };
      try {
        recorder.event(ref, options);
        await broadcaster.flush();
        recorder.event(ref, options);
        await broadcaster.flush();
        assert.deepStrictEqual(broadcaster.stats, {
          dropped: 0,
          written: 1,
          patched: 1,
          failed: 0,
          skipped: 0,
        });
        const events = await admin.coreV1.events("default").list();
        const mine = events.items.filter((e: Event) => e.message === options.message);
        assert.deepStrictEqual(mine.map((e) => [e.count, e.reportingComponent, e.source?.host]), [
          [2, "kubelet", nodeName],
        ]);
      } finally {
        await broadcaster.shutdown();
      }
    });

    await t.step("no request of the node was refused", async () => {
      assert.deepStrictEqual(await target.nodeRefusals(), []);
    });
  } finally {
    // Leave no Node or lease behind for the next test on the same server.
    await node.coordinationV1.leases("kube-node-lease").delete(nodeName).catch(() => {});
    await admin.coreV1.nodes().delete(nodeName).catch(() => {});
    node.close();
    admin.close();
  }
}

const hasOpenssl = await opensslAvailable();
const real = await realKubeApiServer();
if (typeof real === "string") console.log(`kube_apiserver_test: real server case skipped: ${real}`);

Deno.test({
  name: "client on the API-server double (HTTPS, node certificate)",
  ignore: !hasOpenssl,
  async fn(t) {
    const target = await startDoubleTarget();
    try {
      await clientScenario(target, t);
    } finally {
      await target.close();
    }
  },
});

Deno.test({
  name: "client on a real kube-apiserver (HTTPS, HTTP/2, node certificate, Node authorizer)",
  ignore: typeof real === "string",
  async fn(t) {
    const target = real as ApiTarget;
    try {
      await clientScenario(target, t);
    } finally {
      await target.close();
    }
  },
});
