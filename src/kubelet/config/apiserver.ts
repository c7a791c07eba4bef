/**
 * Pods from the API server: every pod bound to this node (`fieldSelector=spec.nodeName=<node>`),
 * listed and then watched, each change delivered as the whole current set (`SET` from source
 * `api`), starting only once the Node is known. The list/watch follows client-go's reflector: a
 * watch from the list's resourceVersion with bookmarks and a server timeout of 5–10 minutes, a
 * re-watch from the last resourceVersion when a stream ends, a fresh list after `410 Expired`,
 * and a back-off (0.8 s doubling to 30 s) after errors.
 * Mirrors kubelet's pkg/kubelet/config/apiserver.go with client-go's tools/cache reflector.go,
 * listwatch.go and undelta_store.go reduced to what this source needs.
 * @module
 */
import type { Pod } from "../../api/core/v1/mod.ts";
import type { Status } from "../../api/meta/v1/mod.ts";
import { isGone, isResourceExpired } from "../../client/errors.ts";
import type { Clientset } from "../../client/kubernetes/clientset.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { ApiserverSource, type PodUpdate } from "../types/pod_update.ts";

/** kubelet's `WaitForAPIServerSyncPeriod`: how often the Node is checked before watching pods. */
export const waitForAPIServerSyncPeriodMs = 1_000;
/** client-go's reflector back-off: initial and maximum delay after a failed list or watch. */
export const reflectorBackoff = { initialMs: 800, maxMs: 30_000 };
/** client-go's minimum watch timeout; each watch asks for a random value in [min, 2·min). */
export const minWatchTimeoutSeconds = 300;

/** Options of {@linkcode newSourceApiserver}. */
export interface SourceApiserverOptions {
  nodeName: string;
  clock: Clock;
  /** Whether the Node is known (kubelet's `nodeHasSynced`); polled every second before starting. */
  nodeHasSynced: () => boolean | Promise<boolean>;
  /** Receives every full set (the `api` channel of the pod config). */
  updates: (update: PodUpdate) => void;
  /** Source of the watch timeout jitter (default `Math.random`). */
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
 * const source = newSourceApiserver(clientset, {
 *   nodeName: "node1", clock, nodeHasSynced: () => true, updates: config.channel("api"),
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
  const done = run(client, options, signal).catch((e) => {
    if (!signal.aborted) log.error(e, "API server pod source stopped unexpectedly");
  });
  return {
    async stop() {
      abort.abort();
      await done;
    },
  };
}

async function run(
  client: Clientset,
  options: SourceApiserverOptions,
  signal: AbortSignal,
): Promise<void> {
  const { clock } = options;
  const sleep = (ms: number) => clock.sleep(ms, { signal }).then(() => true, () => false);
  // Pods may only be admitted against a known Node.
  while (!signal.aborted && !(await nodeHasSynced(options))) {
    log.info("Waiting for node sync before watching apiserver pods");
    if (!(await sleep(waitForAPIServerSyncPeriodMs))) return;
  }
  if (signal.aborted) return;
  log.info("Watching apiserver");
  const pods = client.coreV1.pods("");
  const fieldSelector = `spec.nodeName=${options.nodeName}`;
  const store = new UndeltaStore((list) =>
    options.updates({ op: "SET", source: ApiserverSource, pods: list })
  );
  const random = options.random ?? Math.random;
  let backoffMs = 0;
  // The first list may come from the server's cache ("0"); after 410, only a fresh one will do.
  let listFrom = "0";
  while (!signal.aborted) {
    try {
      const list = await pods.list({ fieldSelector, resourceVersion: listFrom, signal });
      store.replace(list.items, list.metadata.resourceVersion ?? "");
      let rv = list.metadata.resourceVersion ?? "";
      listFrom = "0";
      backoffMs = 0;
      // Watch until the history is gone (410) or an error; a stream that just ends is resumed.
      for (;;) {
        const timeoutSeconds = Math.floor(minWatchTimeoutSeconds * (1 + random()));
        const w = await pods.watch({
          fieldSelector,
          resourceVersion: rv,
          allowWatchBookmarks: true,
          timeoutSeconds,
          signal,
        });
        const onAbort = () => w.stop();
        signal.addEventListener("abort", onAbort, { once: true });
        let expired = false;
        try {
          for await (const event of w) {
            if (event.type === "ERROR") {
              const status = event.object as unknown as Status;
              if (status.code === 410 || status.reason === "Expired" || status.reason === "Gone") {
                log.V(2).info("Watch of apiserver pods expired, listing again", {
                  message: status.message ?? "",
                });
                expired = true;
                break;
              }
              throw new Error(`watch error: ${status.message ?? JSON.stringify(status)}`);
            }
            const pod = event.object as Pod;
            const objectRV = pod.metadata?.resourceVersion;
            switch (event.type) {
              case "ADDED":
              case "MODIFIED":
                store.update(pod);
                break;
              case "DELETED":
                store.delete(pod);
                break;
              case "BOOKMARK":
                break;
            }
            if (objectRV) rv = objectRV;
          }
        } finally {
          signal.removeEventListener("abort", onAbort);
          w.stop();
        }
        if (expired) {
          listFrom = "";
          break;
        }
        if (signal.aborted) return;
        log.V(4).info("Watch of apiserver pods ended, watching again", { resourceVersion: rv });
      }
    } catch (e) {
      if (signal.aborted) return;
      if (isGone(e) || isResourceExpired(e)) {
        listFrom = "";
        continue;
      }
      backoffMs = backoffMs === 0
        ? reflectorBackoff.initialMs
        : Math.min(backoffMs * 2, reflectorBackoff.maxMs);
      log.error(e, "Failed to list or watch apiserver pods, retrying", {
        backoff: `${backoffMs}ms`,
      });
      if (!(await sleep(backoffMs))) return;
    }
  }
}

async function nodeHasSynced(options: SourceApiserverOptions): Promise<boolean> {
  try {
    return await options.nodeHasSynced();
  } catch {
    return false;
  }
}

/**
 * Pods by namespace/name; every change hands the whole list on (client-go's UndeltaStore, whose
 * push function is kubelet's "send a SET").
 */
class UndeltaStore {
  #pods = new Map<string, Pod>();
  #push: (pods: Pod[]) => void;

  constructor(push: (pods: Pod[]) => void) {
    this.#push = push;
  }

  replace(pods: Pod[], _resourceVersion: string): void {
    this.#pods = new Map(pods.map((p) => [key(p), p]));
    this.#emit();
  }

  update(pod: Pod): void {
    this.#pods.set(key(pod), pod);
    this.#emit();
  }

  delete(pod: Pod): void {
    this.#pods.delete(key(pod));
    this.#emit();
  }

  #emit(): void {
    this.#push([...this.#pods.values()].map((p) => structuredClone(p)));
  }
}

function key(pod: Pod): string {
  return `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
}
