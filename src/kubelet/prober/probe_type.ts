/**
 * The three kinds of container probes.
 * Mirrors the probeType part of kubelet's pkg/kubelet/prober/prober_manager.go.
 * @module
 */
import type { Container, Probe } from "../../api/core/v1/mod.ts";

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

/**
 * The container's probe of this type (`container.LivenessProbe` etc. in kubelet), if any.
 *
 * @example
 * ```ts
 * probeOf({ name: "app", readinessProbe: { tcpSocket: { port: 80 } } }, "readiness"); // the probe
 * ```
 */
export function probeOf(container: Container, probeType: ProbeType): Probe | undefined {
  switch (probeType) {
    case "liveness":
      return container.livenessProbe;
    case "readiness":
      return container.readinessProbe;
    case "startup":
      return container.startupProbe;
  }
}
