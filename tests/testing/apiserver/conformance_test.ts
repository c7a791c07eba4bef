// The double against the real thing: the same kubelet-shaped request sequence is sent to the
// double and to the kube-apiserver that scripts/kube-apiserver.sh starts, and every answer (status
// code and body, with UIDs, timestamps, resourceVersions and managedFields masked) must match.
// Where no real kube-apiserver runs, the test is skipped and says why.
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  type ApiAnswer,
  type ApiTarget,
  opensslAvailable,
  realKubeApiServer,
  startDoubleTarget,
} from "../apiserver_targets.ts";

const real = await realKubeApiServer();
const haveOpenssl = await opensslAvailable();
const skip = typeof real === "string"
  ? real
  : !haveOpenssl
  ? "openssl not found"
  : await real.controllersRunning()
  // Node annotations, taint-based eviction and the like would differ from the double.
  ? "kube-controller-manager runs next to the API server and changes objects behind the test " +
    "(`scripts/kube-apiserver.sh up` without `controllers`)"
  : "";
if (skip) console.log(`conformance_test: skipped: ${skip}`);

interface Step {
  name: string;
  as: "admin" | "node";
  method: string;
  path: string;
  /** A body, or one built from the answers so far (e.g. the registered Node's UID). */
  body?: unknown | ((answers: ApiAnswer[]) => unknown);
  contentType?: string;
}

const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const time = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g;

// Masks what differs between any two runs, so the rest can be compared exactly.
function normalize(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((v) => normalize(v));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === "managedFields") continue;
      out[k] = normalize(v, k);
    }
    return out;
  }
  if (typeof value === "string") {
    if (key === "resourceVersion") return "<rv>";
    // A continue token embeds the list's resourceVersion.
    if (key === "continue") return "<continue>";
    return value.replace(uuid, "<uid>").replace(time, "<time>")
      .replace(/kube-api-access-[a-z0-9]{5}/g, "kube-api-access-<x>");
  }
  return value;
}

