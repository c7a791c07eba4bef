// scripts/audit_refusals.ts reads kube-apiserver's JSON-lines audit log: only a node identity's
// 403 and 5xx answers count, whatever else the log holds.
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { nodeRefusals } from "../../scripts/audit_refusals.ts";

function entry(user: string, code: number, verb = "get", uri = "/api/v1/nodes/n1"): string {
  return JSON.stringify({
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
