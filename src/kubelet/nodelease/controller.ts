/**
 * The node's heartbeat: a Lease `kube-node-lease/<node>` renewed every `renewInterval` (a quarter
 * of the lease duration, 10 s by default, jittered by 4 %). Renewal PUTs the lease last written
 * (no GET); a conflict re-reads it once and retries; without a lease it is read and, when missing,
 * created (back-off 200 ms doubling to 7 s between failed attempts).
 * Mirrors k8s.io/component-helpers/apimachinery/lease/controller.go.
 * @module
 */
import type { Lease } from "../../api/coordination/v1/mod.ts";
import type { Clientset, LeaseInterface } from "../../client/kubernetes/clientset.ts";
import { isConflict, isNotFound } from "../../client/errors.ts";
import type { Clock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import {
  apiDrainTimeoutMs,
  DrainingStop,
  jitterUntil,
  sleepUnlessStopped,
} from "../../util/wait/wait.ts";
import { errorText } from "../../util/errors.ts";

/** Immediate retries of one renewal before waiting for the next interval (maxUpdateRetries). */
export const maxUpdateRetries = 5;
/** The cap of the ensure back-off (maxBackoff). */
export const maxBackoffMs = 7_000;
/** The namespace of node leases (corev1.NamespaceNodeLease). */
export const NamespaceNodeLease = "kube-node-lease";
/** Renew interval as a share of the lease duration (kubelet's nodeLeaseRenewIntervalFraction). */
export const nodeLeaseRenewIntervalFraction = 0.25;

/** Adjusts a lease before it is created or renewed (e.g. sets the Node owner reference). */
export type ProcessLeaseFunc = (lease: Lease) => Promise<void>;

/** Options of {@linkcode newController}. */
export interface ControllerOptions {
  clock: Clock;
  client: Clientset;
  /** `spec.holderIdentity` (and the lease name unless `leaseName` is given). */
  holderIdentity: string;
  leaseName?: string;
  leaseDurationSeconds: number;
  /** Called after the second and later failed tries of one renewal. */
  onRepeatedHeartbeatFailure?: () => void;
  renewIntervalMs: number;
  leaseNamespace: string;
  /** A failure blocks a create (retried next time) but not a renewal. */
  newLeasePostProcessFunc?: ProcessLeaseFunc;
  /** Source of the interval jitter (default `Math.random`). */
  random?: () => number;
}

/**
 * MicroTime text of `ms`: RFC 3339 in UTC with six fractional digits, as the API serves it.
 *
 * @example
 * ```ts
 * microTime(Date.UTC(2026, 10, 23, 4, 50, 0, 123)); // "2026-11-23T04:50:00.123000Z"
 * ```
 */
export function microTime(ms: number): string {
  const iso = new Date(Math.floor(ms)).toISOString(); // ...T04:50:00.123Z
  const micros = Math.floor((ms - Math.floor(ms)) * 1000);
  return `${iso.slice(0, -1)}${String(micros).padStart(3, "0")}Z`;
}

/**
 * The lease controller (component-helpers' `lease.Controller`).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 * declare const client: Clientset;
 *
 * const c = newController({ clock, client, holderIdentity: "n1", leaseDurationSeconds: 40,
 *   renewIntervalMs: 10_000, leaseNamespace: NamespaceNodeLease });
 * c.run();
 * await c.stop();
 * ```
 */
export class Controller {
  readonly #o: ControllerOptions;
  readonly #leaseClient: LeaseInterface;
  readonly #leaseName: string;
  /** The lease last created or updated; renewals start from it. */
  latestLease?: Lease;
  #stop = new DrainingStop();
  #running?: Promise<void>;

  /** Builds the controller; `run()` starts it. */
  constructor(options: ControllerOptions) {
    this.#o = options;
    this.#leaseClient = options.client.coordinationV1.leases(options.leaseNamespace);
    this.#leaseName = options.leaseName ?? options.holderIdentity;
  }

  /** Syncs now, then every renew interval (jitter 0.04, sliding) until `stop()`. */
  run(): void {
    if (this.#running) return;
    this.#running = jitterUntil(() => this.sync(), this.#o.renewIntervalMs, 0.04, true, {
      clock: this.#o.clock,
      signal: this.#stop.stopping,
      random: this.#o.random,
    });
  }

  /**
   * Stops the loop (a back-off in progress ends) and waits for it; a renewal in flight gets
   * `apiDrainTimeoutMs` to finish.
   */
  async stop(): Promise<void> {
    await this.#stop.stop(this.#running ?? Promise.resolve(), {
      clock: this.#o.clock,
      drainMs: apiDrainTimeoutMs,
    });
  }

  /** One renewal: PUT from the cached lease, else ensure the lease exists and renew it. */
  async sync(): Promise<void> {
    if (this.#stop.stopping.aborted) return;
    if (this.latestLease) {
      // Only this node writes its lease: renew from our copy, saving a GET per interval.
      try {
        await this.retryUpdateLease(this.latestLease);
        return;
      } catch (e) {
        log.info("Failed to update lease using latest lease, fallback to ensure lease", {
          err: errorText(e),
        });
      }
    }
    const { lease, created } = await this.backoffEnsureLease();
    this.latestLease = lease;
    // A lease just created needs no renewal.
    if (!created && lease) {
      try {
        await this.retryUpdateLease(lease);
      } catch (e) {
        log.error(e, "Will retry updating lease", { interval: `${this.#o.renewIntervalMs}ms` });
      }
    }
  }

  /**
   * Ensures the lease exists, waiting 200 ms doubling to 7 s between failed attempts; resolves
   * with the lease and whether it was created here (no lease when stopped or when the post-process
   * step refused a create).
   */
  async backoffEnsureLease(): Promise<{ lease?: Lease; created: boolean }> {
    let sleep = 100;
    for (;;) {
      try {
        return await this.ensureLease();
      } catch (e) {
        sleep = Math.min(2 * sleep, maxBackoffMs);
        log.error(e, "Failed to ensure lease exists, will retry", { interval: `${sleep}ms` });
        if (!(await sleepUnlessStopped(this.#o.clock, sleep, this.#stop.stopping))) {
          return { created: false };
        }
      }
    }
  }

  /** GET the lease; on 404 create it. */
  async ensureLease(): Promise<{ lease?: Lease; created: boolean }> {
    try {
      const lease = await this.#leaseClient.get(this.#leaseName, { signal: this.#stop.requests });
      return { lease, created: false };
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    const { lease: leaseToCreate, error } = await this.newLease();
    // Could not complete the lease (e.g. the Node is not readable yet): try next interval.
    if (error) return { created: false };
    const lease = await this.#leaseClient.create(leaseToCreate, { signal: this.#stop.requests });
    return { lease, created: true };
  }

  /** Up to five PUTs of a renewed copy of `base`; a conflict re-reads the lease first. */
  async retryUpdateLease(base: Lease | undefined): Promise<void> {
    for (let i = 0; i < maxUpdateRetries; i++) {
      if (this.#stop.stopping.aborted) throw new Error("lease controller stopped");
      // Renewals go ahead without what the post-process step failed to add.
      const { lease: leaseToUpdate } = await this.newLease(base);
      try {
        this.latestLease = await this.#leaseClient.update(leaseToUpdate, {
          signal: this.#stop.requests,
        });
        return;
      } catch (e) {
        log.error(e, "Failed to update lease");
        // The cached lease is stale: read the current one and retry with it.
        if (isConflict(e)) {
          base = (await this.backoffEnsureLease()).lease;
          continue;
        }
        if (i > 0) this.#o.onRepeatedHeartbeatFailure?.();
      }
    }
    throw new Error(`failed ${maxUpdateRetries} attempts to update lease`);
  }

  /**
   * A new lease (no base) or a copy of `base`, with `renewTime` now, passed through the
   * post-process step; `error` is that step's failure (the lease is complete but for it).
   */
  async newLease(base?: Lease): Promise<{ lease: Lease; error?: Error }> {
    const lease: Lease = base ? structuredClone(base) : {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: this.#leaseName, namespace: this.#o.leaseNamespace },
      spec: {
        holderIdentity: this.#o.holderIdentity,
        leaseDurationSeconds: this.#o.leaseDurationSeconds,
      },
    };
    lease.spec ??= {};
    lease.spec.renewTime = microTime(this.#o.clock.now());
    try {
      await this.#o.newLeasePostProcessFunc?.(lease);
    } catch (e) {
      return { lease, error: e instanceof Error ? e : new Error(String(e)) };
    }
    return { lease };
  }
}

/**
 * Builds a lease controller (component-helpers' NewController).
 *
 * @example
 * ```ts
 * import type { Clientset } from "../../client/kubernetes/clientset.ts";
 * import type { Clock } from "../../util/clock.ts";
 *
 * declare const clock: Clock;
 * declare const client: Clientset;
 *
 * newController({ clock, client, holderIdentity: "n1", leaseDurationSeconds: 40,
 *   renewIntervalMs: 10_000, leaseNamespace: NamespaceNodeLease });
 * ```
 */
export function newController(options: ControllerOptions): Controller {
  return new Controller(options);
}
