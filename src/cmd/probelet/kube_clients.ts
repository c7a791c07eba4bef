/**
 * The API clients of API-server mode, built from `--kubeconfig` the way kubelet builds them: the
 * main client throttled by `--kube-api-qps/--kube-api-burst`, an unthrottled heartbeat client for
 * node status and the lease (its timeout bounded by the status period and the lease duration),
 * and an event client throttled by `--event-qps/--event-burst`. The client certificate must name
 * this node (`system:node:<node name>`), or the node authorizer refuses every request.
 * Mirrors the client parts of kubelet's cmd/kubelet/app/server.go (buildKubeletClientConfig,
 * the heartbeat client config, makeEventRecorder's client).
 * @module
 */
import { certificateIdentity, loadKubeconfig } from "../../client/kubeconfig.ts";
import type { RestConfig } from "../../client/rest.ts";
import { type HTTPClientset, newForConfig } from "../../client/kubernetes/clientset.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import type { KubeletFlags } from "./flags.ts";

/** The three clients of a kubelet. */
export interface KubeClients {
  /** Pods, mirror pods, registration: `--kube-api-qps/--kube-api-burst`. */
  kubeClient: HTTPClientset;
  /** Node status and lease: no rate limit. */
  heartbeatClient: HTTPClientset;
  /** Events: `--event-qps/--event-burst`. */
  eventClient: HTTPClientset;
  /**
   * Drops the pooled connections of all three clients (kubelet's closeAllConns on repeated
   * heartbeat failures: its clients share one dialer, so the pod watch's connection goes too).
   */
  closeAllConns(): void;
  /** Releases every connection. */
  close(): void;
}

/**
 * How long the pod watch may stay silent before the agent ends and re-opens it. Go's client finds
 * a dead connection with HTTP/2 pings (about 45 s); Deno's fetch sends none, so a dead watch would
 * go unnoticed until its deadline (`timeoutSeconds` + 1 min, up to 11 min). kube-apiserver sends
 * a BOOKMARK roughly every minute (cacher's defaultBookmarkFrequency) once the resource has moved
 * on, so 2.5 minutes of silence is at least two missed bookmarks. In a cluster where no pod
 * changes, a live watch is simply re-opened from the same resourceVersion (one GET); a re-watch
 * that gets no answer for as long drops the client's connections and dials afresh.
 */
export const podWatchIdleTimeoutMs = 150_000;

/** The prefix of a kubelet's user name in its client certificate. */
export const nodeUserPrefix = "system:node:";

/**
 * Throws when the client certificate names another node than `nodeName`; a certificate that is
 * not a node identity (or no certificate: token auth) is let through with a log line.
 *
 * @example
 * ```ts
 * import type { RestConfig } from "../../client/rest.ts";
 *
 * declare const config: RestConfig;
 *
 * checkNodeIdentity(config, "node-1", "/etc/probelet/kubeconfig");
 * ```
 */
export function checkNodeIdentity(config: RestConfig, nodeName: string, kubeconfig: string): void {
  if (!config.certData) {
    log.info("No client certificate in the kubeconfig: the node identity is not checked", {
      kubeconfig,
    });
    return;
  }
  const { commonName } = certificateIdentity(config.certData);
  if (!commonName.startsWith(nodeUserPrefix)) {
    log.info("The client certificate is not a node identity; the node authorizer will not apply", {
      kubeconfig,
      user: commonName,
    });
    return;
  }
  const certNode = commonName.slice(nodeUserPrefix.length);
  if (certNode !== nodeName) {
    throw new Error(
      `node name "${nodeName}" does not match the client certificate's identity ` +
        `"${commonName}" (${kubeconfig}): the API server only lets a kubelet act as the node its ` +
        `certificate names; run with --node-name=${certNode} or use a certificate for ` +
        `"${nodeUserPrefix}${nodeName}"`,
    );
  }
}

/**
 * Loads `--kubeconfig`, checks the node identity and builds the clients.
 *
 * @example
 * ```ts
 * import type { KubeletFlags } from "./flags.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const flags: KubeletFlags;
 * declare const clock: Clock;
 *
 * const clients = await buildKubeClients(flags, { clock });
 * await clients.kubeClient.coreV1.nodes().get(flags.nodeName);
 * clients.close();
 * ```
 */
export async function buildKubeClients(
  flags: KubeletFlags,
  options: { clock: Clock },
): Promise<KubeClients> {
  const { config } = await loadKubeconfig(flags.kubeconfig);
  checkNodeIdentity(config, flags.nodeName, flags.kubeconfig);
  const clock = options.clock;
  // Only the pod watch runs on this client: the heartbeat and event clients never watch.
  const kubeClient = newForConfig(
    { ...config, qps: flags.kubeAPIQPS, burst: flags.kubeAPIBurst },
    { clock, watchIdleTimeoutMs: podWatchIdleTimeoutMs },
  );
  // A heartbeat must not wait behind throttled requests, nor hang past the next one.
  const heartbeatClient = newForConfig({
    ...config,
    qps: -1,
    timeoutMs: Math.min(flags.nodeStatusUpdateFrequencyMs, flags.nodeLeaseDurationSeconds * 1000),
  }, { clock });
  const eventClient = newForConfig(
    { ...config, qps: flags.eventRecordQPS, burst: flags.eventBurst },
    { clock },
  );
  return {
    kubeClient,
    heartbeatClient,
    eventClient,
    closeAllConns() {
      kubeClient.closeAllConns();
      heartbeatClient.closeAllConns();
      eventClient.closeAllConns();
    },
    close() {
      kubeClient.close();
      heartbeatClient.close();
      eventClient.close();
    },
  };
}
