import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Node } from "../../../src/api/core/v1/mod.ts";
import {
  patchNodeStatus,
  preparePatchBytesForNodeStatus,
} from "../../../src/kubelet/nodestatus/patch.ts";
import { strategicMergePatch } from "../../../src/util/strategicpatch/patch.ts";
import { nodeSchema } from "../../../src/util/strategicpatch/schema.ts";
import { FakeClientset } from "../../testing/fake_clientset.ts";

function node(status: Node["status"], spec: Node["spec"] = {}): Node {
  return { metadata: { name: "n1", uid: "u1" }, spec, status };
}

Deno.test("TestPreparePatchBytesForNodeStatus", async (t) => {
  await t.step("Ready flips: the brief's vector, byte for byte", () => {
    const oldNode = node({
      conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady" }],
    });
    const newNode = node({
      conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }],
    });
    assertEquals(
      preparePatchBytesForNodeStatus(oldNode, newNode),
      '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":' +
        '[{"reason":"KubeletReady","status":"True","type":"Ready"}]}}',
    );
  });
  await t.step("spec changes are never sent", () => {
    const oldNode = node({}, { unschedulable: false });
    const newNode = node({}, { unschedulable: true, taints: [{ key: "k", effect: "NoSchedule" }] });
    assertEquals(preparePatchBytesForNodeStatus(oldNode, newNode), "{}");
  });
  await t.step("heartbeat only: one condition with its new time", () => {
    const c = { type: "Ready", status: "True" as const, reason: "KubeletReady" };
    const oldNode = node({
      conditions: [
        { ...c, type: "MemoryPressure", lastHeartbeatTime: "2026-11-23T05:00:00Z" },
        { ...c, lastHeartbeatTime: "2026-11-23T05:00:00Z" },
      ],
    });
    const newNode = node({
      conditions: [
        { ...c, type: "MemoryPressure", lastHeartbeatTime: "2026-11-23T05:00:00Z" },
        { ...c, lastHeartbeatTime: "2026-11-23T05:05:00Z" },
      ],
    });
    assertEquals(
      preparePatchBytesForNodeStatus(oldNode, newNode),
      '{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"Ready"}],' +
        '"conditions":[{"lastHeartbeatTime":"2026-11-23T05:05:00Z","type":"Ready"}]}}',
    );
  });
  await t.step("changed addresses are replaced whole", () => {
    const oldNode = node({
      addresses: [
        { type: "InternalIP", address: "10.0.0.1" },
        { type: "Hostname", address: "n1" },
      ],
    });
    const newNode = node({
      addresses: [
        { type: "InternalIP", address: "10.0.0.2" },
        { type: "InternalIP", address: "fd00::2" },
        { type: "Hostname", address: "n1" },
      ],
    });
    const patch = preparePatchBytesForNodeStatus(oldNode, newNode);
    assertEquals(
      patch,
      '{"status":{"addresses":[{"address":"10.0.0.2","type":"InternalIP"},' +
        '{"address":"fd00::2","type":"InternalIP"},{"address":"n1","type":"Hostname"},' +
        '{"$patch":"replace"}]}}',
    );
    // Applied as the API server does, both InternalIPs survive (a merge by type would fold them).
    const applied = strategicMergePatch(oldNode, JSON.parse(patch), nodeSchema);
    assertEquals(applied.status?.addresses, newNode.status?.addresses);
  });
  await t.step("first addresses are an ordinary merge", () => {
    const patch = preparePatchBytesForNodeStatus(
      node({}),
      node({ addresses: [{ type: "Hostname", address: "n1" }] }),
    );
    assertEquals(patch, '{"status":{"addresses":[{"address":"n1","type":"Hostname"}]}}');
  });
  await t.step("Go's escaping of <, > and &", () => {
    const patch = preparePatchBytesForNodeStatus(
      node({ conditions: [{ type: "Ready", status: "True" }] }),
      node({
        conditions: [{
          type: "Ready",
          status: "False",
          message: "container runtime network not ready: <nil> & more",
        }],
      }),
    );
    assertEquals(
      patch,
      '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"message":' +
        '"container runtime network not ready: \\u003cnil\\u003e \\u0026 more","status":"False",' +
        '"type":"Ready"}]}}',
    );
  });
});

Deno.test("TestPatchNodeStatus", async () => {
  const client = new FakeClientset({ kind: "Node", ...node({ conditions: [] }) });
  const newNode = node({ conditions: [{ type: "Ready", status: "True" }] });
  const { node: updated, patch } = await patchNodeStatus(client.coreV1.nodes(), {
    oldNode: node({ conditions: [] }),
    newNode,
  });
  const action = client.actions[0];
  assertEquals(
    [action.verb, action.resource, action.subresource, action.name, action.patchType],
    ["patch", "nodes", "status", "n1", "application/strategic-merge-patch+json"],
  );
  assertEquals(action.patch, patch);
  assertEquals(updated.status?.conditions, [{ type: "Ready", status: "True" }]);
});
