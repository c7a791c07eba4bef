// scripts/audit_refusals.ts reads kube-apiserver's JSON-lines audit log: only a node identity's
// 403 and 5xx answers count, whatever else the log holds.
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { nodeRefusals } from "../../scripts/audit_refusals.ts";

function entry(
  user: string,
  code: number,
  verb = "get",
  uri = "/api/v1/nodes/n1",
  objectRef?: Record<string, string>,
): string {
  return JSON.stringify({
    objectRef,
    kind: "Event",
    apiVersion: "audit.k8s.io/v1",
    level: "Metadata",
    stage: "ResponseComplete",
    requestURI: uri,
    verb,
    user: { username: user, groups: ["system:authenticated"] },
    responseStatus: { metadata: {}, code },
  });
}

Deno.test("nodeRefusals: a node's 403 and 5xx answers, nothing else", () => {
  const log = [
    entry("system:node:n1", 200),
    entry(
      "system:node:n1",
      404,
      "get",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
    ),
    entry("system:node:n1", 403, "list", "/api/v1/pods"),
    entry("system:node:n1", 409, "update"),
    entry("system:node:n1", 503, "patch", "/api/v1/nodes/n1/status"),
    entry("probelet-admin", 403),
    entry("system:serviceaccount:kube-system:node-controller", 500),
    "",
  ].join("\n");
  assertEquals(nodeRefusals(log), [
    "403 list /api/v1/pods system:node:n1",
    "503 patch /api/v1/nodes/n1/status system:node:n1",
  ]);
});

Deno.test("nodeRefusals: an empty log has none", () => {
  assertEquals(nodeRefusals(""), []);
});

Deno.test("nodeRefusals: a node's 403 GET of a pod deleted before and not created again is the node authorizer's not-found", () => {
  const uri = "/api/v1/namespaces/default/pods/static-n1";
  const ref = { resource: "pods", namespace: "default", name: "static-n1", apiVersion: "v1" };
  const node = "system:node:n1";
  const log = [
    // Before any delete: a refusal.
    entry(node, 403, "get", uri, ref),
    entry("probelet-admin", 200, "delete", uri, ref),
    entry(node, 403, "get", uri, ref),
    // A 403 on another verb, or on the status subresource, still counts.
    entry(node, 403, "patch", `${uri}/status`, { ...ref, subresource: "status" }),
    entry(node, 201, "create", "/api/v1/namespaces/default/pods", ref),
    // Created again: a 403 is a refusal once more.
    entry(node, 403, "get", uri, ref),
  ].join("\n");
  assertEquals(nodeRefusals(log), [
    `403 get ${uri} ${node}`,
    `403 patch ${uri}/status ${node}`,
    `403 get ${uri} ${node}`,
  ]);
});

Deno.test("nodeRefusals: a node's 403 GET of a pod evicted before (kubectl drain) is the node authorizer's not-found", () => {
  const uri = "/api/v1/namespaces/default/pods/job-n1";
  const ref = { resource: "pods", namespace: "default", name: "job-n1", apiVersion: "v1" };
  const node = "system:node:n1";
  const log = [
    entry("probelet-admin", 201, "create", `${uri}/eviction`, { ...ref, subresource: "eviction" }),
    entry(node, 403, "get", uri, ref),
    // A refused eviction removes nothing.
    entry("probelet-admin", 429, "create", `${uri}2/eviction`, {
      ...ref,
      name: "job-n12",
      subresource: "eviction",
    }),
    entry(node, 403, "get", `${uri}2`, { ...ref, name: "job-n12" }),
  ].join("\n");
  assertEquals(nodeRefusals(log), [`403 get ${uri}2 ${node}`]);
});
