/**
 * An in-memory RuntimeService for runtime manager tests, timed by a FakeClock: containers change
 * state only when told (start, stop, `exit()`), and every call is recorded.
 * Mirrors the role of kubelet's pkg/kubelet/kuberuntime fake runtime in kuberuntime_manager_test.go.
 * @module
 */
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatus,
  ContainerStatusResponse,
  ExecSyncResult,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatus,
  PodSandboxStatusResponse,
  VersionResponse,
} from "../../../src/cri_client/api.ts";
import type { RuntimeService } from "../../../src/cri_client/runtime_service.ts";
import type { Clock } from "../../../src/util/clock.ts";

interface FakeSandbox {
  status: PodSandboxStatus;
  config: PodSandboxConfig;
}

interface FakeContainer {
  status: ContainerStatus;
  sandboxId: string;
}

// gRPC NotFound (code 5), as a real runtime reports a missing sandbox or container.
function notFound(message: string): Error {
  return Object.assign(new Error(message), { code: 5 });
}

function matches(labels: Record<string, string>, selector?: Record<string, string>): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

/** The fake runtime; `calls` lists `<method> <id or name>` in order. */
export class FakeRuntime implements RuntimeService {
  readonly calls: string[] = [];
  /** `timeoutMs` of every stopContainer call, in order. */
  readonly stopTimeouts: number[] = [];
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  #clock: Clock;
  #seq = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  #ns(): bigint {
    // Creation order must be strict even when the fake time does not move.
    return BigInt(this.#clock.now()) * 1_000_000n + BigInt(++this.#seq);
  }

  version(): Promise<VersionResponse> {
    return Promise.resolve({
      version: "0.1.0",
      runtimeName: "fake",
      runtimeVersion: "0",
      runtimeApiVersion: "v1",
    });
  }

  runPodSandbox(config: PodSandboxConfig): Promise<string> {
    const id = `sandbox-${++this.#seq}`;
    this.calls.push(`runPodSandbox ${config.metadata.name}`);
    this.sandboxes.set(id, {
      config,
      status: {
        id,
        metadata: { attempt: 0, ...config.metadata } as PodSandboxStatus["metadata"],
        state: "SANDBOX_READY",
        createdAt: this.#ns(),
        network: { ip: "10.0.0.7", additionalIps: [] },
        linux: { namespaces: { options: { network: "POD" } } },
        labels: config.labels ?? {},
        annotations: config.annotations ?? {},
        runtimeHandler: "",
      },
    });
    return Promise.resolve(id);
  }

  stopPodSandbox(id: string): Promise<void> {
    this.calls.push(`stopPodSandbox ${id}`);
    const s = this.sandboxes.get(id);
    if (s) s.status.state = "SANDBOX_NOTREADY";
    for (const c of this.containers.values()) {
      if (c.sandboxId === id) this.exit(c.status.id, 137);
    }
    return Promise.resolve();
  }

  removePodSandbox(id: string): Promise<void> {
    this.calls.push(`removePodSandbox ${id}`);
    this.sandboxes.delete(id);
    for (const [cid, c] of this.containers) if (c.sandboxId === id) this.containers.delete(cid);
    return Promise.resolve();
  }

  podSandboxStatus(id: string): Promise<PodSandboxStatusResponse> {
    const s = this.sandboxes.get(id);
    const failure = this.statusFailure?.(id);
    if (failure) return Promise.reject(failure);
    if (!s) return Promise.reject(notFound(`sandbox ${id} not found`));
    return Promise.resolve({
      status: structuredClone(s.status),
      info: {},
      containersStatuses: [],
      timestamp: 0n,
    });
  }

  listPodSandbox(filter: PodSandboxFilter = {}): Promise<PodSandbox[]> {
    return Promise.resolve(
      [...this.sandboxes.values()].filter((s) => matches(s.status.labels, filter.labelSelector))
        .map((s) => ({ ...structuredClone(s.status) })),
    );
  }

  createContainer(sandboxId: string, config: ContainerConfig): Promise<string> {
    const id = `c${++this.#seq}`;
    this.calls.push(`createContainer ${config.metadata.name} attempt=${config.metadata.attempt}`);
    this.containers.set(id, {
      sandboxId,
      status: {
        id,
        metadata: { name: config.metadata.name, attempt: config.metadata.attempt ?? 0 },
        state: "CONTAINER_CREATED",
        createdAt: this.#ns(),
        startedAt: 0n,
        finishedAt: 0n,
        exitCode: 0,
        image: config.image,
        imageRef: "sha256:fake",
        reason: "",
        message: "",
        labels: config.labels ?? {},
        annotations: config.annotations ?? {},
        mounts: config.mounts ?? [],
        logPath: "",
        imageId: "",
      },
    });
    return Promise.resolve(id);
  }

  startContainer(id: string): Promise<void> {
    this.calls.push(`startContainer ${id}`);
    const c = this.containers.get(id)!;
    c.status.state = "CONTAINER_RUNNING";
    c.status.startedAt = this.#ns();
    return Promise.resolve();
  }

  stopContainer(id: string, options: { timeoutMs: number }): Promise<void> {
    this.calls.push(`stopContainer ${id}`);
    this.stopTimeouts.push(options.timeoutMs);
    this.exit(id, 137);
    return Promise.resolve();
  }

  /** Makes a running container exit with `code` now. */
  exit(id: string, code: number): void {
    const c = this.containers.get(id);
    if (!c || c.status.state !== "CONTAINER_RUNNING") return;
    c.status.state = "CONTAINER_EXITED";
    c.status.finishedAt = this.#ns();
    c.status.exitCode = code;
    c.status.reason = code === 0 ? "Completed" : "Error";
  }

  removeContainer(id: string): Promise<void> {
    this.calls.push(`removeContainer ${id}`);
    this.containers.delete(id);
    return Promise.resolve();
  }

  listContainers(filter: ContainerFilter = {}): Promise<Container[]> {
    return Promise.resolve(
      [...this.containers.values()].filter((c) => matches(c.status.labels, filter.labelSelector))
        .map((c) => ({
          id: c.status.id,
          podSandboxId: c.sandboxId,
          metadata: c.status.metadata,
          imageRef: c.status.imageRef,
          state: c.status.state,
          createdAt: c.status.createdAt,
          labels: c.status.labels,
          annotations: c.status.annotations,
          imageId: "",
        })),
    );
  }

  containerStatus(id: string): Promise<ContainerStatusResponse> {
    const c = this.containers.get(id);
    const failure = this.statusFailure?.(id);
    if (failure) return Promise.reject(failure);
    if (!c) return Promise.reject(notFound(`container ${id} not found`));
    return Promise.resolve({ status: structuredClone(c.status), info: {} });
  }

  /** When set and returning an error, podSandboxStatus/containerStatus of that ID reject with it. */
  statusFailure?: (id: string) => Error | undefined;

  /** What `execSync` does; default: succeed with no output. */
  execSyncFunc: (containerId: string, cmd: string[]) => Promise<ExecSyncResult> = () =>
    Promise.resolve({ stdout: new Uint8Array(), stderr: new Uint8Array() });

  execSync(containerId: string, cmd: string[]): Promise<ExecSyncResult> {
    this.calls.push(`execSync ${containerId} ${cmd.join(" ")}`);
    return this.execSyncFunc(containerId, cmd);
  }

  close(): void {}

  /** IDs of containers of that name, oldest first. */
  containersNamed(name: string): ContainerStatus[] {
    return [...this.containers.values()].map((c) => c.status).filter((s) =>
      s.metadata.name === name
    ).sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1));
  }
}
