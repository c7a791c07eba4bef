/**
 * Command-line flags of the node agent, with kubelet's flag names where kubelet has the flag.
 * Parsing follows pflag's conventions (`--name=value`, `--name value`, `-v=4`, booleans without a
 * value) and its error texts (`unknown flag: --foo`, `invalid argument "x" for "--port" flag: ...`).
 * Mirrors the flag part of kubelet's cmd/kubelet/app/options.
 * @module
 */

import { isIP } from "node:net";
import { parseQuantity } from "../../api/resource/quantity.ts";
import { DefaultEvictionHard, parseThresholdStatements } from "../../kubelet/eviction/helpers.ts";
import { isQualifiedName, isValidLabelValue } from "../../util/validation/validation.ts";

/** Effect of a node taint, as core/v1's TaintEffect. */
export type TaintEffect = "NoSchedule" | "PreferNoSchedule" | "NoExecute";

/** A taint given with `--register-with-taints` (core/v1 Taint without timeAdded). */
export interface RegisterTaint {
  key: string;
  /** Omitted when empty, as the API serialises it. */
  value?: string;
  effect: TaintEffect;
}

/** The parsed configuration of one run. */
export interface KubeletFlags {
  /** Folder (or file) of static pod manifests. */
  podManifestPath: string;
  /** `unix:///path/to/socket` of a CRI runtime; empty = the embedded runtime. */
  containerRuntimeEndpoint: string;
  /** Name this node reports. */
  nodeName: string;
  /** Where the agent keeps its state (logs of containers, the embedded runtime's files). */
  rootDir: string;
  /** Log verbosity, klog's `-v`. */
  verbosity: number;
  /** Address the HTTP server listens on. */
  address: string;
  /**
   * The read-only port. In code 0 picks a free port and a negative value serves none; on the
   * command line `--read-only-port 0` disables it, as kubelet's does (parsed as -1).
   */
  port: number;
  /** The secure port (`--port`, kubelet's 10250; 0 = a free port; negative = not served). */
  securePort: number;
  /** `--tls-cert-file`: the serving certificate (chain); empty = self-signed in `<root-dir>/pki`. */
  tlsCertFile: string;
  /** `--tls-private-key-file`. */
  tlsPrivateKeyFile: string;
  /** `--cert-dir`: where the self-signed and the CSR-issued pairs live; "" = `<root-dir>/pki`. */
  certDir: string;
  /**
   * `--rotate-server-certificates` (kubelet's `serverTLSBootstrap`): the serving certificate is
   * requested through the CSR API (signer `kubernetes.io/kubelet-serving`) and renewed.
   */
  rotateServerCertificates: boolean;
  /** `--tls-cipher-suites`: Go's cipher suite names; empty = the TLS stack's defaults. */
  tlsCipherSuites: string[];
  /** `--tls-min-version`: `VersionTLS12` or `VersionTLS13` ("" = TLS 1.2). */
  tlsMinVersion: string;
  /** `--client-ca-file`: CAs whose client certificates authenticate; empty = none. */
  clientCAFile: string;
  /** `--anonymous-auth`: requests without credentials as `system:anonymous`. */
  anonymousAuth: boolean;
  /** `--authentication-token-webhook`: bearer tokens through TokenReview. */
  authenticationTokenWebhook: boolean;
  /** `--authentication-token-webhook-cache-ttl`, milliseconds. */
  authenticationTokenWebhookCacheTtlMs: number;
  /** `--authorization-mode`: `AlwaysAllow` or `Webhook` (SubjectAccessReview). */
  authorizationMode: "AlwaysAllow" | "Webhook";
  /** `--authorization-webhook-cache-authorized-ttl`, milliseconds. */
  authorizationWebhookCacheAuthorizedTtlMs: number;
  /** `--authorization-webhook-cache-unauthorized-ttl`, milliseconds. */
  authorizationWebhookCacheUnauthorizedTtlMs: number;
  /** Timeout of every runtime call except long-running ones, in milliseconds. */
  runtimeRequestTimeoutMs: number;
  /** Period of each pod's resync when no event asks for one, in milliseconds (kubelet: 1 min). */
  syncFrequencyMs: number;
  /** Dead instances kept per container (`--maximum-dead-containers-per-container`); < 0: all. */
  maxPerPodContainer: number;
  /** Minimum age of a dead container before GC removes it, in ms (`--minimum-container-ttl-duration`). */
  minimumGCAgeMs: number;
  /**
   * Stop every pod when the agent stops (`--stop-pods-on-exit`). Undefined: true on the embedded
   * runtime (a laptop user's host processes), false on a CRI runtime (kubelet leaves pods running).
   */
  stopPodsOnExit?: boolean;
  /** Log format: `text` (klog's header and key=value pairs) or `json` (kubelet's JSON logging). */
  loggingFormat: "text" | "json";
  /** How often the manifest folder is checked for changes, in milliseconds. */
  fileCheckFrequencyMs: number;
  /** Cap on the time a stop gives pods to end (kubelet's `shutdownGracePeriod`), milliseconds. */
  shutdownGracePeriodMs: number;
  /** HTTP connections idle this long are closed, in milliseconds. */
  httpIdleTimeoutMs: number;
  /** Live view on the terminal: `auto` (when stdout is a TTY), `always` or `never`. */
  liveView: "auto" | "always" | "never";
  /** kubeconfig file of the API server; empty = standalone (static pods only). */
  kubeconfig: string;
  /** `--node-ip`: one IP or a comma-separated dual-stack pair; empty = looked up. */
  nodeIP: string;
  /** `--cluster-dns`: the nameservers of `ClusterFirst` pods; empty = the `Default` policy's. */
  clusterDNS: string[];
  /** `--cluster-domain`: the cluster's DNS domain, searched by pods before the host's. */
  clusterDomain: string;
  /** `--resolv-conf`: the resolver file `Default`-policy pods get; "" = none. */
  resolvConf: string;
  /** Labels added at registration (`--node-labels`). */
  nodeLabels: Record<string, string>;
  /** Register the Node with the API server (only with a kubeconfig). */
  registerNode: boolean;
  /** Taints the Node is created with; they never change on an existing Node. */
  registerWithTaints: RegisterTaint[];
  /** How often node status is computed and posted when changed, in milliseconds. */
  nodeStatusUpdateFrequencyMs: number;
  /** How often node status is posted even when unchanged, in milliseconds. */
  nodeStatusReportFrequencyMs: number;
  /** Duration of the node lease, in seconds; renewed every quarter of it. */
  nodeLeaseDurationSeconds: number;
  /** QPS of the main API client (0 = client-go's default 5). */
  kubeAPIQPS: number;
  /** Burst of the main API client (0 = client-go's default 10). */
  kubeAPIBurst: number;
  /** QPS of event writes (0 = client-go's default 5). */
  eventRecordQPS: number;
  /** Burst of event writes (0 = client-go's default 10). */
  eventBurst: number;
  /** Pod capacity reported in node status (`capacity.pods`). */
  maxPods: number;
  /**
   * `--eviction-hard`: hard eviction thresholds by signal (`memory.available: "100Mi"`); they are
   * reserved from allocatable as kubelet does (probelet evicts nothing). Default kubelet's.
   */
  evictionHard: Record<string, string>;
  /** Size at which a container's log is rotated (`--container-log-max-size`), in bytes. */
  containerLogMaxSizeBytes: number;
  /** Log files kept per container, the current one included (`--container-log-max-files`). */
  containerLogMaxFiles: number;
  /** Containers whose logs are rotated at once (`--container-log-max-workers`). */
  containerLogMaxWorkers: number;
  /** How often logs are checked for rotation (`--container-log-monitor-interval`). */
  containerLogMonitorIntervalMs: number;
  /** Threads running HTTP, TCP and gRPC probes (probelet's own; 0 = on the main thread). */
  probeWorkers: number;
  /** `--help` was given. */
  help: boolean;
  /** `--version` was given. */
  version: boolean;
}

