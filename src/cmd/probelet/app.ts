/**
 * Assembles the node agent from its flags: the runtime (a CRI endpoint, or the embedded runtime),
 * the `Kubelet`, its HTTP server and the live view. `runKubelet` is what `main.ts` runs and what the
 * end-to-end tests start in-process.
 * Mirrors kubelet's cmd/kubelet/app/server.go (RunKubelet), reduced.
 * @module
 */
import { join, resolve } from "node:path";
import { newRemoteRuntimeService } from "../../cri_client/remote_runtime.ts";
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import { type Kubelet, type KubeletOptions, newMainKubelet } from "../../kubelet/kubelet.ts";
import type { EmbeddedRuntimeService } from "../../runtime/embedded/mod.ts";
import {
  type KubeletServer,
  type SecureKubeletServer,
  serve,
  serveKubeletServer,
} from "../../kubelet/server/server.ts";
import type { ReviewPoster } from "../../kubelet/server/delegating_auth.ts";
import { buildAuth, initializeTLS, newServingCertificateManager, type TLSOptions } from "./auth.ts";
import { kubeletConfiguration } from "./configz.ts";
import type { Manager } from "../../kubelet/certificate/certificate_manager.ts";
import { type EventRecorder, LogRecorder } from "../../kubelet/events/mod.ts";
import { EventBroadcaster, EventSinkImpl } from "../../client/record/mod.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { type FileLock, LockHeldError, tryLockFile } from "../../util/flock.ts";
import { defaultFlags, type KubeletFlags, parseNodeIP } from "./flags.ts";
import { ProbePool } from "../../probe/pool/pool.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import { RemoteImageService } from "../../cri_client/remote_image.ts";
import type { Secret } from "../../credentialprovider/keyring.ts";
import { newSimpleSecretManager } from "../../kubelet/secret/secret_manager.ts";
import type { HTTPClientset } from "../../client/kubernetes/clientset.ts";
import { newNodeAgent, type NodeAgent } from "./apiserver_mode.ts";
import { buildKubeClients, type KubeClients } from "./kube_clients.ts";

/** Options of {@linkcode runKubelet}: the flags plus test hooks. */
export interface RunKubeletOptions extends Partial<KubeletFlags> {
  clock?: Clock;
  /** CrashLoopBackOff timing (default kubelet's 10 s doubling to 5 min). */
  backOff?: KubeletOptions["backOff"];
  /** Event recorders besides the in-memory list (default: the structured log). */
  recorders?: EventRecorder[];
  /**
   * API-server mode with these clients instead of ones built from `kubeconfig` (tests hand in a
   * fake or the double's clients).
   */
  clients?: { kubeClient: Clientset; heartbeatClient: Clientset; eventClient: Clientset };
  /** Jitter source of the node status and lease loops (tests). */
  random?: () => number;
}

/** A running agent. */
export interface RunningKubelet {
  kubelet: Kubelet;
  runtime: RuntimeService;
  /** The HTTP server; absent when `port: -1` disabled it. */
  server?: KubeletServer;
  /** `http://address:port` of the server, if any. */
  url?: string;
  /** The secure port's server (`--port`); absent when not served. */
  secureServer?: SecureKubeletServer;
  /**
   * The serving certificate's manager: the CSR-issued one with `--rotate-server-certificates`,
   * else the files' (reloaded when they change); absent without a secure port.
   */
  serverCertificateManager?: Manager;
  /** API-server mode: the node's status reporting and lease. */
  node?: NodeAgent;
  /**
   * Whether {@linkcode stop} stops the pods (`--stop-pods-on-exit`; default true on the embedded
   * runtime, false on a CRI runtime, where pods keep running for the next start to adopt).
   */
  stopPodsOnExit: boolean;
  /** Stops the agent (and its pods if `stopPodsOnExit`), the server and the runtime; idempotent. */
  stop(): Promise<void>;
  /**
   * Synchronously SIGKILLs the embedded runtime's running exec probes and, unless pods are left
   * running on exit, its containers: for an exit that cannot wait. A CRI runtime's containers are
   * left to it.
   */
  kill(): void;
}

