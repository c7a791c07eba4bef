/**
 * Container IDs in kubelet's `<type>://<id>` form.
 * Mirrors the ContainerID part of kubelet's pkg/kubelet/container/runtime.go.
 * @module
 */

/**
 * A container ID split into the runtime type and the runtime's own ID.
 *
 * @example
 * ```ts
 * const id = parseContainerID("containerd://0123abcd");
 * id.type; // "containerd"
 * containerIDString(id); // "containerd://0123abcd"
 * ```
 */
export interface ContainerID {
  type: string;
  id: string;
}

/** The empty ID, as Go's zero value. */
export const emptyContainerID: ContainerID = Object.freeze({ type: "", id: "" });

/** Formats an ID as `<type>://<id>`; the empty ID formats as `""`. */
export function containerIDString(id: ContainerID): string {
  return isEmptyContainerID(id) ? "" : `${id.type}://${id.id}`;
}

/** True for the zero-value ID. */
export function isEmptyContainerID(id: ContainerID): boolean {
  return id.type === "" && id.id === "";
}

/** The error text of a malformed ID, as kubelet's `ContainerID.ParseString`. */
export function containerIDParseError(s: string): Error | undefined {
  return s.split("://").length === 2 ? undefined : new Error(`invalid container ID: "${s}"`);
}

/**
 * Parses `<type>://<id>`; a malformed string yields the empty ID (kubelet logs and carries on).
 */
export function parseContainerID(s: string | undefined): ContainerID {
  if (!s) return emptyContainerID;
  const parts = s.split("://");
  if (parts.length !== 2) return emptyContainerID;
  return { type: parts[0], id: parts[1] };
}
