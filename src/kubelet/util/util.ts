/**
 * Small helpers of the kubelet's: the host name a pod's kernel gets.
 * Mirrors GetNodenameForKernel in kubelet's pkg/kubelet/util/util.go.
 * @module
 */

/**
 * The host name the kernel gets (kubelet's `GetNodenameForKernel`): the FQDN when
 * `setHostnameAsFQDN` is true and the pod has a domain, else the short name.
 *
 * @example
 * ```ts
 * getNodenameForKernel("web-0", "web.default.svc.cluster.local", true); // "web-0.web.default.svc.cluster.local"
 * ```
 */
export function getNodenameForKernel(
  hostname: string,
  hostDomainName: string,
  setHostnameAsFQDN: boolean | undefined,
): string {
  if (!setHostnameAsFQDN || hostDomainName === "") return hostname;
  const fqdn = `${hostname}.${hostDomainName}`;
  // The kernel's limit on a host name.
  if (fqdn.length > 64) {
    throw new Error(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long ` +
        `(64 characters is the max, ${fqdn.length} characters requested)`,
    );
  }
  return fqdn;
}
