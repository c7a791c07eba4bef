import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { getNodeAllocatableReservation } from "../../../src/kubelet/cm/node_container_manager.ts";
import { parseThresholdStatements } from "../../../src/kubelet/eviction/helpers.ts";

Deno.test("TestNodeAllocatableReservationForScheduling", async (t) => {
  const capacity = {
    cpu: "4",
    memory: "24684092Ki",
    "ephemeral-storage": "264212084Ki",
    pods: "110",
  };
  await t.step("scripts/kubelet.sh's thresholds: what kubelet v1.36.3 reserved", () => {
    const hardEvictionThresholds = parseThresholdStatements({
      "memory.available": "1Mi",
      "nodefs.available": "1%",
      "nodefs.inodesFree": "1%",
      "imagefs.available": "1%",
      "imagefs.inodesFree": "1%",
    });
    assertEquals(getNodeAllocatableReservation(capacity, { hardEvictionThresholds }), {
      memory: "1Mi",
      "ephemeral-storage": "2705531679",
    });
  });
  await t.step("kube- and system-reserved add to the thresholds; zero is left out", () => {
    const hardEvictionThresholds = parseThresholdStatements({ "memory.available": "100Mi" });
    assertEquals(
      getNodeAllocatableReservation(capacity, {
        hardEvictionThresholds,
        systemReserved: { cpu: "500m", memory: "100Mi" },
        kubeReserved: { cpu: "500m", pods: "0" },
      }),
      { cpu: "1", memory: "200Mi" },
    );
  });
  await t.step("no thresholds, nothing reserved", () => {
    assertEquals(getNodeAllocatableReservation(capacity, { hardEvictionThresholds: [] }), {});
  });
});