/**
 * Starts the agent: connects (or creates) the runtime, starts the HTTP server and the kubelet.
 * With `port: 0` a free port is chosen; with `port: -1` no server is started.
 *
 * @example
 * ```ts
 * const agent = await runKubelet({ podManifestPath: "fixtures/pods/host", port: 0, rootDir: ".run/t" });
 * agent.kubelet.pods();
 * await agent.stop();
 * ```
 */
export async function runKubelet(options: RunKubeletOptions = {}): Promise<RunningKubelet> {
  const flags: KubeletFlags = { ...defaultFlags(), ...stripUndefined(options) };
  // Absolute, as kubelet's --root-dir: the paths under it become CRI mount sources (the managed
  // /etc/hosts, volumes), which runc would resolve inside its bundle folder if relative.
  flags.rootDir = resolve(flags.rootDir);
  const clock = options.clock ?? new RealClock();
  // One agent per state folder, and the port bound before anything is cleaned up: a second
  // agent started by mistake must stop here, leaving the first one's containers alone.
  const lock = await lockRootDir(flags.rootDir);
  let server: KubeletServer | undefined;
  let secureServer: SecureKubeletServer | undefined;
  let tlsOptions: TLSOptions | undefined;
  let fileCertificateManager: Manager | undefined;
  // Set once the API clients exist: TokenReview and SubjectAccessReview go through them.
  const reviews: { post?: ReviewPoster } = {};
  try {
    if (flags.port >= 0) {
      server = serve(undefined, {
        hostname: flags.address,
        port: flags.port,
        idleTimeoutMs: flags.httpIdleTimeoutMs,
        rootDir: flags.rootDir,
      });
    }
    // The secure port is the command line's (default 10250); an in-process caller asks for it.
    const securePort = options.securePort ?? -1;
    if (securePort >= 0) {
      tlsOptions = await initializeTLS(flags, { nodeIPs: parseNodeIP(flags.nodeIP) });
      // Bound without a certificate: handshakes fail until its manager hands one over (just
      // below for files; once the API client and the node's addresses exist for a CSR).
      secureServer = await serveKubeletServer(undefined, {
        hostname: flags.address,
        port: securePort,
        idleTimeoutMs: flags.httpIdleTimeoutMs,
        minVersion: tlsOptions.minVersion,
        auth: await buildAuth(flags, { clock, post: () => reviews.post }),
        requestClientCert: flags.clientCAFile !== "",
        rootDir: flags.rootDir,
        configz: () =>
          kubeletConfiguration(flags, { port: secureServer?.port, readOnlyPort: server?.port }),
      });
      if (!flags.rotateServerCertificates) {
        // The files are served from the start; the CSR-issued certificate needs the API client
        // and the node's addresses (startAgent).
        const secure = secureServer;
        fileCertificateManager = await newServingCertificateManager(flags, tlsOptions, {
          clock,
          setCertificate: (c) => secure.setCertificate(c),
        });
      }
    }
    return await startAgent(flags, options, {
      clock,
      lock,
      server,
      secureServer,
      tlsOptions,
      fileCertificateManager,
      reviews,
    });
  } catch (e) {
    await server?.shutdown().catch(() => {});
    await secureServer?.shutdown().catch(() => {});
    lock.release();
    throw e;
  }
}

/**
 * Locks `<rootDir>/probelet.lock`; a held lock becomes an error saying which agent holds it and
 * that nothing was touched.
 */
async function lockRootDir(rootDir: string): Promise<FileLock> {
  await Deno.mkdir(rootDir, { recursive: true });
  const path = join(rootDir, "probelet.lock");
  try {
    return tryLockFile(path);
  } catch (e) {
    if (!(e instanceof LockHeldError)) throw e;
    throw new Error(
      `another probelet${e.holderPid ? ` (pid ${e.holderPid})` : ""} is using --root-dir ` +
        `${rootDir} (lock ${path}): exiting without touching its pods or state`,
      { cause: e },
    );
  }
}

/** What runKubelet claimed before startAgent: the clock, the root-dir lock and the servers. */
interface ClaimedAgent {
  clock: Clock;
  lock: FileLock;
  server: KubeletServer | undefined;
  secureServer: SecureKubeletServer | undefined;
  tlsOptions: TLSOptions | undefined;
  fileCertificateManager: Manager | undefined;
  reviews: { post?: ReviewPoster };
}

/**
 * Everything a running agent holds, filled in the order startAgent makes it and released in
 * reverse by stopAgent. `node` and `serverCertificateManager` come last: they need the kubelet.
 */
