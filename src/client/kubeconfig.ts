/**
 * Loading a kubeconfig file into a `RestConfig`: clusters, users and contexts by name, the current
 * context (or an explicit one), `*-data` fields (base64) and file paths (relative to the kubeconfig's
 * folder), bearer `token` / `tokenFile`, basic auth. Exec and auth-provider plugins are refused with
 * a clear error: probelet runs no credential plugins (a node uses a client certificate).
 * Mirrors k8s.io/client-go/tools/clientcmd (loader.go, client_config.go), the parts a node uses.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { dirname, isAbsolute, join } from "node:path";
import type { RestConfig } from "./rest.ts";
import { info } from "../util/log.ts";
import { parseBlockYaml } from "../util/block_yaml.ts";

/** `clusters[].cluster` of a kubeconfig. */
export interface KubeconfigCluster {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
}

/** `users[].user` of a kubeconfig. */
export interface KubeconfigUser {
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  exec?: unknown;
  "auth-provider"?: unknown;
  as?: string;
}

/** `contexts[].context` of a kubeconfig. */
export interface KubeconfigContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

/** A parsed kubeconfig (client-go's `clientcmdapi.Config`, the fields a node uses). */
export interface Kubeconfig {
  clusters: { name: string; cluster: KubeconfigCluster }[];
  users: { name: string; user: KubeconfigUser }[];
  contexts: { name: string; context: KubeconfigContext }[];
  "current-context"?: string;
}

/** What `loadKubeconfig` resolved. */
export interface LoadedKubeconfig {
  /** Ready for `newForConfig`. */
  config: RestConfig;
  /** The context's namespace ("default" when unset). */
  namespace: string;
  contextName: string;
  clusterName: string;
  userName: string;
}

/** Options of `loadKubeconfig`. */
export interface LoadKubeconfigOptions {
  /** Use this context instead of `current-context` (kubectl's `--context`). */
  context?: string;
}

/** A kubeconfig that cannot be used; the message names the file and the field. */
export class KubeconfigError extends Error {
  /** Creates the error with `message`. */
  constructor(message: string) {
    super(message);
    this.name = "KubeconfigError";
  }
}

/**
 * Reads `path` and resolves the context to a `RestConfig`.
 *
 * @example
 * ```ts
 * import { newForConfig } from "./kubernetes/clientset.ts";
 *
 * const { config } = await loadKubeconfig("/var/lib/probelet/kubeconfig");
 * const clientset = newForConfig({ ...config, qps: 50, burst: 100 });
 * ```
 */
export async function loadKubeconfig(
  path: string,
  options: LoadKubeconfigOptions = {},
): Promise<LoadedKubeconfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    throw new KubeconfigError(`kubeconfig ${path}: ${(err as Error).message}`);
  }
  const kubeconfig = await parseKubeconfig(text, path);
  return await resolveKubeconfig(kubeconfig, { ...options, path });
}

/**
 * Parses kubeconfig YAML (or JSON) text; `path` only names the file in errors. Kubeconfigs as
 * kubectl, kind and kubeadm write them are read by `parseBlockYaml`; npm `yaml` (≈6 MiB resident
 * once loaded) is loaded only for the rest.
 */
export async function parseKubeconfig(text: string, path = "<kubeconfig>"): Promise<Kubeconfig> {
  let doc = parseBlockYaml(text)?.value;
  if (doc === undefined) {
    const { parse } = await import("yaml");
    try {
      doc = parse(text, { version: "1.1" });
    } catch (err) {
      throw new KubeconfigError(`kubeconfig ${path}: invalid YAML: ${(err as Error).message}`);
    }
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw new KubeconfigError(`kubeconfig ${path}: not a kubeconfig (expected a mapping)`);
  }
  const raw = doc as Record<string, unknown>;
  const named = <T>(field: string, inner: string): { name: string; [k: string]: T | string }[] => {
    const list = raw[field] ?? [];
    if (!Array.isArray(list)) {
      throw new KubeconfigError(`kubeconfig ${path}: ${field}: must be a list`);
    }
    return list.map((entry, i) => {
      if (!entry || typeof entry !== "object" || typeof entry.name !== "string") {
        throw new KubeconfigError(`kubeconfig ${path}: ${field}[${i}]: needs a name`);
      }
      return { name: entry.name, [inner]: entry[inner] ?? {} };
    });
  };
  return {
    clusters: named("clusters", "cluster") as Kubeconfig["clusters"],
    users: named("users", "user") as Kubeconfig["users"],
    contexts: named("contexts", "context") as Kubeconfig["contexts"],
    "current-context": typeof raw["current-context"] === "string"
      ? raw["current-context"]
      : undefined,
  };
}

/**
 * Resolves the selected context of a parsed kubeconfig; relative file paths are taken relative to
 * `options.path`'s folder (client-go's `ResolvePaths`).
 */
