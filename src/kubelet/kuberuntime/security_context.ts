/**
 * A container's CRI security context: the effective pod + container settings as CRI fields, the
 * image's user when the pod names none, the pod's namespaces and supplementary groups (fsGroup
 * first), the seccomp profile, no_new_privs and the masked /proc paths.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/security_context.go (determineEffectiveSecurityContext,
 * convertToRuntimeSecurityContext, convertToRuntimeCapabilities). SELinux and AppArmor are left
 * out: this node has neither, and admission refuses pods that ask for them.
 * @module
 */
import type { Capabilities, Container, Pod, SecurityContext } from "../../api/core/v1/mod.ts";
import type { Capability, LinuxContainerSecurityContext } from "../../cri_client/api.ts";
import {
  addNoNewPrivileges,
  convertToRuntimeMaskedPaths,
  convertToRuntimeReadonlyPaths,
  determineEffectiveSecurityContext as effectiveSecurityContext,
} from "../securitycontext/util.ts";
import { getSeccompProfile } from "./helpers.ts";
import { namespacesForPod } from "./util/util.ts";

/** Where seccomp profiles live and whether RuntimeDefault applies without one. */
export interface SeccompOptions {
  /** kubelet's `<root-dir>/seccomp`: `Localhost` profiles are relative to it. */
  seccompProfileRoot: string;
  /** kubelet's `--seccomp-default`: RuntimeDefault instead of Unconfined when none is set. */
  seccompDefault: boolean;
}

/**
 * `determineEffectiveSecurityContext`: the container's CRI security context. `uid` and `username`
 * are the image's user, used when neither the pod nor the container sets `runAsUser`.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const sc = determineEffectiveSecurityContext(pod, pod.spec.containers[0], {
 *   uid: 0, username: "", seccompProfileRoot: "/var/lib/kubelet/seccomp", seccompDefault: false,
 * });
 * sc.noNewPrivs; // true when allowPrivilegeEscalation: false
 * ```
 */
export function determineEffectiveSecurityContext(
  pod: Pod,
  container: Container,
  options: SeccompOptions & { uid: number | undefined; username: string },
): LinuxContainerSecurityContext {
  const effectiveSc = effectiveSecurityContext(pod, container);
  const synthesized = convertToRuntimeSecurityContext(effectiveSc);
  synthesized.seccomp = getSeccompProfile(
    pod.spec.securityContext,
    container.securityContext,
    options,
  );
  if (synthesized.runAsUser === undefined) {
    if (options.uid !== undefined) synthesized.runAsUser = { value: options.uid };
    if (options.username) synthesized.runAsUsername = options.username;
  }
  synthesized.namespaceOptions = namespacesForPod(pod);
  const podSc = pod.spec.securityContext;
  const groups: number[] = [];
  if (podSc?.fsGroup !== undefined && podSc.fsGroup !== null) groups.push(podSc.fsGroup);
  for (const g of podSc?.supplementalGroups ?? []) groups.push(g);
  if (groups.length > 0) synthesized.supplementalGroups = groups;
  synthesized.noNewPrivs = addNoNewPrivileges(effectiveSc);
  synthesized.maskedPaths = convertToRuntimeMaskedPaths(effectiveSc.procMount);
  synthesized.readonlyPaths = convertToRuntimeReadonlyPaths(effectiveSc.procMount);
  return synthesized;
}

/**
 * `convertToRuntimeSecurityContext`: capabilities, user, group, privileged and a read-only root
 * as CRI fields.
 *
 * @example
 * ```ts
 * convertToRuntimeSecurityContext({ runAsUser: 1000, readOnlyRootFilesystem: true });
 * // { runAsUser: { value: 1000 }, readonlyRootfs: true }
 * ```
 */
export function convertToRuntimeSecurityContext(
  securityContext: SecurityContext,
): LinuxContainerSecurityContext {
  const sc: LinuxContainerSecurityContext = {};
  const capabilities = convertToRuntimeCapabilities(securityContext.capabilities);
  if (capabilities) sc.capabilities = capabilities;
  if (securityContext.runAsUser !== undefined && securityContext.runAsUser !== null) {
    sc.runAsUser = { value: securityContext.runAsUser };
  }
  if (securityContext.runAsGroup !== undefined && securityContext.runAsGroup !== null) {
    sc.runAsGroup = { value: securityContext.runAsGroup };
  }
  if (securityContext.privileged) sc.privileged = true;
  if (securityContext.readOnlyRootFilesystem) sc.readonlyRootfs = true;
  return sc;
}

/**
 * `convertToRuntimeCapabilities`: the added and dropped capabilities, as written (`NET_ADMIN`,
 * `ALL`).
 *
 * @example
 * ```ts
 * convertToRuntimeCapabilities({ drop: ["ALL"] }); // { addCapabilities: [], dropCapabilities: ["ALL"] }
 * ```
 */
export function convertToRuntimeCapabilities(
  opts: Capabilities | undefined,
): Capability | undefined {
  if (!opts) return undefined;
  return { addCapabilities: [...(opts.add ?? [])], dropCapabilities: [...(opts.drop ?? [])] };
}
