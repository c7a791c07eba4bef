/**
 * The container runtime as the kubelet side sees it: the `RuntimeService` and `ImageManagerService`
 * interfaces. `RemoteRuntimeService` implements them over gRPC; an in-process runtime can implement
 * the same interfaces so the node agent and the prober work unchanged.
 * Mirrors k8s.io/cri-api/pkg/apis/services.go.
 * @module
 */
import type {
  AttachRequest,
  AuthConfig,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatusResponse,
  ExecRequest,
  ExecSyncResult,
  Image,
  ImageFilter,
  ImageSpec,
  ImageStatusResponse,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatusResponse,
  PortForwardRequest,
  StatusResponse,
  StreamingResponse,
  VersionResponse,
} from "./api.ts";

/** Per-call options every method accepts: Go's `ctx` cancellation. */
export interface CallOptions {
  /** Aborting cancels the call; it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** CRI `ContainerStats`, the fields `/metrics/resource` and `/stats/summary` report. */
export interface ContainerStats {
  id: string;
  name: string;
  labels: Record<string, string>;
  /** Unix nanoseconds of the CPU sample, and cumulative CPU in core-nanoseconds. */
  cpu?: { timestampNs: bigint; usageCoreNanoSeconds: bigint; usageNanoCores?: bigint };
  /**
   * Unix nanoseconds of the memory sample, the working set in bytes, and the other figures the
   * runtime reports (the Summary API's).
   */
  memory?: {
    timestampNs: bigint;
    workingSetBytes: bigint;
    usageBytes?: bigint;
    rssBytes?: bigint;
    availableBytes?: bigint;
    pageFaults?: bigint;
    majorPageFaults?: bigint;
  };
  /** The container's writable layer: bytes and inodes used, on the file system at `mountpoint`. */
  writableLayer?: {
    timestampNs: bigint;
    usedBytes?: bigint;
    inodesUsed?: bigint;
    mountpoint?: string;
  };
}

/**
 * Sandbox and container lifecycle, status and exec: kubelet's `internalapi.RuntimeService` (the parts
 * probelet uses).
 *
 * Error contract, shared by every implementation:
 * - `execSync` resolves with stdout and stderr only when the command exited 0. A non-zero exit rejects
 *   with `ExitError` (`src/util/exec/errors.ts`) whose `output` is stdout followed by stderr and whose
 *   message is `command '<cmd joined by spaces>' exited with <code>: <stderr>`. A command past its
 *   timeout rejects with `CommandTimedOutError` (`command timed out: "<cmd>" timed out after 1s`).
 *   Any other failure (no such container, container not running, binary missing, runtime down)
 *   rejects with a plain `Error`.
 * - Lookups of a missing sandbox or container reject; the stop and remove calls are idempotent.
 *
 * @example
 * ```ts
 * import type { ContainerConfig, PodSandboxConfig } from "./api.ts";
 *
 * declare const runtime: RuntimeService;
 * declare const sandboxConfig: PodSandboxConfig;
 * declare const containerConfig: ContainerConfig;
 *
 * const id = await runtime.runPodSandbox(sandboxConfig);
 * const containerId = await runtime.createContainer(id, containerConfig, { sandboxConfig });
 * await runtime.startContainer(containerId);
 * const { status } = await runtime.containerStatus(containerId);
 * status.state; // "CONTAINER_RUNNING"
 * ```
 */
export interface RuntimeService {
  /** The runtime's name and versions; `apiVersion` is the kubelet's runtime API version. */
  version(apiVersion?: string, options?: CallOptions): Promise<VersionResponse>;

  /**
   * The runtime's conditions (CRI `Status`), behind the node's Ready condition. Optional: a
   * runtime without it (the embedded one) is taken as ready.
   */
  status?(options?: CallOptions & { verbose?: boolean }): Promise<StatusResponse>;

  /** Creates and starts a sandbox; resolves with its ID once it is ready. */
  runPodSandbox(
    config: PodSandboxConfig,
    options?: CallOptions & { runtimeHandler?: string },
  ): Promise<string>;
  /** Stops every process of the sandbox and releases its network. Idempotent. */
  stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  /** Removes the sandbox and all its containers. Idempotent. */
  removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  /** The sandbox's status; rejects when it does not exist. */
  podSandboxStatus(
    podSandboxId: string,
    options?: CallOptions & { verbose?: boolean },
  ): Promise<PodSandboxStatusResponse>;
  /** Sandboxes matching the filter (all of them without one). */
  listPodSandbox(filter?: PodSandboxFilter, options?: CallOptions): Promise<PodSandbox[]>;

