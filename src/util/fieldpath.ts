/**
 * Fields of a pod by their path, as the downward API reads them: `metadata.name`,
 * `metadata.labels`, `metadata.annotations['key']`, ... and container resources by
 * `resourceFieldRef`, scaled by their divisor.
 * Mirrors kubelet's pkg/fieldpath/fieldpath.go (ExtractFieldPathAsString, FormatMap,
 * SplitMaybeSubscriptedPath) and pkg/api/v1/resource's ExtractResourceValueByContainerName.
 * @module
 */
import type { Pod } from "../api/core/v1/mod.ts";
import type { ResourceFieldSelector } from "../api/core/v1/mod.ts";
import { parseQuantity } from "../api/resource/quantity.ts";
import { goQuote } from "./go_format.ts";

/**
 * A map as the downward API writes it: `key="value"` lines (Go-quoted values), sorted by key.
 *
 * @example
 * ```ts
 * formatMap({ b: "2", a: "1" }); // 'a="1"\nb="2"'
 * ```
 */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {}).sort().map((k) => `${k}=${goQuote(m![k])}`).join("\n");
}

/** `metadata.labels['app']` → `["metadata.labels", "app", true]`. */
export function splitMaybeSubscriptedPath(fieldPath: string): [string, string, boolean] {
  if (!fieldPath.endsWith("']")) return [fieldPath, "", false];
  const s = fieldPath.slice(0, -2);
  const parts = s.split("['");
  if (parts.length < 2) return [fieldPath, "", false];
  if (parts[0].length === 0) return [fieldPath, "", false];
  return [parts[0], parts.slice(1).join("['"), true];
}

/**
 * The value of a pod field as a string; throws `unsupported fieldPath: <path>` for others.
 *
 * @example
 * ```ts
 * extractFieldPathAsString(pod, "metadata.name"); // "web"
 * ```
 */
export function extractFieldPathAsString(pod: Pod, fieldPath: string): string {
  const [path, subscript, ok] = splitMaybeSubscriptedPath(fieldPath);
  const meta = pod.metadata;
  if (ok) {
    switch (path) {
      case "metadata.annotations":
        return meta.annotations?.[subscript] ?? "";
      case "metadata.labels":
        return meta.labels?.[subscript] ?? "";
      default:
        throw new Error(`fieldPath ${JSON.stringify(fieldPath)} does not support subscript`);
    }
  }
  switch (fieldPath) {
    case "metadata.annotations":
      return formatMap(meta.annotations);
    case "metadata.labels":
      return formatMap(meta.labels);
    case "metadata.name":
      return meta.name ?? "";
    case "metadata.namespace":
      return meta.namespace ?? "";
    case "metadata.uid":
      return meta.uid ?? "";
  }
  throw new Error(`unsupported fieldPath: ${fieldPath}`);
}

/**
 * A container's resource (`limits.cpu`, `requests.memory`, `limits.ephemeral-storage`, ...)
 * divided by the divisor and rounded up, as a string; an unset limit is the node's allocatable.
 * Throws `unsupported container resource : <name>` for others.
 */
export function extractResourceValueByContainerName(
  fs: ResourceFieldSelector,
  pod: Pod,
  containerName: string,
  nodeAllocatable: Record<string, string>,
): string {
  const container = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((c) =>
    c.name === containerName
  );
  if (!container) throw new Error(`container ${containerName} not found`);
  const [kind, name] = splitResource(fs.resource);
  const resources = container.resources ?? {};
  let value = kind === "limits"
    ? resources.limits?.[name] ?? nodeAllocatable[name]
    : resources.requests?.[name];
  if (kind === "requests" && value === undefined) value = "0";
  if (value === undefined) throw new Error(`unsupported container resource : ${fs.resource}`);
  const divisor = parseQuantity(String(fs.divisor ?? "1"));
  const q = parseQuantity(String(value));
  if (!(divisor > 0) || Number.isNaN(q)) {
    throw new Error(`unsupported container resource : ${fs.resource}`);
  }
  return String(Math.ceil(q / divisor));
}

function splitResource(resource: string): ["limits" | "requests", string] {
  const known = ["cpu", "memory", "ephemeral-storage"];
  for (const kind of ["limits", "requests"] as const) {
    const prefix = `${kind}.`;
    if (resource.startsWith(prefix) && known.includes(resource.slice(prefix.length))) {
      return [kind, resource.slice(prefix.length)];
    }
  }
  throw new Error(`unsupported container resource : ${resource}`);
}
