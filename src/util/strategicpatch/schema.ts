/**
 * The patch metadata of the types probelet patches: which lists merge by which key. Go reads it from
 * `patchStrategy`/`patchMergeKey` struct tags in k8s.io/api/core/v1/types.go; here the subset kubelet
 * writes (pod status, node status, events, leases, metadata) is one explicit table.
 * Mirrors the struct tags read by k8s.io/apimachinery/pkg/util/strategicpatch/meta.go.
 * @module
 */

/**
 * Patch metadata of one field. Objects (structs and maps) always merge key by key; lists replace
 * whole unless `patchStrategy` includes `merge`.
 */
export interface PatchSchema {
  /** Schemas of an object's fields, by JSON name. */
  fields?: Record<string, PatchSchema>;
  /** Schema of a list's elements or of a map's values. */
  items?: PatchSchema;
  /** `merge` (possibly with `retainKeys`) or `replace`; absent = replace for lists. */
  patchStrategy?: string;
  /** The element field that identifies list elements (`type`, `ip`, `name`). */
  patchMergeKey?: string;
}

/** Whether a list field with `schema` merges instead of being replaced. */
export function isMergeList(schema: PatchSchema | undefined): boolean {
  return schema?.patchStrategy?.split(",").includes("merge") ?? false;
}

const mergeBy = (key: string, items?: PatchSchema): PatchSchema => ({
  patchStrategy: "merge",
  patchMergeKey: key,
  items,
});

/** `metadata` of every object (`ObjectMeta`). */
export const objectMetaSchema: PatchSchema = {
  fields: {
    ownerReferences: mergeBy("uid"),
    finalizers: { patchStrategy: "merge" },
  },
};

const containerSchema: PatchSchema = {
  fields: {
    ports: mergeBy("containerPort"),
    env: mergeBy("name"),
    volumeMounts: mergeBy("mountPath"),
    volumeDevices: mergeBy("devicePath"),
  },
};

/** `core/v1.Pod`. `containerStatuses` and friends carry no strategy: they are replaced whole. */
export const podSchema: PatchSchema = {
  fields: {
    metadata: objectMetaSchema,
    spec: {
      fields: {
        volumes: { patchStrategy: "merge,retainKeys", patchMergeKey: "name" },
        initContainers: mergeBy("name", containerSchema),
        containers: mergeBy("name", containerSchema),
        imagePullSecrets: mergeBy("name"),
        hostAliases: mergeBy("ip"),
        topologySpreadConstraints: mergeBy("topologyKey"),
        resourceClaims: { patchStrategy: "merge,retainKeys", patchMergeKey: "name" },
        schedulingGates: mergeBy("name"),
      },
    },
    status: {
      fields: {
        conditions: mergeBy("type"),
        podIPs: mergeBy("ip"),
        hostIPs: mergeBy("ip"),
        resourceClaimStatuses: { patchStrategy: "merge,retainKeys", patchMergeKey: "name" },
      },
    },
  },
};

/** `core/v1.Node`. `status.addresses` merges by `type` (kubelet sends it with `$patch: replace`). */
export const nodeSchema: PatchSchema = {
  fields: {
    metadata: objectMetaSchema,
    spec: { fields: { podCIDRs: { patchStrategy: "merge" } } },
    status: {
      fields: {
        conditions: mergeBy("type"),
        addresses: mergeBy("type"),
      },
    },
  },
};

/** `core/v1.Event`: no merging lists besides metadata's. */
export const eventSchema: PatchSchema = { fields: { metadata: objectMetaSchema } };

/** `coordination/v1.Lease`: no merging lists besides metadata's. */
export const leaseSchema: PatchSchema = { fields: { metadata: objectMetaSchema } };
