/**
 * `runAsNonRoot` checked before a container is created: against the pod's or container's
 * `runAsUser` when set, else against the image's user as the runtime reports it.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/security_context_others.go (verifyRunAsNonRoot).
 * @module
 */
import type { Container, Pod } from "../../api/core/v1/mod.ts";
import { determineEffectiveSecurityContext } from "../securitycontext/util.ts";
import { formatPod } from "../util/format.ts";

const maxInt32 = 2147483647;

/**
 * `verifyRunAsNonRoot`: an error (kubelet's message) when the container would run as root while
 * `runAsNonRoot: true` is asked for, or when the image's user cannot be verified; undefined when
 * it may run. `uid` and `username` are the image's (`ImageStatus`), `uid` undefined when the image
 * names its user by name.
 *
 * @example
 * ```ts
 * import type { Container, Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 * declare const container: Container;
 *
 * verifyRunAsNonRoot(pod, container, { uid: 0, username: "" })?.message;
 * // `container has runAsNonRoot and image will run as root (pod: "web_default(1234)", container: app)`
 * ```
 */
export function verifyRunAsNonRoot(
  pod: Pod,
  container: Container,
  image: { uid: number | undefined; username: string },
): Error | undefined {
  const effectiveSc = determineEffectiveSecurityContext(pod, container);
  // Unset, or running as root is allowed.
  if (effectiveSc.runAsNonRoot !== true) return undefined;
  const where = `(pod: ${JSON.stringify(formatPod(pod))}, container: ${container.name})`;
  if (effectiveSc.runAsUser !== undefined && effectiveSc.runAsUser !== null) {
    if (effectiveSc.runAsUser === 0) {
      return new Error(`container's runAsUser breaks non-root policy ${where}`);
    }
    return undefined;
  }
  const { uid, username } = image;
  if (uid === undefined && username.length > 0) {
    return new Error(
      `container has runAsNonRoot and image has non-numeric user (${username}), cannot verify ` +
        `user is non-root ${where}`,
    );
  }
  if (uid !== undefined) {
    if (uid === 0) {
      return new Error(`container has runAsNonRoot and image will run as root ${where}`);
    }
    if (!(uid >= 0 && uid <= maxInt32)) {
      return new Error(
        `container has runAsNonRoot and image has an invalid user id (${uid}). (Must be ` +
          `1-(${maxInt32})): must be between 0 and ${maxInt32}, inclusive ${where}`,
      );
    }
  }
  return undefined;
}