/** A command-line error; the CLI prints it with a usage hint and exits with code 2. */
export class FlagError extends Error {
  /** Creates the error with pflag's message. */
  constructor(message: string) {
    super(message);
    this.name = "FlagError";
  }
}

type FlagKind =
  | "string"
  | "int"
  | "duration"
  | "bool"
  | "enum"
  | "labels"
  | "taints"
  | "ips"
  | "iplist"
  | "quantity"
  | "strings"
  | "langleMap";

interface FlagDef {
  name: string;
  kind: FlagKind;
  key: keyof KubeletFlags;
  usage: string;
  defaultText: string;
  aliases?: string[];
  values?: string[];
  /** A duration (or int) that must be greater than zero (a zero period would busy-loop). */
  positive?: boolean;
  /** An int that must not be negative; the text is kubelet's config validation name. */
  nonNegative?: boolean;
  /** An int's own bounds and kubelet's error text when it is outside them. */
  intRange?: { min: number; max?: number; message: string };
}

const portRange = { min: 0, max: 65535, message: "port must be between 0 and 65535" };

const flagDefs: FlagDef[] = [
  {
    name: "pod-manifest-path",
    kind: "string",
    key: "podManifestPath",
    usage: "Path to the directory (or file) of static pod manifests to run. Watched for changes.",
    defaultText: "",
  },
  {
    name: "container-runtime-endpoint",
    kind: "string",
    key: "containerRuntimeEndpoint",
    usage: "CRI endpoint, e.g. unix:///run/containerd/containerd.sock. " +
      "Empty: the embedded runtime (host processes, pod IP 127.0.0.1).",
    defaultText: "",
  },
  {
    name: "node-name",
    kind: "string",
    key: "nodeName",
    usage: "Name of this node.",
    defaultText: "hostname",
    aliases: ["hostname-override"],
  },
  {
    name: "root-dir",
    kind: "string",
    key: "rootDir",
    usage: "Directory for the agent's files (container logs, embedded runtime state).",
    defaultText: ".run/probelet",
  },
  {
    name: "v",
    kind: "int",
    intRange: { min: 0, message: "verbosity must not be negative" },
    key: "verbosity",
    usage: "Log level verbosity (klog -v).",
    defaultText: "0",
  },
  {
    name: "address",
    kind: "string",
    key: "address",
    usage: "IP address the HTTP server serves on.",
    defaultText: "127.0.0.1",
  },
  {
    name: "read-only-port",
    kind: "int",
    intRange: portRange,
    key: "port",
    usage: "Port of the read-only HTTP server, no authentication (/healthz, /pods, /events, " +
      "/metrics/probes); 0 disables it.",
    defaultText: "10255",
  },
  {
    name: "port",
    kind: "int",
    intRange: portRange,
    key: "securePort",
    usage: "Port of the authenticated HTTPS server (the read-only paths and /containerLogs); " +
      "0 picks a free one.",
    defaultText: "10250",
  },
  {
    name: "tls-cert-file",
    kind: "string",
    key: "tlsCertFile",
    usage: "x509 certificate (chain) of the secure port. Empty: a self-signed certificate and " +
      "key are made in <root-dir>/pki (kubelet.crt, kubelet.key).",
    defaultText: "",
  },
  {
    name: "tls-private-key-file",
    kind: "string",
    key: "tlsPrivateKeyFile",
    usage: "Private key of --tls-cert-file.",
    defaultText: "",
  },
  {
    name: "cert-dir",
    kind: "string",
    key: "certDir",
    usage: "Folder of the self-signed pair (kubelet.crt, kubelet.key) and of the pairs issued " +
      "with --rotate-server-certificates (kubelet-server-current.pem). Empty: <root-dir>/pki.",
    defaultText: "",
  },
  {
    name: "rotate-server-certificates",
    kind: "bool",
    key: "rotateServerCertificates",
    usage: "Request the serving certificate through the API server's CertificateSigningRequests " +
      "(signer kubernetes.io/kubelet-serving) and renew it before it expires. The requests must " +
      "be approved (kubectl certificate approve); until one is issued, TLS handshakes fail.",
    defaultText: "false",
  },
  {
    name: "tls-cipher-suites",
    kind: "strings",
    key: "tlsCipherSuites",
    usage: "Comma-separated cipher suites (Go's names) for the secure port. Checked as kubelet " +
      "does; the TLS stack (rustls under node:tls) only offers its own AEAD suites, all in Go's " +
      "preferred list, whatever is given.",
    defaultText: "",
  },
  {
    name: "tls-min-version",
    kind: "string",
    key: "tlsMinVersion",
    usage: "Oldest TLS version of the secure port: VersionTLS10, VersionTLS11, VersionTLS12, " +
      "VersionTLS13 (below 1.2 the TLS stack still needs 1.2).",
    defaultText: "",
  },
  {
    name: "client-ca-file",
    kind: "string",
    key: "clientCAFile",
    usage: "CA bundle: a client certificate one of them signed authenticates as its CommonName, " +
      "with its Organizations as groups.",
    defaultText: "",
  },
  {
    name: "anonymous-auth",
    kind: "bool",
    key: "anonymousAuth",
    usage: "Serve requests without credentials to the secure port as system:anonymous.",
    defaultText: "false",
  },
  {
    name: "authentication-token-webhook",
    kind: "bool",
    key: "authenticationTokenWebhook",
    usage: "Authenticate bearer tokens through the API server's TokenReview.",
    defaultText: "false",
  },
  {
    name: "authentication-token-webhook-cache-ttl",
    kind: "duration",
    key: "authenticationTokenWebhookCacheTtlMs",
    usage: "How long TokenReview answers are cached.",
    defaultText: "2m0s",
  },
  {
    name: "authorization-mode",
    kind: "enum",
    key: "authorizationMode",
    values: ["AlwaysAllow", "Webhook"],
    usage: "Authorization of the secure port: AlwaysAllow, or Webhook (SubjectAccessReview).",
    defaultText: "AlwaysAllow",
  },
  {
    name: "authorization-webhook-cache-authorized-ttl",
    kind: "duration",
    key: "authorizationWebhookCacheAuthorizedTtlMs",
    usage: "How long allowed SubjectAccessReview answers are cached.",
    defaultText: "5m0s",
  },
  {
    name: "authorization-webhook-cache-unauthorized-ttl",
    kind: "duration",
    key: "authorizationWebhookCacheUnauthorizedTtlMs",
    usage: "How long denied SubjectAccessReview answers are cached.",
    defaultText: "30s",
  },
  {
    name: "runtime-request-timeout",
    kind: "duration",
    key: "runtimeRequestTimeoutMs",
    usage: "Timeout of every runtime request except exec (which adds the probe's timeout).",
    defaultText: "2m0s",
  },
  {
    name: "sync-frequency",
    kind: "duration",
    positive: true,
    key: "syncFrequencyMs",
    usage:
      "Period of each pod's resync when no container event (PLEG) or probe result asks for one.",
    defaultText: "1m0s",
  },
  {
    name: "maximum-dead-containers-per-container",
    kind: "int",
    key: "maxPerPodContainer",
    usage: "Dead instances kept per container; older ones are removed (below 0: keep all).",
    defaultText: "1",
  },
  {
    name: "minimum-container-ttl-duration",
    kind: "duration",
    key: "minimumGCAgeMs",
    usage: "Minimum age of a dead container before the garbage collector may remove it.",
    defaultText: "0s",
  },
  {
    name: "stop-pods-on-exit",
    kind: "bool",
    key: "stopPodsOnExit",
    usage: "Stop every pod when the agent stops (Ctrl-C, SIGTERM). Default: true on the embedded " +
      "runtime (pods are your host processes), false with --container-runtime-endpoint (kubelet's " +
      "behaviour: pods keep running and the next start adopts them). --stop-pods-on-exit=false " +
      "gives kubelet's behaviour on the embedded runtime too.",
    defaultText: "",
  },
  {
    name: "logging-format",
    kind: "enum",
    key: "loggingFormat",
    usage: "Log format: text (klog's header on every line) or json (kubelet's JSON logging).",
    defaultText: "text",
    values: ["text", "json"],
  },
  {
    name: "file-check-frequency",
    kind: "duration",
    positive: true,
    key: "fileCheckFrequencyMs",
    usage: "Period of the manifest folder check, on top of file system notifications.",
    defaultText: "20s",
  },
  {
    name: "shutdown-grace-period",
    kind: "duration",
    key: "shutdownGracePeriodMs",
    usage: "Longest a stop (Ctrl-C, SIGTERM) lets pods end: each pod gets the shorter of its " +
      "terminationGracePeriodSeconds and this, then anything left is killed. 0s kills at once.",
    defaultText: "30s",
  },
  {
    name: "http-idle-timeout",
    kind: "duration",
    positive: true,
    key: "httpIdleTimeoutMs",
    usage: "HTTP server: a connection waiting this long for a request is closed.",
    defaultText: "1m30s",
  },
  {
    name: "live-view",
    kind: "enum",
    key: "liveView",
    usage: "Table of pods refreshed in place: auto (when stdout is a terminal), always, never.",
    defaultText: "auto",
    values: ["auto", "always", "never"],
  },
  {
    name: "kubeconfig",
    kind: "string",
    key: "kubeconfig",
    usage: "Path to a kubeconfig file, specifying how to connect to the API server. " +
      "Providing --kubeconfig enables API server mode (the agent registers as a Node); " +
      "omitting it keeps the standalone mode (static pods only). On the embedded runtime " +
      "(no --container-runtime-endpoint) containers are host processes, so only pods that " +
      "tolerate the taint key probelet.io/agent explicitly are admitted; others are rejected " +
      '(Failed, "Pod was rejected") and never run (a key-less operator: Exists toleration does ' +
      "not count).",
    defaultText: "",
  },
  {
    name: "node-ip",
    kind: "ips",
    key: "nodeIP",
    usage: "IP address (or comma-separated dual-stack IP addresses) of the node, reported as " +
      "InternalIP. Empty: the address the node name resolves to, else the first non-loopback one.",
    defaultText: "",
  },
  {
    name: "cluster-dns",
    kind: "iplist",
    key: "clusterDNS",
    usage: "Comma-separated list of DNS server IP addresses, the nameservers of pods with " +
      'dnsPolicy "ClusterFirst". Empty: such pods fall back to the "Default" policy.',
    defaultText: "[]",
  },
  {
    name: "cluster-domain",
    kind: "string",
    key: "clusterDomain",
    usage: "Domain of the cluster: pods search it (and <namespace>.svc.<domain>) before the " +
      "host's search domains.",
    defaultText: "",
  },
  {
    name: "resolv-conf",
    kind: "string",
    key: "resolvConf",
    usage: 'Resolver configuration file used as the basis of pods\' DNS ("Default" policy).',
    defaultText: "/etc/resolv.conf",
  },
  {
    name: "node-labels",
    kind: "labels",
    key: "nodeLabels",
    usage: "Labels to add when registering the node in the cluster (key=value pairs separated " +
      "by ','). Labels in the 'kubernetes.io' namespace must begin with an allowed prefix " +
      "(kubelet.kubernetes.io, node.kubernetes.io) or be in the allowed set.",
    defaultText: "",
  },
  {
    name: "register-node",
    kind: "bool",
    key: "registerNode",
    usage: "Register the node with the API server. Without --kubeconfig this does nothing.",
    defaultText: "true",
  },
  {
    name: "register-with-taints",
    kind: "taints",
    key: "registerWithTaints",
    usage: "Register the node with the given list of taints (comma separated " +
      '"<key>=<value>:<effect>"). Only applied when the Node is created: changes do nothing ' +
      "on an existing Node (NodeRestriction forbids a node to modify its taints). " +
      "No-op if --register-node is false.",
    defaultText: "",
  },
  {
    name: "node-status-update-frequency",
    kind: "duration",
    positive: true,
    key: "nodeStatusUpdateFrequencyMs",
    usage: "How often the agent computes node status and posts it when it changed. Must work " +
      "with the node lifecycle controller's grace period.",
    defaultText: "10s",
  },
  {
    name: "node-status-report-frequency",
    kind: "duration",
    positive: true,
    key: "nodeStatusReportFrequencyMs",
    usage: "How often node status is posted even when unchanged (a config-file field in " +
      "kubelet). Defaults to --node-status-update-frequency when only that is set, else 5m.",
    defaultText: "5m0s",
  },
  {
    name: "node-lease-duration-seconds",
    kind: "int",
    positive: true,
    key: "nodeLeaseDurationSeconds",
    usage: "Duration of the node lease in kube-node-lease; it is renewed every quarter of it.",
    defaultText: "40",
  },
  {
    name: "kube-api-qps",
    kind: "int",
    nonNegative: true,
    key: "kubeAPIQPS",
    usage: "QPS to use while talking with the API server (not events or heartbeats). " +
      "If 0 will use DefaultQPS: 5.",
    defaultText: "50",
  },
  {
    name: "kube-api-burst",
    kind: "int",
    nonNegative: true,
    key: "kubeAPIBurst",
    usage: "Burst to use while talking with the API server. If 0 will use DefaultBurst: 10.",
    defaultText: "100",
  },
  {
    name: "event-qps",
    kind: "int",
    nonNegative: true,
    key: "eventRecordQPS",
    usage: "QPS to limit event creations. If 0 will use DefaultQPS: 5.",
    defaultText: "50",
  },
  {
    name: "event-burst",
    kind: "int",
    nonNegative: true,
    key: "eventBurst",
    usage: "Maximum size of a burst of event records, while not exceeding --event-qps. " +
      "If 0 will use DefaultBurst: 10.",
    defaultText: "100",
  },
  {
    name: "probe-workers",
    kind: "int",
    nonNegative: true,
    key: "probeWorkers",
    usage: "probelet's own: threads that run HTTP, TCP and gRPC probes; 0 runs them on the " +
      "main thread. Default: one per core.",
    defaultText: "number of cores",
  },
  {
    name: "max-pods",
    kind: "int",
    nonNegative: true,
    key: "maxPods",
    usage: "Number of pods that can run on this node (capacity.pods of its status).",
    defaultText: "110",
  },
  {
    name: "eviction-hard",
    kind: "langleMap",
    key: "evictionHard",
    usage: "A set of eviction thresholds (e.g. memory.available<1Mi) that if met would trigger " +
      "a pod eviction. probelet evicts nothing; the thresholds are reserved from the node's " +
      "allocatable memory and ephemeral storage, as kubelet reserves them.",
    defaultText: "imagefs.available<15%,imagefs.inodesFree<5%,memory.available<100Mi," +
      "nodefs.available<10%,nodefs.inodesFree<5%",
  },
  {
    name: "container-log-max-size",
    kind: "quantity",
    key: "containerLogMaxSizeBytes",
    usage: "Size at which a container's log file is rotated (a quantity: 10Mi, 500Ki, 1G). " +
      "The embedded runtime's shims rotate; on a CRI runtime the agent renames the log and " +
      "asks the runtime to reopen it (ReopenContainerLog), as kubelet does.",
    defaultText: "10Mi",
  },
  {
    name: "container-log-max-files",
    kind: "int",
    intRange: { min: 2, message: "containerLogMaxFiles must be greater than 1" },
    key: "containerLogMaxFiles",
    usage: "Most log files kept per container, the current one included; must be at least 2. " +
      "On a CRI runtime older rotated files are gzipped.",
    defaultText: "5",
  },
  {
    name: "container-log-max-workers",
    kind: "int",
    positive: true,
    key: "containerLogMaxWorkers",
    usage: "CRI runtime: containers whose logs are rotated at once.",
    defaultText: "1",
  },
  {
    name: "container-log-monitor-interval",
    kind: "duration",
    positive: true,
    key: "containerLogMonitorIntervalMs",
    usage: "CRI runtime: how often running containers' logs are checked for rotation.",
    defaultText: "10s",
  },
  { name: "help", kind: "bool", key: "help", usage: "Print this help.", defaultText: "false" },
  {
    name: "version",
    kind: "bool",
    key: "version",
    usage: "Print the version and exit.",
    defaultText: "false",
  },
];

