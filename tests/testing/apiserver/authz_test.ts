// Tests of the double's node authorizer and NodeRestriction admission. The expected messages were
// read off kube-apiserver v1.36.3 started by scripts/kube-apiserver.sh (Node,RBAC +
// NodeRestriction) with the same requests.
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  adminUser,
  type ApiServerDouble,
  type JsonObject,
  mirrorPodAnnotationKey,
  nodeUser,
  startApiServer,
} from "./mod.ts";

const self = "node-a";

type Call = (
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
) => Promise<{ status: number; body: JsonObject }>;

async function withNode(
  fn: (call: Call, double: ApiServerDouble) => Promise<void>,
  options: { authz?: boolean } = {},
): Promise<void> {
  const server = await startApiServer({ tokens: { node: nodeUser(self) }, ...options });
  const call: Call = async (method, path, body, contentType = "application/json") => {
    const res = await fetch(server.url + path, {
      method,
      headers: { Authorization: "Bearer node", "Content-Type": contentType },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    server.double.create("pods", pod("mine", self));
    server.double.create("pods", pod("theirs", "node-b"));
    await fn(call, server.double);
  } finally {
    await server.close();
  }
}

function pod(name: string, nodeName: string): JsonObject {
  return {
    metadata: { name, namespace: "default" },
    spec: { nodeName, containers: [{ name: "c", image: "busybox" }] },
  };
}

async function forbidden(res: Promise<{ status: number; body: JsonObject }>): Promise<string> {
  const { status, body } = await res;
  assertEquals(status, 403, JSON.stringify(body));
  assertEquals(body.reason, "Forbidden");
  return String(body.message);
}

const user = `User "system:node:${self}"`;

Deno.test("node authorizer: pods are listed and watched only with spec.nodeName=<self>", async () => {
  await withNode(async (call) => {
    assertEquals(
      await forbidden(call("GET", "/api/v1/pods")),
      `pods is forbidden: ${user} cannot list resource "pods" in API group "" at the cluster scope: can only list/watch pods with spec.nodeName field selector`,
    );
    assertEquals(
      await forbidden(call("GET", "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-b")),
      `pods is forbidden: ${user} cannot watch resource "pods" in API group "" at the cluster scope: can only list/watch pods with spec.nodeName field selector`,
    );
    const list = await call("GET", `/api/v1/pods?fieldSelector=spec.nodeName%3D${self}`);
    assertEquals(list.status, 200);
    assertEquals((list.body.items as JsonObject[]).length, 1);
  });
});

Deno.test("node authorizer: get only pods bound to the node (403 before 404)", async () => {
  await withNode(async (call) => {
    assertEquals((await call("GET", "/api/v1/namespaces/default/pods/mine")).status, 200);
    for (const name of ["theirs", "missing"]) {
      assertEquals(
        await forbidden(call("GET", `/api/v1/namespaces/default/pods/${name}`)),
        `pods "${name}" is forbidden: ${user} cannot get resource "pods" in API group "" in the namespace "default": no relationship found between node '${self}' and this object`,
      );
    }
  });
});

Deno.test("node authorizer: only its own Node is readable", async () => {
  await withNode(async (call) => {
    assertEquals(
      await forbidden(call("GET", "/api/v1/nodes")),
      `nodes is forbidden: ${user} cannot list resource "nodes" in API group "" at the cluster scope: node '${self}' cannot read all nodes, only its own Node object`,
    );
    assertEquals(
      await forbidden(call("GET", "/api/v1/nodes/node-b")),
      `nodes "node-b" is forbidden: ${user} cannot get resource "nodes" in API group "" at the cluster scope: node '${self}' cannot read 'node-b', only its own Node object`,
    );
    const own = await call("GET", `/api/v1/nodes?fieldSelector=metadata.name%3D${self}`);
    assertEquals(own.status, 200);
    assertEquals((await call("GET", `/api/v1/nodes/${self}`)).status, 404);
  });
});

Deno.test("NodeRestriction: Node create/update rules (name, labels, taints)", async () => {
  await withNode(async (call) => {
    assertEquals(
      await forbidden(call("POST", "/api/v1/nodes", { metadata: { name: "node-b" } })),
      `nodes "node-b" is forbidden: node "${self}" is not allowed to modify node "node-b"`,
    );
    assertEquals(
      await forbidden(call("POST", "/api/v1/nodes", {
        metadata: {
          name: self,
          labels: { "node-role.kubernetes.io/x": "", "kubernetes.io/hostname": "h" },
        },
      })),
      `nodes "${self}" is forbidden: node "${self}" is not allowed to set the following labels: node-role.kubernetes.io/x`,
    );
    const created = await call("POST", "/api/v1/nodes", {
      metadata: {
        name: self,
        labels: { "kubernetes.io/hostname": "h", "probelet.io/agent": "true" },
      },
      spec: { taints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }] },
    });
    assertEquals(created.status, 201);
    assertEquals(
      await forbidden(
        call(
          "PATCH",
          `/api/v1/nodes/${self}`,
          { spec: { taints: [] } },
          "application/strategic-merge-patch+json",
        ),
      ),
      `nodes "${self}" is forbidden: node "${self}" is not allowed to modify taints`,
    );
    const status = await call(
      "PATCH",
      `/api/v1/nodes/${self}/status`,
      { status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }] } },
      "application/strategic-merge-patch+json",
    );
    assertEquals(status.status, 200);
  });
});

