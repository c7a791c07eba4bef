/**
 * Garbage collection of dead containers and sandboxes: of each pod's container (by name), the
 * newest `maxPerPodContainer` dead instances older than `minAge` are kept and the rest removed
 * through CRI `RemoveContainer`; all dead instances of pods that are gone are removed; dead
 * sandboxes without containers are removed except the newest of a pod that still exists; the log
 * folders of pods that are gone are removed. Mirrors kubelet's
 * pkg/kubelet/kuberuntime/kuberuntime_gc.go (evictContainers, evictSandboxes,
 * evictPodLogsDirectories) and the policy of pkg/kubelet/container/container_gc.go. Reduced: no
 * global `MaxContainers` cap. Only objects carrying this node's label are considered.
 * @module
 */
import type { RuntimeService } from "../../cri_client/runtime_service.ts";
import type { Clock } from "../../util/clock.ts";
import { join } from "node:path";
import * as log from "../../util/log.ts";
import { toRuntimeState } from "./kuberuntime_container.ts";
import {
  getContainerInfoFromLabels,
  getPodSandboxInfoFromLabels,
  probeletNodeLabel,
} from "./labels.ts";

/** kubelet's container GC policy (`kubecontainer.GCPolicy`). */
export interface GCPolicy {
  /** Minimum age of a dead container before it may be collected (`--minimum-container-ttl-duration`). */
  minAgeMs: number;
  /**
   * Dead instances kept per pod and container name (`--maximum-dead-containers-per-container`);
   * below 0 means no limit.
   */
  maxPerPodContainer: number;
}

/** kubelet's defaults: keep one dead instance, no minimum age. */
export const defaultGCPolicy: GCPolicy = { minAgeMs: 0, maxPerPodContainer: 1 };

/** What the collector asks about pods (kubelet's `podStateProvider`). */
export interface PodStateProvider {
  /** True when the pod is gone from the agent, so everything of it can be removed. */
  shouldPodContentBeRemoved(uid: string): boolean;
}

/** Options of {@linkcode ContainerGC}. */
export interface ContainerGCOptions {
  runtime: RuntimeService;
  clock: Clock;
  /** Only objects with this node label are collected. */
  nodeName: string;
  podStateProvider: PodStateProvider;
  /** How a dead container goes (default: RemoveContainer; the agent also removes its logs). */
  removeContainer?: (containerId: string) => Promise<void>;
  /** The pod log folders (`<rootDir>/pods`); those of pods gone are removed. */
  podLogsDirectory?: string;
}

/** What one collection removed. */
export interface GCResult {
  containers: string[];
  sandboxes: string[];
}

interface EvictableContainer {
  id: string;
  /** CRI nanoseconds: milliseconds would tie for containers made in the same millisecond. */
  createdAt: bigint;
}

/**
 * The container garbage collector (kubelet's `containerGC`).
 *
 * @example
 * ```ts
 * import type { RuntimeService } from "../../cri_client/runtime_service.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const runtime: RuntimeService;
 * declare const clock: Clock;
 *
 * declare const podStateProvider: ConstructorParameters<typeof ContainerGC>[0]["podStateProvider"];
 * const gc = new ContainerGC({ runtime, clock, nodeName: "node-a", podStateProvider });
 * await gc.garbageCollect(defaultGCPolicy, { allSourcesReady: true });
 * ```
 */
export class ContainerGC {
  readonly #runtime: RuntimeService;
  readonly #clock: Clock;
  readonly #nodeName: string;
  readonly #pods: PodStateProvider;
  readonly #removeContainer: (containerId: string) => Promise<void>;
  readonly #podLogsDirectory?: string;

