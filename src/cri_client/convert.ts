/**
 * Conversions between our CRI TypeScript types and the plain objects @grpc/proto-loader reads and
 * writes (camelCase fields, int64 as decimal strings, enums by name, bytes as Buffers, unset
 * messages as null). Go's generated code needs no such layer; this file is its stand-in.
 * @module
 */
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerMetadata,
  ContainerStatus,
  Image,
  ImageFilter,
  ImageSpec,
  LinuxContainerSecurityContext,
  LinuxSandboxSecurityContext,
  Mount,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxMetadata,
  PodSandboxStatus,
  VersionResponse,
} from "./api.ts";

// deno-lint-ignore no-explicit-any
type Raw = any;

/** int64 from proto-loader (a decimal string, or a number) to bigint; absent → 0n. */
export function toBigInt(value: unknown): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "string" && value !== "") return BigInt(value);
  if (typeof value === "number") return BigInt(Math.trunc(value));
  return 0n;
}

/** bytes from proto-loader (a Buffer) as a plain Uint8Array view. */
export function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) {
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  return new Uint8Array();
}

function record(value: unknown): Record<string, string> {
  return value && typeof value === "object" ? { ...(value as Record<string, string>) } : {};
}

function int64Value(v: { value: bigint | number } | undefined) {
  return v === undefined ? undefined : { value: String(v.value) };
}

// ---- requests ----

/** Our `PodSandboxConfig` as a proto-loader request object. */
export function podSandboxConfigToProto(config: PodSandboxConfig): Raw {
  const linux = config.linux;
  return {
    ...config,
    linux: linux && {
      ...linux,
      securityContext: linux.securityContext && sandboxSecurityToProto(linux.securityContext),
    },
  };
}

function sandboxSecurityToProto(sc: LinuxSandboxSecurityContext): Raw {
  return { ...sc, runAsUser: int64Value(sc.runAsUser), runAsGroup: int64Value(sc.runAsGroup) };
}

function containerSecurityToProto(sc: LinuxContainerSecurityContext): Raw {
  return { ...sc, runAsUser: int64Value(sc.runAsUser), runAsGroup: int64Value(sc.runAsGroup) };
}

/** Our `ContainerConfig` as a proto-loader request object. */
export function containerConfigToProto(config: ContainerConfig): Raw {
  const sc = config.linux?.securityContext;
  return {
    ...config,
    linux: config.linux && {
      ...config.linux,
      securityContext: sc && containerSecurityToProto(sc),
    },
  };
}

/** Our `PodSandboxFilter` as a proto-loader object: the state goes into its wrapper message. */
export function podSandboxFilterToProto(filter: PodSandboxFilter | undefined): Raw {
  if (!filter) return null;
  return {
    id: filter.id ?? "",
    state: filter.state === undefined ? null : { state: filter.state },
    labelSelector: filter.labelSelector ?? {},
  };
}

/** Our `ContainerFilter` as a proto-loader object: the state goes into its wrapper message. */
export function containerFilterToProto(filter: ContainerFilter | undefined): Raw {
  if (!filter) return null;
  return {
    id: filter.id ?? "",
    state: filter.state === undefined ? null : { state: filter.state },
    podSandboxId: filter.podSandboxId ?? "",
    labelSelector: filter.labelSelector ?? {},
  };
}

/** Our `ImageFilter` as a proto-loader object. */
export function imageFilterToProto(filter: ImageFilter | undefined): Raw {
  return filter ? { image: filter.image ?? null } : null;
}

// ---- responses ----

/** A `VersionResponse`. */
export function versionFromProto(raw: Raw): VersionResponse {
  return {
    version: raw?.version ?? "",
    runtimeName: raw?.runtimeName ?? "",
    runtimeVersion: raw?.runtimeVersion ?? "",
    runtimeApiVersion: raw?.runtimeApiVersion ?? "",
  };
}

function sandboxMetadataFromProto(raw: Raw): Required<PodSandboxMetadata> {
  return {
    name: raw?.name ?? "",
    uid: raw?.uid ?? "",
    namespace: raw?.namespace ?? "",
    attempt: raw?.attempt ?? 0,
  };
}

function containerMetadataFromProto(raw: Raw): Required<ContainerMetadata> {
  return { name: raw?.name ?? "", attempt: raw?.attempt ?? 0 };
}

