/**
 * Merging pod sources: every source (manifest files, the API server) sends its pods, a per-source
 * store turns each change into the minimal ADD / UPDATE / DELETE / REMOVE / RECONCILE operations,
 * stamps the kubelet's own annotations, drops duplicate names, and remembers which sources have
 * sent a whole set (so that nothing is cleaned up as an orphan before every source was heard).
 * Mirrors kubelet's pkg/kubelet/config/config.go (PodConfig, podStorage) with mux.go's per-source
 * channels reduced to one function per source.
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { Pod } from "../../api/core/v1/mod.ts";
import { Channel } from "../../util/channel.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { getPodReference } from "../container/ref.ts";
import type { EventRecorder } from "../events/mod.ts";
import {
  AllSource,
  ConfigFirstSeenAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  getPodFullName,
  type PodUpdate,
} from "../types/pod_update.ts";
import { formatPod } from "../util/format.ts";

/** How changes are delivered (kubelet's `PodConfigNotificationMode`); the kubelet uses `Incremental`. */
export type PodConfigNotificationMode = "Snapshot" | "SnapshotAndUpdates" | "Incremental";

/** Event reason of a pod refused by the source merge (kubelet's `events.FailedValidation`). */
export const FailedValidation = "FailedValidation";

/** Annotations the kubelet itself adds; they never make two pods differ. */
const localAnnotations = [
  ConfigSourceAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigFirstSeenAnnotationKey,
];

/** Options of {@linkcode PodConfig}. */
export interface PodConfigOptions {
  /** Receives `FailedValidation` warnings. */
  recorder: EventRecorder;
  /** Delivery mode (default `Incremental`, as the kubelet uses). */
  mode?: PodConfigNotificationMode;
  /** Stamps `kubernetes.io/config.seen` (default: the wall clock). */
  clock?: Clock;
}

/**
 * Merges several pod sources into one ordered stream of updates.
 *
 * @example
 * ```ts
 * import { FakeRecorder } from "../events/event.ts";
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * const config = new PodConfig({ recorder: new FakeRecorder() });
 * const fromFiles = config.channel("file");
 * fromFiles({ op: "SET", source: "file", pods: [pod] });
 * (await config.updates().receive()).value; // { op: "ADD", source: "file", pods: [pod] }
 * ```
 */
export class PodConfig {
  #storage: PodStorage;
  #updates: Channel<PodUpdate>;
  #sources = new Set<string>();
  #sent = 0;

  /** Creates an empty merge; register sources with {@linkcode channel}. */
  constructor(options: PodConfigOptions) {
    // Like Go's channel of 50; a full channel queues further updates in order (never drops).
    this.#updates = new Channel<PodUpdate>(50);
    const send = (update: PodUpdate) => {
      this.#sent++;
      this.#updates.send(update).catch(() => {
        // Closed: the kubelet has stopped listening.
      });
    };
    this.#storage = new PodStorage(send, {
      mode: options.mode ?? "Incremental",
      recorder: options.recorder,
      clock: options.clock ?? new RealClock(),
    });
  }

  /**
   * Registers `source` and returns the function its updates are sent through (Go's
   * `Channel(ctx, source)`); each call merges synchronously and queues the resulting updates.
   */
  channel(source: string): (update: PodUpdate) => void {
    this.#sources.add(source);
    return (update) => this.#storage.merge(source, update);
  }

  /**
   * Whether every registered source is in `seenSources` and has sent at least one `SET`: only then
   * may the kubelet treat pods it does not know as orphans.
   */
  seenAllSources(seenSources: ReadonlySet<string>): boolean {
    const sources = [...this.#sources];
    log.V(5).info("Looking for sources, have seen", { sources, seenSources: [...seenSources] });
    return sources.every((s) => seenSources.has(s)) && this.#storage.seenSources(sources);
  }

  /** How many updates were queued so far (lets a consumer tell when it has caught up). */
  get updatesSent(): number {
    return this.#sent;
  }

  /** The merged stream of updates (one consumer). */
  updates(): Channel<PodUpdate> {
    return this.#updates;
  }

  /** Queues the whole merged state as a `SET` from source `*`. */
  sync(): void {
    this.#storage.sync();
  }

  /** Stops delivering: the updates channel is closed. */
  close(): void {
    this.#updates.close();
  }
}

