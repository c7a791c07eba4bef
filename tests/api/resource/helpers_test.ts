import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { podLimits, podRequests } from "../../../src/api/resource/helpers.ts";

function pod(spec: Partial<Pod["spec"]>): Pod {
  return { metadata: { name: "p" }, spec: { containers: [], ...spec } };
}

Deno.test("TestPodRequestsAndLimits", async (t) => {
  await t.step("containers are summed", () => {
    const p = pod({
      containers: [
        { name: "a", resources: { requests: { cpu: "100m", memory: "1Mi" } } },
        { name: "b", resources: { requests: { cpu: "150m" } } },
      ],
    });
    assertEquals(podRequests(p), { cpu: 250, memory: 1048576000 });
  });
  await t.step("an init container larger than the rest sets the request", () => {
    const p = pod({
      initContainers: [{ name: "i", resources: { requests: { cpu: "2" } } }],
      containers: [{ name: "a", resources: { requests: { cpu: "1" } } }],
    });
    assertEquals(podRequests(p), { cpu: 2000 });
  });
  await t.step("sidecars add up with the containers and later init containers", () => {
    const p = pod({
      initContainers: [
        { name: "s", restartPolicy: "Always", resources: { requests: { cpu: "1" } } },
        { name: "i", resources: { requests: { cpu: "2" } } },
      ],
      containers: [{ name: "a", resources: { requests: { cpu: "1" } } }],
    });
    // The init container runs with the sidecar: 3; afterwards 1 + 1.
    assertEquals(podRequests(p), { cpu: 3000 });
  });
  await t.step("overhead is added unless excluded", () => {
    const p = pod({
      containers: [{ name: "a", resources: { limits: { memory: "1Ki" } } }],
      overhead: { memory: "1Ki" },
    });
    assertEquals(podLimits(p), { memory: 2048000 });
    assertEquals(podLimits(p, { excludeOverhead: true }), { memory: 1024000 });
  });
});
