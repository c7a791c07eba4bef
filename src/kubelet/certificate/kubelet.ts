/**
 * kubelet's serving certificate managers. With `--rotate-server-certificates` the certificate is
 * requested through the CSR API (signer `kubernetes.io/kubelet-serving`, subject
 * `O=system:nodes, CN=system:node:<node>`, the node's addresses as SANs) and kept in
 * `<cert-dir>/kubelet-server-current.pem`; with `--tls-cert-file`/`--tls-private-key-file` (or
 * the self-signed pair) the files are read again whenever they change.
 * Mirrors kubelet's pkg/kubelet/certificate/kubelet.go (`NewKubeletServerCertificateManager`,
 * `newGetTemplateFn`, `addressesToHostnamesAndIPs`,
 * `NewKubeletServerCertificateDynamicFileManager`) with the file watching of apiserver's
 * dynamiccertificates/dynamic_serving_content.go.
 * @module
 */
import { isIP } from "node:net";
import { dirname, resolve } from "node:path";
import { kubeletServingSignerName } from "../../api/certificates/v1/mod.ts";
import type { NodeAddress } from "../../api/core/v1/mod.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { sleepUnlessStopped } from "../../util/wait/wait.ts";
import {
  type CertificateManager,
  type CertificateRequestTemplate,
  defaultKubeletServingGetUsages,
  type Manager,
  newManager,
} from "./certificate_manager.ts";
import { newFileStore, type TlsCertificate, x509KeyPair } from "./certificate_store.ts";
import { errorText } from "../../util/errors.ts";

/**
 * The serving certificate's request for the node's current addresses, or undefined while it has
 * no IP address (kubelet's `newGetTemplateFn`; DNS-only requests need the deprecated
 * `AllowDNSOnlyNodeCSR` gate, off in v1.36).
 *
 * @example
 * ```ts
 * import type { Node } from "../../api/core/v1/mod.ts";
 *
 * declare const node: Node;
 *
 * const getTemplate = newGetTemplateFn("node-1", () => node.status?.addresses ?? []);
 * getTemplate()?.commonName; // "system:node:node-1"
 * ```
 */
export function newGetTemplateFn(
  nodeName: string,
  getAddresses: () => NodeAddress[],
): () => CertificateRequestTemplate | undefined {
  return () => {
    const { dnsNames, ips } = addressesToHostnamesAndIPs(getAddresses());
    if (ips.length === 0) return undefined;
    return {
      commonName: `system:node:${nodeName}`,
      organizations: ["system:nodes"],
      dnsNames,
      ipAddresses: ips,
    };
  };
}

/**
 * The SANs of the node's addresses: `Hostname` (as an IP when it is one), `InternalDNS` and
 * `ExternalDNS` as DNS names, `InternalIP` and `ExternalIP` as IPs; deduplicated and sorted
 * (kubelet's `addressesToHostnamesAndIPs`).
 *
 * @example
 * ```ts
 * addressesToHostnamesAndIPs([{ type: "Hostname", address: "node-1" }, { type: "InternalIP", address: "10.0.0.5" }]);
 * // { dnsNames: ["node-1"], ips: ["10.0.0.5"] }
 * ```
 */
export function addressesToHostnamesAndIPs(
  addresses: NodeAddress[],
): { dnsNames: string[]; ips: string[] } {
  const dnsNames = new Set<string>();
  const ips = new Map<string, string>();
  const addIP = (a: string) => {
    const canonical = canonicalIP(a);
    if (canonical !== undefined) ips.set(a, canonical);
  };
  for (const { type, address } of addresses) {
    if (address === "") continue;
    switch (type) {
      case "Hostname":
        if (canonicalIP(address) !== undefined) addIP(address);
        else dnsNames.add(address);
        break;
      case "ExternalIP":
      case "InternalIP":
        addIP(address);
        break;
      case "ExternalDNS":
      case "InternalDNS":
        dnsNames.add(address);
        break;
    }
  }
  const sortedIPs = [...ips.values()].sort((a, b) => a < b ? -1 : a > b ? 1 : 0);
  return { dnsNames: [...dnsNames].sort(), ips: sortedIPs };
}

