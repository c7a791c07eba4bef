/**
 * The three kinds of container probes.
 * Mirrors the probeType part of kubelet's pkg/kubelet/prober/prober_manager.go.
 * @module
 */

/** Which probe a worker runs. */
export type ProbeType = "liveness" | "readiness" | "startup";

/** kubelet's display text of each probe type (`probeType.String()`). */
export const probeTypeName: Record<ProbeType, string> = {
  liveness: "Liveness",
  readiness: "Readiness",
  startup: "Startup",
};

/**
 * `probeType.String()`: the display name, or `UNKNOWN` for anything else.
 *
 * @example
 * ```ts
 * probeTypeString("readiness"); // "Readiness"
 * probeTypeString("bogus"); // "UNKNOWN"
 * ```
 */
export function probeTypeString(type: string): string {
  return Object.hasOwn(probeTypeName, type) ? probeTypeName[type as ProbeType] : "UNKNOWN";
}