/** Defaults of every flag (`nodeName` resolved from the hostname). */
export function defaultFlags(): KubeletFlags {
  let hostname = "localhost";
  try {
    hostname = Deno.hostname();
  } catch {
    // Keep the fallback when the permission is missing.
  }
  return {
    podManifestPath: "",
    containerRuntimeEndpoint: "",
    nodeName: hostname.toLowerCase(),
    rootDir: ".run/probelet",
    verbosity: 0,
    address: "127.0.0.1",
    port: 10255,
    securePort: 10250,
    tlsCertFile: "",
    tlsPrivateKeyFile: "",
    certDir: "",
    rotateServerCertificates: false,
    tlsCipherSuites: [],
    tlsMinVersion: "",
    clientCAFile: "",
    anonymousAuth: false,
    authenticationTokenWebhook: false,
    authenticationTokenWebhookCacheTtlMs: 120_000,
    authorizationMode: "AlwaysAllow",
    authorizationWebhookCacheAuthorizedTtlMs: 300_000,
    authorizationWebhookCacheUnauthorizedTtlMs: 30_000,
    runtimeRequestTimeoutMs: 120_000,
    syncFrequencyMs: 60_000,
    maxPerPodContainer: 1,
    minimumGCAgeMs: 0,
    stopPodsOnExit: undefined,
    loggingFormat: "text",
    fileCheckFrequencyMs: 20_000,
    shutdownGracePeriodMs: 30_000,
    httpIdleTimeoutMs: 90_000,
    liveView: "auto",
    kubeconfig: "",
    nodeIP: "",
    clusterDNS: [],
    clusterDomain: "",
    resolvConf: "/etc/resolv.conf",
    nodeLabels: {},
    registerNode: true,
    registerWithTaints: [],
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    eventRecordQPS: 50,
    eventBurst: 100,
    maxPods: 110,
    evictionHard: { ...DefaultEvictionHard },
    containerLogMaxSizeBytes: 10 * 1024 * 1024,
    containerLogMaxFiles: 5,
    containerLogMaxWorkers: 1,
    containerLogMonitorIntervalMs: 10_000,
    probeWorkers: Math.max(1, navigator.hardwareConcurrency || 1),
    help: false,
    version: false,
  };
}