interface AgentParts extends ClaimedAgent {
  flags: KubeletFlags;
  clients: KubeClients | undefined;
  runtime: RuntimeService;
  embedded: EmbeddedRuntimeService | undefined;
  imageService: RemoteImageService | undefined;
  broadcaster: EventBroadcaster | undefined;
  probePool: ProbePool | undefined;
  /** Made first thing in the start (newMainKubelet asks the runtime for its name). */
  kubelet: Kubelet | undefined;
  stopPodsOnExit: boolean;
  node: NodeAgent | undefined;
  serverCertificateManager: Manager | undefined;
}

async function startAgent(
  flags: KubeletFlags,
  options: RunKubeletOptions,
  claimed: ClaimedAgent,
): Promise<RunningKubelet> {
  const { clock } = claimed;
  // API-server mode: clients first, so a wrong kubeconfig or identity fails before anything runs.
  let clients: KubeClients | undefined;
  const api = options.clients ??
    (flags.kubeconfig ? (clients = await buildKubeClients(flags, { clock })) : undefined);
  if (api && "rest" in api.kubeClient) {
    const rest = (api.kubeClient as HTTPClientset).rest;
    claimed.reviews.post = (path, body) => rest.json({ method: "POST", path, body });
  }
  const { runtime, embedded, imageService } = await connectRuntime(flags, clock).catch((e) => {
    clients?.close();
    throw e;
  });
  const { broadcaster, recorders } = newEventRecorders(flags, {
    clock,
    eventClient: api?.eventClient,
    recorders: options.recorders,
  });
  // Handlers on pool threads time themselves on the wall clock, so a test clock keeps them here.
  const workers = options.probeWorkers ?? (options.clock ? 0 : flags.probeWorkers);
  const probePool = workers > 0 ? new ProbePool(workers) : undefined;
  const parts: AgentParts = {
    ...claimed,
    flags,
    clients,
    runtime,
    embedded,
    imageService,
    broadcaster,
    probePool,
    kubelet: undefined,
    stopPodsOnExit: flags.stopPodsOnExit ?? embedded !== undefined,
    node: undefined,
    serverCertificateManager: claimed.fileCertificateManager,
  };
  let stopped: Promise<void> | undefined;
  const stop = () => stopped ??= stopAgent(parts);
  let kubelet: Kubelet;
  try {
    // The node agent reporting the Node starts after the kubelet (startNodeServices); the
    // kubelet reads it only once running.
    kubelet = parts.kubelet = await newAgentKubelet(flags, options, {
      runtime,
      clock,
      imageService,
      recorders,
      probePool,
      api,
      node: () => parts.node,
    });
    await startNodeServices(parts, { api, options, kubelet });
    await kubelet.run();
  } catch (e) {
    await stop().catch((err) => log.error(err, "Cleanup after a failed start failed"));
    throw e;
  }
  const { server, secureServer } = parts;
  const host = server && (server.hostname.includes(":") ? `[${server.hostname}]` : server.hostname);
  return {
    kubelet,
    runtime,
    server,
    secureServer,
    serverCertificateManager: parts.serverCertificateManager,
    url: server ? `http://${host}:${server.port}` : undefined,
    node: parts.node,
    stopPodsOnExit: parts.stopPodsOnExit,
    stop,
    kill: () => killAgent(parts),
  };
}