  /** Creates a container in a sandbox; resolves with its ID. */
  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    options?: CallOptions & { sandboxConfig?: PodSandboxConfig },
  ): Promise<string>;
  /** Starts a created container. */
  startContainer(containerId: string, options?: CallOptions): Promise<void>;
  /**
   * Stops a container: the stop signal, then SIGKILL after `timeoutMs` (CRI takes whole seconds;
   * the remainder is dropped). Idempotent.
   */
  stopContainer(containerId: string, options: CallOptions & { timeoutMs: number }): Promise<void>;
  /** Removes a container, killing it first if needed. Idempotent. */
  removeContainer(containerId: string, options?: CallOptions): Promise<void>;
  /** Containers matching the filter (all of them without one). */
  listContainers(filter?: ContainerFilter, options?: CallOptions): Promise<Container[]>;
  /**
   * CPU and memory use of the running containers (CRI `ListContainerStats`). Optional: without
   * it `/metrics/resource` and `/stats/summary` report the node only.
   */
  listContainerStats?(options?: CallOptions): Promise<ContainerStats[]>;
  /** The container's status; rejects when it does not exist. */
  containerStatus(
    containerId: string,
    options?: CallOptions & { verbose?: boolean },
  ): Promise<ContainerStatusResponse>;

  /**
   * Runs `cmd` in the container and waits for it. `timeoutMs` bounds the command (whole seconds go to
   * the runtime; 0 means no limit). See the interface's error contract.
   */
  execSync(
    containerId: string,
    cmd: string[],
    options: CallOptions & { timeoutMs: number },
  ): Promise<ExecSyncResult>;

  /**
   * Prepares a streaming endpoint to run `request.cmd` in the container (CRI `Exec`); resolves
   * with its URL, rejects when the runtime answers without one (`URL is not set`). Optional: a
   * runtime without a streaming server has none, and kubelet's server answers as for a runtime
   * error (`rpc error: code = Unimplemented desc = method Exec not implemented`).
   */
  exec?(request: ExecRequest, options?: CallOptions): Promise<StreamingResponse>;
  /** Prepares a streaming endpoint to attach to the container's main process (CRI `Attach`). */
  attach?(request: AttachRequest, options?: CallOptions): Promise<StreamingResponse>;
  /** Prepares a streaming endpoint to forward ports of a sandbox (CRI `PortForward`). */
  portForward?(request: PortForwardRequest, options?: CallOptions): Promise<StreamingResponse>;

  /**
   * Makes the runtime close the container's log and open the file at its log path again, after
   * kubelet renamed the full one away (log rotation). Optional: a runtime that rotates its
   * containers' logs itself (the embedded one) has none, and the kubelet side rotates nothing.
   */
  reopenContainerLog?(containerId: string, options?: CallOptions): Promise<void>;

  /** Releases the connection; later calls reject. */
  close(): void;
}

/**
 * Image queries and pulls: kubelet's `internalapi.ImageManagerService` (the part probelet uses).
 *
 * @example
 * ```ts
 * declare const images: ImageManagerService;
 *
 * const { image } = await images.imageStatus({ image: "probelet.local/busybox:1" });
 * image?.id; // "sha256:..."
 * ```
 */
export interface ImageManagerService {
  /** Images matching the filter (all of them without one). */
  listImages(filter?: ImageFilter, options?: CallOptions): Promise<Image[]>;
  /** The image's status; `image` is undefined when the runtime does not have it. */
  imageStatus(
    image: ImageSpec,
    options?: CallOptions & { verbose?: boolean },
  ): Promise<ImageStatusResponse>;
  /**
   * Pulls the image with the given credentials (none for an anonymous pull); resolves with the
   * image's reference (its ID or digest), as `PullImage` answers.
   */
  pullImage(
    image: ImageSpec,
    options?: CallOptions & { auth?: AuthConfig; sandboxConfig?: PodSandboxConfig },
  ): Promise<string>;
  /** Releases the connection; later calls reject. */
  close(): void;
}
