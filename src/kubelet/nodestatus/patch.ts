/**
 * Node status writes as kubelet sends them: a two-way strategic merge patch from the node as last
 * read to the node with its new status (spec reset to the old one, so only status and metadata
 * can change), PATCHed to `nodes/<name>/status` without a resourceVersion (so it never conflicts).
 * `status.addresses` is sent whole with a `$patch: replace` element when it changed, because its
 * merge key (`type`) would otherwise merge two InternalIPs into one.
 * Mirrors k8s.io/component-helpers/node/util/status.go (PatchNodeStatus,
 * preparePatchBytesforNodeStatus, fixupPatchForNodeStatusAddresses).
 * @module
 */
import type { Node, NodeAddress } from "../../api/core/v1/mod.ts";
import { type NodeInterface, PatchType } from "../../client/kubernetes/clientset.ts";
import { goJsonMarshal } from "../../util/strategicpatch/marshal.ts";
import { createTwoWayMergeMap } from "../../util/strategicpatch/patch.ts";
import { nodeSchema } from "../../util/strategicpatch/schema.ts";

function addressesEqual(a: NodeAddress[] | undefined, b: NodeAddress[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length &&
    x.every((addr, i) => addr.type === y[i].type && addr.address === y[i].address);
}

/**
 * The patch bytes kubelet sends for `oldNode` → `newNode`. Mirrors preparePatchBytesforNodeStatus.
 *
 * @example
 * ```ts
 * import type { Node } from "../../api/core/v1/mod.ts";
 *
 * declare const oldNode: Node;
 * declare const newNode: Node;
 *
 * preparePatchBytesForNodeStatus(oldNode, newNode);
 * // '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[...]}}'
 * ```
 */
export function preparePatchBytesForNodeStatus(oldNode: Node, newNode: Node): string {
  const nodeName = oldNode.metadata.name ?? "";
  // Addresses merge by type, which would fold dual-stack InternalIPs: replace them whole.
  const manuallyPatchAddresses = (oldNode.status?.addresses?.length ?? 0) > 0 &&
    !addressesEqual(oldNode.status?.addresses, newNode.status?.addresses);
  // Only status (and metadata) may change: diff against a copy carrying the old spec.
  const diffNode: Node = structuredClone(newNode);
  if (oldNode.spec === undefined) delete diffNode.spec;
  else diffNode.spec = structuredClone(oldNode.spec);
  if (manuallyPatchAddresses) {
    diffNode.status ??= {};
    diffNode.status.addresses = structuredClone(oldNode.status?.addresses);
  }
  let patch: Record<string, unknown>;
  try {
    patch = createTwoWayMergeMap(oldNode, diffNode, nodeSchema);
  } catch (e) {
    throw new Error(
      `failed to CreateTwoWayMergePatch for node "${nodeName}": ${
        e instanceof Error ? e.message : e
      }`,
    );
  }
  if (manuallyPatchAddresses) {
    const status = (patch.status ??= {}) as Record<string, unknown>;
    status.addresses = [
      ...structuredClone(newNode.status?.addresses ?? []),
      { $patch: "replace" },
    ];
  }
  return goJsonMarshal(patch);
}

/** What {@linkcode patchNodeStatus} patches: from `oldNode` (as read) to `newNode`. */
export interface PatchNodeStatusOptions {
  oldNode: Node;
  newNode: Node;
  /** Cancels the request (the agent is stopping). */
  signal?: AbortSignal;
}

/**
 * Patches the node's status from `oldNode` to `newNode` (strategic merge patch on
 * `nodes/<name>/status`); resolves with the node as the server returned it and the patch sent.
 * Mirrors PatchNodeStatus.
 *
 * @example
 * ```ts
 * import type { Node } from "../../api/core/v1/mod.ts";
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const clientset: Clientset;
 * declare const oldNode: Node;
 * declare const newNode: Node;
 *
 * const { node, patch } = await patchNodeStatus(clientset.coreV1.nodes(), { oldNode, newNode });
 * ```
 */
export async function patchNodeStatus(
  nodes: NodeInterface,
  options: PatchNodeStatusOptions,
): Promise<{ node: Node; patch: string }> {
  const { oldNode, newNode, signal } = options;
  const nodeName = oldNode.metadata.name ?? "";
  const patch = preparePatchBytesForNodeStatus(oldNode, newNode);
  try {
    const node = await nodes.patchStatus(nodeName, PatchType.StrategicMergePatch, patch, {
      signal,
    });
    return { node, patch };
  } catch (e) {
    throw new Error(
      `failed to patch status ${JSON.stringify(patch)} for node "${nodeName}": ${
        e instanceof Error ? e.message : e
      }`,
      { cause: e },
    );
  }
}
