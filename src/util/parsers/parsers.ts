/**
 * Image references: `ParseImageName` splits an image into the repository to pull, its tag and its
 * digest, normalising short names as the docker tooling does (`busybox` is
 * `docker.io/library/busybox`, tag `latest`).
 * Mirrors kubernetes pkg/util/parsers/parsers.go, with the reference grammar and normalisation of
 * github.com/distribution/reference (regexp.go, normalize.go) it relies on.
 * @module
 */

/** The tag an image without tag or digest gets (`parsers.DefaultImageTag`). */
export const defaultImageTag = "latest";

const defaultDomain = "docker.io";
const legacyDefaultDomain = "index.docker.io";
const officialRepoPrefix = "library/";
const nameTotalLengthMax = 255;

// distribution/reference's grammar, component by component.
const alphanumeric = "[a-z0-9]+";
const separator = "(?:[._]|__|[-]+)";
const pathComponent = `${alphanumeric}(?:${separator}${alphanumeric})*`;
const domainNameComponent = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const ipv6address = "\\[(?:[a-fA-F0-9:]+)\\]";
const domainName = `${domainNameComponent}(?:\\.${domainNameComponent})*`;
const host = `(?:${domainName}|${ipv6address})`;
const domainAndPort = `${host}(?::[0-9]+)?`;
const tagPattern = "[\\w][\\w.-]{0,127}";
const digestPattern = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}";
const namePattern = `(?:${domainAndPort}/)?${pathComponent}(?:/${pathComponent})*`;
const referenceRegexp = new RegExp(
  `^(${namePattern})(?::(${tagPattern}))?(?:@(${digestPattern}))?$`,
);
const anchoredIdentifier = /^[a-f0-9]{64}$/;

/** The parts of an image reference. */
export interface ParsedImageName {
  /** The normalised repository (`docker.io/library/busybox`): what credentials are looked up for. */
  repoToPull: string;
  /** The tag; `latest` when the reference has neither tag nor digest. */
  tag: string;
  /** The digest (`sha256:...`), or "" without one. */
  digest: string;
}

/**
 * Parses an image name into repository, tag and digest, as kubelet's `parsers.ParseImageName`.
 * Throws `couldn't parse image name "<image>": <reason>` for a reference the docker grammar rejects.
 *
 * @example
 * ```ts
 * parseImageName("busybox"); // { repoToPull: "docker.io/library/busybox", tag: "latest", digest: "" }
 * parseImageName("127.0.0.1:5000/probelet/busybox:1").repoToPull; // "127.0.0.1:5000/probelet/busybox"
 * ```
 */
export function parseImageName(image: string): ParsedImageName {
  let named: { name: string; tag: string; digest: string };
  try {
    named = parseNormalizedNamed(image);
  } catch (e) {
    throw new Error(
      `couldn't parse image name ${JSON.stringify(image)}: ${e instanceof Error ? e.message : e}`,
    );
  }
  const tag = named.tag === "" && named.digest === "" ? defaultImageTag : named.tag;
  return { repoToPull: named.name, tag, digest: named.digest };
}

// distribution/reference's ParseNormalizedNamed: the familiar name made fully qualified.
function parseNormalizedNamed(s: string): { name: string; tag: string; digest: string } {
  if (anchoredIdentifier.test(s)) {
    throw new Error(
      `invalid repository name (${s}), cannot specify 64-byte hexadecimal strings`,
    );
  }
  const [domain, rest] = splitDockerDomain(s);
  let remainder = rest;
  const nameEnd = remainder.search(/[:@]/);
  const remoteName = nameEnd < 0 ? remainder : remainder.slice(0, nameEnd);
  if (remoteName.toLowerCase() !== remoteName) {
    throw new Error(`invalid reference format: repository name (${remoteName}) must be lowercase`);
  }
  remainder = `${domain}/${remainder}`;
  const m = referenceRegexp.exec(remainder);
  if (!m) throw new Error("invalid reference format");
  if (m[1].length > nameTotalLengthMax) {
    throw new Error(
      `invalid reference format: repository name must not be more than 255 characters`,
    );
  }
  return { name: m[1], tag: m[2] ?? "", digest: m[3] ?? "" };
}

// The domain is the part before the first `/` when it looks like a host (a `.` or `:`, or
// `localhost`, or any upper case letter); otherwise the image is on Docker Hub.
function splitDockerDomain(name: string): [string, string] {
  const i = name.indexOf("/");
  let domain: string;
  let remainder: string;
  if (
    i === -1 ||
    (!/[.:]/.test(name.slice(0, i)) && name.slice(0, i) !== "localhost" &&
      name.slice(0, i).toLowerCase() === name.slice(0, i))
  ) {
    domain = defaultDomain;
    remainder = name;
  } else {
    domain = name.slice(0, i);
    remainder = name.slice(i + 1);
  }
  if (domain === legacyDefaultDomain) domain = defaultDomain;
  if (domain === defaultDomain && !remainder.includes("/")) {
    remainder = officialRepoPrefix + remainder;
  }
  return [domain, remainder];
}