// netutils.ParseIPSloppy then IP.String(): undefined when not an IP.
function canonicalIP(address: string): string | undefined {
  // Sloppy: leading zeros in IPv4 octets are accepted as decimal.
  const v4 = address.match(/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/);
  if (v4) {
    const octets = v4.slice(1).map(Number);
    return octets.every((o) => o <= 255) ? octets.join(".") : undefined;
  }
  if (isIP(address) !== 6) return undefined;
  const host = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  // An IPv4-mapped address is the IPv4 one, as Go prints it.
  const mapped = host.match(/^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/);
  if (mapped) {
    const hi = parseInt(mapped[1], 16);
    const lo = parseInt(mapped[2], 16);
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
  }
  return host;
}

/** Options of {@linkcode newKubeletServerCertificateManager}. */
export interface KubeletServerCertificateManagerOptions {
  /** The API client (undefined: no rotation, only what the store holds). */
  kubeClient: Clientset | undefined;
  nodeName: string;
  /** The node's last observed addresses. */
  getAddresses: () => NodeAddress[];
  /** `--cert-dir` (`<root-dir>/pki` here). */
  certDirectory: string;
  /** `--tls-cert-file`/`--tls-private-key-file`, read when there is no current pair yet. */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clock: Clock;
  /** Told of each certificate taken into use. */
  onCertificate?: (cert: TlsCertificate) => void;
  /** Source of the deadline's and backoff's jitter (tests). */
  random?: () => number;
  /** Counts failed rotations (`kubelet_server_expiration_renew_errors`). */
  certificateRenewFailure?: () => void;
}

/**
 * The manager of the serving certificate requested through the CSR API (kubelet's
 * `NewKubeletServerCertificateManager`).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const kubeClient: Clientset;
 * declare const clock: Clock;
 * declare const getAddresses: Parameters<typeof newKubeletServerCertificateManager>[0]["getAddresses"];
 *
 * const m = await newKubeletServerCertificateManager({ kubeClient, nodeName: "node-1", getAddresses, certDirectory: "/var/lib/probelet/pki", clock });
 * m.start();
 * ```
 */
export async function newKubeletServerCertificateManager(
  options: KubeletServerCertificateManagerOptions,
): Promise<CertificateManager> {
  let store;
  try {
    store = await newFileStore({
      pairNamePrefix: "kubelet-server",
      certDirectory: options.certDirectory,
      keyDirectory: options.certDirectory,
      certFile: options.tlsCertFile ?? "",
      keyFile: options.tlsPrivateKeyFile ?? "",
      clock: options.clock,
    });
  } catch (e) {
    throw new Error(
      `failed to initialize server certificate store: ${e instanceof Error ? e.message : e}`,
    );
  }
  const kubeClient = options.kubeClient;
  try {
    return await newManager({
      clientsetFn: kubeClient ? () => kubeClient : undefined,
      getTemplate: newGetTemplateFn(options.nodeName, options.getAddresses),
      dynamicTemplate: true,
      signerName: kubeletServingSignerName,
      getUsages: defaultKubeletServingGetUsages,
      certificateStore: store,
      clock: options.clock,
      random: options.random,
      onCertificate: options.onCertificate,
      certificateRenewFailure: options.certificateRenewFailure,
    });
  } catch (e) {
    throw new Error(
      `failed to initialize server certificate manager: ${e instanceof Error ? e.message : e}`,
    );
  }
}

/** Options of {@linkcode newKubeletServerCertificateDynamicFileManager}. */
export interface DynamicFileManagerOptions {
  clock: Clock;
  /** Told of each new pair read from the files. */
  onCertificate?: (cert: TlsCertificate) => void;
  /** How often the files are read again besides file events (default 1 min). */
  resyncPeriodMs?: number;
}

/**
 * Serves `certFile`/`keyFile` and reads them again when they change: on file events in their
 * folders, and every minute as a backstop. A pair that does not parse, or whose key does not
 * match, is logged and the previous one kept (kubelet's
 * `NewKubeletServerCertificateDynamicFileManager`).
 *
 * @example
 * ```ts
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 * declare const onCertificate: Parameters<typeof newKubeletServerCertificateDynamicFileManager>[2]["onCertificate"];
 *
 * const m = await newKubeletServerCertificateDynamicFileManager("/etc/tls/tls.crt", "/etc/tls/tls.key", { clock, onCertificate });
 * m.start();
 * ```
 */
