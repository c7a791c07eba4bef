/**
 * `RuntimeService` over gRPC to a CRI v1 runtime (containerd, CRI-O) on a unix socket.
 * Mirrors k8s.io/cri-client's pkg/remote_runtime.go (and the checks of pkg/utils.go).
 * @module
 */
import type {
  AttachRequest,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatus,
  ContainerStatusResponse,
  ExecRequest,
  ExecSyncResult,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatus,
  PodSandboxStatusResponse,
  PortForwardRequest,
  StatusResponse,
  StreamingResponse,
  VersionResponse,
} from "./api.ts";
import {
  Connection,
  type ConnectionOptions,
  GrpcCode,
  grpcCode,
  validatedService,
} from "./connection.ts";
import {
  type ContainerStatus as ContainerStatusMessage,
  type CriMethod,
  type PodSandboxStatus as PodSandboxStatusMessage,
  RuntimeServiceMethods as methods,
  type UInt64Value,
} from "./codec_gen.ts";
import type { CallOptions, ContainerStats, RuntimeService } from "./runtime_service.ts";
import { CommandTimedOutError, ExitError } from "../util/exec/errors.ts";

/** The runtime API version kubelet announces in `Version` (`kubeRuntimeAPIVersion`). */
export const kubeRuntimeAPIVersion = "0.1.0";

/**
 * Connects to the CRI runtime at `endpoint` and checks it speaks CRI v1 (a `Version` call), as
 * kubelet does at startup. Rejects with an error naming the endpoint when the socket is missing, the
 * runtime does not answer within `connectTimeoutMs`, or it lacks the v1 API.
 *
 * @example
 * ```ts
 * const runtime = await newRemoteRuntimeService("unix:///run/containerd/containerd.sock");
 * (await runtime.version()).runtimeName; // "containerd"
 * runtime.close();
 * ```
 */
export async function newRemoteRuntimeService(
  endpoint: string,
  options: ConnectionOptions = {},
): Promise<RemoteRuntimeService> {
  return await validatedService(new RemoteRuntimeService(endpoint, options));
}

/**
 * The gRPC implementation of `RuntimeService`. Prefer `newRemoteRuntimeService`, which validates the
 * connection; the constructor connects lazily.
 */
export class RemoteRuntimeService implements RuntimeService {
  readonly #conn: Connection;

  constructor(endpoint: string, options: ConnectionOptions = {}) {
    this.#conn = new Connection(endpoint, "RuntimeService", options);
  }

  /** The endpoint this client talks to. */
  get endpoint(): string {
    return this.#conn.endpoint.endpoint;
  }

  /** The runtime request timeout (kubelet's `--runtime-request-timeout`). */
  get timeoutMs(): number {
    return this.#conn.requestTimeoutMs;
  }

  /** Calls `Version` within the connect timeout; the error names the endpoint. */
  async validateServiceConnection(): Promise<void> {
    try {
      await this.#conn.unary(methods.Version, { version: kubeRuntimeAPIVersion }, {
        timeoutMs: this.#conn.connectTimeoutMs,
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(
        `validate service connection: validate CRI v1 runtime API for endpoint ${
          JSON.stringify(this.endpoint)
        }: ${message}`,
        { cause: err },
      );
    }
  }

  /** Releases the channel. */
  close(): void {
    this.#conn.close();
  }

  async version(
    apiVersion = kubeRuntimeAPIVersion,
    options: CallOptions = {},
  ): Promise<VersionResponse> {
    const v = await this.#call(methods.Version, { version: apiVersion }, options);
    const missing = [
      ["Version", v.version],
      ["RuntimeName", v.runtimeName],
      ["RuntimeApiVersion", v.runtimeApiVersion],
      ["RuntimeVersion", v.runtimeVersion],
    ].filter(([, value]) => value === "").map(([name]) => name);
    if (missing.length > 0) {
      throw new Error(`not all fields are set in VersionResponse (missing ${missing.join(", ")})`);
    }
    return v;
  }

  async status(options: CallOptions & { verbose?: boolean } = {}): Promise<StatusResponse> {
    return await this.#call(methods.Status, { verbose: options.verbose ?? false }, options);
  }

