/**
 * Port resolution shared by the HTTP and TCP probes.
 * Mirrors kubelet's pkg/probe/util.go.
 * @module
 */
import type { Container, IntOrString } from "../api/core/v1/mod.ts";

/** A port number, or the error that explains why there is none (Go's `(int, error)`). */
export interface PortResult {
  port: number;
  error?: Error;
}

/**
 * Resolves a probe's port: a number is used as is, a string is looked up among the container's
 * named ports (no numeric fallback: `"8080"` is a name, as in kubelet).
 *
 * @example
 * ```ts
 * resolveContainerPort("http", { name: "app", ports: [{ name: "http", containerPort: 8080 }] }); // { port: 8080 }
 * ```
 */
export function resolveContainerPort(param: IntOrString, container: Container): PortResult {
  let port: number;
  if (typeof param === "number") {
    port = param;
  } else if (typeof param === "string") {
    const found = findPortByName(container, param);
    if (found.error) return { port: 0, error: found.error };
    port = found.port;
  } else {
    return { port: -1, error: new Error(`intOrString had no kind: ${formatNoKind(param)}`) };
  }
  if (port > 0 && port < 65536) return { port };
  return { port, error: new Error(`invalid port number: ${port}`) };
}

/**
 * Finds the first container port with the given name.
 *
 * @example
 * ```ts
 * findPortByName({ name: "app", ports: [{ name: "foo", containerPort: 8080 }] }, "foo"); // { port: 8080 }
 * ```
 */
export function findPortByName(container: Container, portName: string): PortResult {
  for (const p of container.ports ?? []) {
    if (p.name === portName) return { port: p.containerPort };
  }
  return { port: 0, error: new Error(`port ${portName} not found`) };
}

// Go prints the IntOrString struct with %+v; we only have the raw value, so show it as JSON would.
function formatNoKind(param: unknown): string {
  try {
    return JSON.stringify(param) ?? String(param);
  } catch {
    return String(param);
  }
}
