/**
 * Where a rotated certificate lives between runs: `<dir>/<prefix>-<yyyy-mm-dd-hh-mm-ss>.pem` holds
 * the chain followed by the key (mode 0600), and `<prefix>-current.pem` is a symlink to the one in
 * use, replaced through `<prefix>-updated.pem` so that a crash leaves either the old or the new
 * link. Without a current pair, the given cert/key files and then `<prefix>.crt`/`.key` are read.
 * Also Go's `tls.X509KeyPair`: a PEM chain and key parsed, with the key checked against the leaf.
 * Mirrors k8s.io/client-go/util/certificate/certificate_store.go.
 * @module
 */
import { createPrivateKey, createPublicKey, X509Certificate } from "node:crypto";
import { join, resolve } from "node:path";
import { splitPemCertificates } from "../../util/cert/cert.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";

/**
 * A serving certificate: the PEM chain (leaf first) and key, and the parsed leaf (Go's
 * `tls.Certificate` with `Leaf` set).
 */
export interface TlsCertificate {
  certPem: string;
  keyPem: string;
  leaf: CertificateLeaf;
}

/** What the manager reads from the leaf. Times in milliseconds since the epoch. */
export interface CertificateLeaf {
  notBefore: number;
  notAfter: number;
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
  /** The issuer's distinguished name, as text (logs, tests). */
  issuer: string;
}

/**
 * Parses a PEM chain and its key as Go's `tls.X509KeyPair`: the key must belong to the first
 * certificate. Throws with Go's texts.
 *
 * @example
 * ```ts
 * declare const certPem: string;
 * declare const keyPem: string;
 *
 * const cert = x509KeyPair(certPem, keyPem);
 * new Date(cert.leaf.notAfter);
 * ```
 */
export function x509KeyPair(certPem: string, keyPem: string): TlsCertificate {
  const blocks = splitPemCertificates(certPem);
  if (blocks.length === 0) throw new Error("tls: failed to find any PEM data in certificate input");
  // Go skips the blocks that are not a key (a pair file holds the chain first).
  const keyBlock = keyPem.match(
    /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/,
  );
  if (!keyBlock) throw new Error("tls: failed to find any PEM data in key input");
  let key;
  try {
    key = createPrivateKey(keyBlock[0]);
  } catch {
    throw new Error("tls: failed to parse private key");
  }
  const leafPem = blocks[0];
  const pub = new X509Certificate(leafPem).publicKey.export({ type: "spki", format: "der" });
  const mine = createPublicKey(key).export({ type: "spki", format: "der" });
  if (!pub.equals(mine)) throw new Error("tls: private key does not match public key");
  // Only the certificates and only the key: a pair file holds both.
  return {
    certPem: blocks.map((b) => b + "\n").join(""),
    keyPem: keyBlock[0] + "\n",
    leaf: parseLeaf(leafPem),
  };
}

/**
 * The parts of a certificate the rotation needs.
 *
 * @example
 * ```ts
 * declare const pem: string;
 * parseLeaf(pem).commonName; // "system:node:node-1"
 * ```
 */
export function parseLeaf(pem: string): CertificateLeaf {
  // node:crypto's certificate (not @peculiar/x509, which costs ≈ 13 MiB to load): its subject and
  // issuer are "KEY=value" lines, its subjectAltName "DNS:a, IP Address:b".
  const cert = new X509Certificate(pem);
  const subject = distinguishedName(cert.subject);
  const names = (cert.subjectAltName ?? "").split(", ").filter((n) => n !== "");
  const sanValues = (prefix: string) =>
    names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
  return {
    notBefore: Date.parse(cert.validFrom),
    notAfter: Date.parse(cert.validTo),
    commonName: subject.get("CN")?.[0] ?? "",
    organizations: subject.get("O") ?? [],
    dnsNames: sanValues("DNS:"),
    ipAddresses: sanValues("IP Address:"),
    issuer: cert.issuer.split("\n").join(", "),
  };
}