export async function newKubeletServerCertificateDynamicFileManager(
  certFile: string,
  keyFile: string,
  options: DynamicFileManagerOptions,
): Promise<DynamicFileManager> {
  const m = new DynamicFileManager(certFile, keyFile, options);
  try {
    await m.load();
  } catch (e) {
    throw new Error(
      "unable to set up dynamic certificate manager for kubelet server cert files: " +
        (errorText(e)),
    );
  }
  return m;
}

/** The file-based manager {@linkcode newKubeletServerCertificateDynamicFileManager} returns. */
export class DynamicFileManager implements Manager {
  readonly #certFile: string;
  readonly #keyFile: string;
  readonly #options: DynamicFileManagerOptions;
  #current: TlsCertificate | undefined;
  // The files' contents as last loaded (the pair is normalised).
  #raw: { certPem: string; keyPem: string } | undefined;
  #stop = new AbortController();
  #loops: Promise<void>[] = [];
  #watcher: Deno.FsWatcher | undefined;
  #loading: Promise<void> | undefined;
  #again = false;

  /** Use {@linkcode newKubeletServerCertificateDynamicFileManager}. */
  constructor(certFile: string, keyFile: string, options: DynamicFileManagerOptions) {
    this.#certFile = certFile;
    this.#keyFile = keyFile;
    this.#options = options;
  }

  /** The last valid pair read from the files. */
  current(): TlsCertificate | undefined {
    return this.#current;
  }

  /** Always true: no API server is involved. */
  serverHealthy(): boolean {
    return true;
  }

  /**
   * Reads the files; a new valid pair replaces the current one. Throws on a missing or invalid
   * pair (the caller keeps the previous one).
   */
  async load(): Promise<void> {
    const certPem = await Deno.readTextFile(this.#certFile);
    const keyPem = await Deno.readTextFile(this.#keyFile);
    if (certPem.length === 0 || keyPem.length === 0) {
      throw new Error(
        `missing content for serving cert "kubelet-server-cert-files::${this.#certFile}::${this.#keyFile}"`,
      );
    }
    if (this.#raw?.certPem === certPem && this.#raw.keyPem === keyPem) return;
    const cert = x509KeyPair(certPem, keyPem);
    this.#raw = { certPem, keyPem };
    this.#current = cert;
    log.V(2).info("Loaded a new cert/key pair", {
      name: `kubelet-server-cert-files::${this.#certFile}::${this.#keyFile}`,
    });
    this.#options.onCertificate?.(cert);
  }

  /** Reads the files again now (coalescing with a read in progress); errors are logged. */
  reload(): Promise<void> {
    if (this.#loading) {
      this.#again = true;
      return this.#loading;
    }
    this.#loading = (async () => {
      do {
        this.#again = false;
        try {
          await this.load();
        } catch (e) {
          log.error(e, "invalid certificate and key pair from file", {
            certFile: this.#certFile,
            keyFile: this.#keyFile,
          });
        }
      } while (this.#again);
      this.#loading = undefined;
    })();
    return this.#loading;
  }

  /** Starts watching the files' folders and the minute's resync. */
  start(): void {
    const signal = this.#stop.signal;
    const { clock } = this.#options;
    const period = this.#options.resyncPeriodMs ?? 60_000;
    this.#loops.push((async () => {
      while (await sleepUnlessStopped(clock, period, signal)) await this.reload();
    })());
    // Folders, not files: a file replaced by a rename (or a symlink swap) stays watched.
    const folders = [...new Set([this.#certFile, this.#keyFile].map((f) => dirname(resolve(f))))];
    try {
      this.#watcher = Deno.watchFs(folders, { recursive: false });
    } catch (e) {
      log.error(e, "Failed to watch cert and key file, will retry later", {});
      return;
    }
    const watcher = this.#watcher;
    this.#loops.push((async () => {
      try {
        for await (const _event of watcher) {
          if (signal.aborted) break;
          await this.reload();
        }
      } catch (e) {
        if (!signal.aborted) log.error(e, "Failed to watch cert and key file", {});
      }
    })());
  }

  /** Stops watching; resolves once a read in progress finished. */
  async stop(): Promise<void> {
    this.#stop.abort();
    try {
      this.#watcher?.close();
    } catch {
      // Closed already.
    }
    await Promise.all(this.#loops);
    await this.#loading;
  }
}