/**
 * Parses the command line. Throws {@linkcode FlagError} naming the flag on an unknown flag, a
 * missing value, a bad number or duration, or a positional argument.
 *
 * @example
 * ```ts
 * const flags = parseFlags(["--pod-manifest-path", "fixtures/pods/host", "--v=4"]);
 * flags.verbosity; // 4
 * ```
 */
export function parseFlags(args: string[]): KubeletFlags {
  const flags = defaultFlags();
  const values = flags as unknown as Record<string, unknown>;
  const seen = new Set<string>();
  const repeated = new Map<string, string[]>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      refuseArgumentsAfterDashDash(args.slice(i + 1));
      break;
    }
    const { def, inline } = lookUpFlag(arg);
    seen.add(def.name);
    let value = inline;
    if (def.kind !== "bool" && value === undefined) {
      if (i + 1 >= args.length) throw new FlagError(`flag needs an argument: --${def.name}`);
      value = args[++i];
    }
    values[def.key] = parseFlagValue(def, value, repeated);
  }
  applyFlagDefaulting(flags, seen);
  return flags;
}

// As pflag, nothing is parsed after "--"; `deno task start -- <flags>` passes it through.
function refuseArgumentsAfterDashDash(rest: string[]): void {
  if (rest.length === 0) return;
  const next = rest[0];
  throw new FlagError(
    next.startsWith("-")
      ? `unexpected argument "${next}" after "--": flags go before it (deno task start ${next})`
      : `unexpected argument "${next}"`,
  );
}