function steps(ns: string, nodeName: string): Step[] {
  const pods = `/api/v1/namespaces/${ns}/pods`;
  const leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
  const smp = "application/strategic-merge-patch+json";
  const container = { name: "app", image: "busybox:1.36", command: ["sleep", "3600"] };
  return [
    {
      name: "register node",
      as: "node",
      method: "POST",
      path: "/api/v1/nodes",
      body: {
        metadata: {
          name: nodeName,
          labels: { "kubernetes.io/hostname": nodeName, "probelet.io/agent": "true" },
          annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
        },
        spec: { taints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }] },
        status: {
          capacity: { cpu: "2", memory: "4Gi", pods: "110" },
          conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady" }],
          addresses: [{ type: "InternalIP", address: "127.0.0.1" }, {
            type: "Hostname",
            address: nodeName,
          }],
        },
      },
    },
    {
      name: "register again",
      as: "node",
      method: "POST",
      path: "/api/v1/nodes",
      body: { metadata: { name: nodeName } },
    },
    { name: "list all nodes", as: "node", method: "GET", path: "/api/v1/nodes" },
    { name: "get own node", as: "node", method: "GET", path: `/api/v1/nodes/${nodeName}` },
    {
      name: "node status patch",
      as: "node",
      method: "PATCH",
      path: `/api/v1/nodes/${nodeName}/status`,
      contentType: smp,
      body: {
        status: {
          "$setElementOrder/conditions": [{ type: "MemoryPressure" }, { type: "Ready" }],
          conditions: [
            { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" },
            {
              type: "Ready",
              status: "True",
              reason: "KubeletReady",
              message: "kubelet is posting ready status",
            },
          ],
          addresses: [{ $patch: "replace" }, { type: "InternalIP", address: "127.0.0.2" }],
        },
      },
    },
    {
      name: "taints are the node's to keep",
      as: "node",
      method: "PATCH",
      path: `/api/v1/nodes/${nodeName}`,
      contentType: smp,
      body: { spec: { taints: null } },
    },
    {
      name: "lease create",
      as: "node",
      method: "POST",
      path: leases,
      body: {
        metadata: { name: nodeName },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: 40 },
      },
    },
    {
      name: "lease stale update",
      as: "node",
      method: "PUT",
      path: `${leases}/${nodeName}`,
      body: {
        metadata: { name: nodeName, resourceVersion: "1" },
        spec: { holderIdentity: nodeName },
      },
    },
    { name: "someone else's lease", as: "node", method: "GET", path: `${leases}/probelet-other` },
    {
      name: "pod created for the node",
      as: "admin",
      method: "POST",
      path: pods,
      body: {
        metadata: { name: "web", labels: { app: "web" } },
        spec: { nodeName, containers: [container] },
      },
    },
    {
      name: "unbound pod",
      as: "admin",
      method: "POST",
      path: pods,
      body: {
        metadata: { name: "pending" },
        spec: { automountServiceAccountToken: false, containers: [container] },
      },
    },
    { name: "pods without selector", as: "node", method: "GET", path: "/api/v1/pods" },
    {
      name: "pods on this node",
      as: "node",
      method: "GET",
      path: `${pods}?fieldSelector=spec.nodeName%3D${nodeName}`,
    },
    { name: "unrelated pod", as: "node", method: "GET", path: `${pods}/pending` },
    {
      name: "pod status patch",
      as: "node",
      method: "PATCH",
      path: `${pods}/web/status`,
      contentType: smp,
      body: {
        status: {
          "$setElementOrder/conditions": [{ type: "Initialized" }, { type: "Ready" }, {
            type: "PodScheduled",
          }],
          conditions: [
            { type: "Initialized", status: "True" },
            { type: "Ready", status: "True" },
            { type: "PodScheduled", status: "True" },
          ],
          phase: "Running",
          podIP: "10.0.0.5",
          podIPs: [{ ip: "10.0.0.5" }],
          containerStatuses: [{
            name: "app",
            ready: true,
            restartCount: 0,
            image: "busybox:1.36",
            imageID: "",
            started: true,
            state: { running: { startedAt: "2026-11-23T05:00:00Z" } },
          }],
        },
      },
    },
    {
      name: "pod status patch from a stale pod",
      as: "node",
      method: "PATCH",
      path: `${pods}/web/status`,
      contentType: smp,
      body: {
        metadata: { uid: "00000000-0000-0000-0000-000000000000" },
        status: { phase: "Failed" },
      },
    },
    {
      name: "status patch dropping qosClass keeps it",
      as: "node",
      method: "PATCH",
      path: `${pods}/web/status`,
      contentType: smp,
      body: { status: { qosClass: null, reason: "Testing" } },
    },
    {
      name: "qosClass is immutable",
      as: "node",
      method: "PATCH",
      path: `${pods}/web/status`,
      contentType: "application/merge-patch+json",
      body: { status: { qosClass: "Guaranteed" } },
    },
    {
      name: "status patch may not relabel",
      as: "node",
      method: "PATCH",
      path: `${pods}/web/status`,
      contentType: "application/merge-patch+json",
      body: { metadata: { labels: { app: "other" } } },
    },
    {
      name: "plain pod from a node",
      as: "node",
      method: "POST",
      path: pods,
      body: { metadata: { name: "sneaky" }, spec: { nodeName, containers: [container] } },
    },
    {
      name: "mirror pod from the node",
      as: "node",
      method: "POST",
      path: pods,
      body: (answers: ApiAnswer[]) => ({
        metadata: {
          name: `static-${nodeName}`,
          annotations: {
            "kubernetes.io/config.mirror": "0123abcd",
            "kubernetes.io/config.source": "file",
          },
          ownerReferences: [{
            apiVersion: "v1",
            kind: "Node",
            name: nodeName,
            uid: answers[0].body.metadata.uid,
            controller: true,
          }],
        },
        spec: { nodeName, containers: [container] },
      }),
    },
    {
      name: "mirror pod owned by another uid",
      as: "node",
      method: "POST",
      path: pods,
      body: {
        metadata: {
          name: `static2-${nodeName}`,
          annotations: { "kubernetes.io/config.mirror": "0123abcd" },
          ownerReferences: [{
            apiVersion: "v1",
            kind: "Node",
            name: nodeName,
            uid: "00000000-0000-0000-0000-000000000000",
            controller: true,
          }],
        },
        spec: { nodeName, containers: [container] },
      },
    },
    { name: "first page", as: "admin", method: "GET", path: `${pods}?limit=2` },
    {
      name: "event create",
      as: "node",
      method: "POST",
      path: `/api/v1/namespaces/${ns}/events`,
      body: {
        metadata: { name: "web.1" },
        involvedObject: { kind: "Pod", namespace: ns, name: "web", apiVersion: "v1" },
        reason: "Unhealthy",
        message: "Liveness probe failed",
        type: "Warning",
        source: { component: "kubelet", host: nodeName },
        count: 1,
        firstTimestamp: "2026-11-23T05:00:00Z",
        lastTimestamp: "2026-11-23T05:00:00Z",
      },
    },
    {
      name: "event count patch",
      as: "node",
      method: "PATCH",
      path: `/api/v1/namespaces/${ns}/events/web.1`,
      contentType: smp,
      body: { count: 2, lastTimestamp: "2026-11-23T05:00:10Z" },
    },
    {
      name: "events are not readable",
      as: "node",
      method: "GET",
      path: `/api/v1/namespaces/${ns}/events`,
    },
    {
      name: "graceful delete",
      as: "admin",
      method: "DELETE",
      path: `${pods}/web`,
      body: { gracePeriodSeconds: 5 },
    },
    {
      name: "final delete with a wrong UID",
      as: "node",
      method: "DELETE",
      path: `${pods}/web`,
      body: {
        gracePeriodSeconds: 0,
        preconditions: { uid: "00000000-0000-0000-0000-000000000000" },
      },
    },
    {
      name: "unsupported patch type",
      as: "admin",
      method: "PATCH",
      path: `${pods}/pending`,
      contentType: "text/plain",
      body: "{}",
    },
    {
      name: "unsupported field label",
      as: "admin",
      method: "GET",
      path: `${pods}?fieldSelector=spec.foo%3Dx`,
    },
    { name: "delete unbound pod", as: "admin", method: "DELETE", path: `${pods}/pending` },
    { name: "lease delete", as: "node", method: "DELETE", path: `${leases}/${nodeName}` },
  ];
}

