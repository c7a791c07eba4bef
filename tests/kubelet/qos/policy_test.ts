import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import { getContainerOOMScoreAdjust } from "../../../src/kubelet/qos/policy.ts";

const standardMemoryAmount = 8000000000;

function pod(resources: Container["resources"]): Pod {
  return {
    metadata: { name: "p" },
    spec: { containers: [{ name: "c", image: "busybox", resources }] },
  };
}

Deno.test("TestGetContainerOOMScoreAdjust", async (t) => {
  const cases: { name: string; pod: Pod; lowOOMScoreAdj: number; highOOMScoreAdj: number }[] = [
    {
      name: "cpuLimit",
      pod: pod({ limits: { cpu: "10" } }),
      lowOOMScoreAdj: 999,
      highOOMScoreAdj: 999,
    },
    {
      name: "memoryLimit",
      pod: pod({ limits: { memory: "4000000000" } }),
      lowOOMScoreAdj: 999,
      highOOMScoreAdj: 999,
    },
    {
      name: "zeroMemoryLimit (BestEffort)",
      pod: pod({}),
      lowOOMScoreAdj: 1000,
      highOOMScoreAdj: 1000,
    },
    {
      name: "equalRequestsAndLimits (Guaranteed)",
      pod: pod({
        requests: { cpu: "1", memory: "1Gi" },
        limits: { cpu: "1", memory: "1Gi" },
      }),
      lowOOMScoreAdj: -998,
      highOOMScoreAdj: -998,
    },
    {
      name: "burstable: half the node's memory requested",
      pod: pod({ requests: { memory: "4000000000" } }),
      lowOOMScoreAdj: 500,
      highOOMScoreAdj: 500,
    },
    {
      name: "burstable: more than the node's memory requested stays above Guaranteed",
      pod: pod({ requests: { memory: "9000000000" } }),
      lowOOMScoreAdj: 2,
      highOOMScoreAdj: 2,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const adj = getContainerOOMScoreAdjust(c.pod, c.pod.spec.containers[0], standardMemoryAmount);
      assertEquals(adj >= c.lowOOMScoreAdj && adj <= c.highOOMScoreAdj, true, `got ${adj}`);
    });
  }
});
