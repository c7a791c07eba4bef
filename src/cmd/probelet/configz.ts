/**
 * The agent's effective configuration as kubelet's `/configz` shows it: a `KubeletConfiguration`
 * of `kubelet.config.k8s.io/v1beta1` with the fields this agent has, in kubelet's field order,
 * durations in Go's notation. The debugging switches are the ones this agent honours:
 * debugging handlers on (`/containerLogs` is served), system logs, profiling and debug flags off.
 * Mirrors kubelet's cmd/kubelet/app/server.go (`setConfigz`) and the field names of
 * k8s.io/kubelet/config/v1beta1/types.go.
 * @module
 */
import { join } from "node:path";
import { goDuration } from "../../util/go_format.ts";
import { binarySI } from "../../kubelet/cadvisor/cadvisor.ts";
import type { KubeletFlags } from "./flags.ts";

/** The ports actually bound (a 0 on the command line picks one at start). */
export interface BoundPorts {
  /** The secure port (`--port`), when served. */
  port?: number;
  /** The read-only port (`--read-only-port`), when served. */
  readOnlyPort?: number;
}

/**
 * The `KubeletConfiguration` `/configz` reports for these flags.
 *
 * @example
 * ```ts
 * import { defaultFlags } from "./flags.ts";
 *
 * kubeletConfiguration(defaultFlags(), { port: 10250 }).port; // 10250
 * ```
 */
export function kubeletConfiguration(
  flags: KubeletFlags,
  ports: BoundPorts,
): Record<string, unknown> {
  return {
    kind: "KubeletConfiguration",
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    enableServer: ports.port !== undefined || ports.readOnlyPort !== undefined,
    staticPodPath: flags.podManifestPath,
    podLogsDir: join(flags.rootDir, "pods"),
    syncFrequency: goDuration(flags.syncFrequencyMs),
    fileCheckFrequency: goDuration(flags.fileCheckFrequencyMs),
    address: flags.address,
    port: ports.port ?? 0,
    readOnlyPort: ports.readOnlyPort ?? 0,
    tlsCertFile: flags.tlsCertFile || undefined,
    tlsPrivateKeyFile: flags.tlsPrivateKeyFile || undefined,
    authentication: {
      x509: { clientCAFile: flags.clientCAFile || undefined },
      webhook: {
        enabled: flags.authenticationTokenWebhook,
        cacheTTL: goDuration(flags.authenticationTokenWebhookCacheTtlMs),
      },
      anonymous: { enabled: flags.anonymousAuth },
    },
    authorization: {
      mode: flags.authorizationMode,
      webhook: {
        cacheAuthorizedTTL: goDuration(flags.authorizationWebhookCacheAuthorizedTtlMs),
        cacheUnauthorizedTTL: goDuration(flags.authorizationWebhookCacheUnauthorizedTtlMs),
      },
    },
    eventRecordQPS: flags.eventRecordQPS,
    eventBurst: flags.eventBurst,
    enableDebuggingHandlers: true,
    clusterDomain: flags.clusterDomain || undefined,
    clusterDNS: flags.clusterDNS.length > 0 ? flags.clusterDNS : undefined,
    nodeStatusUpdateFrequency: goDuration(flags.nodeStatusUpdateFrequencyMs),
    nodeStatusReportFrequency: goDuration(flags.nodeStatusReportFrequencyMs),
    nodeLeaseDurationSeconds: flags.nodeLeaseDurationSeconds,
    runtimeRequestTimeout: goDuration(flags.runtimeRequestTimeoutMs),
    maxPods: flags.maxPods,
    evictionHard: flags.evictionHard,
    resolvConf: flags.resolvConf,
    kubeAPIQPS: flags.kubeAPIQPS,
    kubeAPIBurst: flags.kubeAPIBurst,
    containerLogMaxSize: binarySI(flags.containerLogMaxSizeBytes),
    containerLogMaxFiles: flags.containerLogMaxFiles,
    containerLogMaxWorkers: flags.containerLogMaxWorkers,
    containerLogMonitorInterval: goDuration(flags.containerLogMonitorIntervalMs),
    enableSystemLogHandler: false,
    shutdownGracePeriod: goDuration(flags.shutdownGracePeriodMs),
    logging: {
      format: flags.loggingFormat,
      verbosity: flags.verbosity,
    },
    enableProfilingHandler: false,
    enableDebugFlagsHandler: false,
    registerWithTaints: flags.registerWithTaints.length > 0 ? flags.registerWithTaints : undefined,
    registerNode: flags.registerNode,
    containerRuntimeEndpoint: flags.containerRuntimeEndpoint || undefined,
  };
}