/**
 * The current pods of every source, by UID (kubelet's podStorage): the in-memory truth each
 * change is compared against.
 */
class PodStorage {
  #pods = new Map<string, Map<string, Pod>>();
  #mode: PodConfigNotificationMode;
  #send: (update: PodUpdate) => void;
  #sourcesSeen = new Set<string>();
  #recorder: EventRecorder;
  #clock: Clock;
  /** A stored pod → the sender's object it was last merged from. */
  #merged = new WeakMap<Pod, Pod>();

  // `send` delivers in order, also when the channel is full (queued senders keep their order).
  constructor(
    send: (update: PodUpdate) => void,
    options: { mode: PodConfigNotificationMode; recorder: EventRecorder; clock: Clock },
  ) {
    this.#send = send;
    this.#mode = options.mode;
    this.#recorder = options.recorder;
    this.#clock = options.clock;
  }

  merge(source: string, change: PodUpdate): void {
    const seenBefore = this.#sourcesSeen.has(source);
    const { adds, updates, deletes, removes, reconciles } = this.#merge(source, change);
    const firstSet = !seenBefore && this.#sourcesSeen.has(source);

    switch (this.#mode) {
      case "Incremental":
        if (removes.pods.length > 0) this.#send(removes);
        if (adds.pods.length > 0) this.#send(adds);
        if (updates.pods.length > 0) this.#send(updates);
        if (deletes.pods.length > 0) this.#send(deletes);
        // An empty ADD on a source's first SET tells the kubelet the source is ready.
        if (
          firstSet && adds.pods.length === 0 && updates.pods.length === 0 &&
          deletes.pods.length === 0
        ) {
          this.#send(adds);
        }
        if (reconciles.pods.length > 0) this.#send(reconciles);
        break;
      case "SnapshotAndUpdates":
        if (removes.pods.length > 0 || adds.pods.length > 0 || firstSet) {
          this.#send({ op: "SET", source, pods: this.mergedState() });
        }
        if (updates.pods.length > 0) this.#send(updates);
        if (deletes.pods.length > 0) this.#send(deletes);
        break;
      case "Snapshot":
        if (
          updates.pods.length > 0 || deletes.pods.length > 0 || adds.pods.length > 0 ||
          removes.pods.length > 0 || firstSet
        ) {
          this.#send({ op: "SET", source, pods: this.mergedState() });
        }
        break;
    }
  }

  #merge(source: string, change: PodUpdate) {
    const addPods: Pod[] = [];
    const updatePods: Pod[] = [];
    const deletePods: Pod[] = [];
    const removePods: Pod[] = [];
    const reconcilePods: Pod[] = [];

    let pods = this.#pods.get(source) ?? new Map<string, Pod>();

