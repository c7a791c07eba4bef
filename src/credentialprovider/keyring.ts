/**
 * Registry credentials from pull secrets: a docker config (`.dockerconfigjson` / `.dockercfg`)
 * becomes a keyring indexed by registry location, and an image is looked up in it (most specific
 * location first) to get the credentials to try, in order, for its pull.
 * Mirrors kubernetes pkg/credentialprovider/keyring.go (BasicDockerKeyring, URLsMatch),
 * config.go (DockerConfigJSON, DockerConfigEntry) and secrets/secrets.go (MakeDockerKeyring).
 * @module
 */
import type { Secret } from "../api/core/v1/mod.ts";

/** The key of a `kubernetes.io/dockerconfigjson` secret's data. */
export const dockerConfigJsonKey = ".dockerconfigjson";
/** The key of a legacy `kubernetes.io/dockercfg` secret's data. */
export const dockerConfigKey = ".dockercfg";
/** The type of a secret holding a docker config JSON. */
export const secretTypeDockerConfigJson = "kubernetes.io/dockerconfigjson";
/** The type of a secret holding a legacy docker config. */
export const secretTypeDockercfg = "kubernetes.io/dockercfg";

const defaultRegistryHost = "index.docker.io";

/** The v1 Secret a pull reads its credentials from (the API's type, re-exported here). */
export type { Secret };

/** Credentials for one registry location (Go's `AuthConfig`, the CRI message's fields). */
export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

/** Credentials and the secret they came from (Go's `TrackedAuthConfig`). */
export interface TrackedAuthConfig extends AuthConfig {
  /** The pull secret, or undefined for credentials every pod of the node may use. */
  source?: { namespace: string; name: string; uid: string };
  /** A hash of the credentials, to tell whether two pods present the same ones. */
  authConfigHash: string;
}

/** One entry of a docker config: `auth` is base64 `user:password`. */
interface DockerConfigEntry {
  username: string;
  password: string;
  email?: string;
}

/** Looks up the credentials for an image's repository (Go's `DockerKeyring`). */
export interface DockerKeyring {
  /** Matching credentials, most specific location first; `found` false when none match. */
  lookup(image: string): { credentials: TrackedAuthConfig[]; found: boolean };
}

/**
 * A keyring filled from docker configs (Go's `BasicDockerKeyring`).
 *
 * @example
 * ```ts
 * const keyring = new BasicDockerKeyring();
 * keyring.add(undefined, { "127.0.0.1:5000": { username: "u", password: "p" } });
 * keyring.lookup("127.0.0.1:5000/probelet/busybox").credentials[0].username; // "u"
 * ```
 */
export class BasicDockerKeyring implements DockerKeyring {
  #index: string[] = [];
  #creds = new Map<string, TrackedAuthConfig[]>();

  /** Adds every entry of `config`, remembering the secret it came from. */
  add(
    source: TrackedAuthConfig["source"],
    config: Record<string, DockerConfigEntry>,
  ): void {
    for (const [loc, ident] of Object.entries(config)) {
      const creds: TrackedAuthConfig = {
        username: ident.username,
        password: ident.password,
        source,
        authConfigHash: "",
      };
      creds.authConfigHash = hashAuthConfig(creds);
      let value = loc;
      if (!value.startsWith("https://") && !value.startsWith("http://")) value = "https://" + value;
      let parsed: URL;
      try {
        parsed = new URL(value);
      } catch {
        // Go logs "Entry ... is not a valid URL" and skips it.
        continue;
      }
      // The docker client allows a host, a host and path; /v1/ and /v2/ mean the host.
      let effectivePath = decodeURIComponent(parsed.pathname);
      if (effectivePath.startsWith("/v2/") || effectivePath.startsWith("/v1/")) {
        effectivePath = effectivePath.slice(3);
      }
      const key = effectivePath.length > 0 && effectivePath !== "/"
        ? goHost(parsed) + effectivePath
        : goHost(parsed);
      const list = this.#creds.get(key) ?? [];
      list.push(creds);
      this.#creds.set(key, list);
      this.#index.push(key);
    }
    // Most specific first: Go sorts the de-duplicated index in reverse.
    this.#index = [...new Set(this.#index)].sort().reverse();
  }

  lookup(image: string): { credentials: TrackedAuthConfig[]; found: boolean } {
    const credentials: TrackedAuthConfig[] = [];
    for (const k of this.#index) {
      if (urlsMatchStr(k, image)) credentials.push(...this.#creds.get(k)!);
    }
    if (credentials.length > 0) return { credentials, found: true };
    if (isDefaultRegistryMatch(image)) {
      const auth = this.#creds.get(defaultRegistryHost);
      if (auth) return { credentials: auth, found: true };
    }
    return { credentials: [], found: false };
  }
}

/** Several keyrings, the credentials of each in turn (Go's `UnionDockerKeyring`). */
export class UnionDockerKeyring implements DockerKeyring {
  constructor(readonly keyrings: DockerKeyring[]) {}

