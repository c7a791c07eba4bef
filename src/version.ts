/**
 * The Kubernetes release probelet matches: kubelet v1.36.3. Its `gitVersion` is what node status
 * reports as `kubeletVersion`; major and minor make the user agents (`kube-probe/1.36`).
 * Mirrors the parts of k8s.io/component-base/version (`version.Get()`) kubelet uses.
 * @module
 */

/**
 * The release, as kubelet's `version.Get()`: `gitVersion` is `version.Get().String()`.
 *
 * No suffix is added: a semver pre-release such as `-probelet` would make the version sort before
 * v1.36.3 in every `>= v1.36.3` check (apimachinery's util/version, kubeadm's skew checks), and
 * the differential suite compares `kubeletVersion` with the real kubelet's.
 */
export const kubernetesVersion = { major: "1", minor: "36", gitVersion: "v1.36.3" } as const;

/**
 * `kube-<purpose>/<major>.<minor>`, kubelet's probe user agent for `purpose = "probe"`.
 *
 * @example
 * ```ts
 * kubeUserAgent(); // "kube-probe/1.36"
 * ```
 */
export function kubeUserAgent(purpose = "probe"): string {
  return `kube-${purpose}/${kubernetesVersion.major}.${kubernetesVersion.minor}`;
}