// The flag an argument names (`--name`, `--name=value`, `-name`, `-h`), with its inline value.
function lookUpFlag(arg: string): { def: FlagDef; inline: string | undefined } {
  if (!arg.startsWith("-") || arg === "-") {
    throw new FlagError(`unexpected argument "${arg}"`);
  }
  const body = arg.replace(/^--?/, "");
  const eq = body.indexOf("=");
  const name = eq >= 0 ? body.slice(0, eq) : body;
  const def = name === "h" ? flagDefs.find((d) => d.name === "help") : findFlag(name);
  if (!def) {
    throw new FlagError(
      arg.startsWith("--")
        ? `unknown flag: --${name}`
        : `unknown shorthand flag: '${name}' in ${arg}`,
    );
  }
  return { def, inline: eq >= 0 ? body.slice(eq + 1) : undefined };
}

// A flag's value as its kind parses it (pflag's Value.Set); `repeated` carries a string slice
// flag's earlier values, which a repeated flag appends to. `value` is undefined only for a bool.
function parseFlagValue(
  def: FlagDef,
  value: string | undefined,
  repeated: Map<string, string[]>,
): unknown {
  const shown = `--${def.name}`;
  if (def.kind === "bool") return parseBool(value, shown);
  const text = value ?? "";
  switch (def.kind) {
    case "string":
      return text;
    case "int":
      return parseInt32(def, text, shown);
    case "duration":
      return parseDuration(def, text, shown);
    case "quantity":
      return parseLogMaxSize(text, shown);
    case "enum":
      if (!def.values!.includes(text)) {
        throw new FlagError(invalid(text, shown, `must be one of ${def.values!.join(", ")}`));
      }
      return text;
    case "labels":
      return parseNodeLabels(text, shown);
    case "taints":
      return parseTaints(text, shown);
    case "ips":
      parseNodeIP(text, shown);
      return text;
    case "iplist":
      return parseClusterDNS(text, shown);
    case "langleMap":
      return parseLangleSeparatedMap(text, shown);
    case "strings": {
      // pflag's StringSlice: comma-separated; a repeated flag appends.
      const items = text === "" ? [] : text.split(",");
      const all = [...(repeated.get(def.name) ?? []), ...items];
      repeated.set(def.name, all);
      return all;
    }
  }
}

