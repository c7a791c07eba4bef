/**
 * Paths built from names that came from manifests (namespaces, pod names, UIDs, container names):
 * {@linkcode joinInside} refuses any segment that could leave the folder it is joined to, so a
 * hostile manifest can never make the agent write outside its state folder.
 * @module
 */
import { resolve, sep } from "node:path";

/** A name that cannot be used as one path segment under the agent's state folder. */
export class UnsafePathError extends Error {
  /** Builds the message naming the root and the bad segment. */
  constructor(root: string, segment: string, why: string) {
    super(`refusing path segment ${JSON.stringify(segment.slice(0, 80))} under ${root}: ${why}`);
    this.name = "UnsafePathError";
  }
}

/**
 * Joins `segments` under `root`, each as exactly one path segment: empty segments, `.`, `..`,
 * segments holding `/` or NUL, and results outside `root` throw {@link UnsafePathError}.
 *
 * @example
 * ```ts
 * joinInside("/var/lib/probelet/pods", "default_web_1234"); // "/var/lib/probelet/pods/default_web_1234"
 * joinInside("/var/lib/probelet/pods", "../../etc"); // throws UnsafePathError
 * ```
 */
export function joinInside(root: string, ...segments: string[]): string {
  const base = resolve(root);
  let path = base;
  for (const segment of segments) {
    if (segment === "" || segment === "." || segment === "..") {
      throw new UnsafePathError(root, segment, "not a file name");
    }
    if (segment.includes("/") || segment.includes("\0")) {
      throw new UnsafePathError(root, segment, "holds a path separator or NUL");
    }
    path = `${path}${path.endsWith(sep) ? "" : sep}${segment}`;
  }
  // Belt and braces: the checks above already keep the result inside.
  if (path !== base && !path.startsWith(base.endsWith(sep) ? base : base + sep)) {
    throw new UnsafePathError(root, segments.join(sep), "leaves the folder");
  }
  return path;
}
