// Tests of the API-server double itself, over real HTTP with fetch: storage and resourceVersion,
// CRUD answers and their Status bodies, status subresources, graceful deletion, selectors, lists,
// the request log and fault injection. The expected texts were checked against kube-apiserver
// v1.36.3 (scripts/kube-apiserver.sh).
import {
  deepStrictEqual as assertEquals,
  match as assertMatch,
  ok as assert,
} from "node:assert/strict";
import { FakeClock } from "../../../src/util/clock.ts";
import {
  adminUser,
  type ApiServerDoubleOptions,
  type JsonObject,
  nodeUser,
  type RunningApiServer,
  startApiServer,
} from "./mod.ts";

const node = "node-a";

async function withServer(
  options: ApiServerDoubleOptions,
  fn: (server: RunningApiServer, call: Caller) => Promise<void>,
): Promise<void> {
  const server = await startApiServer({
    tokens: { admin: adminUser, node: nodeUser(node), other: nodeUser("node-b") },
    ...options,
  });
  try {
    await fn(server, caller(server.url));
  } finally {
    await server.close();
  }
}

type Caller = (
  method: string,
  path: string,
  options?: { body?: unknown; as?: "admin" | "node" | "other"; contentType?: string },
) => Promise<{ status: number; body: JsonObject; headers: Headers }>;