  /** Creates the collector; nothing runs until {@linkcode garbageCollect}. */
  constructor(options: ContainerGCOptions) {
    this.#runtime = options.runtime;
    this.#clock = options.clock;
    this.#nodeName = options.nodeName;
    this.#pods = options.podStateProvider;
    this.#podLogsDirectory = options.podLogsDirectory;
    this.#removeContainer = options.removeContainer ??
      ((id) => this.#runtime.removeContainer(id));
  }

  /**
   * One collection (kubelet's `GarbageCollect`): dead containers, then dead sandboxes. With
   * `allSourcesReady` false (the pod sources have not all reported yet), nothing of a pod that
   * looks gone is removed, as it may just not be known yet.
   */
  async garbageCollect(
    policy: GCPolicy,
    options: { allSourcesReady: boolean },
  ): Promise<GCResult> {
    const result: GCResult = { containers: [], sandboxes: [] };
    const selector = { labelSelector: { [probeletNodeLabel]: this.#nodeName } };
    const containers = await this.#runtime.listContainers(selector);
    const now = this.#clock.now();

    // evictableContainers: dead, old enough, grouped by pod UID and container name.
    const units = new Map<string, { uid: string; containers: EvictableContainer[] }>();
    for (const c of containers) {
      if (toRuntimeState(c.state) === "running") continue;
      const createdAt = Number(c.createdAt / 1_000_000n);
      if (now - createdAt < policy.minAgeMs) continue;
      const info = getContainerInfoFromLabels(c.labels);
      const key = `${info.podUID}/${info.containerName}`;
      let unit = units.get(key);
      if (!unit) units.set(key, unit = { uid: info.podUID, containers: [] });
      unit.containers.push({ id: c.id, createdAt: c.createdAt });
    }

    for (const unit of units.values()) {
      unit.containers.sort((a, b) => compareDesc(a.createdAt, b.createdAt));
      let keep = policy.maxPerPodContainer < 0 ? unit.containers.length : policy.maxPerPodContainer;
      if (options.allSourcesReady && this.#pods.shouldPodContentBeRemoved(unit.uid)) keep = 0;
      for (const c of unit.containers.slice(keep)) {
        if (await this.#remove("container", c.id)) result.containers.push(c.id);
      }
    }

    // evictSandboxes: a sandbox with containers left stays; of a pod that still exists the
    // newest sandbox stays too.
    const remaining = await this.#runtime.listContainers(selector);
    const withContainers = new Set(remaining.map((c) => c.podSandboxId));
    const sandboxes = await this.#runtime.listPodSandbox(selector);
    const byPod = new Map<string, typeof sandboxes>();
    for (const s of sandboxes) {
      const uid = getPodSandboxInfoFromLabels(s.labels).podUID;
      byPod.set(uid, [...(byPod.get(uid) ?? []), s]);
    }
    for (const [uid, list] of byPod) {
      list.sort((a, b) => compareDesc(a.createdAt, b.createdAt));
      const gone = options.allSourcesReady && this.#pods.shouldPodContentBeRemoved(uid);
      for (const [i, s] of list.entries()) {
        if (s.state === "SANDBOX_READY" || withContainers.has(s.id)) continue;
        if (i === 0 && !gone) continue;
        if (await this.#remove("sandbox", s.id)) result.sandboxes.push(s.id);
      }
    }
    if (options.allSourcesReady) await this.#evictPodLogsDirectories();
    if (result.containers.length + result.sandboxes.length > 0) {
      log.V(2).info("Garbage collected dead containers and sandboxes", {
        containers: result.containers.length,
        sandboxes: result.sandboxes.length,
      });
    }
    return result;
  }

  // Kubelet's evictPodLogsDirectories: the log folder of a pod whose content may go (named
  // `<namespace>_<name>_<uid>`, the UID last) is removed. Only called once all sources are ready.
  async #evictPodLogsDirectories(): Promise<void> {
    const root = this.#podLogsDirectory;
    if (!root) return;
    const names: string[] = [];
    try {
      for await (const e of Deno.readDir(root)) if (e.isDirectory) names.push(e.name);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      log.error(e, "Failed to read pod logs directory", { path: root });
      return;
    }
    for (const name of names) {
      // Only log folders: `<root-dir>/pods` also holds the pod folders (`<uid>/volumes`), which
      // the volume manager removes once their volumes are unmounted.
      if (!name.includes("_")) continue;
      const uid = name.split("_").at(-1) ?? "";
      if (!this.#pods.shouldPodContentBeRemoved(uid)) continue;
      log.V(4).info("Removing pod logs", { podUID: uid });
      await Deno.remove(join(root, name), { recursive: true }).catch((e) =>
        log.error(e, "Failed to remove pod logs directory", { path: join(root, name) })
      );
    }
  }

  async #remove(kind: "container" | "sandbox", id: string): Promise<boolean> {
    try {
      if (kind === "container") await this.#removeContainer(id);
      else await this.#runtime.removePodSandbox(id);
      log.V(4).info(`Removed dead ${kind}`, { id });
      return true;
    } catch (e) {
      log.error(e, `Failed to remove ${kind}`, { id });
      return false;
    }
  }
}

function compareDesc(a: bigint, b: bigint): number {
  return a === b ? 0 : a > b ? -1 : 1;
}

/**
 * The dead instances of one container to delete right after it died, newest `containersToKeep`
 * kept (kubelet's `getContainersToDeleteInPod`, used by its pod container deletor on every
 * `ContainerDied` event).
 *
 * @example
 * ```ts
 * declare const podStatus: Parameters<typeof getContainersToDeleteInPod>[1];
 * getContainersToDeleteInPod("c3", podStatus, 1); // IDs of older dead instances of c3's container
 * ```
 */
export function getContainersToDeleteInPod(
  filterContainerID: string,
  podStatus: {
    containerStatuses: { id: { id: string }; name: string; state: string; createdAt: number }[];
  },
  containersToKeep: number,
): string[] {
  const target = podStatus.containerStatuses.find((c) => c.id.id === filterContainerID);
  if (!target) return [];
  const dead = podStatus.containerStatuses
    .filter((c) => c.name === target.name && c.state === "exited")
    .sort((a, b) => b.createdAt - a.createdAt);
  if (containersToKeep < 0 || dead.length <= containersToKeep) return [];
  return dead.slice(containersToKeep).map((c) => c.id.id);
}