  async runPodSandbox(
    config: PodSandboxConfig,
    options: CallOptions & { runtimeHandler?: string } = {},
  ): Promise<string> {
    // Sandboxes get twice the request timeout (4 minutes by default), as in kubelet.
    const { podSandboxId: id } = await this.#call(
      methods.RunPodSandbox,
      { config, runtimeHandler: options.runtimeHandler ?? "" },
      options,
      this.#timeout(2),
    );
    if (id === "") {
      throw new Error(`PodSandboxId is not set for sandbox ${JSON.stringify(config.metadata)}`);
    }
    return id;
  }

  async stopPodSandbox(podSandboxId: string, options: CallOptions = {}): Promise<void> {
    await this.#call(methods.StopPodSandbox, { podSandboxId }, options);
  }

  async removePodSandbox(podSandboxId: string, options: CallOptions = {}): Promise<void> {
    await this.#call(methods.RemovePodSandbox, { podSandboxId }, options);
  }

  async podSandboxStatus(
    podSandboxId: string,
    options: CallOptions & { verbose?: boolean } = {},
  ): Promise<PodSandboxStatusResponse> {
    const raw = await this.#call(methods.PodSandboxStatus, {
      podSandboxId,
      verbose: options.verbose ?? false,
    }, options);
    const status = raw.status;
    if (!status) {
      throw new Error(`PodSandboxStatus of ${podSandboxId}: the runtime returned no status`);
    }
    verifySandboxStatus(status);
    return {
      status,
      info: raw.info,
      containersStatuses: raw.containersStatuses.map(withContainerMetadata),
      timestamp: raw.timestamp,
    };
  }

  async listPodSandbox(
    filter?: PodSandboxFilter,
    options: CallOptions = {},
  ): Promise<PodSandbox[]> {
    const { items } = await this.#call(methods.ListPodSandbox, {
      filter: filter && {
        id: filter.id,
        // The state goes into its wrapper message: present (even for SANDBOX_READY, 0) = filter.
        state: filter.state === undefined ? undefined : { state: filter.state },
        labelSelector: filter.labelSelector,
      },
    }, options);
    return items;
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    options: CallOptions & { sandboxConfig?: PodSandboxConfig } = {},
  ): Promise<string> {
    const { containerId: id } = await this.#call(methods.CreateContainer, {
      podSandboxId,
      config,
      sandboxConfig: options.sandboxConfig,
    }, options);
    if (id === "") {
      throw new Error(`ContainerId is not set for container ${JSON.stringify(config.metadata)}`);
    }
    return id;
  }

  async startContainer(containerId: string, options: CallOptions = {}): Promise<void> {
    await this.#call(methods.StartContainer, { containerId }, options);
  }

  async stopContainer(
    containerId: string,
    options: CallOptions & { timeoutMs: number },
  ): Promise<void> {
    // The grace period plus the request timeout, leaving time for SIGKILL and the round trip.
    const seconds = Math.max(0, Math.trunc(options.timeoutMs / 1000));
    await this.#call(
      methods.StopContainer,
      { containerId, timeout: seconds },
      options,
      this.#timeout(1, seconds * 1000),
    );
  }

  async removeContainer(containerId: string, options: CallOptions = {}): Promise<void> {
    await this.#call(methods.RemoveContainer, { containerId }, options);
  }

  async reopenContainerLog(containerId: string, options: CallOptions = {}): Promise<void> {
    await this.#call(methods.ReopenContainerLog, { containerId }, options);
  }

  async listContainers(filter?: ContainerFilter, options: CallOptions = {}): Promise<Container[]> {
    const { containers } = await this.#call(methods.ListContainers, {
      filter: filter && {
        id: filter.id,
        // As in listPodSandbox: a present wrapper filters, even on CONTAINER_CREATED (0).
        state: filter.state === undefined ? undefined : { state: filter.state },
        podSandboxId: filter.podSandboxId,
        labelSelector: filter.labelSelector,
      },
    }, options);
    return containers;
  }

  async listContainerStats(options: CallOptions = {}): Promise<ContainerStats[]> {
    const { stats } = await this.#call(methods.ListContainerStats, { filter: {} }, options);
    return stats.map((s): ContainerStats => ({
      id: s.attributes?.id ?? "",
      name: s.attributes?.metadata?.name ?? "",
      labels: s.attributes?.labels ?? {},
      cpu: s.cpu?.usageCoreNanoSeconds
        ? {
          timestampNs: s.cpu.timestamp,
          usageCoreNanoSeconds: s.cpu.usageCoreNanoSeconds.value,
          usageNanoCores: uint64Value(s.cpu.usageNanoCores),
        }
        : undefined,
      memory: s.memory?.workingSetBytes
        ? {
          timestampNs: s.memory.timestamp,
          workingSetBytes: s.memory.workingSetBytes.value,
          usageBytes: uint64Value(s.memory.usageBytes),
          rssBytes: uint64Value(s.memory.rssBytes),
          availableBytes: uint64Value(s.memory.availableBytes),
          pageFaults: uint64Value(s.memory.pageFaults),
          majorPageFaults: uint64Value(s.memory.majorPageFaults),
        }
        : undefined,
      writableLayer: s.writableLayer
        ? {
          timestampNs: s.writableLayer.timestamp,
          usedBytes: uint64Value(s.writableLayer.usedBytes),
          inodesUsed: uint64Value(s.writableLayer.inodesUsed),
          mountpoint: s.writableLayer.fsId?.mountpoint || undefined,
        }
        : undefined,
    }));
  }

  async containerStatus(
    containerId: string,
    options: CallOptions & { verbose?: boolean } = {},
  ): Promise<ContainerStatusResponse> {
    const raw = await this.#call(methods.ContainerStatus, {
      containerId,
      verbose: options.verbose ?? false,
    }, options);
    const status = raw.status;
    if (!status) throw new Error("container status is nil");
    verifyContainerStatus(status);
    return { status, info: raw.info };
  }

  /**
   * Runs `cmd` in the container. The runtime gets `timeoutMs` as whole seconds (truncated, so
   * 500 ms means no runtime-side limit, as in kubelet); the call's deadline is the request timeout
   * plus `timeoutMs`, or none when `timeoutMs` is 0. Errors follow `RuntimeService`'s contract.
   */
  async execSync(
    containerId: string,
    cmd: string[],
    options: CallOptions & { timeoutMs: number },
  ): Promise<ExecSyncResult> {
    const timeoutMs = options.timeoutMs;
    const deadlineMs = timeoutMs !== 0 ? this.#timeout(1, timeoutMs) : 0;
    let raw;
    try {
      raw = await this.#call(
        methods.ExecSync,
        { containerId, cmd, timeout: Math.trunc(timeoutMs / 1000) },
        options,
        deadlineMs,
      );
    } catch (err) {
      // A deadline hit on either side means the command outlived its timeout.
      if (grpcCode(err) === GrpcCode.DeadlineExceeded && !options.signal?.aborted) {
        throw new CommandTimedOutError(cmd, { timeoutMs });
      }
      throw err;
    }
    const { stdout, stderr, exitCode } = raw;
    if (exitCode !== 0) {
      const output = new Uint8Array(stdout.length + stderr.length);
      output.set(stdout);
      output.set(stderr, stdout.length);
      throw new ExitError(exitCode, {
        output,
        message: `command '${cmd.join(" ")}' exited with ${exitCode}: ${
          new TextDecoder().decode(stderr)
        }`,
      });
    }
    return { stdout, stderr };
  }

  /** CRI `Exec` within the request timeout; rejects with `URL is not set` on an empty answer. */
  async exec(request: ExecRequest, options: CallOptions = {}): Promise<StreamingResponse> {
    return urlSet(await this.#call(methods.Exec, request, options));
  }

  /** CRI `Attach` within the request timeout; rejects with `URL is not set` on an empty answer. */
  async attach(request: AttachRequest, options: CallOptions = {}): Promise<StreamingResponse> {
    return urlSet(await this.#call(methods.Attach, request, options));
  }

  /**
   * CRI `PortForward` within the request timeout; rejects with `URL is not set` on an empty
   * answer.
   */
  async portForward(
    request: PortForwardRequest,
    options: CallOptions = {},
  ): Promise<StreamingResponse> {
    return urlSet(await this.#call(methods.PortForward, request, options));
  }

  // The request timeout times `factor`, plus `extraMs`; 0 (no deadline) when the timeout is 0.
  #timeout(factor: number, extraMs = 0): number {
    const base = this.#conn.requestTimeoutMs;
    return base > 0 ? base * factor + extraMs : 0;
  }

  #call<Request, Response>(
    method: CriMethod<Request, Response>,
    request: Request,
    options: CallOptions,
    timeoutMs?: number,
  ): Promise<Response> {
    return this.#conn.unary(method, request, {
      timeoutMs: timeoutMs ?? this.#timeout(1),
      signal: options.signal,
    });
  }
}

