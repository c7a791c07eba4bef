/**
 * Shared setup for tests that need the project's containerd (`bash scripts/containerd.sh up`):
 * finding the endpoint, deciding whether to skip, and creating sandboxes and containers with the
 * local busybox images. Used by the CRI client tests and the node agent's integration tests.
 * @module
 */
import type { Pod } from "../../src/api/core/v1/mod.ts";
import type {
  ContainerConfig,
  PodSandboxConfig,
  RuntimeService,
} from "../../src/cri_client/mod.ts";
import { newRemoteRuntimeService } from "../../src/cri_client/mod.ts";
import type { ConnectionOptions } from "../../src/cri_client/mod.ts";

/** The repository's root directory. */
export const repoRoot: string = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/** The sandbox image `scripts/containerd.sh` imports (busybox running sleep). */
export const pauseImage = "probelet.local/pause:1";
/** The test image `scripts/containerd.sh` imports: busybox with sh, httpd, nc, sleep, ... */
export const testImage = "probelet.local/busybox:1";
/**
 * The pod subnet of this clone's CNI bridge (`10.88.<n>.`), read from the `network.env` that
 * `scripts/containerd.sh up` records; each clone has its own bridge and /24.
 */
export const podSubnetPrefix: string = (() => {
  const dir = Deno.env.get("PROBELET_CONTAINERD_DIR") || `${repoRoot}/.run/containerd`;
  try {
    const env = Deno.readTextFileSync(`${dir}/network.env`);
    const subnet = env.match(/^subnet=(\d+\.\d+\.\d+)\.0\/24$/m)?.[1];
    if (subnet) return `${subnet}.`;
  } catch {
    // Not up: the tests that need the subnet are ignored anyway.
  }
  return "10.88.";
})();

/** `PROBELET_CRI_ENDPOINT`, or the socket `scripts/containerd.sh up` starts. */
export function criEndpoint(): string {
  return Deno.env.get("PROBELET_CRI_ENDPOINT") ||
    `unix://${repoRoot}/.run/containerd/containerd.sock`;
}

/**
 * Why integration tests cannot run here, or undefined when they can: they need root and a CRI
 * runtime answering on `criEndpoint()`.
 */
export async function integrationSkipReason(): Promise<string | undefined> {
  if (Deno.uid() !== 0) return `not root (uid ${Deno.uid()}); containers need root`;
  const endpoint = criEndpoint();
  try {
    const runtime = await newRemoteRuntimeService(endpoint, { connectTimeoutMs: 1_000 });
    runtime.close();
    return undefined;
  } catch (err) {
    return `no CRI runtime at ${endpoint} (start one with: bash scripts/containerd.sh up): ${
      err instanceof Error ? err.message : err
    }`;
  }
}

/**
 * Registers a test that needs containerd; when `skipReason` is set it is registered as ignored
 * (never counted as a pass). grpc-js keeps timers and sockets of its own, so Deno's op and resource
 * sanitizers are off for these tests; each test closes its clients in `finally`.
 */
export function integrationTest(
  name: string,
  skipReason: string | undefined,
  fn: (t: Deno.TestContext) => Promise<void>,
): void {
  Deno.test({
    name,
    ignore: skipReason !== undefined,
    sanitizeOps: false,
    sanitizeResources: false,
    fn,
  });
}

/** A client on `criEndpoint()`. */
export function connectRuntime(options: ConnectionOptions = {}): Promise<RuntimeService> {
  return newRemoteRuntimeService(criEndpoint(), options);
}