/** The kubelet of the agent, from the flags and what startAgent made for it. */
function newAgentKubelet(
  flags: KubeletFlags,
  options: RunKubeletOptions,
  made: {
    runtime: RuntimeService;
    clock: Clock;
    imageService: RemoteImageService | undefined;
    recorders: EventRecorder[] | undefined;
    probePool: ProbePool | undefined;
    api: RunKubeletOptions["clients"];
    node: () => NodeAgent | undefined;
  },
): Promise<Kubelet> {
  const { runtime, clock, imageService, recorders, probePool, api, node } = made;
  return newMainKubelet({
    runtime,
    clock,
    nodeName: flags.nodeName,
    rootDir: flags.rootDir,
    podManifestPath: flags.podManifestPath || undefined,
    syncFrequencyMs: flags.syncFrequencyMs,
    fileCheckFrequencyMs: flags.fileCheckFrequencyMs,
    containerLogPolicy: {
      maxSizeBytes: flags.containerLogMaxSizeBytes,
      maxFiles: flags.containerLogMaxFiles,
      maxWorkers: flags.containerLogMaxWorkers,
      monitorIntervalMs: flags.containerLogMonitorIntervalMs,
    },
    gcPolicy: { maxPerPodContainer: flags.maxPerPodContainer, minAgeMs: flags.minimumGCAgeMs },
    backOff: options.backOff,
    imageService,
    getSecret: api && "rest" in api.kubeClient
      ? secretGetter(api.kubeClient as HTTPClientset)
      : undefined,
    recorders,
    probePool,
    // API-server mode: pods bound to this node, their statuses, mirror pods, admission.
    kubeClient: api?.kubeClient,
    getNode: () => node()?.nodeStatus.lastNode,
    initialNode: api ? () => node()!.nodeStatus.initialNode() : undefined,
    maxPods: flags.maxPods,
    hostIP: parseNodeIP(flags.nodeIP)[0],
    clusterDNS: flags.clusterDNS,
    clusterDomain: flags.clusterDomain,
    resolverConfig: flags.resolvConf,
  });
}

/**
 * The container runtime: the CRI endpoint's (with its ImageService, which kubelet's image manager
 * pulls through), or the embedded one, which adopts the containers a previous run left running,
 * rotates logs as kubelet's flags say, and with --stop-pods-on-exit=false leaves its containers
 * running at exit for the next start.
 */
async function connectRuntime(flags: KubeletFlags, clock: Clock): Promise<{
  runtime: RuntimeService;
  embedded?: EmbeddedRuntimeService;
  imageService?: RemoteImageService;
}> {
  if (flags.containerRuntimeEndpoint) {
    const runtime = await newRemoteRuntimeService(flags.containerRuntimeEndpoint, {
      requestTimeoutMs: flags.runtimeRequestTimeoutMs,
    });
    const imageService = new RemoteImageService(flags.containerRuntimeEndpoint, {
      requestTimeoutMs: flags.runtimeRequestTimeoutMs,
    });
    return { runtime, imageService };
  }
  // Loaded only here: a node on a CRI endpoint never pays for the embedded runtime's modules
  // (with its streaming server, ≈ 190 KB of source).
  const { EmbeddedRuntimeService } = await import("../../runtime/embedded/mod.ts");
  const embedded = new EmbeddedRuntimeService({
    rootDir: join(flags.rootDir, "embedded"),
    clock,
    containerLogMaxSizeBytes: flags.containerLogMaxSizeBytes,
    containerLogMaxFiles: flags.containerLogMaxFiles,
    stopContainersOnShutdown: flags.stopPodsOnExit ?? true,
  });
  // What cannot be adopted (execs of a killed agent, unreadable records) would hold ports.
  embedded.killLeftoverProcesses();
  return { runtime: embedded, embedded };
}

/**
 * The kubelet's event recorders: the caller's (default: the log), plus in API-server mode one
 * that sends events through client-go's correlator, as kubelet's makeEventRecorder sets up
 * (source: component kubelet, host = node name).
 */
function newEventRecorders(
  flags: KubeletFlags,
  options: { clock: Clock; eventClient?: Clientset; recorders?: EventRecorder[] },
): { broadcaster?: EventBroadcaster; recorders?: EventRecorder[] } {
  if (!options.eventClient) return { recorders: options.recorders };
  const broadcaster = new EventBroadcaster({ clock: options.clock });
  broadcaster.startRecordingToSink(new EventSinkImpl(options.eventClient));
  const recorders = [
    ...(options.recorders ?? [new LogRecorder()]),
    broadcaster.newRecorder({ component: "kubelet", host: flags.nodeName }),
  ];
  return { broadcaster, recorders };
}

/**
 * Hands the kubelet to the servers, then in API-server mode starts the node agent (status and
 * lease), and the CSR-issued serving certificate's manager once the node's addresses can exist.
 */
