/**
 * Fields of a pod by their path, as the downward API reads them: `metadata.name`,
 * `metadata.labels`, `metadata.annotations['key']`, ... and container resources by
 * `resourceFieldRef`, scaled by their divisor.
 * Mirrors kubelet's pkg/fieldpath/fieldpath.go (ExtractFieldPathAsString, FormatMap,
 * SplitMaybeSubscriptedPath) and pkg/api/v1/resource's ExtractResourceValueByContainerName.
 * @module
 */
import type { Container, Pod, ResourceList } from "../api/core/v1/mod.ts";
import type { ResourceFieldSelector } from "../api/core/v1/mod.ts";
import { scaledValue } from "../api/resource/quantity.ts";
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
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
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
 * divided by the divisor and rounded up, exactly, as a string; an unset limit is the node's
 * allocatable (kubelet's `ExtractResourceValueByContainerNameAndNodeAllocatable`).
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
  // ExtractResourceValueByContainerNameAndNodeAllocatable: the unset limits read the node's
  // allocatable, then the exact division of extractContainerResourceValue.
  const merged = structuredClone(container);
  mergeContainerResourceLimits(merged, nodeAllocatable);
  return extractContainerResourceValue(fs, merged);
}

const standardResources = ["cpu", "memory", "ephemeral-storage"];

/**
 * A container's resource for the downward API (pkg/api/v1/resource's
 * `ExtractContainerResourceValue`): `limits.cpu`/`requests.cpu` in milli-units divided by the
 * divisor's, memory, ephemeral storage and `hugepages-<size>` in units divided by the divisor's,
 * rounded up (an unset resource is 0, a zero divisor is 1). Exact, where Go divides floats.
 * Throws `unsupported container resource : <name>` for others.
 *
 * @example
 * ```ts
 * extractContainerResourceValue({ resource: "limits.cpu", divisor: "1m" }, { name: "c", resources: { limits: { cpu: "250m" } } });
 * // "250"
 * ```
 */
export function extractContainerResourceValue(
  fs: ResourceFieldSelector,
  container: Container,
): string {
  const divisorText = String(fs.divisor ?? "0");
  const isZero = scaledValue(divisorText, -9) === 0;
  const divisor = isZero ? "1" : divisorText;
  const dot = fs.resource.indexOf(".");
  const kind = fs.resource.slice(0, dot);
  const name = fs.resource.slice(dot + 1);
  const known = standardResources.includes(name) || name.startsWith("hugepages-");
  if (dot < 0 || (kind !== "limits" && kind !== "requests") || !known) {
    throw new Error(`unsupported container resource : ${fs.resource}`);
  }
  const list = kind === "limits" ? container.resources?.limits : container.resources?.requests;
  const scale = name === "cpu" ? -3 : 0;
  const value = scaledValue(String(list?.[name] ?? "0"), scale);
  const by = scaledValue(divisor, scale);
  if (!(by > 0) || Number.isNaN(value)) {
    throw new Error(`unsupported container resource : ${fs.resource}`);
  }
  // Whole units on both sides (Go's MilliValue/Value), so only this division rounds.
  return String(Math.ceil(value / by));
}

/**
 * Sets the unset (or zero) cpu, memory and ephemeral-storage limits of `container` to the node's
 * allocatable, in place (pkg/api/v1/resource's `MergeContainerResourceLimits`).
 */
export function mergeContainerResourceLimits(
  container: Container,
  allocatable: ResourceList,
): void {
  const resources = container.resources ??= {};
  const limits = resources.limits ??= {};
  for (const name of standardResources) {
    const set = limits[name];
    if (set !== undefined && scaledValue(String(set), -9) !== 0) continue;
    if (allocatable[name] !== undefined) limits[name] = allocatable[name];
  }
}
