/**
 * Mirror pods: the API server's read-only copies of this node's static pods. A mirror carries the
 * static pod's hash in `kubernetes.io/config.mirror` and is owned by this Node (NodeRestriction
 * only lets a node create such pods); it is deleted with a UID precondition so that a newer mirror
 * of the same name is never removed by mistake.
 * Mirrors kubelet's pkg/kubelet/pod/mirror_client.go.
 * @module
 */
import type { Node, Pod } from "../../api/core/v1/mod.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../../client/errors.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import * as log from "../../util/log.ts";
import { ConfigMirrorAnnotationKey, parsePodFullName } from "../types/pod_update.ts";
import { getPodHash } from "./pod_manager.ts";

/**
 * Creates and deletes mirror pods (kubelet's `MirrorClient`).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const staticPod: Pod;
 * declare const mirrorUID: string;
 * declare const mirrorClient: MirrorClient;
 *
 * await mirrorClient.createMirrorPod(staticPod);
 * await mirrorClient.deleteMirrorPod("web-node1_default", mirrorUID);
 * ```
 */
export interface MirrorClient {
  /**
   * Creates the mirror of `pod`: its annotations plus `kubernetes.io/config.mirror` = the pod's
   * hash, owned by this Node. An existing mirror with the same hash counts as success.
   */
  createMirrorPod(pod: Pod): Promise<void>;
  /**
   * Deletes the mirror pod `<name>_<namespace>` at once (grace 0), only if its UID is `uid` (when
   * given). Resolves true when it was deleted; a missing pod or a UID mismatch resolves false.
   */
  deleteMirrorPod(podFullName: string, uid?: string): Promise<boolean>;
}

/** Options of {@linkcode BasicMirrorClient}. */
export interface BasicMirrorClientOptions {
  /** This node's name (the owner reference's name). */
  nodeName: string;
  /** The Node object as registered (its UID goes into the owner reference). */
  nodeGetter: () => Promise<Node | undefined> | Node | undefined;
}

/**
 * The mirror client over a clientset (kubelet's `basicMirrorClient`).
 *
 * @example
 * ```ts
 * import type { Node } from "../../api/core/v1/mod.ts";
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const clientset: Clientset;
 * declare const kubelet: { getNode(): Promise<Node> };
 *
 * const mirrors = new BasicMirrorClient(clientset, { nodeName: "node1", nodeGetter: () => kubelet.getNode() });
 * ```
 */
export class BasicMirrorClient implements MirrorClient {
  #client: Clientset;
  #options: BasicMirrorClientOptions;

  /** `client` is the kubelet's API client. */
  constructor(client: Clientset, options: BasicMirrorClientOptions) {
    this.#client = client;
    this.#options = options;
  }

  async createMirrorPod(pod: Pod): Promise<void> {
    const copy: Pod = structuredClone(pod);
    const hash = getPodHash(pod);
    copy.metadata.annotations = { ...pod.metadata.annotations, [ConfigMirrorAnnotationKey]: hash };
    // The server assigns identity and version; the static pod's own UID must not leak into them.
    delete copy.metadata.uid;
    delete copy.metadata.resourceVersion;
    // KEP-1314 (MirrorPodNodeRestriction): the mirror is owned by the Node, by UID.
    const nodeUID = await this.#getNodeUID();
    copy.metadata.ownerReferences = [{
      apiVersion: "v1",
      kind: "Node",
      name: this.#options.nodeName,
      uid: nodeUID,
      controller: true,
    }];
    const namespace = copy.metadata.namespace ?? "default";
    try {
      await this.#client.coreV1.pods(namespace).create(copy);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
      // The same mirror created earlier (by us, before a restart) is fine.
      const existing = await this.#client.coreV1.pods(namespace).get(copy.metadata.name ?? "");
      if (existing.metadata.annotations?.[ConfigMirrorAnnotationKey] === hash) return;
      throw e;
    }
  }

  async deleteMirrorPod(podFullName: string, uid?: string): Promise<boolean> {
    let name: string;
    let namespace: string;
    try {
      ({ name, namespace } = parsePodFullName(podFullName));
    } catch (e) {
      log.error(e, "Failed to parse a pod full name", { podFullName });
      throw e;
    }
    log.V(2).info("Deleting a mirror pod", { pod: `${namespace}/${name}`, podUID: uid ?? "" });
    try {
      await this.#client.coreV1.pods(namespace).delete(name, {
        gracePeriodSeconds: 0,
        ...(uid !== undefined ? { preconditions: { uid } } : {}),
      });
    } catch (e) {
      // A failed UID precondition is a Conflict; like kubelet, only unexpected errors are logged
      // and none is returned (the next sync tries again).
      if (!(isNotFound(e) || isConflict(e))) {
        log.error(e, "Failed deleting a mirror pod", { pod: `${namespace}/${name}` });
      }
      return false;
    }
    return true;
  }

  async #getNodeUID(): Promise<string> {
    let node: Node | undefined;
    try {
      node = await this.#options.nodeGetter();
    } catch (e) {
      throw new Error(`failed to get node UID: ${e instanceof Error ? e.message : e}`);
    }
    if (!node) {
      throw new Error(`failed to get node UID: node "${this.#options.nodeName}" not found`);
    }
    const uid = node.metadata.uid ?? "";
    if (uid === "") {
      throw new Error(`failed to get node UID: UID unset for node ${this.#options.nodeName}`);
    }
    return uid;
  }
}
