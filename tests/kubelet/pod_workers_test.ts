/**
 * The effective grace period of a pod's termination (kubelet's pod_workers.go
 * calculateEffectiveGracePeriod).
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import { calculateEffectiveGracePeriod } from "../../src/kubelet/pod_workers.ts";

function pod(terminationGracePeriodSeconds?: number, deletionGracePeriodSeconds?: number): Pod {
  return {
    metadata: deletionGracePeriodSeconds === undefined ? {} : { deletionGracePeriodSeconds },
    spec: { containers: [], terminationGracePeriodSeconds },
  };
}

Deno.test("calculateEffectiveGracePeriod", async (t) => {
  const cases: [string, number, Pod, { override?: number }, number][] = [
    ["the pod's own grace period by default", 0, pod(30), {}, 30],
    ["a shorter deletion grace period wins", 0, pod(30, 5), {}, 5],
    ["a longer deletion grace period wins too when none is in force", 0, pod(30, 60), {}, 60],
    ["it only decreases once termination started", 5, pod(30, 10), {}, 5],
    ["an override (eviction) shortens it", 30, pod(30), { override: 2 }, 2],
    ["grace 0 becomes 1 s", 0, pod(30, 0), {}, 1],
    ["no grace period at all becomes 1 s", 0, pod(), {}, 1],
  ];
  for (const [name, current, p, options, want] of cases) {
    await t.step(name, () => {
      assertEquals(calculateEffectiveGracePeriod(current, p, options), {
        gracePeriod: want,
        hasGracePeriod: true,
      });
    });
  }
});
