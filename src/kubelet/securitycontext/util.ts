/**
 * A container's effective security context (the pod's settings overridden field by field by the
 * container's), the no_new_privs bit it implies, and the /proc paths to mask for its `procMount`.
 * Mirrors kubernetes' pkg/securitycontext/util.go (DetermineEffectiveSecurityContext,
 * AddNoNewPrivileges, ConvertToRuntimeMaskedPaths, ConvertToRuntimeReadonlyPaths).
 * @module
 */
import type { Container, Pod, SecurityContext } from "../../api/core/v1/mod.ts";

/**
 * `DetermineEffectiveSecurityContext`: the pod's identity and profile settings, each replaced by
 * the container's where it sets one; an empty context when neither sets anything.
 *
 * @example
 * ```ts
 * determineEffectiveSecurityContext(
 *   { metadata: {}, spec: { securityContext: { runAsUser: 1000 }, containers: [] } },
 *   { name: "c", securityContext: { runAsUser: 2000 } },
 * ).runAsUser; // 2000
 * ```
 */
export function determineEffectiveSecurityContext(
  pod: Pod,
  container: Container,
): SecurityContext {
  const effective = securityContextFromPodSecurityContext(pod);
  const containerSc = container.securityContext;
  if (effective === undefined) return structuredClone(containerSc ?? {});
  if (containerSc === undefined) return effective;
  const keys: (keyof SecurityContext)[] = [
    "seLinuxOptions",
    "windowsOptions",
    "capabilities",
    "privileged",
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "readOnlyRootFilesystem",
    "allowPrivilegeEscalation",
    "procMount",
    "seccompProfile",
    "appArmorProfile",
  ];
  for (const key of keys) {
    if (containerSc[key] !== undefined && containerSc[key] !== null) {
      (effective as Record<string, unknown>)[key] = structuredClone(containerSc[key]);
    }
  }
  return effective;
}

function securityContextFromPodSecurityContext(pod: Pod): SecurityContext | undefined {
  const podSc = pod.spec.securityContext;
  if (!podSc) return undefined;
  const synthesized: SecurityContext = {};
  if (podSc.seLinuxOptions) synthesized.seLinuxOptions = structuredClone(podSc.seLinuxOptions);
  if (podSc.windowsOptions) synthesized.windowsOptions = structuredClone(podSc.windowsOptions);
  if (podSc.runAsUser !== undefined) synthesized.runAsUser = podSc.runAsUser;
  if (podSc.runAsGroup !== undefined) synthesized.runAsGroup = podSc.runAsGroup;
  if (podSc.runAsNonRoot !== undefined) synthesized.runAsNonRoot = podSc.runAsNonRoot;
  if (podSc.seccompProfile) synthesized.seccompProfile = structuredClone(podSc.seccompProfile);
  if (podSc.appArmorProfile) synthesized.appArmorProfile = structuredClone(podSc.appArmorProfile);
  return synthesized;
}

/**
 * `AddNoNewPrivileges`: whether to set no_new_privs, i.e. `allowPrivilegeEscalation: false` was
 * asked for (unset means kubelet's default, escalation allowed).
 *
 * @example
 * ```ts
 * addNoNewPrivileges({ allowPrivilegeEscalation: false }); // true
 * addNoNewPrivileges({}); // false
 * ```
 */
export function addNoNewPrivileges(sc: SecurityContext | undefined): boolean {
  if (sc?.allowPrivilegeEscalation === undefined || sc.allowPrivilegeEscalation === null) {
    return false;
  }
  return !sc.allowPrivilegeEscalation;
}

// Kept in step with the container runtimes' defaults (moby's oci/defaults.go), as kubelet's are.
const defaultMaskedPaths = [
  "/proc/asound",
  "/proc/acpi",
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/proc/sched_debug",
  "/proc/scsi",
  "/sys/firmware",
  "/sys/devices/virtual/powercap",
];
const defaultReadonlyPaths = [
  "/proc/bus",
  "/proc/fs",
  "/proc/irq",
  "/proc/sys",
  "/proc/sysrq-trigger",
];

/**
 * `ConvertToRuntimeMaskedPaths`: the default masked paths, none for `procMount: Unmasked`.
 *
 * @example
 * ```ts
 * convertToRuntimeMaskedPaths("Default").includes("/proc/kcore"); // true
 * ```
 */
export function convertToRuntimeMaskedPaths(procMount: string | undefined): string[] {
  return procMount === "Unmasked" ? [] : [...defaultMaskedPaths];
}

/**
 * `ConvertToRuntimeReadonlyPaths`: the default read-only paths, none for `procMount: Unmasked`.
 *
 * @example
 * ```ts
 * convertToRuntimeReadonlyPaths(undefined).includes("/proc/sys"); // true
 * ```
 */
export function convertToRuntimeReadonlyPaths(procMount: string | undefined): string[] {
  return procMount === "Unmasked" ? [] : [...defaultReadonlyPaths];
}
