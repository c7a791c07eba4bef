/**
 * Node-side admission of a pod's sysctls: only the safe ones (plus `--allowed-unsafe-sysctls`,
 * which probelet does not have), and no network or IPC sysctl for a pod sharing the host's network
 * or IPC namespace. A refusal is `SysctlForbidden`.
 * Mirrors kubelet's pkg/kubelet/sysctl/allowlist.go (patternAllowlist).
 * @module
 */
import type { PodAdmitAttributes, PodAdmitResult } from "../lifecycle/predicate.ts";
import { type Namespace, namespacedBy, normalizeName } from "./namespace.ts";

const sysctlSegmentFmt = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?";
const sysctlContainSlashPatternFmt = `(${sysctlSegmentFmt}[\\./])*(${sysctlSegmentFmt}\\*?|\\*)`;
const sysctlPattern = new RegExp(`^${sysctlContainSlashPatternFmt}$`);
const sysctlMaxLength = 253;

/** policy validation's `IsValidSysctlPattern`: dotted or slashed segments, a `*` only at the end. */
function isValidSysctlPattern(name: string): boolean {
  return name.length <= sysctlMaxLength && sysctlPattern.test(name);
}

/** Reason of a pod refused for a sysctl (kubelet's `ForbiddenReason`). */
export const ForbiddenReason = "SysctlForbidden";

/**
 * kubelet's `patternAllowlist`: sysctls and prefixes (`net.ipv4.*`) known to be namespaced.
 *
 * @example
 * ```ts
 * import { getSafeSysctlAllowlist } from "./safe_sysctls.ts";
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const allowlist = newAllowlist(getSafeSysctlAllowlist());
 * allowlist.admit({ pod, otherPods: [] }); // { admit: false, reason: "SysctlForbidden", ... } for vm.swappiness
 * ```
 */
export class PatternAllowlist {
  readonly #sysctls = new Map<string, Namespace>();
  readonly #prefixes = new Map<string, Namespace>();

  constructor(patterns: string[]) {
    for (const pattern of patterns) {
      if (!isValidSysctlPattern(pattern)) {
        throw new Error(
          `sysctl ${JSON.stringify(pattern)} must have at most ${sysctlMaxLength} characters ` +
            `and match regex ${sysctlContainSlashPatternFmt}`,
        );
      }
      const s = normalizeName(pattern);
      if (s.endsWith("*")) {
        const prefix = s.slice(0, -1);
        const ns = namespacedBy(prefix);
        if (ns === "") {
          throw new Error(`the sysctls ${JSON.stringify(s)} are not known to be namespaced`);
        }
        this.#prefixes.set(prefix, ns);
      } else {
        const ns = namespacedBy(s);
        if (ns === "") {
          throw new Error(`the sysctl ${JSON.stringify(s)} are not known to be namespaced`);
        }
        this.#sysctls.set(s, ns);
      }
    }
  }

  /** kubelet's `validateSysctl`: an error when the sysctl may not be set for this pod. */
  validateSysctl(name: string, hostNet: boolean, hostIPC: boolean): Error | undefined {
    const sysctl = normalizeName(name);
    const check = (ns: Namespace) => {
      if ((ns === "ipc" && hostIPC) || (ns === "net" && hostNet)) {
        return new Error(`${JSON.stringify(sysctl)} not allowed with host ${ns} enabled`);
      }
      return undefined;
    };
    const exact = this.#sysctls.get(sysctl);
    if (exact !== undefined) return check(exact);
    for (const [prefix, ns] of this.#prefixes) {
      if (sysctl.startsWith(prefix)) return check(ns);
    }
    return new Error(`${JSON.stringify(sysctl)} not allowlisted`);
  }

  /** kubelet's `Admit`: refuses the pod at its first sysctl that may not be set. */
  admit(attrs: PodAdmitAttributes): PodAdmitResult {
    const pod = attrs.pod;
    const sysctls = pod.spec.securityContext?.sysctls ?? [];
    for (const s of sysctls) {
      const err = this.validateSysctl(
        String(s.name ?? ""),
        pod.spec.hostNetwork === true,
        pod.spec.hostIPC === true,
      );
      if (err) {
        return {
          admit: false,
          reason: ForbiddenReason,
          message: `forbidden sysctl: ${err.message}`,
        };
      }
    }
    return { admit: true };
  }
}

/**
 * `NewAllowlist`: an allowlist of sysctls and patterns ending in `*`; throws for one not known to
 * be namespaced.
 *
 * @example
 * ```ts
 * newAllowlist(["net.ipv4.*"]).validateSysctl("net.ipv4.tcp_syncookies", false, false); // undefined
 * ```
 */
export function newAllowlist(patterns: string[]): PatternAllowlist {
  return new PatternAllowlist(patterns);
}
