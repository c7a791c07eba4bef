/**
 * Version strings as Kubernetes parses them: semantic (`1.6.20`, `1.7.0-rc.1+meta`) or generic
 * (two or more dotted numbers, anything after them ignored: `1.6.20~ds1` is `1.6.20`).
 * Mirrors k8s.io/apimachinery/pkg/util/version/version.go (parse, ParseSemantic, ParseGeneric,
 * String).
 * @module
 */

// A leading "v", dotted numbers, then whatever follows (kept only for semantic versions).
const versionMatchRE = /^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$/;
// The part after the numbers of a semantic version: -prerelease and +metadata.
const extraMatchRE =
  /^(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\s*$/;

/** A parsed version: its numeric components and, for a semantic one, pre-release and metadata. */
export class Version {
  /** The dotted numbers, in order. */
  readonly components: readonly number[];
  /** Parsed as a semantic version. */
  readonly semver: boolean;
  /** The pre-release after `-` (semantic versions only). */
  readonly preRelease: string;
  /** The build metadata after `+` (semantic versions only). */
  readonly buildMetadata: string;

  /** Use {@linkcode parseSemantic} or {@linkcode parseGeneric}. */
  constructor(
    components: number[],
    options: { semver: boolean; preRelease?: string; buildMetadata?: string },
  ) {
    this.components = components;
    this.semver = options.semver;
    this.preRelease = options.preRelease ?? "";
    this.buildMetadata = options.buildMetadata ?? "";
  }

  /**
   * The numbers joined by dots, then `-pre-release` and `+metadata` when present: what was
   * parsed, without a leading `v` or anything a generic parse ignored.
   *
   * @example
   * ```ts
   * parseGeneric("1.6.20~ds1").toString(); // "1.6.20"
   * ```
   */
  toString(): string {
    let out = this.components.join(".");
    if (this.preRelease !== "") out += `-${this.preRelease}`;
    if (this.buildMetadata !== "") out += `+${this.buildMetadata}`;
    return out;
  }
}

function parse(str: string, semver: boolean): Version {
  const parts = versionMatchRE.exec(str);
  if (!parts) throw new Error(`could not parse ${JSON.stringify(str)} as version`);
  const [, numbers, extra] = parts;
  const texts = numbers.split(".");
  if ((semver && texts.length !== 3) || (!semver && texts.length < 2)) {
    throw new Error(`illegal version string ${JSON.stringify(str)}`);
  }
  const components = texts.map((comp, i) => {
    if ((i === 0 || semver) && comp.startsWith("0") && comp !== "0") {
      throw new Error(
        `illegal zero-prefixed version component ${JSON.stringify(comp)} in ${JSON.stringify(str)}`,
      );
    }
    const n = Number(comp);
    if (!Number.isSafeInteger(n)) {
      throw new Error(
        `illegal non-numeric version component ${JSON.stringify(comp)} in ${JSON.stringify(str)}`,
      );
    }
    return n;
  });
  if (!semver || extra === "") return new Version(components, { semver });
  const extraParts = extraMatchRE.exec(extra);
  if (!extraParts) {
    throw new Error(
      `could not parse pre-release/metadata (${extra}) in version ${JSON.stringify(str)}`,
    );
  }
  const preRelease = extraParts[1] ?? "";
  for (const comp of preRelease.split(".")) {
    if (/^[0-9]+$/.test(comp) && comp.startsWith("0") && comp !== "0") {
      throw new Error(
        `illegal zero-prefixed version component ${JSON.stringify(comp)} in ${JSON.stringify(str)}`,
      );
    }
  }
  return new Version(components, { semver, preRelease, buildMetadata: extraParts[2] ?? "" });
}

/**
 * Parses a semantic version (exactly three numbers, optional pre-release and metadata); throws
 * on anything else. Go's `ParseSemantic`.
 *
 * @example
 * ```ts
 * parseSemantic("v1.7.0-rc.1").toString(); // "1.7.0-rc.1"
 * ```
 */
export function parseSemantic(str: string): Version {
  return parse(str, true);
}

/**
 * Parses a generic version: two or more dotted numbers at the start, whatever follows ignored.
 * Go's `ParseGeneric`.
 *
 * @example
 * ```ts
 * parseGeneric("1.6.20~ds1").toString(); // "1.6.20"
 * ```
 */
export function parseGeneric(str: string): Version {
  return parse(str, false);
}