// The attributes of node:crypto's "KEY=value" distinguished name lines, in order.
function distinguishedName(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    const key = line.slice(0, eq);
    out.set(key, [...(out.get(key) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

/** No pair was found in any of the places a store looks (client-go's `NoCertKeyError`). */
export class NoCertKeyError extends Error {
  /** Names the places looked at. */
  constructor(message: string) {
    super(message);
    this.name = "NoCertKeyError";
  }
}

/** Keeps the current certificate (client-go's `certificate.Store`). */
export interface Store {
  /** The current pair; {@linkcode NoCertKeyError} when there is none. */
  current(): Promise<TlsCertificate>;
  /** Writes a new pair and makes it the current one. */
  update(certPem: string, keyPem: string): Promise<TlsCertificate>;
}

/** Options of {@linkcode newFileStore}. */
export interface FileStoreOptions {
  /** `kubelet-server` for the serving certificate. */
  pairNamePrefix: string;
  certDirectory: string;
  keyDirectory: string;
  /** `--tls-cert-file`/`--tls-private-key-file` ("" when not given). */
  certFile: string;
  keyFile: string;
  /** Names the dated files (default: the wall clock). */
  clock?: Pick<Clock, "now">;
}

const currentPair = "current";
const updatedPair = "updated";

/**
 * A store in `certDirectory`, after finishing an update a crash interrupted (client-go's
 * `NewFileStore`).
 *
 * @example
 * ```ts
 * const store = await newFileStore({ pairNamePrefix: "kubelet-server", certDirectory: "/var/lib/probelet/pki", keyDirectory: "/var/lib/probelet/pki", certFile: "", keyFile: "" });
 * ```
 */
export async function newFileStore(options: FileStoreOptions): Promise<FileStore> {
  const store = new FileStore(options);
  await store.recover();
  return store;
}

/** The file store; {@linkcode newFileStore} makes one. */
export class FileStore implements Store {
  readonly #o: FileStoreOptions;

  /** Use {@linkcode newFileStore}, which also recovers an interrupted update. */
  constructor(options: FileStoreOptions) {
    this.#o = options;
  }

  /** `<certDirectory>/<prefix>-current.pem`. */
  currentPath(): string {
    return join(this.#o.certDirectory, this.#filename(currentPair));
  }

  /** Renames a left-over `-updated` link to `-current` when there is no current one. */
  async recover(): Promise<void> {
    if (await fileExists(this.currentPath())) return;
    const updatedPath = join(this.#o.certDirectory, this.#filename(updatedPair));
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(updatedPath);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      throw e;
    }
    if (!info.isSymlink) {
      throw new Error(`expected "${updatedPath}" to be a symlink but it is a file`);
    }
    await Deno.rename(updatedPath, this.currentPath());
  }

  /** The `-current` pair, else the given files, else `<prefix>.crt`/`.key`. */
  async current(): Promise<TlsCertificate> {
    const pairFile = this.currentPath();
    if (await fileExists(pairFile)) {
      log.info("Loading cert/key pair from a file", { filePath: pairFile });
      return await loadFile(pairFile);
    }
    const { certFile, keyFile } = this.#o;
    if (await fileExists(certFile) && await fileExists(keyFile)) {
      log.info("Loading cert/key pair", { certFile, keyFile });
      return x509KeyPair(await Deno.readTextFile(certFile), await Deno.readTextFile(keyFile));
    }
    const c = join(this.#o.certDirectory, this.#o.pairNamePrefix + ".crt");
    const k = join(this.#o.keyDirectory, this.#o.pairNamePrefix + ".key");
    if (await fileExists(c) && await fileExists(k)) {
      log.info("Loading cert/key pair", { certFile: c, keyFile: k });
      return x509KeyPair(await Deno.readTextFile(c), await Deno.readTextFile(k));
    }
    throw new NoCertKeyError(
      `no cert/key files read at "${pairFile}", ("${certFile}", "${keyFile}") or ` +
        `("${this.#o.certDirectory}", "${this.#o.keyDirectory}")`,
    );
  }

  /** Writes a dated pair file (chain then key, 0600, synced) and points `-current` at it. */
  async update(certPem: string, keyPem: string): Promise<TlsCertificate> {
    const dir = this.#o.certDirectory;
    const certPath = join(dir, this.#filename(timestamp(this.#o.clock?.now() ?? Date.now())));
    try {
      await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
    } catch (e) {
      throw new Error(`could not create directory "${dir}" to store certificates: ${e}`);
    }
    const certs = splitPemCertificates(certPem);
    if (certs.length === 0) {
      throw new Error(
        "invalid certificate data: data does not contain any valid RSA or ECDSA " +
          "certificates",
      );
    }
    const keyBlock = keyPem.match(/-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/);
    if (!keyBlock) throw new Error("invalid key data");
    const data = certs.map((c) => c.trim() + "\n").join("") + keyBlock[0] + "\n";
    const file = await Deno.open(certPath, {
      create: true,
      truncate: true,
      write: true,
      mode: 0o600,
    });
    try {
      await file.write(new TextEncoder().encode(data));
      await file.sync();
    } finally {
      file.close();
    }
    const cert = await loadFile(certPath);
    await this.#updateSymlink(certPath);
    return cert;
  }

  // The new link is made as `-updated`, then renamed over `-current`.
  async #updateSymlink(filename: string): Promise<void> {
    const currentPath = this.currentPath();
    let currentExists = false;
    try {
      const info = await Deno.lstat(currentPath);
      if (!info.isSymlink) {
        throw new Error(`expected "${currentPath}" to be a symlink but it is a file`);
      }
      currentExists = true;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const updatedPath = join(this.#o.certDirectory, this.#filename(updatedPair));
    try {
      const info = await Deno.lstat(updatedPath);
      if (!info.isSymlink) {
        throw new Error(`expected "${updatedPath}" to be a symlink but it is a file`);
      }
      await Deno.remove(updatedPath);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    if (!await fileExists(filename)) {
      throw new Error(
        `file "${filename}" does not exist so it can not be used as the currently selected cert/key`,
      );
    }
    await Deno.symlink(resolve(filename), updatedPath);
    if (currentExists) await Deno.remove(currentPath);
    await Deno.rename(updatedPath, currentPath);
  }

  #filename(qualifier: string): string {
    return `${this.#o.pairNamePrefix}-${qualifier}.pem`;
  }
}

async function loadFile(pairFile: string): Promise<TlsCertificate> {
  const data = await Deno.readTextFile(pairFile);
  try {
    return x509KeyPair(data, data);
  } catch (e) {
    throw new Error(
      `could not convert data from "${pairFile}" into cert/key pair: ${
        e instanceof Error ? e.message : e
      }`,
    );
  }
}

async function fileExists(path: string): Promise<boolean> {
  if (path === "") return false;
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

// Go's "2006-01-02-15-04-05" layout, in local time as time.Now().Format writes it.
function timestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}-` +
    `${p(d.getMinutes())}-${p(d.getSeconds())}`;
}