/** cri-client's check of a streaming answer: the runtime must name a URL. */
function urlSet({ url }: { url: string }): StreamingResponse {
  if (url === "") throw new Error("URL is not set");
  return { url };
}

/** cri-client's verifySandboxStatus: the fields kubelet relies on must be set. */
function verifySandboxStatus(
  status: PodSandboxStatusMessage,
): asserts status is PodSandboxStatusMessage & PodSandboxStatus {
  if (status.id === "") throw new Error("status.Id is not set");
  if (!status.metadata) throw new Error("status.Metadata is not set");
  const m = status.metadata;
  if (m.name === "" || m.namespace === "" || m.uid === "") {
    throw new Error(
      `metadata.Name, metadata.Namespace or metadata.Uid is not in metadata ${JSON.stringify(m)}`,
    );
  }
  if (status.createdAt === 0n) throw new Error("status.CreatedAt is not set");
}

/** cri-client's verifyContainerStatus. */
function verifyContainerStatus(
  status: ContainerStatusMessage,
): asserts status is ContainerStatusMessage & ContainerStatus {
  if (status.id === "") throw new Error("status.Id is not set");
  if (!status.metadata) throw new Error("status.Metadata is not set");
  if (status.metadata.name === "") {
    throw new Error(`metadata.Name is not in metadata ${JSON.stringify(status.metadata)}`);
  }
  if (status.createdAt === 0n) throw new Error("status.CreatedAt is not set");
  if (!status.image || status.image.image === "") throw new Error("status.Image is not set");
  if (status.imageRef === "") throw new Error("status.ImageRef is not set");
}

// A CRI UInt64Value message (absent = not reported).
function uint64Value(v: UInt64Value | undefined): bigint | undefined {
  return v?.value;
}

/**
 * A container status of a sandbox's evented-PLEG answer (not verified, as in cri-client) with
 * its metadata read as the zero value when absent, as the client's types promise.
 */
function withContainerMetadata(status: ContainerStatusMessage): ContainerStatus {
  status.metadata ??= { name: "", attempt: 0 };
  return status as ContainerStatusMessage & ContainerStatus;
}
