/**
 * coordination.k8s.io/v1 Lease: the node heartbeat kubelet renews in `kube-node-lease`.
 * Mirrors k8s.io/api/coordination/v1/types.go.
 * @module
 */
import type { ListMeta, MicroTime, ObjectMeta, TypeMeta } from "../../meta/v1/types.ts";

/** The lease's holder and timing. Times are MicroTime strings (six fractional digits). */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: MicroTime | null;
  renewTime?: MicroTime | null;
  leaseTransitions?: number;
  strategy?: string;
  preferredHolder?: string;
}

/** A lease. */
export interface Lease extends TypeMeta {
  metadata: ObjectMeta;
  spec?: LeaseSpec;
}

/** A list of leases as LIST returns it. */
export interface LeaseList extends TypeMeta {
  metadata: ListMeta;
  items: Lease[];
}
