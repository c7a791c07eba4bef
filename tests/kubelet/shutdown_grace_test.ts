/** The grace period a stop of the agent gives each pod (kubelet's node shutdown manager). */
import assert from "node:assert/strict";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import {
  calculateEffectiveGracePeriod,
  shutdownGracePeriodOverride,
} from "../../src/kubelet/pod_workers.ts";

function pod(terminationGracePeriodSeconds?: number): Pod {
  return {
    metadata: { name: "web", namespace: "default", uid: "u" },
    spec: { containers: [], terminationGracePeriodSeconds },
  } as Pod;
}

Deno.test("shutdownGracePeriodOverride: the shorter of the pod's grace and the shutdown's", () => {
  assert.equal(shutdownGracePeriodOverride(pod(2), 30), 2);
  assert.equal(shutdownGracePeriodOverride(pod(30), 30), 30);
  assert.equal(shutdownGracePeriodOverride(pod(60), 30), 30);
  assert.equal(shutdownGracePeriodOverride(pod(undefined), 30), 30);
  assert.equal(shutdownGracePeriodOverride(pod(2), undefined), undefined);
});

Deno.test("a stop never lengthens a pod's short grace period to the shutdown grace period", () => {
  // The worker of a pod that was never deleted has grace period 0: before the fix the shutdown's
  // 30 s replaced the pod's 2 s, and a PID 1 ignoring SIGTERM held the stop for 30 s.
  const p = pod(2);
  const { gracePeriod } = calculateEffectiveGracePeriod(0, p, {
    override: shutdownGracePeriodOverride(p, 30),
  });
  assert.equal(gracePeriod, 2);
});