async function run(target: ApiTarget, ns: string): Promise<ApiAnswer[]> {
  // Set-up that is allowed to differ: the real server needs a namespace with its default
  // ServiceAccount (no controller-manager creates it) and must not have a Node left from before.
  // Nor its Lease: an agent of an earlier test leaves one, and without a controller manager
  // nothing collects it when the Node goes.
  await target.admin("DELETE", `/api/v1/nodes/${target.nodeName}`);
  await target.admin(
    "DELETE",
    `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${target.nodeName}`,
  );
  await target.admin("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } });
  if (target.kind === "kube-apiserver") {
    await target.admin("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
      body: { metadata: { name: "default" } },
    });
  }
  const answers: ApiAnswer[] = [];
  for (const step of steps(ns, target.nodeName)) {
    const send = step.as === "admin" ? target.admin : target.node;
    const body = typeof step.body === "function" ? step.body(answers) : step.body;
    answers.push(await send(step.method, step.path, { body, contentType: step.contentType }));
  }
  // Leave no Node behind for the next test.
  await target.admin("DELETE", `/api/v1/nodes/${target.nodeName}`);
  return answers;
}

// A watch opened from a list's resourceVersion sees the same events for the same writes: pod
// creates, a status patch that leaves the field selector, a no-op patch (no event), and a delete
// (deletion mark, then DELETED).
async function watchRun(target: ApiTarget, ns: string): Promise<unknown[]> {
  await target.admin("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } });
  if (target.kind === "kube-apiserver") {
    await target.admin("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
      body: { metadata: { name: "default" } },
    });
  }
  const pods = `/api/v1/namespaces/${ns}/pods`;
  const list = await target.admin("GET", pods);
  const rv = list.body.metadata.resourceVersion;
  const selector = encodeURIComponent("status.phase!=Failed");
  const watch = target.admin(
    "GET",
    `${pods}?watch=true&resourceVersion=${rv}&fieldSelector=${selector}&timeoutSeconds=3`,
  );
  const container = { name: "app", image: "busybox:1.36" };
  for (const name of ["w", "x"]) {
    await target.admin("POST", pods, {
      body: { metadata: { name }, spec: { nodeName: target.nodeName, containers: [container] } },
    });
  }
  const merge = "application/merge-patch+json";
  await target.admin("PATCH", `${pods}/x/status`, {
    body: { status: { phase: "Failed" } },
    contentType: merge,
  });
  await target.admin("PATCH", `${pods}/w/status`, {
    body: { status: { phase: "Pending" } },
    contentType: merge,
  });
  await target.admin("DELETE", `${pods}/w`, { body: { gracePeriodSeconds: 0 } });
  const body = String((await watch).body);
  return body.split("\n").filter((l) => l.trim() !== "").map((l) => normalize(JSON.parse(l)));
}

Deno.test({
  name: "conformance: a watch sees the same events from the double as from kube-apiserver",
  ignore: skip !== "",
  fn: async () => {
    const realTarget = real as ApiTarget;
    const double = await startDoubleTarget(realTarget.nodeName);
    const ns = `conformance-watch-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const want = await watchRun(realTarget, ns);
      const got = await watchRun(double, ns);
      assertEquals(
        want.map((e) => (e as { type: string }).type),
        ["ADDED", "ADDED", "DELETED", "MODIFIED", "DELETED"],
      );
      assertEquals(got, want);
    } finally {
      await double.close();
    }
  },
});

Deno.test({
  name:
    "conformance: the double answers a kubelet's request sequence as kube-apiserver v1.36.3 does",
  ignore: skip !== "",
  fn: async (t) => {
    const realTarget = real as ApiTarget;
    const double = await startDoubleTarget(realTarget.nodeName);
    const ns = `conformance-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const want = await run(realTarget, ns);
      const got = await run(double, ns);
      // The refused node requests read from the audit log match the double's request log.
      await t.step("node refusals: audit log and request log agree", async () => {
        const refused = (await realTarget.nodeRefusals()).sort();
        assert(refused.length >= 8, refused.join("\n"));
        assertEquals((await double.nodeRefusals()).sort(), refused);
      });
      const list = steps(ns, realTarget.nodeName);
      for (let i = 0; i < list.length; i++) {
        await t.step(`${list[i].name}: ${list[i].method} ${list[i].path}`, () => {
          assertEquals(
            { status: got[i].status, body: normalize(got[i].body) },
            { status: want[i].status, body: normalize(want[i].body) },
          );
        });
      }
    } finally {
      await double.close();
      await realTarget.close();
    }
  },
});

if (typeof real !== "string" && skip !== "") await real.close();
