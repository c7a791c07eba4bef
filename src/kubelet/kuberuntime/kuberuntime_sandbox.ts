/**
 * The sandbox config of a pod: its metadata, labels, log folder, host ports, and its Linux part —
 * namespaces, the pod's user, group and supplementary groups, privileged when any container is,
 * the RuntimeDefault seccomp profile, sysctls, and the pod's resources.
 * Mirrors generatePodSandboxConfig and generatePodSandboxLinuxConfig in kubelet's
 * pkg/kubelet/kuberuntime/kuberuntime_sandbox.go. No cgroup parent is passed: probelet has no pod
 * cgroups (kubelet's pod container manager), so the runtime places the sandbox as it does by
 * default. Also `getSandboxIDByPodUID` and `GetPortForward` (the CRI `PortForward` URL).
 * @module
 */
import { buildPodLogsDirectory } from "./helpers.ts";
import type { Pod } from "../../api/core/v1/mod.ts";
import type { DNSConfig, LinuxPodSandboxConfig, PodSandboxConfig } from "../../cri_client/api.ts";
import {
  kubernetesPodUIDLabel,
  newPodAnnotations,
  newPodLabels,
  probeletPodStartTimeAnnotation,
} from "./labels.ts";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import { unimplemented } from "./kuberuntime_container.ts";
import { applySandboxResources } from "./kuberuntime_sandbox_linux.ts";
import { normalizeName } from "../sysctl/namespace.ts";
import { namespacesForPod } from "./util/util.ts";

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
  /** kubelet's `--cpu-cfs-quota` (default true), for the sandbox's resources. */
  cpuCFSQuota?: boolean;
}

/**
 * The sandbox config of the pod (kubelet's `generatePodSandboxConfig`).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const config = generatePodSandboxConfig(pod, { attempt: 0, podLogsRootDir: "/var/log/pods",
 *   nodeName: "node-a" });
 * config.labels?.["io.kubernetes.pod.uid"]; // the pod's UID
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
    linux: generatePodSandboxLinuxConfig(pod),
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
  applySandboxResources(pod, config, { cpuCFSQuota: options.cpuCFSQuota ?? true });
  return config;
}

/**
 * kubelet's `generatePodSandboxLinuxConfig`: the sandbox's security context and sysctls.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * generatePodSandboxLinuxConfig(pod).securityContext?.seccomp; // { profileType: "RuntimeDefault" }
 * ```
 */
export function generatePodSandboxLinuxConfig(pod: Pod): LinuxPodSandboxConfig {
  const lc: LinuxPodSandboxConfig = {
    securityContext: {
      privileged: hasPrivilegedContainer(pod),
      // The sandbox always runs RuntimeDefault, so that pods may use least-privilege profiles.
      seccomp: { profileType: "RuntimeDefault" },
      namespaceOptions: namespacesForPod(pod),
    },
    sysctls: {},
  };
  const sc = pod.spec.securityContext;
  // kubelet's ConvertPodSysctlsVariableToDotsSeparator: `net/ipv4/...` names in dotted form.
  for (const s of sc?.sysctls ?? []) {
    lc.sysctls![normalizeName(String(s.name ?? ""))] = String(s.value ?? "");
  }
  if (sc) {
    const lsc = lc.securityContext!;
    if (sc.runAsUser !== undefined && sc.runAsUser !== null) {
      lsc.runAsUser = { value: sc.runAsUser };
    }
    if (sc.runAsGroup !== undefined && sc.runAsGroup !== null) {
      lsc.runAsGroup = { value: sc.runAsGroup };
    }
    const groups: number[] = [];
    if (sc.fsGroup !== undefined && sc.fsGroup !== null) groups.push(sc.fsGroup);
    for (const g of sc.supplementalGroups ?? []) groups.push(g);
    if (groups.length > 0) lsc.supplementalGroups = groups;
  }
  return lc;
}

/** kubecontainer's `HasPrivilegedContainer`: whether any container of the pod is privileged. */
export function hasPrivilegedContainer(pod: Pod): boolean {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some((c) =>
    c.securityContext?.privileged === true
  );
}

/**
 * kubelet's `getSandboxIDByPodUID`: the IDs of the pod's sandboxes, newest first.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const [latest] = await getSandboxIDByPodUID(runtime, "6e4e0e5c");
 * ```
 */
export async function getSandboxIDByPodUID(
  runtime: Pick<RuntimeService, "listPodSandbox">,
  podUID: string,
): Promise<string[]> {
  const sandboxes = await runtime.listPodSandbox({
    labelSelector: { [kubernetesPodUIDLabel]: podUID },
  });
  return [...sandboxes].sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1)).map((s) => s.id);
}

/**
 * kubelet's `GetPortForward` (kuberuntime_sandbox.go): asks the runtime (CRI `PortForward`) where
 * it forwards `ports` of the pod's newest sandbox; resolves with the URL.
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 *
 * declare const runtime: RuntimeService;
 *
 * const pod = { name: "web", namespace: "default", uid: "6e4e0e5c" };
 * const url = await getPortForward(runtime, pod, [8080]);
 * ```
 */
export async function getPortForward(
  runtime: Pick<RuntimeService, "listPodSandbox" | "portForward">,
  pod: { name: string; namespace: string; uid: string },
  ports: number[],
): Promise<URL> {
  const desc = `${pod.name}_${pod.namespace}(${pod.uid})`;
  let sandboxIDs: string[];
  try {
    sandboxIDs = await getSandboxIDByPodUID(runtime, pod.uid);
  } catch (e) {
    throw new Error(
      `failed to find sandboxID for pod ${desc}: ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
  }
  if (sandboxIDs.length === 0) throw new Error(`failed to find sandboxID for pod ${desc}`);
  if (!runtime.portForward) throw unimplemented("PortForward");
  const { url } = await runtime.portForward({ podSandboxId: sandboxIDs[0], port: ports });
  return new URL(url);
}
