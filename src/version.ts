/**
 * The Kubernetes version probelet claims to be, used in user agents (`kube-probe/1.35`).
 * @module
 */

/** Major and minor version, as kubelet's `version.Get()`. */
export const kubernetesVersion = { major: "1", minor: "35" } as const;

/** `kube-<purpose>/<major>.<minor>`, kubelet's probe user agent for `purpose = "probe"`. */
export function kubeUserAgent(purpose = "probe"): string {
  return `kube-${purpose}/${kubernetesVersion.major}.${kubernetesVersion.minor}`;
}
