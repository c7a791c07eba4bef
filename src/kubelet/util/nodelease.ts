/**
 * The node lease's owner: a reference to the Node (by its UID, read from the API), so the lease
 * is garbage-collected with the Node. Tried on every create and renewal until it succeeds.
 * Mirrors kubelet's pkg/kubelet/util/nodelease.go.
 * @module
 */
import type { Lease } from "../../api/coordination/v1/mod.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import * as log from "../../util/log.ts";

/**
 * A lease post-process step that sets the Node owner reference when the lease has none; rejects
 * when the Node cannot be read (which holds back a create, not a renewal).
 *
 * @example
 * ```ts
 * import { Clientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const client: Clientset;
 * const postProcess = setNodeOwnerFunc(client, "n1"); // newController's newLeasePostProcessFunc
 * ```
 */
export function setNodeOwnerFunc(
  client: Clientset,
  nodeName: string,
): (lease: Lease) => Promise<void> {
  return async (lease) => {
    // The Node's UID differs from kubelet's nodeRef UID; only the API knows it.
    if ((lease.metadata.ownerReferences ?? []).length > 0) return;
    try {
      const node = await client.coreV1.nodes().get(nodeName);
      lease.metadata.ownerReferences = [{
        apiVersion: "v1",
        kind: "Node",
        name: nodeName,
        uid: node.metadata.uid ?? "",
      }];
    } catch (e) {
      log.error(e, "Failed to get node when trying to set owner ref to the node lease", {
        node: nodeName,
      });
      throw e;
    }
  };
}