export async function resolveKubeconfig(
  kubeconfig: Kubeconfig,
  options: LoadKubeconfigOptions & { path?: string } = {},
): Promise<LoadedKubeconfig> {
  const path = options.path ?? "<kubeconfig>";
  const where = `kubeconfig ${path}`;
  const contextName = options.context ?? kubeconfig["current-context"];
  if (!contextName) {
    throw new KubeconfigError(`${where}: no current-context is set and no context was given`);
  }
  const context = kubeconfig.contexts.find((c) => c.name === contextName)?.context;
  if (!context) throw new KubeconfigError(`${where}: context "${contextName}" does not exist`);
  const clusterName = context.cluster ?? "";
  const cluster = kubeconfig.clusters.find((c) => c.name === clusterName)?.cluster;
  if (!cluster) {
    throw new KubeconfigError(
      `${where}: context "${contextName}": cluster "${clusterName}" does not exist`,
    );
  }
  const userName = context.user ?? "";
  const user = userName === "" ? {} : kubeconfig.users.find((u) => u.name === userName)?.user;
  if (!user) {
    throw new KubeconfigError(
      `${where}: context "${contextName}": user "${userName}" does not exist`,
    );
  }
  const base = options.path ? dirname(options.path) : Deno.cwd();
  const resolve = (p: string) => isAbsolute(p) ? p : join(base, p);
  const cl = `${where}: clusters["${clusterName}"].cluster`;
  const us = `${where}: users["${userName}"].user`;

  if (!cluster.server) throw new KubeconfigError(`${cl}.server: must be set`);
  if (user.exec) {
    throw new KubeconfigError(
      `${us}.exec: exec credential plugins are not supported by probelet; ` +
        "use a client certificate (client-certificate/client-key) or a token",
    );
  }
  if (user["auth-provider"]) {
    throw new KubeconfigError(
      `${us}.auth-provider: auth-provider plugins are not supported by probelet; ` +
        "use a client certificate (client-certificate/client-key) or a token",
    );
  }
  if (user.as) throw new KubeconfigError(`${us}.as: impersonation is not supported by probelet`);
  if (cluster["proxy-url"]) {
    throw new KubeconfigError(`${cl}.proxy-url: proxies are not supported by probelet`);
  }

  const config: RestConfig = { host: cluster.server };
  const caData = await pem(
    cluster["certificate-authority-data"],
    cluster["certificate-authority"],
    {
      field: `${cl}.certificate-authority`,
      resolve,
    },
  );
  const certData = await pem(user["client-certificate-data"], user["client-certificate"], {
    field: `${us}.client-certificate`,
    resolve,
  });
  const keyData = await pem(user["client-key-data"], user["client-key"], {
    field: `${us}.client-key`,
    resolve,
  });
  if (caData) config.caData = caData;
  if (certData) config.certData = certData;
  if (keyData) config.keyData = keyData;
  if (!!config.certData !== !!config.keyData) {
    throw new KubeconfigError(`${us}: client-certificate and client-key must be set together`);
  }
  if (user.token) config.bearerToken = user.token;
  else if (user.tokenFile) config.bearerTokenFile = resolve(user.tokenFile);
  if (user.username !== undefined) {
    config.username = user.username;
    config.password = user.password;
  }
  if (cluster["insecure-skip-tls-verify"]) {
    if (config.caData) {
      throw new KubeconfigError(
        `${cl}: certificate-authority and insecure-skip-tls-verify are mutually exclusive`,
      );
    }
    config.insecureSkipTLSVerify = true;
    info(
      "Kubeconfig skips TLS verification; Deno honours that only when started with --unsafely-ignore-certificate-errors",
      {
        kubeconfig: path,
        cluster: clusterName,
      },
    );
  }
  if (cluster["tls-server-name"]) {
    throw new KubeconfigError(
      `${cl}.tls-server-name: not supported (Deno's HTTP client cannot override the TLS server name)`,
    );
  }
  return {
    config,
    namespace: context.namespace || "default",
    contextName,
    clusterName,
    userName,
  };
}

async function pem(
  data: string | undefined,
  file: string | undefined,
  at: { field: string; resolve: (p: string) => string },
): Promise<string | undefined> {
  if (data) {
    let text: string;
    try {
      text = new TextDecoder().decode(
        Uint8Array.from(atob(data.replace(/\s+/g, "")), (c) => c.charCodeAt(0)),
      );
    } catch {
      throw new KubeconfigError(`${at.field}-data: not valid base64`);
    }
    if (!text.includes("-----BEGIN")) throw new KubeconfigError(`${at.field}-data: not PEM data`);
    return text;
  }
  if (!file) return undefined;
  const path = at.resolve(file);
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    throw new KubeconfigError(`${at.field}: ${path}: ${(err as Error).message}`);
  }
}

/** The subject of a client certificate: who the API server will think we are. */
export interface CertificateIdentity {
  /** `CN` (`system:node:<nodeName>` for a kubelet). */
  commonName: string;
  /** `O` values (`system:nodes`). */
  organizations: string[];
}

/**
 * Reads the subject of the first certificate in `certPem` (the API server's user name is the CN,
 * its groups the O values).
 *
 * @example
 * ```ts
 * import type { RestConfig } from "./rest.ts";
 *
 * declare const config: RestConfig;
 *
 * certificateIdentity(config.certData!); // { commonName: "system:node:node-1", organizations: ["system:nodes"] }
 * ```
 */
export function certificateIdentity(certPem: string): CertificateIdentity {
  const cert = new X509Certificate(certPem);
  const identity: CertificateIdentity = { commonName: "", organizations: [] };
  for (const line of cert.subject.split("\n")) {
    const eq = line.indexOf("=");
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (key === "CN") identity.commonName = value;
    if (key === "O") identity.organizations.push(value);
  }
  return identity;
}
