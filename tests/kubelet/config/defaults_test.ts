import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { setDefaultsPod } from "../../../src/kubelet/config/defaults.ts";
import { getPodQOS } from "../../../src/kubelet/qos/qos.ts";

Deno.test("TestSetDefaultRequestsPod", async (t) => {
  await t.step("a limit without a request requests the limit", () => {
    const pod: Pod = {
      metadata: { name: "p" },
      spec: {
        initContainers: [{ name: "i", resources: { limits: { cpu: "100m" } } }],
        containers: [{
          name: "c",
          resources: { requests: { memory: "1Mi" }, limits: { cpu: "1", memory: "2Mi" } },
        }],
      },
    };
    setDefaultsPod(pod);
    assertEquals(pod.spec.initContainers![0].resources?.requests, { cpu: "100m" });
    // A request already set stays as written.
    assertEquals(pod.spec.containers[0].resources?.requests, { memory: "1Mi", cpu: "1" });
  });
  await t.step("a static pod that only limits cpu and memory is Guaranteed", () => {
    const pod: Pod = {
      metadata: { name: "p" },
      spec: { containers: [{ name: "c", resources: { limits: { cpu: "1", memory: "1Gi" } } }] },
    };
    assertEquals(getPodQOS(pod), "Burstable");
    setDefaultsPod(pod);
    assertEquals(getPodQOS(pod), "Guaranteed");
  });
  await t.step("no limits: no requests added", () => {
    const pod: Pod = { metadata: { name: "p" }, spec: { containers: [{ name: "c" }] } };
    setDefaultsPod(pod);
    assertEquals(pod.spec.containers[0].resources, undefined);
  });
});
