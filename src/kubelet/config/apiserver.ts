/**
 * Pods from the API server: every pod bound to this node (`fieldSelector=spec.nodeName=<node>`),
 * listed and then watched through client-go's reflector, each change delivered as the whole
 * current set (`SET` from source `api`) by an undelta store, starting only once the Node is known.
 * Mirrors kubelet's pkg/kubelet/config/apiserver.go.
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";
import { newListWatchFromClient } from "../../client/cache/listwatch.ts";
import { Reflector } from "../../client/cache/reflector.ts";
import { UndeltaStore } from "../../client/cache/undelta_store.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { ApiserverSource, type PodUpdate } from "../types/pod_update.ts";

/** kubelet's `WaitForAPIServerSyncPeriod`: how often the Node is checked before watching pods. */
export const waitForAPIServerSyncPeriodMs = 1_000;

/** Options of {@linkcode newSourceApiserver}. */
export interface SourceApiserverOptions {
  nodeName: string;
  clock: Clock;
  /** Whether the Node is known (kubelet's `nodeHasSynced`); polled every second before starting. */
  nodeHasSynced: () => boolean | Promise<boolean>;
  /** Receives every full set (the `api` channel of the pod config). */
  updates: (update: PodUpdate) => void;
  /** Randomness of the reflector's watch timeouts and back-off (default `Math.random`). */
  random?: () => number;
}

/** A running API pod source. */
export interface SourceApiserver {
  /** Ends the list/watch; resolves once it has stopped. */
  stop(): Promise<void>;
}

/**
 * Starts watching the pods bound to `options.nodeName` (kubelet's `NewSourceApiserver`).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clientset: Clientset;
 * declare const clock: Clock;
 * declare const updates: Parameters<typeof newSourceApiserver>[1]["updates"];
 *
 * const source = newSourceApiserver(clientset, {
 *   nodeName: "node1", clock, nodeHasSynced: () => true, updates,
 * });
 * await source.stop();
 * ```
 */
export function newSourceApiserver(
  client: Clientset,
  options: SourceApiserverOptions,
): SourceApiserver {
  const abort = new AbortController();
  const signal = abort.signal;
  const lw = newListWatchFromClient<Pod>(client.coreV1.pods(""), {
    fieldSelector: `spec.nodeName=${options.nodeName}`,
  });
  const send = (pods: Pod[]) => options.updates({ op: "SET", source: ApiserverSource, pods });
  const reflector = new Reflector<Pod>(lw, new UndeltaStore<Pod>(send), {
    name: "pkg/kubelet/config/apiserver.go",
    clock: options.clock,
    random: options.random,
  });
  const done = (async () => {
    // Pods are admitted against the Node: wait until it is known.
    while (!signal.aborted && !(await nodeHasSynced(options))) {
      log.info("Waiting for node sync before watching apiserver pods");
      try {
        await options.clock.sleep(waitForAPIServerSyncPeriodMs, { signal });
      } catch {
        return;
      }
    }
    if (signal.aborted) return;
    log.info("Watching apiserver");
    await reflector.run(signal);
  })().catch((e) => {
    if (!signal.aborted) log.error(e, "API server pod source stopped unexpectedly");
  });
  return {
    async stop() {
      abort.abort();
      await done;
    },
  };
}

async function nodeHasSynced(options: SourceApiserverOptions): Promise<boolean> {
  try {
    return await options.nodeHasSynced();
  } catch {
    return false;
  }
}