// Go's strconv.ParseBool; a bool flag without a value is true.
function parseBool(value: string | undefined, shown: string): boolean {
  if (value === undefined) return true;
  if (["true", "1", "t", "T", "TRUE", "True"].includes(value)) return true;
  if (["false", "0", "f", "F", "FALSE", "False"].includes(value)) return false;
  throw new FlagError(
    invalid(value, shown, `strconv.ParseBool: parsing "${value}": invalid syntax`),
  );
}

// An int flag: Go's strconv.ParseInt into 32 bits, then the flag's own range.
function parseInt32(def: FlagDef, value: string, shown: string): number {
  if (!/^[+-]?\d+$/.test(value)) {
    throw new FlagError(
      invalid(value, shown, `strconv.ParseInt: parsing "${value}": invalid syntax`),
    );
  }
  const n = Number(value);
  const range = def.intRange;
  if (range && (n < range.min || (range.max !== undefined && n > range.max))) {
    throw new FlagError(invalid(value, shown, range.message));
  }
  if (def.nonNegative && n < 0) {
    throw new FlagError(invalid(value, shown, "must not be a negative number"));
  }
  if (def.positive && n <= 0) throw new FlagError(invalid(value, shown, "must be greater than 0"));
  if (n > 2 ** 31 - 1 || n < -(2 ** 31)) {
    throw new FlagError(
      invalid(value, shown, `strconv.ParseInt: parsing "${value}": value out of range`),
    );
  }
  return n;
}

// A duration flag in milliseconds (Go's time.ParseDuration); never negative.
function parseDuration(def: FlagDef, value: string, shown: string): number {
  const ms = parseGoDuration(value);
  if (ms === undefined) {
    throw new FlagError(invalid(value, shown, `time: invalid duration "${value}"`));
  }
  if (def.positive && ms <= 0) {
    throw new FlagError(invalid(value, shown, "duration must be greater than 0"));
  }
  if (ms < 0) throw new FlagError(invalid(value, shown, "duration must not be negative"));
  return ms;
}