    // Compares incoming pods with `oldPods` and stores the results in `into` (may be the same map).
    const updatePodsFunc = (newPods: Pod[], oldPods: Map<string, Pod>, into: Map<string, Pod>) => {
      const filtered = this.#filterInvalidPods(newPods, source);
      for (const incoming of filtered) {
        const uid = incoming.metadata.uid ?? "";
        const existing = oldPods.get(uid);
        // A source sends its whole set on every change (the API source after every watch event),
        // mostly the very objects of its last send: one already merged is unchanged. This, and
        // keeping the sender's spec and status below, rests on a rule every source keeps: an
        // object once sent is never written into again (the API source's store replaces objects,
        // the file source parses new ones).
        if (existing && this.#merged.get(existing) === incoming) {
          into.set(uid, existing);
          continue;
        }
        // kubelet annotates the source's object itself; here the sender's object stays untouched
        // and only what is written (metadata, annotations) is copied: nothing below writes into
        // spec or status, which are replaced whole. (A deep copy of every pod on every send was
        // the agent's largest start-up cost: O(pods²).)
        const annotations: Record<string, string> = {
          ...incoming.metadata.annotations,
          [ConfigSourceAnnotationKey]: source,
        };
        const ref: Pod = { ...incoming, metadata: { ...incoming.metadata, annotations } };
        if (existing) {
          into.set(uid, existing);
          this.#merged.set(existing, incoming);
          const { needUpdate, needReconcile, needGracefulDelete } = checkAndUpdatePod(
            existing,
            ref,
          );
          if (needUpdate) updatePods.push(existing);
          else if (needReconcile) reconcilePods.push(existing);
          else if (needGracefulDelete) deletePods.push(existing);
          continue;
        }
        log.V(4).info("Receiving a new pod", { pod: log.kObj(ref) });
        annotations[ConfigFirstSeenAnnotationKey] = newTimestamp(this.#clock);
        into.set(uid, ref);
        this.#merged.set(ref, incoming);
        addPods.push(ref);
      }
    };

    switch (change.op) {
      case "ADD":
      case "UPDATE":
      case "DELETE": {
        const verb = change.op === "ADD"
          ? "Adding new pods from source"
          : change.op === "DELETE"
          ? "Gracefully deleting pods from source"
          : "Updating pods from source";
        log.V(4).info(verb, { source, pods: change.pods.map(log.kObj) });
        updatePodsFunc(change.pods, pods, pods);
        break;
      }
      case "REMOVE":
        log.V(4).info("Removing pods from source", { source, pods: change.pods.map(log.kObj) });
        for (const value of change.pods) {
          const uid = value.metadata?.uid ?? "";
          const existing = pods.get(uid);
          if (existing) {
            pods.delete(uid);
            removePods.push(existing);
          }
        }
        break;
      case "SET": {
        log.V(4).info("Setting pods for source", { source });
        this.#sourcesSeen.add(source);
        const oldPods = pods;
        pods = new Map();
        updatePodsFunc(change.pods, oldPods, pods);
        for (const [uid, existing] of oldPods) {
          if (!pods.has(uid)) removePods.push(existing);
        }
        break;
      }
      default:
        log.info("Received invalid update type", { type: change.op });
    }
    this.#pods.set(source, pods);

    const update = (op: PodUpdate["op"], list: Pod[]): PodUpdate => ({
      op,
      source,
      pods: list.map((p) => structuredClone(p)),
    });
    return {
      adds: update("ADD", addPods),
      updates: update("UPDATE", updatePods),
      deletes: update("DELETE", deletePods),
      removes: update("REMOVE", removePods),
      reconciles: update("RECONCILE", reconcilePods),
    };
  }

  seenSources(sources: string[]): boolean {
    return sources.every((s) => this.#sourcesSeen.has(s));
  }

  // Pods of one source were validated one by one; only name clashes between them are checked here.
  #filterInvalidPods(pods: Pod[], source: string): Pod[] {
    const names = new Set<string>();
    const filtered: Pod[] = [];
    pods.forEach((pod, i) => {
      const name = getPodFullName(pod);
      if (names.has(name)) {
        log.info("Pod failed validation due to duplicate pod name, ignoring", {
          index: i,
          pod: log.kObj(pod),
          source,
        });
        this.#recorder.event(getPodReference(pod), {
          type: "Warning",
          reason: FailedValidation,
          message: `Error validating pod ${
            formatPod(pod)
          } from ${source} due to duplicate pod name ${
            JSON.stringify(pod.metadata?.name ?? "")
          }, ignoring`,
        });
        return;
      }
      names.add(name);
      filtered.push(pod);
    });
    return filtered;
  }

  sync(): void {
    this.#send({ op: "SET", source: AllSource, pods: this.mergedState() });
  }

  mergedState(): Pod[] {
    const pods: Pod[] = [];
    for (const sourcePods of this.#pods.values()) {
      for (const pod of sourcePods.values()) pods.push(structuredClone(pod));
    }
    return pods;
  }
}

