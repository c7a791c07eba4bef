/**
 * The sandbox config of a pod: its metadata, labels, log folder, namespaces and host ports.
 * Mirrors generatePodSandboxConfig in kubelet's pkg/kubelet/kuberuntime/kuberuntime_sandbox.go.
 * @module
 */
import { buildPodLogsDirectory } from "./helpers.ts";
import type { Pod } from "../../api/core/v1/mod.ts";
import type { DNSConfig, PodSandboxConfig } from "../../cri_client/api.ts";
import { newPodAnnotations, newPodLabels, probeletPodStartTimeAnnotation } from "./labels.ts";

/** Inputs of {@linkcode generatePodSandboxConfig} besides the pod. */
export interface PodSandboxConfigOptions {
  /** Attempt number of the sandbox (0 for the first, one more for each re-creation). */
  attempt: number;
  /** Absolute folder under which pod log folders are created. */
  podLogsRootDir: string;
  /** The owning node, put in probelet's node label. */
  nodeName: string;
  /** The pod's status `startTime`, recorded for a restarted agent (annotation). */
  podStartTime?: string;
  /** The sandbox's DNS configuration (kubelet's `GetPodDNS`); none: the runtime's default. */
  dnsConfig?: DNSConfig;
  /**
   * The kernel host name of a pod outside the host network (`spec.hostname` or the pod's name,
   * as FQDN with `setHostnameAsFQDN`); default: the pod's name cut to 63 characters.
   */
  hostname?: string;
}

/**
 * The sandbox config of the pod (kubelet's `generatePodSandboxConfig`).
 *
 * @example
 * ```ts
 * const config = generatePodSandboxConfig(pod, { attempt: 0, podLogsRootDir: "/var/log/pods",
 *   nodeName: "node-a" });
 * config.labels["io.kubernetes.pod.uid"]; // the pod's UID
 * ```
 */
export function generatePodSandboxConfig(
  pod: Pod,
  options: PodSandboxConfigOptions,
): PodSandboxConfig {
  const { attempt } = options;
  const name = pod.metadata.name ?? "";
  const namespace = pod.metadata.namespace ?? "";
  const uid = pod.metadata.uid ?? "";
  const hostNetwork = pod.spec.hostNetwork === true;
  const config: PodSandboxConfig = {
    metadata: { name, namespace, uid, attempt },
    logDirectory: buildPodLogsDirectory(options.podLogsRootDir, { namespace, name, uid }),
    labels: newPodLabels(pod, { nodeName: options.nodeName }),
    annotations: {
      ...newPodAnnotations(pod),
      ...(options.podStartTime ? { [probeletPodStartTimeAnnotation]: options.podStartTime } : {}),
    },
    linux: {
      securityContext: {
        namespaceOptions: { network: hostNetwork ? "NODE" : "POD", pid: "CONTAINER", ipc: "POD" },
      },
    },
  };
  if (options.dnsConfig) config.dnsConfig = options.dnsConfig;
  if (!hostNetwork) config.hostname = options.hostname ?? name.slice(0, 63);
  const portMappings = [...(pod.spec.containers ?? [])].flatMap((c) =>
    (c.ports ?? []).filter((p) => p.hostPort).map((p) => ({
      protocol: p.protocol ?? "TCP",
      containerPort: p.containerPort,
      hostPort: p.hostPort,
      hostIp: p.hostIP,
    }))
  );
  if (portMappings.length > 0) config.portMappings = portMappings;
  return config;
}
