/**
 * Pod status writes as kubelet makes them: a two-way strategic merge patch from the status the API
 * server has to the status kubelet wants, with `metadata.uid` added as a precondition, sent to
 * `pods/<name>/status`. A patch that only carries the UID means "no change" and is not sent.
 * Mirrors k8s.io/kubernetes/pkg/util/pod/pod.go.
 * @module
 */
import type { Pod, PodStatus } from "../../api/core/v1/mod.ts";
import { PatchType } from "../../api/types/patch.ts";
import { createTwoWayMergePatch } from "../strategicpatch/patch.ts";
import { podSchema } from "../strategicpatch/schema.ts";
import { goJsonMarshal } from "../strategicpatch/marshal.ts";

/**
 * What `patchPodStatus` needs of a clientset: `coreV1.pods(ns).patchStatus`. Declared here so
 * `util` imports nothing above it; client-go's `Clientset` and the test fake both satisfy it.
 */
export interface PodStatusPatchClient {
  /** The core/v1 group, cut down to pods' status patch. */
  coreV1: {
    /** `pods` in one namespace. */
    pods(namespace: string): {
      /** PATCH `<name>/status` with `data` sent as `patchType`. */
      patchStatus(
        name: string,
        patchType: PatchType,
        data: string,
        opts?: { signal?: AbortSignal },
      ): Promise<Pod>;
    };
  };
}

/** Which pod a status patch is for. */
export interface PodStatusPatchTarget {
  namespace: string;
  name: string;
  /** Sent as `metadata.uid`: the server refuses the patch (409) when the pod was recreated. */
  uid: string;
}

/** The patch for one status change, and whether there is nothing to send. */
export interface PodStatusPatch {
  /** Exact bytes, as kubelet marshals them (sorted keys). */
  patchBytes: string;
  /** True when the patch only carries the UID precondition. */
  unchanged: boolean;
}

/**
 * The patch that turns `oldPodStatus` into `newPodStatus` for `target` (Go's
 * `preparePatchBytesForPodStatus`). Statuses are compared in their JSON form.
 *
 * @example
 * ```ts
 * import type { PodStatus } from "../../api/core/v1/mod.ts";
 *
 * declare const old: PodStatus;
 *
 * preparePatchBytesForPodStatus(old, { ...old, message: "m" }, { namespace: "ns", name: "p", uid: "u" });
 * // { patchBytes: '{"metadata":{"uid":"u"},"status":{"message":"m"}}', unchanged: false }
 * ```
 */
export function preparePatchBytesForPodStatus(
  oldPodStatus: PodStatus,
  newPodStatus: PodStatus,
  target: PodStatusPatchTarget,
): PodStatusPatch {
  let patchBytes: string;
  try {
    patchBytes = createTwoWayMergePatch(
      { status: oldPodStatus },
      { metadata: { uid: target.uid }, status: newPodStatus },
      podSchema,
    );
  } catch (err) {
    throw new Error(
      `failed to CreateTwoWayMergePatch for pod "${target.namespace}/${target.name}": ${
        (err as Error).message
      }`,
      { cause: err },
    );
  }
  const uidOnly = goJsonMarshal({ metadata: { uid: target.uid } });
  return { patchBytes, unchanged: patchBytes === uidOnly };
}

/** Options of `patchPodStatus`. */
export interface PatchPodStatusOptions extends PodStatusPatchTarget {
  oldPodStatus: PodStatus;
  newPodStatus: PodStatus;
  signal?: AbortSignal;
}

/** What `patchPodStatus` did: the pod as the server returned it (when a patch was sent). */
export interface PatchPodStatusResult extends PodStatusPatch {
  pod?: Pod;
}

/**
 * Patches a pod's status from `oldPodStatus` to `newPodStatus` with the UID precondition; sends
 * nothing when unchanged (Go's `PatchPodStatus`). A failure keeps the API error as its `cause`, so
 * `isConflict(err)` and friends still classify it.
 *
 * @example
 * ```ts
 * import type { PodStatus } from "../../api/core/v1/mod.ts";
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 *
 * declare const clientset: Clientset;
 * declare const uid: string;
 * declare const apiStatus: PodStatus;
 * declare const merged: PodStatus;
 *
 * const { unchanged, pod } = await patchPodStatus(clientset, {
 *   namespace: "default", name: "web", uid, oldPodStatus: apiStatus, newPodStatus: merged,
 * });
 * ```
 */
export async function patchPodStatus(
  client: PodStatusPatchClient,
  options: PatchPodStatusOptions,
): Promise<PatchPodStatusResult> {
  const { namespace, name } = options;
  const prepared = preparePatchBytesForPodStatus(
    options.oldPodStatus,
    options.newPodStatus,
    options,
  );
  if (prepared.unchanged) return prepared;
  try {
    const pod = await client.coreV1.pods(namespace).patchStatus(
      name,
      PatchType.StrategicMergePatch,
      prepared.patchBytes,
      { signal: options.signal },
    );
    return { ...prepared, pod };
  } catch (err) {
    throw new Error(
      `failed to patch status ${
        JSON.stringify(prepared.patchBytes)
      } for pod "${namespace}/${name}": ${(err as Error).message}`,
      { cause: err },
    );
  }
}