Deno.test("NodeRestriction: leases only kube-node-lease/<self>", async () => {
  await withNode(async (call) => {
    assertEquals(
      await forbidden(
        call("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
          metadata: { name: "other" },
          spec: {},
        }),
      ),
      'leases.coordination.k8s.io "other" is forbidden: can only access node lease with the same name as the requesting node',
    );
    assertEquals(
      await forbidden(call("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", {
        metadata: { name: self },
        spec: {},
      })),
      `leases.coordination.k8s.io is forbidden: ${user} cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default": can only access leases in the "kube-node-lease" system namespace`,
    );
    assertEquals(
      await forbidden(
        call("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/other"),
      ),
      `leases.coordination.k8s.io "other" is forbidden: ${user} cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": can only access node lease with the same name as the requesting node`,
    );
    const created = await call(
      "POST",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
      {
        metadata: { name: self },
        spec: { holderIdentity: self },
      },
    );
    assertEquals(created.status, 201);
  });
});

Deno.test("NodeRestriction: pods — only mirror pods created, own pods' status and deletion", async () => {
  await withNode(async (call, double) => {
    const node = double.create("nodes", { metadata: { name: self } });
    const nodeUid = (node.metadata as Record<string, unknown>).uid as string;
    const mirror = (owner: Record<string, unknown>) => ({
      metadata: {
        name: `static-${self}`,
        annotations: { [mirrorPodAnnotationKey]: "hash" },
        ownerReferences: [{
          apiVersion: "v1",
          kind: "Node",
          name: self,
          uid: nodeUid,
          controller: true,
          ...owner,
        }],
      },
      spec: { nodeName: self, containers: [{ name: "c", image: "busybox" }] },
    });
    const path = "/api/v1/namespaces/default/pods";
    assertEquals(
      await forbidden(call("POST", path, pod("plain", self))),
      `pods "plain" is forbidden: pod does not have "${mirrorPodAnnotationKey}" annotation, node "${self}" can only create mirror pods`,
    );
    assertEquals(
      await forbidden(call("POST", path, mirror({ uid: "stale" }))),
      `pods "static-${self}" is forbidden: node ${self} UID mismatch: expected stale got ${nodeUid}`,
    );
    assertEquals(
      await forbidden(call("POST", path, mirror({ controller: false }))),
      `pods "static-${self}" is forbidden: node "${self}" can only create pods with a controller owner reference set to itself`,
    );
    const created = await call("POST", path, mirror({}));
    assertEquals(created.status, 201, JSON.stringify(created.body));
    // Mirror pods reference no service account.
    assertEquals((created.body.spec as Record<string, unknown>).serviceAccountName, undefined);
    const smp = "application/strategic-merge-patch+json";
    assertEquals(
      await forbidden(
        call("PATCH", `${path}/theirs/status`, { status: { phase: "Running" } }, smp),
      ),
      `pods "theirs" is forbidden: node "${self}" can only update pod status for pods with spec.nodeName set to itself`,
    );
    assertEquals(
      await forbidden(
        call("PATCH", `${path}/mine/status`, { metadata: { labels: { a: "b" } } }, smp),
      ),
      `pods "mine" is forbidden: node "${self}" cannot update labels through pod status`,
    );
    assertEquals(
      await forbidden(call("PATCH", `${path}/mine`, { metadata: { labels: { a: "b" } } }, smp)),
      `pods "mine" is forbidden: ${user} cannot patch resource "pods" in API group "" in the namespace "default"`,
    );
    assertEquals(
      await forbidden(call("DELETE", `${path}/theirs`, { gracePeriodSeconds: 0 })),
      `pods "theirs" is forbidden: node "${self}" can only delete pods with spec.nodeName set to itself`,
    );
    assertEquals(
      (await call("PATCH", `${path}/mine/status`, { status: { phase: "Running" } }, smp)).status,
      200,
    );
    assertEquals((await call("DELETE", `${path}/mine`, { gracePeriodSeconds: 0 })).status, 200);
  });
});

Deno.test("node authorizer: events are created and patched anywhere, never read", async () => {
  await withNode(async (call) => {
    const event = {
      metadata: { name: "mine.1", namespace: "default" },
      involvedObject: { kind: "Pod", namespace: "default", name: "mine" },
      reason: "Started",
      count: 1,
    };
    assertEquals((await call("POST", "/api/v1/namespaces/default/events", event)).status, 201);
    const patched = await call(
      "PATCH",
      "/api/v1/namespaces/default/events/mine.1",
      { count: 2 },
      "application/strategic-merge-patch+json",
    );
    assertEquals(patched.body.count, 2);
    assertEquals(
      await forbidden(call("GET", "/api/v1/namespaces/default/events")),
      `events is forbidden: ${user} cannot list resource "events" in API group "" in the namespace "default"`,
    );
  });
});

Deno.test("authz off: a node may do what it likes (for tests that are not about permissions)", async () => {
  await withNode(async (call) => {
    assertEquals((await call("GET", "/api/v1/pods")).status, 200);
    assertEquals(
      (await call("POST", "/api/v1/namespaces/default/pods", pod("plain", "node-b"))).status,
      201,
    );
  }, { authz: false });
});

Deno.test("system:masters may do anything", async () => {
  const server = await startApiServer({ defaultUser: adminUser });
  try {
    const res = await fetch(`${server.url}/api/v1/nodes`);
    assertEquals(res.status, 200);
    await res.body?.cancel();
  } finally {
    await server.close();
  }
});