/** A sandbox config for a test pod with a fresh UID, logging under `.run/containerd/pod-logs`. */
export function testSandboxConfig(
  name: string,
  options: { namespace?: string; uid?: string; attempt?: number; hostNetwork?: boolean } = {},
): PodSandboxConfig {
  const namespace = options.namespace ?? "default";
  const uid = options.uid ?? crypto.randomUUID();
  return {
    metadata: { name, namespace, uid, attempt: options.attempt ?? 0 },
    // runc refuses a hostname without a private UTS namespace, so host-network pods get none.
    hostname: options.hostNetwork ? "" : name,
    logDirectory: `${repoRoot}/.run/containerd/pod-logs/${namespace}_${name}_${uid}`,
    labels: {
      "io.kubernetes.pod.name": name,
      "io.kubernetes.pod.namespace": namespace,
      "io.kubernetes.pod.uid": uid,
    },
    linux: {
      securityContext: {
        namespaceOptions: {
          network: options.hostNetwork ? "NODE" : "POD",
          pid: "CONTAINER",
          ipc: "POD",
        },
      },
    },
  };
}

/** A busybox container config; `attempt` is also kubelet's restart count. */
export function testContainerConfig(
  name: string,
  options: { command: string[]; attempt?: number; image?: string },
): ContainerConfig {
  const attempt = options.attempt ?? 0;
  return {
    metadata: { name, attempt },
    image: { image: options.image ?? testImage },
    command: options.command,
    logPath: `${name}/${attempt}.log`,
    labels: { "io.kubernetes.container.name": name },
    annotations: { "io.kubernetes.container.restartCount": String(attempt) },
  };
}

/** A started sandbox and the helpers to put containers in it and tear it down. */
export interface TestSandbox {
  id: string;
  config: PodSandboxConfig;
  /** The pod IP CNI assigned ("" for host-network sandboxes). */
  ip: string;
  /** Creates and starts a container; resolves with its ID. */
  startContainer(
    name: string,
    options: { command: string[]; attempt?: number; image?: string },
  ): Promise<string>;
  /** Stops and removes the sandbox and its containers; never throws. */
  remove(): Promise<void>;
}

/**
 * Runs a sandbox for a test pod. Always call `remove()` in `finally`.
 *
 * @example
 * ```ts
 * const sandbox = await startTestSandbox(runtime, "web");
 * try {
 *   const id = await sandbox.startContainer("app", { command: ["httpd", "-f", "-p", "8080"] });
 * } finally {
 *   await sandbox.remove();
 * }
 * ```
 */
export async function startTestSandbox(
  runtime: RuntimeService,
  name: string,
  options: { hostNetwork?: boolean; uid?: string } = {},
): Promise<TestSandbox> {
  const config = testSandboxConfig(name, options);
  const id = await runtime.runPodSandbox(config);
  const { status } = await runtime.podSandboxStatus(id);
  return {
    id,
    config,
    ip: status.network?.ip ?? "",
    async startContainer(containerName, containerOptions) {
      const containerId = await runtime.createContainer(
        id,
        testContainerConfig(containerName, containerOptions),
        { sandboxConfig: config },
      );
      await runtime.startContainer(containerId);
      return containerId;
    },
    async remove() {
      await removeSandbox(runtime, id);
    },
  };
}

/** Stops and removes a sandbox, reporting (not throwing) failures. */
export async function removeSandbox(runtime: RuntimeService, id: string): Promise<void> {
  try {
    await runtime.stopPodSandbox(id);
    await runtime.removePodSandbox(id);
  } catch (err) {
    console.error(`cleanup: sandbox ${id}: ${err instanceof Error ? err.message : err}`);
  }
}

/** A core/v1 pod matching a test sandbox, for prober and status code. */
export function testPod(sandbox: TestSandbox, containers: Pod["spec"]["containers"]): Pod {
  const m = sandbox.config.metadata;
  return {
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid },
    spec: { containers },
  };
}

/** Restarts the project's containerd (`scripts/containerd.sh restart`); containers keep running. */
export async function restartContainerd(): Promise<void> {
  const out = await new Deno.Command("bash", {
    args: [`${repoRoot}/scripts/containerd.sh`, "restart"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    throw new Error(`scripts/containerd.sh restart failed (exit ${out.code}):\n${text}`);
  }
}

/** Polls `check` every 50 ms until it returns a value, or throws after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ""}`);
}