// --container-log-max-size: a resource quantity of at least 1Ki, in bytes.
function parseLogMaxSize(value: string, shown: string): number {
  const bytes = parseQuantityBytes(value);
  if (bytes === undefined) {
    throw new FlagError(
      invalid(
        value,
        shown,
        "quantities must match the regular expression " +
          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
      ),
    );
  }
  if (bytes < 1024) {
    throw new FlagError(invalid(value, shown, "containerLogMaxSize must be at least 1Ki"));
  }
  return bytes;
}

// What kubelet derives from the flags given, after parsing them all.
function applyFlagDefaulting(flags: KubeletFlags, seen: ReadonlySet<string>): void {
  // kubelet's --read-only-port 0 serves no read-only port.
  if (seen.has("read-only-port") && flags.port === 0) flags.port = -1;
  // An explicit update frequency alone also sets the report frequency.
  if (seen.has("node-status-update-frequency") && !seen.has("node-status-report-frequency")) {
    flags.nodeStatusReportFrequencyMs = flags.nodeStatusUpdateFrequencyMs;
  }
}

// cliflag's LangleSeparatedMapStringString: `key<value` pairs separated by ','; the flag given
// replaces the default whole. Each threshold is checked as kubelet's ParseThresholdConfig does.
function parseLangleSeparatedMap(value: string, shown: string): Record<string, string> {
  const map: Record<string, string> = {};
  for (const pair of value.split(",")) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("<");
    if (at < 0) {
      throw new FlagError(
        invalid(value, shown, `malformed pair, expect string<string`),
      );
    }
    map[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  try {
    parseThresholdStatements(map);
  } catch (e) {
    throw new FlagError(invalid(value, shown, (e as Error).message));
  }
  return map;
}

// Label keys kubelets may set on their own Node, and namespaces they may use (k8s.io/api
// core/v1 KubeletLabels, KubeletLabelNamespaces).
const kubeletLabels = [
  "beta.kubernetes.io/arch",
  "beta.kubernetes.io/instance-type",
  "beta.kubernetes.io/os",
  "failure-domain.beta.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "kubernetes.io/arch",
  "kubernetes.io/hostname",
  "kubernetes.io/os",
  "node.kubernetes.io/instance-type",
  "topology.kubernetes.io/region",
  "topology.kubernetes.io/zone",
];
const kubeletLabelNamespaces = ["kubelet.kubernetes.io", "node.kubernetes.io"];

function labelNamespace(key: string): string {
  const i = key.indexOf("/");
  return i >= 0 ? key.slice(0, i) : "";
}

function isKubernetesLabel(key: string): boolean {
  const ns = labelNamespace(key);
  return ns === "kubernetes.io" || ns.endsWith(".kubernetes.io") || ns === "k8s.io" ||
    ns.endsWith(".k8s.io");
}

function isKubeletLabel(key: string): boolean {
  if (kubeletLabels.includes(key)) return true;
  const ns = labelNamespace(key);
  return kubeletLabelNamespaces.some((a) => ns === a || ns.endsWith(`.${a}`));
}

/**
 * Parses `--node-labels` (cliflag's MapStringString: `k=v` pairs separated by `,`, spaces
 * trimmed) and applies kubelet's ValidateKubeletFlags checks on the keys and values.
 */
function parseNodeLabels(value: string, shown: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (value.trim() === "") return labels;
  for (const pair of value.split(",")) {
    const eq = pair.indexOf("=");
    if (eq < 0) throw new FlagError(invalid(value, shown, "malformed pair, expect string=string"));
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  const unknown = Object.keys(labels).filter((k) => isKubernetesLabel(k) && !isKubeletLabel(k))
    .sort();
  if (unknown.length > 0) {
    throw new FlagError(invalid(
      value,
      shown,
      `unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: ` +
        `[${unknown.join(" ")}]; --node-labels in the 'kubernetes.io' namespace must begin ` +
        `with an allowed prefix (${kubeletLabelNamespaces.join(", ")}) or be in the ` +
        `specifically allowed set (${kubeletLabels.join(", ")})`,
    ));
  }
  const bad: string[] = [];
  for (const [k, v] of Object.entries(labels)) {
    const keyErrs = isQualifiedName(k);
    if (keyErrs.length > 0) bad.push(`'${k}' - ${keyErrs.join(", ")}`);
    const valueErrs = isValidLabelValue(v);
    if (valueErrs.length > 0) bad.push(`'${v}' - ${valueErrs.join(", ")}`);
  }
  if (bad.length > 0) {
    throw new FlagError(invalid(value, shown, `invalid node labels: ${bad.join("; ")}`));
  }
  return labels;
}

/**
 * Parses `--register-with-taints` (`key=value:Effect` or `key:Effect`, comma separated) with
 * the error texts of kubelet's taint parser. Unlike kubelet, a taint without an effect is
 * refused here rather than by the API server at registration.
 */
function parseTaints(value: string, shown: string): RegisterTaint[] {
  if (value === "") return [];
  const taints: RegisterTaint[] = [];
  for (const spec of value.split(",")) {
    const fail = (why: string) => new FlagError(invalid(value, shown, why));
    const parts = spec.split(":");
    if (parts.length !== 2) {
      throw fail(
        parts.length === 1
          ? `invalid taint spec: ${spec}, an effect is required (NoSchedule, PreferNoSchedule or NoExecute)`
          : `invalid taint spec: ${spec}`,
      );
    }
    const effect = parts[1];
    if (effect !== "NoSchedule" && effect !== "PreferNoSchedule" && effect !== "NoExecute") {
      throw fail(`invalid taint effect: ${effect}, unsupported taint effect`);
    }
    const kv = parts[0].split("=");
    if (kv.length > 2) throw fail(`invalid taint spec: ${spec}`);
    const [key, taintValue = ""] = kv;
    const valueErrs = isValidLabelValue(taintValue);
    if (valueErrs.length > 0) throw fail(`invalid taint spec: ${spec}, ${valueErrs.join("; ")}`);
    const keyErrs = isQualifiedName(key);
    if (keyErrs.length > 0) throw fail(`invalid taint spec: ${spec}, ${keyErrs.join("; ")}`);
    taints.push(taintValue === "" ? { key, effect } : { key, value: taintValue, effect });
  }
  return taints;
}

/**
 * Splits and checks a `--node-ip` value: one IP, or an IPv4 and an IPv6 address separated by a
 * comma (kubelet's ParseNodeIPArgument). Empty gives no addresses.
 *
 * @example
 * ```ts
 * parseNodeIP("10.0.0.5,fd00::5"); // ["10.0.0.5", "fd00::5"]
 * ```
 */
export function parseNodeIP(value: string, shown = "--node-ip"): string[] {
  if (value === "") return [];
  const ips = value.split(",").map((s) => s.trim());
  for (const ip of ips) {
    if (isIP(ip) === 0) throw new FlagError(invalid(value, shown, `could not parse "${ip}"`));
  }
  if (ips.length > 2) {
    throw new FlagError(
      invalid(value, shown, "must contain either a single IP or a dual-stack pair of IPs"),
    );
  }
  if (ips.length === 2 && isIP(ips[0]) === isIP(ips[1])) {
    throw new FlagError(
      invalid(value, shown, "must contain either a single IP or a dual-stack pair of IPs"),
    );
  }
  return ips;
}

/**
 * A comma-separated list of IPs (`--cluster-dns`); each must parse, as kubelet's configuration
 * validation requires.
 *
 * @example
 * ```ts
 * parseClusterDNS("10.96.0.10,fd00::a"); // ["10.96.0.10", "fd00::a"]
 * ```
 */
export function parseClusterDNS(value: string, shown = "--cluster-dns"): string[] {
  if (value === "") return [];
  const ips = value.split(",").map((s) => s.trim());
  for (const ip of ips) {
    if (isIP(ip) === 0) {
      throw new FlagError(
        `invalid configuration: clusterDNS (${shown}) ${ip} must be a valid IP address`,
      );
    }
  }
  return ips;
}

function findFlag(name: string): FlagDef | undefined {
  return flagDefs.find((d) => d.name === name || d.aliases?.includes(name));
}

function invalid(value: string, flag: string, why: string): string {
  return `invalid argument "${value}" for "${flag}" flag: ${why}`;
}

const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration (`1m30s`, `500ms`, `2h`, `0`) into milliseconds; undefined when malformed.
 *
 * @example
 * ```ts
 * parseGoDuration("1m30s"); // 90000
 * ```
 */
export function parseGoDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  let total = 0;
  const re = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/;
  while (s.length > 0) {
    const m = re.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * unitMs[m[2]];
    s = s.slice(m[0].length);
  }
  return sign * total;
}

/**
 * A `--container-log-max-size` value in whole bytes, as kubelet reads it: resource.ParseQuantity,
 * then Quantity.Value() (rounded up); undefined when it is not a quantity.
 *
 * @example
 * ```ts
 * parseQuantityBytes("10Mi"); // 10485760
 * ```
 */
export function parseQuantityBytes(text: string): number | undefined {
  const q = parseQuantity(text);
  return Number.isNaN(q) ? undefined : Math.ceil(q);
}

/**
 * The `--help` text: usage line, then every flag with its default.
 *
 * @example
 * ```ts
 * console.log(usage());
 * ```
 */
export function usage(): string {
  const lines = [
    "probelet: a small node agent that runs static pods on a CRI runtime and keeps them healthy",
    "with kubelet's liveness, readiness and startup probes.",
    "",
    "Usage:",
    "  probelet --pod-manifest-path <dir> [flags]",
    "  probelet --kubeconfig <file> [--pod-manifest-path <dir>] [flags]   (joins a cluster as a node)",
    "",
    "Flags:",
  ];
  for (const def of flagDefs) {
    const type = def.kind === "bool"
      ? ""
      : def.kind === "duration"
      ? " duration"
      : def.kind === "int"
      ? " int"
      : def.kind === "quantity"
      ? " quantity"
      : def.kind === "labels"
      ? " mapStringString"
      : def.kind === "taints"
      ? " []Taint"
      : def.kind === "strings"
      ? " strings"
      : " string";
    const aliases = def.aliases ? ` (alias --${def.aliases.join(", --")})` : "";
    const head = `      --${def.name}${type}`;
    const dflt = def.kind === "bool"
      ? (def.defaultText === "true" ? " (default true)" : "")
      : def.defaultText === "" && def.kind !== "string"
      ? ""
      : ` (default ${def.defaultText === "" ? '""' : def.defaultText})`;
    lines.push(`${head.padEnd(39)} ${def.usage}${dflt}${aliases}`);
  }
  lines.push(
    "",
    "Endpoints (http://<address>:<port>): /healthz, /pods, /events, /metrics/probes",
    "Exit codes: 0 after SIGINT/SIGTERM, 1 on a startup error, 2 on bad flags.",
  );
  return lines.join("\n");
}