function caller(url: string): Caller {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${options.as ?? "admin"}`,
    };
    if (options.body !== undefined) {
      headers["Content-Type"] = options.contentType ?? "application/json";
    }
    const res = await fetch(url + path, {
      method,
      headers,
      body: options.body === undefined
        ? undefined
        : typeof options.body === "string"
        ? options.body
        : JSON.stringify(options.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers };
  };
}

function pod(name: string, extra: { nodeName?: string; labels?: Record<string, string> } = {}) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, ...(extra.labels ? { labels: extra.labels } : {}) },
    spec: {
      ...(extra.nodeName ? { nodeName: extra.nodeName } : {}),
      containers: [{ name: "app", image: "busybox:1.36", command: ["sleep", "1000"] }],
    },
  };
}

const podsPath = "/api/v1/namespaces/default/pods";

function meta(obj: JsonObject): Record<string, unknown> {
  return obj.metadata as Record<string, unknown>;
}

Deno.test("create: 201 with server fields, then 409 AlreadyExists", async () => {
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0, 750));
  await withServer({ clock }, async (server, call) => {
    const before = server.double.storage.resourceVersion;
    const created = await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    assertEquals(created.status, 201);
    const m = meta(created.body);
    assertEquals(m.resourceVersion, String(before + 1));
    assertEquals(m.creationTimestamp, "2026-11-23T05:00:00Z");
    assertEquals(m.generation, 1);
    assertEquals(m.namespace, "default");
    assertMatch(String(m.uid), /^[0-9a-f-]{36}$/);
    // Status belongs to the server on create; defaults are filled in.
    assertEquals(created.body.status, { phase: "Pending", qosClass: "BestEffort" });
    const spec = created.body.spec as Record<string, unknown>;
    assertEquals(spec.terminationGracePeriodSeconds, 30);
    assertEquals(spec.restartPolicy, "Always");
    assertEquals(
      (spec.containers as Record<string, unknown>[])[0].imagePullPolicy,
      "IfNotPresent",
    );
    const again = await call("POST", podsPath, { body: pod("web") });
    assertEquals(again.status, 409);
    assertEquals(again.body, {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'pods "web" already exists',
      reason: "AlreadyExists",
      details: { name: "web", kind: "pods" },
      code: 409,
    });
  });
});

Deno.test("get: 404 NotFound Status names the qualified resource", async () => {
  await withServer({}, async (_server, call) => {
    const res = await call(
      "GET",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/missing",
    );
    assertEquals(res.status, 404);
    assertEquals(res.body.message, 'leases.coordination.k8s.io "missing" not found');
    assertEquals(res.body.details, {
      name: "missing",
      group: "coordination.k8s.io",
      kind: "leases",
    });
  });
});

Deno.test("one global resourceVersion across resources; list reports it, items carry no kind", async () => {
  await withServer({}, async (server, call) => {
    await call("POST", podsPath, { body: pod("a", { nodeName: node }) });
    const lease = await call(
      "POST",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
      {
        body: { metadata: { name: node }, spec: { holderIdentity: node } },
      },
    );
    await call("POST", podsPath, { body: pod("b", { nodeName: node }) });
    const list = await call("GET", podsPath);
    assertEquals(list.body.kind, "PodList");
    assertEquals(list.body.apiVersion, "v1");
    assertEquals(meta(list.body), {
      resourceVersion: String(server.double.storage.resourceVersion),
    });
    const items = list.body.items as JsonObject[];
    assertEquals(items.map((i) => meta(i).name), ["a", "b"]);
    assertEquals(items.map((i) => Object.keys(i)), [["metadata", "spec", "status"], [
      "metadata",
      "spec",
      "status",
    ]]);
    const rvs = [
      meta(items[0]).resourceVersion,
      meta(lease.body).resourceVersion,
      meta(items[1]).resourceVersion,
    ]
      .map(Number);
    assertEquals(rvs[1], rvs[0] + 1);
    assertEquals(rvs[2], rvs[1] + 1);
  });
});

Deno.test("PUT: stale resourceVersion is 409 Conflict with the registry's message; no RV is unconditional", async () => {
  await withServer({}, async (_server, call) => {
    const path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    const created = await call("POST", path, {
      body: { metadata: { name: node }, spec: { holderIdentity: node, leaseDurationSeconds: 40 } },
    });
    const rv = meta(created.body).resourceVersion as string;
    const renewed = await call("PUT", `${path}/${node}`, {
      body: {
        ...created.body,
        spec: {
          holderIdentity: node,
          leaseDurationSeconds: 40,
          renewTime: "2026-11-23T05:00:00.000000Z",
        },
      },
    });
    assertEquals(renewed.status, 200);
    assert(Number(meta(renewed.body).resourceVersion) > Number(rv));
    const stale = await call("PUT", `${path}/${node}`, { body: created.body });
    assertEquals(stale.status, 409);
    assertEquals(stale.body.reason, "Conflict");
    assertEquals(
      stale.body.message,
      'Operation cannot be fulfilled on leases.coordination.k8s.io "node-a": the object has been modified; please apply your changes to the latest version and try again',
    );
    const body = structuredClone(created.body);
    delete (body.metadata as Record<string, unknown>).resourceVersion;
    const unconditional = await call("PUT", `${path}/${node}`, { body });
    assertEquals(unconditional.status, 200);
  });
});

Deno.test("PUT with another object's UID: 409 with the storage precondition text", async () => {
  await withServer({}, async (_server, call) => {
    const created = await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const body = structuredClone(created.body);
    (body.metadata as Record<string, unknown>).uid = "00000000-0000-0000-0000-000000000001";
    const res = await call("PUT", `${podsPath}/web`, { body });
    assertEquals(res.status, 409);
    assertEquals(
      res.body.message,
      `Operation cannot be fulfilled on pods "web": StorageError: invalid object, Code: 4, Key: /registry/pods/default/web, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000001, UID in object meta: ${
        meta(created.body).uid
      }`,
    );
  });
});

Deno.test("status subresource changes only status; main PUT ignores status", async () => {
  await withServer({}, async (_server, call) => {
    const created = await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const viaStatus = structuredClone(created.body);
    viaStatus.status = { phase: "Running" };
    (viaStatus.spec as Record<string, unknown>).activeDeadlineSeconds = 5;
    const s = await call("PUT", `${podsPath}/web/status`, { body: viaStatus });
    assertEquals(s.status, 200);
    assertEquals((s.body.status as Record<string, unknown>).phase, "Running");
    assertEquals((s.body.spec as Record<string, unknown>).activeDeadlineSeconds, undefined);
    const viaMain = structuredClone(s.body);
    viaMain.status = { phase: "Failed" };
    (viaMain.metadata as Record<string, unknown>).labels = { tier: "web" };
    const m = await call("PUT", `${podsPath}/web`, { body: viaMain });
    assertEquals(m.status, 200);
    assertEquals((m.body.status as Record<string, unknown>).phase, "Running");
    assertEquals(meta(m.body).labels, { tier: "web" });
  });
});

Deno.test("a write that changes nothing keeps the resourceVersion and sends no event", async () => {
  await withServer({}, async (server, call) => {
    const created = await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const before = server.double.storage.resourceVersion;
    const res = await call("PATCH", `${podsPath}/web/status`, {
      body: { status: { phase: "Pending" } },
      contentType: "application/merge-patch+json",
    });
    assertEquals(res.status, 200);
    assertEquals(meta(res.body).resourceVersion, meta(created.body).resourceVersion);
    assertEquals(server.double.storage.resourceVersion, before);
  });
});

Deno.test("PATCH content types: SMP by merge key, merge patch, JSON patch, 415 otherwise", async (t) => {
  await withServer({}, async (_server, call) => {
    await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    await call("PATCH", `${podsPath}/web/status`, {
      contentType: "application/merge-patch+json",
      body: {
        status: {
          conditions: [
            { type: "PodScheduled", status: "True" },
            { type: "example.com/gate", status: "False" },
          ],
        },
      },
    });
    await t.step("strategic merge keeps foreign conditions and merges by type", async () => {
      const res = await call("PATCH", `${podsPath}/web/status`, {
        contentType: "application/strategic-merge-patch+json",
        body: {
          status: {
            "$setElementOrder/conditions": [
              { type: "PodScheduled" },
              { type: "Ready" },
              { type: "example.com/gate" },
            ],
            conditions: [{ type: "Ready", status: "True" }],
          },
        },
      });
      assertEquals(res.status, 200);
      const conditions = (res.body.status as Record<string, unknown>).conditions as JsonObject[];
      assertEquals(conditions.map((c) => c.type), ["PodScheduled", "Ready", "example.com/gate"]);
    });
    await t.step("merge patch replaces lists whole", async () => {
      const res = await call("PATCH", `${podsPath}/web/status`, {
        contentType: "application/merge-patch+json",
        body: { status: { conditions: [{ type: "Ready", status: "False" }] } },
      });
      const conditions = (res.body.status as Record<string, unknown>).conditions as JsonObject[];
      // Go writes the unset condition times as null.
      assertEquals(conditions, [{
        type: "Ready",
        status: "False",
        lastProbeTime: null,
        lastTransitionTime: null,
      }]);
    });
    await t.step("JSON patch, and a failed test op is 422", async () => {
      const ok = await call("PATCH", `${podsPath}/web`, {
        contentType: "application/json-patch+json",
        body: [{ op: "add", path: "/metadata/labels", value: { a: "b" } }],
      });
      assertEquals(meta(ok.body).labels, { a: "b" });
      const failed = await call("PATCH", `${podsPath}/web`, {
        contentType: "application/json-patch+json",
        body: [{ op: "test", path: "/metadata/labels/a", value: "c" }],
      });
      assertEquals(failed.status, 422);
    });
    await t.step("unknown and apply types are 415", async () => {
      for (const contentType of ["text/plain", "application/apply-patch+yaml"]) {
        const res = await call("PATCH", `${podsPath}/web`, { contentType, body: "{}" });
        assertEquals(res.status, 415);
        assertEquals(res.body.message, "415: Unsupported Media Type");
      }
    });
  });
});

Deno.test("strategic merge list order follows kube-apiserver (checked against v1.36.3)", async () => {
  await withServer({}, async (_server, call) => {
    await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const types = async (
      status: unknown,
      contentType = "application/strategic-merge-patch+json",
    ) => {
      const res = await call("PATCH", `${podsPath}/web/status`, { contentType, body: { status } });
      const conditions = (res.body.status as Record<string, unknown>).conditions as JsonObject[];
      return conditions.map((c) => c.type);
    };
    await types({
      conditions: [{ type: "PodScheduled", status: "True" }, {
        type: "example.com/gate",
        status: "False",
      }],
    }, "application/merge-patch+json");
    assertEquals(
      await types({
        "$setElementOrder/conditions": [{ type: "ContainersReady" }, { type: "PodScheduled" }],
        conditions: [{ type: "ContainersReady", status: "True" }],
      }),
      ["ContainersReady", "PodScheduled", "example.com/gate"],
    );
    // Without $setElementOrder the patch list's own order counts; a new element goes first.
    assertEquals(
      await types({
        conditions: [{ type: "Initialized", status: "True" }, {
          type: "PodScheduled",
          status: "False",
        }],
      }),
      ["Initialized", "ContainersReady", "PodScheduled", "example.com/gate"],
    );
    assertEquals(
      await types({ conditions: [{ type: "Initialized", $patch: "delete" }] }),
      ["ContainersReady", "PodScheduled", "example.com/gate"],
    );
  });
});

Deno.test("pod status IPs: podIP wins over a disagreeing podIPs, as the v1 conversion does", async () => {
  await withServer({}, async (_server, call) => {
    await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const patch = async (status: unknown) =>
      (await call("PATCH", `${podsPath}/web/status`, {
        contentType: "application/strategic-merge-patch+json",
        body: { status },
      })).body.status as Record<string, unknown>;
    const first = await patch({ podIPs: [{ ip: "10.0.0.1" }, { ip: "fd00::1" }] });
    assertEquals(first.podIP, "10.0.0.1");
    assertEquals(first.podIPs, [{ ip: "10.0.0.1" }, { ip: "fd00::1" }]);
    const second = await patch({
      "$setElementOrder/podIPs": [{ ip: "fd00::1" }, { ip: "10.0.0.2" }],
      podIPs: [{ ip: "10.0.0.2" }, { $patch: "delete", ip: "10.0.0.1" }],
    });
    assertEquals(second.podIPs, [{ ip: "10.0.0.1" }]);
  });
});

Deno.test("PATCH with a different metadata.uid: 422 field is immutable (not a precondition)", async () => {
  await withServer({}, async (_server, call) => {
    await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const uid = "11111111-2222-3333-4444-555555555555";
    const res = await call("PATCH", `${podsPath}/web/status`, {
      as: "node",
      contentType: "application/strategic-merge-patch+json",
      body: { metadata: { uid }, status: { phase: "Running" } },
    });
    assertEquals(res.status, 422);
    assertEquals(res.body.reason, "Invalid");
    assertEquals(
      res.body.message,
      `Pod "web" is invalid: metadata.uid: Invalid value: "${uid}": field is immutable`,
    );
  });
});

Deno.test("graceful delete: bound pod is marked (MODIFIED), grace 0 removes, UID precondition 409", async () => {
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0));
  await withServer({ clock }, async (server, call) => {
    const created = await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const uid = meta(created.body).uid as string;
    const marked = await call("DELETE", `${podsPath}/web`, { body: { gracePeriodSeconds: 5 } });
    assertEquals(marked.status, 200);
    assertEquals(meta(marked.body).deletionTimestamp, "2026-11-23T05:00:05Z");
    assertEquals(meta(marked.body).deletionGracePeriodSeconds, 5);
    assertEquals(meta(marked.body).generation, 2);
    assert(server.double.get("pods", "default", "web"));
    const wrong = await call("DELETE", `${podsPath}/web`, {
      as: "node",
      body: { gracePeriodSeconds: 0, preconditions: { uid: "not-the-uid" } },
    });
    assertEquals(wrong.status, 409);
    assertEquals(
      wrong.body.message,
      `Operation cannot be fulfilled on Pod "web": the UID in the precondition (not-the-uid) does not match the UID in record (${uid}). The object might have been deleted and then recreated`,
    );
    const gone = await call("DELETE", `${podsPath}/web`, {
      as: "node",
      body: { gracePeriodSeconds: 0, preconditions: { uid } },
    });
    assertEquals(gone.status, 200);
    assertEquals(gone.body.kind, "Pod");
    assertEquals(server.double.get("pods", "default", "web"), undefined);
  });
});

Deno.test("delete: unbound and terminal pods go at once; other kinds answer a Success Status", async () => {
  await withServer({}, async (server, call) => {
    await call("POST", podsPath, { body: pod("unbound") });
    await call("DELETE", `${podsPath}/unbound`);
    assertEquals(server.double.get("pods", "default", "unbound"), undefined);
    await call("POST", podsPath, { body: pod("done", { nodeName: node }) });
    await call("PATCH", `${podsPath}/done/status`, {
      contentType: "application/merge-patch+json",
      body: { status: { phase: "Succeeded" } },
    });
    await call("DELETE", `${podsPath}/done`);
    assertEquals(server.double.get("pods", "default", "done"), undefined);
    const lease = await call(
      "POST",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
      {
        body: { metadata: { name: node }, spec: {} },
      },
    );
    const res = await call(
      "DELETE",
      `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`,
    );
    assertEquals(res.body, {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: {
        name: node,
        group: "coordination.k8s.io",
        kind: "leases",
        uid: meta(lease.body).uid as string,
      },
    });
  });
});

Deno.test("field selectors: supported labels filter, unsupported ones are 400", async () => {
  await withServer({}, async (_server, call) => {
    await call("POST", podsPath, { body: pod("a", { nodeName: node }) });
    await call("POST", podsPath, { body: pod("b", { nodeName: "node-b" }) });
    await call("POST", podsPath, { body: pod("c") });
    const names = async (q: string) =>
      ((await call("GET", `/api/v1/pods?${q}`)).body.items as JsonObject[]).map((i) =>
        meta(i).name
      );
    assertEquals(await names(`fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`), [
      "a",
    ]);
    assertEquals(await names(`fieldSelector=${encodeURIComponent("spec.nodeName=")}`), ["c"]);
    assertEquals(
      await names(
        `fieldSelector=${encodeURIComponent("spec.nodeName!=node-b,status.phase==Pending")}`,
      ),
      ["a", "c"],
    );
    assertEquals(await names(`fieldSelector=${encodeURIComponent("metadata.name=b")}`), ["b"]);
    const bad = await call("GET", `/api/v1/pods?fieldSelector=${encodeURIComponent("spec.foo=x")}`);
    assertEquals(bad.status, 400);
    assertEquals(bad.body.message, "field label not supported: spec.foo");
  });
});

Deno.test("label selectors: equality, set and existence forms", async () => {
  await withServer({}, async (_server, call) => {
    await call("POST", podsPath, { body: pod("a", { labels: { app: "web", tier: "1" } }) });
    await call("POST", podsPath, { body: pod("b", { labels: { app: "db" } }) });
    await call("POST", podsPath, { body: pod("c") });
    const names = async (selector: string) =>
      ((await call("GET", `${podsPath}?labelSelector=${encodeURIComponent(selector)}`)).body
        .items as JsonObject[]).map((i) => meta(i).name);
    assertEquals(await names("app=web"), ["a"]);
    assertEquals(await names("app!=web"), ["b", "c"]);
    assertEquals(await names("app in (web,db)"), ["a", "b"]);
    assertEquals(await names("!app"), ["c"]);
    assertEquals(await names("app,tier"), ["a"]);
  });
});

Deno.test("list pagination: limit and continue", async () => {
  await withServer({}, async (_server, call) => {
    for (const n of ["a", "b", "c"]) await call("POST", podsPath, { body: pod(n) });
    const first = await call("GET", `${podsPath}?limit=2`);
    assertEquals((first.body.items as JsonObject[]).map((i) => meta(i).name), ["a", "b"]);
    assertEquals(meta(first.body).remainingItemCount, 1);
    const token = meta(first.body).continue as string;
    const second = await call("GET", `${podsPath}?limit=2&continue=${encodeURIComponent(token)}`);
    assertEquals((second.body.items as JsonObject[]).map((i) => meta(i).name), ["c"]);
    assertEquals(meta(second.body).continue, undefined);
  });
});

Deno.test("request log keeps method, path, raw query, content type and body bytes", async () => {
  await withServer({}, async (server, call) => {
    await call("POST", podsPath, { body: pod("web", { nodeName: node }) });
    const patch = '{"status":{"phase":"Running"}}';
    await call("PATCH", `${podsPath}/web/status?fieldManager=probelet`, {
      as: "node",
      body: patch,
      contentType: "application/strategic-merge-patch+json",
    });
    const [record] = server.double.requestsTo("PATCH", `${podsPath}/web/status`);
    assertEquals(record.query, "fieldManager=probelet");
    assertEquals(record.contentType, "application/strategic-merge-patch+json");
    assertEquals(record.body, patch);
    assertEquals(record.user, `system:node:${node}`);
    assertEquals(record.verb, "patch");
    assertEquals(record.status, 200);
  });
});

Deno.test("faults: 500 and 429 with Retry-After for the matching requests only, then normal", async () => {
  await withServer({}, async (server, call) => {
    server.double.injectFault({
      method: "GET",
      path: podsPath,
      status: 429,
      retryAfterSeconds: 3,
      times: 1,
    });
    server.double.injectFault({ verb: "create", status: 500, times: 1 });
    const limited = await call("GET", podsPath);
    assertEquals(limited.status, 429);
    assertEquals(limited.headers.get("retry-after"), "3");
    assertEquals(limited.body.reason, "TooManyRequests");
    assertEquals((limited.body.details as Record<string, unknown>).retryAfterSeconds, 3);
    assertEquals((await call("GET", podsPath)).status, 200);
    const failed = await call("POST", podsPath, { body: pod("web") });
    assertEquals(failed.status, 500);
    assertEquals(failed.body.reason, "InternalError");
    assertEquals(server.double.get("pods", "default", "web"), undefined);
    assertEquals((await call("POST", podsPath, { body: pod("web") })).status, 201);
  });
});

Deno.test("faults: latency runs on the double's clock", async () => {
  const clock = new FakeClock(0);
  await withServer({ clock }, async (server, call) => {
    server.double.injectFault({ verb: "list", latencyMs: 5_000 });
    let done = false;
    const pending = call("GET", podsPath).then((r) => {
      done = true;
      return r;
    });
    while (server.double.requests.length === 0) await new Promise((r) => setTimeout(r, 1));
    await clock.step(4_999);
    assertEquals(done, false);
    await clock.step(1);
    assertEquals((await pending).status, 200);
  });
});

Deno.test("authentication: unknown token and no credentials are 401", async () => {
  await withServer({}, async (server) => {
    const res = await fetch(`${server.url}${podsPath}`, {
      headers: { Authorization: "Bearer nope" },
    });
    assertEquals(res.status, 401);
    assertEquals((await res.json()).reason, "Unauthorized");
    const anonymous = await fetch(`${server.url}${podsPath}`);
    assertEquals(anonymous.status, 401);
    await anonymous.body?.cancel();
  });
});

Deno.test("node create: TaintNodesByCondition taint and the status fields Go always writes", async () => {
  await withServer({}, async (_server, call) => {
    const res = await call("POST", "/api/v1/nodes", {
      as: "node",
      body: { metadata: { name: node }, status: { capacity: { cpu: "2" } } },
    });
    assertEquals(res.status, 201);
    assertEquals((res.body.spec as Record<string, unknown>).taints, [
      { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" },
    ]);
    const status = res.body.status as Record<string, Record<string, unknown>>;
    assertEquals(status.allocatable, { cpu: "2" });
    assertEquals(status.daemonEndpoints, { kubeletEndpoint: { Port: 0 } });
    assertEquals(status.nodeInfo.kubeletVersion, "");
  });
});