  lookup(image: string): { credentials: TrackedAuthConfig[]; found: boolean } {
    const credentials = this.keyrings.flatMap((k) => k.lookup(image).credentials);
    return { credentials, found: credentials.length > 0 };
  }
}

/**
 * The keyring of a pod's pull secrets in front of the node's (Go's `MakeDockerKeyring`): each
 * `kubernetes.io/dockerconfigjson` secret's `auths`, each `kubernetes.io/dockercfg` secret's map.
 * Throws on a secret whose config is not valid JSON, as kubelet's unmarshal does.
 */
export function makeDockerKeyring(
  passedSecrets: Secret[],
  defaultKeyring: DockerKeyring,
): DockerKeyring {
  const passed = new BasicDockerKeyring();
  for (const secret of passedSecrets) {
    const source = {
      namespace: secret.metadata?.namespace ?? "",
      name: secret.metadata?.name ?? "",
      uid: secret.metadata?.uid ?? "",
    };
    const json = secretData(secret, dockerConfigJsonKey);
    const cfg = secretData(secret, dockerConfigKey);
    if (secret.type === secretTypeDockerConfigJson && json !== undefined && json.length > 0) {
      const parsed = JSON.parse(json) as { auths?: Record<string, RawEntry> };
      passed.add(source, decodeEntries(parsed.auths ?? {}));
    } else if (secret.type === secretTypeDockercfg && cfg !== undefined && cfg.length > 0) {
      passed.add(source, decodeEntries(JSON.parse(cfg) as Record<string, RawEntry>));
    }
  }
  return new UnionDockerKeyring([passed, defaultKeyring]);
}

interface RawEntry {
  auth?: string;
  username?: string;
  password?: string;
  email?: string;
}

// DockerConfigEntry.UnmarshalJSON: `auth` (base64 "user:password") wins over username/password.
function decodeEntries(raw: Record<string, RawEntry>): Record<string, DockerConfigEntry> {
  const out: Record<string, DockerConfigEntry> = {};
  for (const [loc, entry] of Object.entries(raw ?? {})) {
    let username = entry?.username ?? "";
    let password = entry?.password ?? "";
    if (entry?.auth) {
      const decoded = new TextDecoder().decode(
        Uint8Array.from(atob(entry.auth), (c) => c.charCodeAt(0)),
      );
      const colon = decoded.indexOf(":");
      if (colon < 0) {
        throw new Error(
          "unable to parse auth field, must be formatted as base64(username:password)",
        );
      }
      username = decoded.slice(0, colon);
      password = trimNul(decoded.slice(colon + 1));
    }
    out[loc] = { username, password, email: entry?.email };
  }
  return out;
}

// Go's strings.Trim(s, "\x00"): some tools pad the decoded pair with NUL bytes.
function trimNul(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && s.charCodeAt(start) === 0) start++;
  while (end > start && s.charCodeAt(end - 1) === 0) end--;
  return s.slice(start, end);
}

// A secret's value: `data` is base64 on the wire; `stringData` as a manifest may carry it.
function secretData(secret: Secret, key: string): string | undefined {
  const b64 = secret.data?.[key];
  if (b64 !== undefined) {
    return new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  }
  return secret.stringData?.[key];
}

// Go's url.URL.Host keeps an explicit port; WHATWG drops the scheme's default one.
function goHost(u: URL): string {
  return u.host;
}

/** Whether a pattern location (`*.example.com:5000/team`) matches an image's repository. */
export function urlsMatchStr(glob: string, target: string): boolean {
  const g = parseSchemelessUrl(glob);
  const t = parseSchemelessUrl(target);
  if (!g || !t) return false;
  return urlsMatch(g, t);
}

function parseSchemelessUrl(s: string): { host: string; path: string } | undefined {
  // Go: url.Parse("https://" + s); the host may hold `*` globs, which WHATWG URL rejects.
  const slash = s.indexOf("/");
  const host = slash < 0 ? s : s.slice(0, slash);
  const path = slash < 0 ? "" : s.slice(slash);
  if (host === "") return undefined;
  return { host: host.toLowerCase(), path };
}

function splitHostPort(host: string): [string, string] {
  const m = /^(.*?)(?::(\d*))?$/.exec(host)!;
  return [m[1], m[2] ?? ""];
}

function urlsMatch(glob: { host: string; path: string }, target: { host: string; path: string }) {
  const [globHost, globPort] = splitHostPort(glob.host);
  const [targetHost, targetPort] = splitHostPort(target.host);
  if (globPort !== targetPort) return false;
  const globParts = globHost.split(".");
  const targetParts = targetHost.split(".");
  if (globParts.length !== targetParts.length) return false;
  for (const [i, part] of globParts.entries()) {
    if (!globMatch(part, targetParts[i])) return false;
  }
  // The glob's path must be a prefix of the target's.
  return target.path.startsWith(glob.path);
}

// Go's path.Match for one host label: `*` any run of characters, `?` one, otherwise literal.
function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    "^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") +
      "$",
  );
  return re.test(name);
}

function isDefaultRegistryMatch(image: string): boolean {
  const parts = image.split("/");
  if (parts[0].length === 0) return false;
  if (parts.length === 1) return true;
  if (parts[0] === "docker.io" || parts[0] === "index.docker.io") return true;
  // Docker takes the first part for a registry when it holds a `.` or `:` or is `localhost`.
  return !/[.:]/.test(parts[0]) && parts[0] !== "localhost";
}

// Kubelet hashes the credentials (sha256 of the JSON); FNV would do for a local comparison, but
// the hash must not reveal the password, so it is a one-way digest of the fields.
function hashAuthConfig(c: AuthConfig): string {
  const text = JSON.stringify([
    c.username ?? "",
    c.password ?? "",
    c.auth ?? "",
    c.serverAddress ?? "",
    c.identityToken ?? "",
    c.registryToken ?? "",
  ]);
  // A synchronous FNV-1a 64 over the text: the digest never leaves the process.
  let h = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}
