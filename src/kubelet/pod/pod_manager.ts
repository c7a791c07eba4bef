/**
 * The pods bound to this kubelet, by UID and by full name, and the mirror pods the API server
 * holds for static pods: which mirror belongs to which static pod, and the UID translation the
 * status manager needs (a static pod's status is written to its mirror's UID).
 * Mirrors kubelet's pkg/kubelet/pod/pod_manager.go (basicManager).
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";
import {
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  getPodFullName,
  isMirrorPod,
  isStaticPod,
} from "../types/pod_update.ts";

/** A pod's UID as the kubelet's sources know it (a static pod's own UID). */
export type ResolvedPodUID = string;
/** The UID a status is written to: the mirror pod's UID for a static pod, else the pod's own. */
export type MirrorPodUID = string;

/**
 * The pod manager: regular pods (from every source) and mirror pods, kept apart.
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const staticPod: Pod;
 * declare const mirrorPod: Pod;
 *
 * const pods: Manager = new BasicPodManager();
 * pods.addPod(staticPod);
 * pods.addPod(mirrorPod);
 * pods.translatePodUID(mirrorPod.metadata.uid!); // the static pod's UID
 * ```
 */
export interface Manager {
  /** Regular (non-mirror) pods. */
  getPods(): Pod[];
  /** The regular pod with this full name (`<name>_<namespace>`). */
  getPodByFullName(podFullName: string): Pod | undefined;
  /** The regular pod with this namespace and name. */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** The regular pod with this UID. */
  getPodByUID(uid: string): Pod | undefined;
  /** The static pod a mirror pod stands for. */
  getPodByMirrorPod(mirrorPod: Pod): Pod | undefined;
  /** The mirror pod of a static pod. */
  getMirrorPodByPod(pod: Pod): Pod | undefined;
  /**
   * For a regular pod: it and its mirror. For a mirror pod: its static pod, itself, and
   * `wasMirror: true`.
   */
  getPodAndMirrorPod(pod: Pod): { pod?: Pod; mirrorPod?: Pod; wasMirror: boolean };
  /** Regular pods and mirror pods. */
  getPodsAndMirrorPods(): { pods: Pod[]; mirrorPods: Pod[] };
  /** Replaces every pod (tests). */
  setPods(pods: Pod[]): void;
  /** Adds a pod or a mirror pod (replacing one with the same UID). */
  addPod(pod: Pod): void;
  /** Same as {@linkcode addPod}. */
  updatePod(pod: Pod): void;
  /** Forgets a pod or a mirror pod. */
  removePod(pod: Pod): void;
  /** Full names of mirror pods whose static pod is not known (to be deleted). */
  getOrphanedMirrorPodNames(): string[];
  /** A mirror pod's UID → its static pod's UID; any other UID unchanged. */
  translatePodUID(uid: string): ResolvedPodUID;
  /**
   * `podToMirror`: every static pod's UID → its mirror's UID (`""` while it has none);
   * `mirrorToPod`: the reverse, for mirrors whose static pod is known.
   */
  getUIDTranslations(): {
    podToMirror: Map<ResolvedPodUID, MirrorPodUID>;
    mirrorToPod: Map<MirrorPodUID, ResolvedPodUID>;
  };
  /** Whether `mirrorPod` is the mirror of `pod`: same full name and the same hash. */
  isMirrorPodOf(mirrorPod: Pod, pod: Pod): boolean;
}

/**
 * The pod manager kept in memory (kubelet's `basicManager`). Everything runs on one event loop,
 * so no lock is needed.
 *
 * @example
 * ```ts
 * const pods = new BasicPodManager();
 * pods.addPod({ metadata: { uid: "1", name: "a", namespace: "default" }, spec: { containers: [] } });
 * pods.getPodByName("default", "a")?.metadata.uid; // "1"
 * ```
 */
export class BasicPodManager implements Manager {
  #podByUID = new Map<ResolvedPodUID, Pod>();
  #mirrorPodByUID = new Map<MirrorPodUID, Pod>();
  #podByFullName = new Map<string, Pod>();
  #mirrorPodByFullName = new Map<string, Pod>();
  /** Mirror pod UID → static pod UID. */
  #translationByUID = new Map<MirrorPodUID, ResolvedPodUID>();

  setPods(pods: Pod[]): void {
    this.#podByUID.clear();
    this.#podByFullName.clear();
    this.#mirrorPodByUID.clear();
    this.#mirrorPodByFullName.clear();
    this.#translationByUID.clear();
    for (const pod of pods) this.#updatePodsInternal(pod);
  }

  addPod(pod: Pod): void {
    this.updatePod(pod);
  }

  updatePod(pod: Pod): void {
    this.#updatePodsInternal(pod);
  }

