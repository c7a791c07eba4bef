/**
 * The grace period a pod is killed with: the API server's deletion grace period wins when it is
 * shorter, a grace period only ever decreases once termination started, the pod's own
 * `terminationGracePeriodSeconds` is the default, and it is never below 1 s.
 * Mirrors kubelet's pkg/kubelet/pod_workers.go (calculateEffectiveGracePeriod).
 * @module
 */
import type { Pod } from "../api/core/v1/mod.ts";

/**
 * Computes the grace period (seconds) to kill `pod` with. `current` is the grace period already
 * in force for this pod's termination (0 = none yet); `override` is a faster termination asked
 * for inside the kubelet (eviction). Returns the period and whether one was set.
 *
 * @example
 * ```ts
 * calculateEffectiveGracePeriod(0, { metadata: { deletionGracePeriodSeconds: 5 }, spec: { containers: [], terminationGracePeriodSeconds: 30 } });
 * // { gracePeriod: 5, hasGracePeriod: true }
 * ```
 */
export function calculateEffectiveGracePeriod(
  current: number,
  pod: Pod,
  options: { override?: number } = {},
): { gracePeriod: number; hasGracePeriod: boolean } {
  let gracePeriod = current;
  let overridden = false;
  // The API server's value is the truth for a deleted pod; it can only shorten the period.
  const deletion = pod.metadata.deletionGracePeriodSeconds;
  if (deletion !== undefined && (gracePeriod === 0 || deletion < gracePeriod)) {
    gracePeriod = deletion;
    overridden = true;
  }
  if (options.override !== undefined && (gracePeriod === 0 || options.override < gracePeriod)) {
    gracePeriod = options.override;
    overridden = true;
  }
  // Without any request, the pod's own intent.
  if (!overridden && gracePeriod === 0 && pod.spec.terminationGracePeriodSeconds !== undefined) {
    gracePeriod = pod.spec.terminationGracePeriodSeconds;
  }
  // Never less than 1 s.
  if (gracePeriod < 1) gracePeriod = 1;
  return { gracePeriod, hasGracePeriod: gracePeriod !== 0 };
}