async function startNodeServices(
  parts: AgentParts,
  context: { api: RunKubeletOptions["clients"]; options: RunKubeletOptions; kubelet: Kubelet },
): Promise<void> {
  const { flags, clock, server, secureServer, tlsOptions } = parts;
  const { api, options, kubelet } = context;
  server?.setSource(kubelet);
  secureServer?.setSource(kubelet);
  if (api) {
    const images = parts.embedded ?? parts.imageService!;
    const node = await newNodeAgent({
      flags,
      clock,
      kubeClient: api.kubeClient,
      heartbeatClient: api.heartbeatClient,
      runtime: parts.runtime,
      listImages: () => images.listImages(),
      recorder: kubelet.events,
      // kubelet's daemonEndpoints: the port the API server dials, the secure one when served.
      kubeletPort: () => secureServer?.port ?? server?.port ?? flags.port,
      // kubelet's closeAllConns: a half-open connection must not hold the heartbeat (nor the
      // pod watch) back.
      onRepeatedHeartbeatFailure: () => {
        log.info("Heartbeat failed repeatedly, closing the API clients' connections");
        parts.clients?.closeAllConns();
      },
      random: options.random,
    });
    parts.node = node;
    node.nodeStatus.runtimeState.addHealthCheck("PLEG", () => kubelet.plegHealthy());
    node.start();
  }
  if (secureServer && tlsOptions && flags.rotateServerCertificates) {
    // kubelet's serverCertificateManager: the CSR-issued certificate for the node's observed
    // addresses.
    parts.serverCertificateManager = await newServingCertificateManager(flags, tlsOptions, {
      clock,
      kubeClient: api?.kubeClient,
      getAddresses: () => parts.node?.nodeStatus.lastNode?.status?.addresses ?? [],
      setCertificate: (c) => secureServer.setCertificate(c),
    });
  }
  parts.serverCertificateManager?.start();
}

/**
 * Stops the pods (unless they are left running), then releases everything in reverse order of
 * making: each pod gets at most the shutdown grace period; past it (plus time to remove what
 * stopped), whatever still runs is killed so that the stop ends.
 */
async function stopAgent(parts: AgentParts): Promise<void> {
  const { flags, clock } = parts;
  try {
    const graceSeconds = Math.floor(flags.shutdownGracePeriodMs / 1000);
    await withDeadline(
      parts.kubelet?.stop({
        leavePodsRunning: !parts.stopPodsOnExit,
        gracePeriodOverrideSeconds: graceSeconds,
      }) ?? Promise.resolve(),
      { clock, ms: flags.shutdownGracePeriodMs + stopSlackMs },
      () => {
        log.info("Shutdown grace period exceeded, killing what is left", {
          shutdownGracePeriod: `${graceSeconds}s`,
        });
        killAgent(parts);
      },
    );
  } finally {
    parts.probePool?.close();
    // The node keeps its heartbeat until its pods are down.
    await parts.node?.stop().catch((e) => log.error(e, "Failed to stop node status reporting"));
    // Events still queued are dropped at exit, as kubelet's are; one being written finishes.
    await parts.broadcaster?.shutdown();
    await parts.serverCertificateManager?.stop();
    parts.clients?.close();
    parts.imageService?.close();
    await parts.server?.shutdown().catch(() => {});
    await parts.secureServer?.shutdown().catch(() => {});
    if (parts.embedded) await parts.embedded.shutdown();
    else parts.runtime.close();
    parts.lock.release();
  }
}

/**
 * The last resort (a second signal, a stop past its deadline): SIGKILLs the running exec probes
 * the embedded runtime started, and its containers unless --stop-pods-on-exit=false leaves them
 * for the next start. A CRI runtime's containers stay with the runtime, which tracks them.
 */
function killAgent(parts: AgentParts): void {
  parts.embedded?.killAll();
}

/** Time a stop may take beyond the shutdown grace period: removing what was stopped. */
export const stopSlackMs = 5_000;

/** Waits for `work`; if it is not done after `ms`, calls `onTimeout` once and waits on. */
async function withDeadline(
  work: Promise<void>,
  deadline: { clock: Clock; ms: number },
  onTimeout: () => void,
): Promise<void> {
  const timer = deadline.clock.afterFunc(deadline.ms, onTimeout);
  try {
    await work;
  } finally {
    timer.stop();
  }
}

/**
 * Reads a pod's pull secret through the API (kubelet's secret manager in `Get` mode, the one
 * secret volumes use; the node authorizer allows a node to read the secrets its pods name).
 */
function secretGetter(
  client: HTTPClientset,
): (namespace: string, name: string) => Promise<Secret> {
  const manager = newSimpleSecretManager(client.rest);
  return (namespace, name) => manager.getSecret(namespace, name);
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