  #updatePodsInternal(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    const fullName = getPodFullName(pod);
    if (isMirrorPod(pod)) {
      this.#mirrorPodByUID.set(uid, pod);
      this.#mirrorPodByFullName.set(fullName, pod);
      const staticPod = this.#podByFullName.get(fullName);
      if (staticPod) this.#translationByUID.set(uid, staticPod.metadata?.uid ?? "");
      return;
    }
    this.#podByUID.set(uid, pod);
    this.#podByFullName.set(fullName, pod);
    const mirror = this.#mirrorPodByFullName.get(fullName);
    if (mirror) this.#translationByUID.set(mirror.metadata?.uid ?? "", uid);
  }

  removePod(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    const fullName = getPodFullName(pod);
    if (isMirrorPod(pod)) {
      this.#mirrorPodByUID.delete(uid);
      // A newer mirror under the same name stays.
      if (this.#mirrorPodByFullName.get(fullName)?.metadata?.uid === uid) {
        this.#mirrorPodByFullName.delete(fullName);
      }
      this.#translationByUID.delete(uid);
      return;
    }
    this.#podByUID.delete(uid);
    if (this.#podByFullName.get(fullName)?.metadata?.uid === uid) {
      this.#podByFullName.delete(fullName);
    }
  }

  getPods(): Pod[] {
    return [...this.#podByUID.values()];
  }

  getPodsAndMirrorPods(): { pods: Pod[]; mirrorPods: Pod[] } {
    return { pods: this.getPods(), mirrorPods: [...this.#mirrorPodByUID.values()] };
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.#podByUID.get(uid);
  }

  getPodByName(namespace: string, name: string): Pod | undefined {
    return this.#podByFullName.get(`${name}_${namespace}`);
  }

  getPodByFullName(podFullName: string): Pod | undefined {
    return this.#podByFullName.get(podFullName);
  }

  translatePodUID(uid: string): ResolvedPodUID {
    if (uid === "") return uid;
    return this.#translationByUID.get(uid) ?? uid;
  }

  getUIDTranslations(): {
    podToMirror: Map<ResolvedPodUID, MirrorPodUID>;
    mirrorToPod: Map<MirrorPodUID, ResolvedPodUID>;
  } {
    const podToMirror = new Map<ResolvedPodUID, MirrorPodUID>();
    const mirrorToPod = new Map<MirrorPodUID, ResolvedPodUID>();
    // Static pods without a mirror are listed too (with ""), so callers can tell them apart from
    // API pods.
    for (const [uid, pod] of this.#podByUID) {
      if (isStaticPod(pod)) podToMirror.set(uid, "");
    }
    for (const [mirrorUID, podUID] of this.#translationByUID) {
      mirrorToPod.set(mirrorUID, podUID);
      podToMirror.set(podUID, mirrorUID);
    }
    return { podToMirror, mirrorToPod };
  }

  getOrphanedMirrorPodNames(): string[] {
    const names: string[] = [];
    for (const fullName of this.#mirrorPodByFullName.keys()) {
      if (!this.#podByFullName.has(fullName)) names.push(fullName);
    }
    return names;
  }

  isMirrorPodOf(mirrorPod: Pod, pod: Pod): boolean {
    // The full names must match, though a mismatch would be a programming error.
    if (getPodFullName(mirrorPod) !== getPodFullName(pod)) return false;
    const hash = mirrorPod.metadata?.annotations?.[ConfigMirrorAnnotationKey];
    if (hash === undefined) return false;
    return hash === getPodHash(pod);
  }

  getMirrorPodByPod(pod: Pod): Pod | undefined {
    return this.#mirrorPodByFullName.get(getPodFullName(pod));
  }

  getPodByMirrorPod(mirrorPod: Pod): Pod | undefined {
    return this.#podByFullName.get(getPodFullName(mirrorPod));
  }

  getPodAndMirrorPod(pod: Pod): { pod?: Pod; mirrorPod?: Pod; wasMirror: boolean } {
    const fullName = getPodFullName(pod);
    if (isMirrorPod(pod)) {
      return { pod: this.#podByFullName.get(fullName), mirrorPod: pod, wasMirror: true };
    }
    return { pod, mirrorPod: this.#mirrorPodByFullName.get(fullName), wasMirror: false };
  }
}

/**
 * A static pod's hash (the `kubernetes.io/config.hash` annotation every static pod carries).
 *
 * @example
 * ```ts
 * getPodHash({ metadata: { annotations: { "kubernetes.io/config.hash": "abc" } }, spec: { containers: [] } }); // "abc"
 * ```
 */
export function getPodHash(pod: Pod): string {
  return pod.metadata?.annotations?.[ConfigHashAnnotationKey] ?? "";
}