function imageSpecFromProto(raw: Raw): ImageSpec | undefined {
  if (!raw) return undefined;
  return {
    image: raw.image ?? "",
    annotations: record(raw.annotations),
    userSpecifiedImage: raw.userSpecifiedImage ?? "",
    runtimeHandler: raw.runtimeHandler ?? "",
  };
}

function mountFromProto(raw: Raw): Mount {
  return {
    containerPath: raw.containerPath ?? "",
    hostPath: raw.hostPath ?? "",
    readonly: raw.readonly ?? false,
    selinuxRelabel: raw.selinuxRelabel ?? false,
    propagation: raw.propagation ?? "PROPAGATION_PRIVATE",
  };
}

/** A `PodSandboxStatus`; `undefined` when the runtime sent none. */
export function podSandboxStatusFromProto(raw: Raw): PodSandboxStatus | undefined {
  if (!raw) return undefined;
  return {
    id: raw.id ?? "",
    metadata: sandboxMetadataFromProto(raw.metadata),
    state: raw.state ?? "SANDBOX_READY",
    createdAt: toBigInt(raw.createdAt),
    network: raw.network
      ? {
        ip: raw.network.ip ?? "",
        additionalIps: (raw.network.additionalIps ?? []).map((p: Raw) => ({ ip: p.ip ?? "" })),
      }
      : undefined,
    linux: raw.linux
      ? {
        namespaces: raw.linux.namespaces
          ? { options: raw.linux.namespaces.options ?? undefined }
          : undefined,
      }
      : undefined,
    labels: record(raw.labels),
    annotations: record(raw.annotations),
    runtimeHandler: raw.runtimeHandler ?? "",
  };
}

/** One `PodSandbox` list entry. */
export function podSandboxFromProto(raw: Raw): PodSandbox {
  return {
    id: raw.id ?? "",
    metadata: sandboxMetadataFromProto(raw.metadata),
    state: raw.state ?? "SANDBOX_READY",
    createdAt: toBigInt(raw.createdAt),
    labels: record(raw.labels),
    annotations: record(raw.annotations),
    runtimeHandler: raw.runtimeHandler ?? "",
  };
}

/** One `Container` list entry. */
export function containerFromProto(raw: Raw): Container {
  return {
    id: raw.id ?? "",
    podSandboxId: raw.podSandboxId ?? "",
    metadata: containerMetadataFromProto(raw.metadata),
    image: imageSpecFromProto(raw.image),
    imageRef: raw.imageRef ?? "",
    state: raw.state ?? "CONTAINER_CREATED",
    createdAt: toBigInt(raw.createdAt),
    labels: record(raw.labels),
    annotations: record(raw.annotations),
    imageId: raw.imageId ?? "",
  };
}

/** A `ContainerStatus`; `undefined` when the runtime sent none. */
export function containerStatusFromProto(raw: Raw): ContainerStatus | undefined {
  if (!raw) return undefined;
  return {
    id: raw.id ?? "",
    metadata: containerMetadataFromProto(raw.metadata),
    state: raw.state ?? "CONTAINER_CREATED",
    createdAt: toBigInt(raw.createdAt),
    startedAt: toBigInt(raw.startedAt),
    finishedAt: toBigInt(raw.finishedAt),
    exitCode: raw.exitCode ?? 0,
    image: imageSpecFromProto(raw.image),
    imageRef: raw.imageRef ?? "",
    reason: raw.reason ?? "",
    message: raw.message ?? "",
    labels: record(raw.labels),
    annotations: record(raw.annotations),
    mounts: (raw.mounts ?? []).map(mountFromProto),
    logPath: raw.logPath ?? "",
    imageId: raw.imageId ?? "",
  };
}

/** An `Image`; `undefined` when the runtime sent none. */
export function imageFromProto(raw: Raw): Image | undefined {
  if (!raw) return undefined;
  return {
    id: raw.id ?? "",
    repoTags: [...(raw.repoTags ?? [])],
    repoDigests: [...(raw.repoDigests ?? [])],
    size: toBigInt(raw.size),
    uid: raw.uid ? { value: toBigInt(raw.uid.value) } : undefined,
    username: raw.username ?? "",
    spec: imageSpecFromProto(raw.spec),
    pinned: raw.pinned ?? false,
  };
}

/** `info` maps of status answers. */
export function infoFromProto(raw: unknown): Record<string, string> {
  return record(raw);
}