/**
 * Whether two versions of a pod differ in anything the kubelet acts on: spec, labels, deletion
 * timestamp and grace period, and annotations other than the kubelet's own. Status is not
 * compared (a status-only difference is a RECONCILE).
 *
 * @example
 * ```ts
 * import type { Pod } from "../../api/core/v1/mod.ts";
 *
 * declare const pod: Pod;
 *
 * podsDifferSemantically(pod, { ...pod, status: { phase: "Running" } }); // false
 * ```
 */
export function podsDifferSemantically(existing: Pod, ref: Pod): boolean {
  return !(
    isDeepStrictEqual(existing.spec, ref.spec) &&
    isDeepStrictEqual(existing.metadata?.labels, ref.metadata?.labels) &&
    existing.metadata?.deletionTimestamp === ref.metadata?.deletionTimestamp &&
    existing.metadata?.deletionGracePeriodSeconds === ref.metadata?.deletionGracePeriodSeconds &&
    isAnnotationMapEqual(existing.metadata?.annotations, ref.metadata?.annotations)
  );
}

// Equal apart from the kubelet's local annotations.
function isAnnotationMapEqual(
  existingMap: Record<string, string> | undefined,
  candidateMap: Record<string, string> | undefined,
): boolean {
  const existing = existingMap ?? {};
  const candidate = candidateMap ?? {};
  for (const [k, v] of Object.entries(candidate)) {
    if (localAnnotations.includes(k)) continue;
    if (Object.hasOwn(existing, k) && existing[k] === v) continue;
    return false;
  }
  for (const k of Object.keys(existing)) {
    if (localAnnotations.includes(k)) continue;
    if (!Object.hasOwn(candidate, k)) return false;
  }
  return true;
}

/**
 * Updates `existing` in place from `ref` and says what kind of change it was: an update, a
 * graceful deletion (the change carries a deletion timestamp), or a status-only reconcile. At most
 * one is true.
 */
function checkAndUpdatePod(existing: Pod, ref: Pod) {
  const result = { needUpdate: false, needReconcile: false, needGracefulDelete: false };
  if (!podsDifferSemantically(existing, ref)) {
    // Not an update; a changed status alone needs a reconcile (the kubelet owns pod status).
    if (!isDeepStrictEqual(existing.status, ref.status)) {
      if (ref.status === undefined) delete existing.status;
      else existing.status = ref.status;
      result.needReconcile = true;
    }
    return result;
  }
  // The first-seen time is the kubelet's own; keep the original.
  const firstSeen = existing.metadata.annotations?.[ConfigFirstSeenAnnotationKey];
  ref.metadata.annotations ??= {};
  if (firstSeen !== undefined) ref.metadata.annotations[ConfigFirstSeenAnnotationKey] = firstSeen;

  existing.spec = ref.spec;
  setOrDelete(existing.metadata, "labels", ref.metadata.labels);
  setOrDelete(existing.metadata, "deletionTimestamp", ref.metadata.deletionTimestamp);
  setOrDelete(
    existing.metadata,
    "deletionGracePeriodSeconds",
    ref.metadata.deletionGracePeriodSeconds,
  );
  // The generation goes along (the API server bumps it on a spec change and on a graceful
  // delete): the status reports it as observedGeneration.
  setOrDelete(existing.metadata, "generation", ref.metadata.generation);
  setOrDelete(existing, "status", ref.status);
  updateAnnotations(existing, ref);

  if (ref.metadata.deletionTimestamp !== undefined) result.needGracefulDelete = true;
  else result.needUpdate = true;
  return result;
}

// The API's annotations plus the kubelet's local ones from the stored pod.
function updateAnnotations(existing: Pod, ref: Pod): void {
  const annotations: Record<string, string> = { ...ref.metadata.annotations };
  for (const k of localAnnotations) {
    const v = existing.metadata.annotations?.[k];
    if (v !== undefined) annotations[k] = v;
  }
  existing.metadata.annotations = annotations;
}

function setOrDelete<T extends object, K extends keyof T>(obj: T, key: K, value: T[K]): void {
  if (value === undefined) delete obj[key];
  else obj[key] = value;
}

// kubetypes.NewTimestamp().GetString(): RFC 3339 with fractional seconds.
function newTimestamp(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
