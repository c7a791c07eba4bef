/**
 * The cache of probe verdicts per container, with a stream of changes for the kubelet's sync loop.
 * Mirrors kubelet's pkg/kubelet/prober/results/results_manager.go.
 * @module
 */
import type { Pod } from "../../../api/core/v1/mod.ts";
import { Channel } from "../../../util/channel.ts";
import { type ContainerID, containerIDString } from "../../container/mod.ts";

/**
 * A cached probe verdict. The numbers are behaviour, not decoration: kubelet declares them with
 * `iota - 1`, so Go's zero value of a `results.Result` is Success. A worker's `lastResult` starts out
 * as that zero value, which is why a worker's very first Success already counts as a run of one
 * continuing the "previous" Success (see worker.ts).
 */
export type Result = -1 | 0 | 1;

/** The three verdicts by kubelet's names. */
export const Result = {
  Unknown: -1,
  Success: 0,
  Failure: 1,
} as const satisfies Record<string, Result>;

/**
 * kubelet's `Result.String()`: `Success`, `Failure`, anything else `UNKNOWN`.
 *
 * @example
 * ```ts
 * resultString(Result.Unknown); // "UNKNOWN"
 * ```
 */
export function resultString(result: Result): string {
  switch (result) {
    case Result.Success:
      return "Success";
    case Result.Failure:
      return "Failure";
    default:
      return "UNKNOWN";
  }
}

/**
 * kubelet's `Result.ToPrometheusType()`: Success → 0, Failure → 1, anything else → -1.
 *
 * @example
 * ```ts
 * toPrometheusType(Result.Failure); // 1
 * ```
 */
export function toPrometheusType(result: Result): number {
  switch (result) {
    case Result.Success:
      return 0;
    case Result.Failure:
      return 1;
    default:
      return -1;
  }
}

/** One change of a container's cached verdict. */
export interface Update {
  /** The container whose verdict changed. */
  containerID: ContainerID;
  /** The new verdict. */
  result: Result;
  /** The UID of the container's pod. */
  podUID: string;
}

/** The read side of the updates stream: one consumer receives or iterates. */
export interface UpdateStream extends AsyncIterable<Update> {
  /** Receives the next update, waiting for one. */
  receive(): Promise<IteratorResult<Update>>;
  /** Takes an update only if one is buffered now. */
  tryReceive(): IteratorResult<Update> | undefined;
  /** Updates waiting in the buffer. */
  readonly length: number;
  /** Setters blocked because the buffer is full. */
  readonly blockedSenders: number;
}

/**
 * The results cache of one probe type (kubelet keeps three: liveness, readiness, startup).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const m = newManager();
 * await m.set({ type: "containerd", id: "abc" }, Result.Success, pod);
 * m.get({ type: "containerd", id: "abc" }); // Result.Success
 * ```
 */
export interface ResultsManager {
  /** The cached verdict, or undefined when none is cached. */
  get(id: ContainerID): Result | undefined;
  /**
   * Caches `result` at once; when it differs from the cached one, queues an update. The promise
   * resolves once the update is buffered: it waits while 20 updates are pending (backpressure).
   */
  set(id: ContainerID, result: Result, pod: Pod): Promise<void>;
  /** Forgets the verdict; emits no update. */
  remove(id: ContainerID): void;
  /** The single shared updates stream (only one consumer is supported). */
  updates(): UpdateStream;
}

/** The updates buffer size kubelet uses. */
export const updatesBufferSize = 20;

/**
 * Creates an empty results manager.
 *
 * @example
 * ```ts
 * const readiness = newManager();
 * for await (const u of readiness.updates()) console.log(u.podUID, u.result);
 * ```
 */
export function newManager(): ResultsManager {
  return new Manager();
}

class Manager implements ResultsManager {
  // Keyed by the "<type>://<id>" string: a ContainerID object has no identity of its own.
  #cache = new Map<string, Result>();
  #updates = new Channel<Update>(updatesBufferSize);

  get(id: ContainerID): Result | undefined {
    return this.#cache.get(containerIDString(id));
  }

  set(id: ContainerID, result: Result, pod: Pod): Promise<void> {
    const key = containerIDString(id);
    const previous = this.#cache.get(key);
    if (previous === result && this.#cache.has(key)) return Promise.resolve();
    this.#cache.set(key, result);
    return this.#updates.send({
      containerID: { type: id.type, id: id.id },
      result,
      podUID: pod.metadata?.uid ?? "",
    });
  }

  remove(id: ContainerID): void {
    this.#cache.delete(containerIDString(id));
  }

  updates(): UpdateStream {
    return this.#updates;
  }
}
