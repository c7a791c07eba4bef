/**
 * The kubelet side of `kubectl exec`, `attach`, `port-forward` and the server's `/run`: find the
 * running container (or pod) on the runtime, then ask the runtime where its streaming server
 * serves the request (CRI `Exec`, `Attach`, `PortForward`), or run the command at once
 * (`ExecSync`).
 * Mirrors findContainer, RunInContainer, GetExec, GetAttach and GetPortForward in kubelet's
 * pkg/kubelet/kubelet_pods.go.
 * @module
 */
import type { Pod } from "../api/core/v1/mod.ts";
import type { RuntimeService } from "../cri_client/runtime_service.ts";
import {
  getAttach as runtimeGetAttach,
  getExec as runtimeGetExec,
  type StreamOptions,
} from "./kuberuntime/kuberuntime_container.ts";
import type { RuntimeContainer, RuntimePod } from "./container/runtime.ts";
import { getPortForward as runtimeGetPortForward } from "./kuberuntime/kuberuntime_sandbox.ts";
import { buildPodFullName } from "./types/pod_update.ts";
import type { StreamingHost } from "./server/streaming.ts";

export type { StreamingHost, StreamOptions };

/** What the streaming calls read: the runtime, its pods, and the pod manager. */
export interface StreamingContext {
  runtime: Pick<RuntimeService, "exec" | "attach" | "portForward" | "execSync" | "listPodSandbox">;
  /** The runtime's pods, running or not (the runtime manager's `getPods`). */
  getPods(): Promise<RuntimePod[]>;
  /** kubelet's pod manager: the API pods by full name, and mirror-pod UID translation. */
  podManager: {
    getPodByFullName(podFullName: string): Pod | undefined;
    translatePodUID(uid: string): string;
  };
}

// kubelet's GetPods(all=false): ready sandboxes and running containers only.
async function runningPods(ctx: StreamingContext): Promise<RuntimePod[]> {
  return (await ctx.getPods()).map((p) => ({
    ...p,
    containers: p.containers.filter((c) => c.state === "running"),
    sandboxes: p.sandboxes.filter((s) => s.state === "running"),
  })).filter((p) => p.containers.length > 0 || p.sandboxes.length > 0);
}

// kubecontainer's Pods.FindPod: by full name when there is one, else by UID.
function findPod(pods: RuntimePod[], podFullName: string, podUID: string): RuntimePod | undefined {
  if (podFullName !== "") {
    return pods.find((p) => buildPodFullName(p.name, p.namespace) === podFullName);
  }
  return pods.find((p) => p.id === podUID);
}

/**
 * kubelet's `findContainer`: the running container `containerName` of the pod, undefined when
 * there is none.
 *
 * @example
 * ```ts
 * declare const ctx: StreamingContext;
 *
 * const c = await findContainer(ctx, "web_default", "", "app"); // c?.id.id: the runtime's ID
 * ```
 */
export async function findContainer(
  ctx: StreamingContext,
  podFullName: string,
  podUID: string,
  containerName: string,
): Promise<RuntimeContainer | undefined> {
  const pods = await runningPods(ctx);
  const pod = findPod(pods, podFullName, ctx.podManager.translatePodUID(podUID));
  return pod?.containers.find((c) => c.name === containerName);
}

/**
 * kubelet's `RunInContainer`: `ExecSync` without a timeout; stdout followed by stderr. A
 * non-zero exit rejects with the runtime's `ExitError` (`command '…' exited with 3: …`).
 *
 * @example
 * ```ts
 * declare const ctx: StreamingContext;
 *
 * new TextDecoder().decode(await runInContainer(ctx, "web_default", "", "app", ["hostname"]));
 * ```
 */
export async function runInContainer(
  ctx: StreamingContext,
  podFullName: string,
  podUID: string,
  containerName: string,
  cmd: string[],
): Promise<Uint8Array> {
  const container = await findContainer(ctx, podFullName, podUID, containerName);
  if (!container) throw new Error(`container not found (${JSON.stringify(containerName)})`);
  const { stdout, stderr } = await ctx.runtime.execSync(container.id.id, cmd, { timeoutMs: 0 });
  const out = new Uint8Array(stdout.length + stderr.length);
  out.set(stdout);
  out.set(stderr, stdout.length);
  return out;
}

/**
 * kubelet's `GetExec`: the streaming URL of `cmd` in the running container.
 *
 * @example
 * ```ts
 * declare const ctx: StreamingContext;
 *
 * const url = await getExec(ctx, "web_default", "", "app", ["sh"], {
 *   stdin: true,
 *   stdout: true,
 *   stderr: false,
 *   tty: true,
 * });
 * ```
 */
export async function getExec(
  ctx: StreamingContext,
  podFullName: string,
  podUID: string,
  containerName: string,
  cmd: string[],
  streamOpts: StreamOptions,
): Promise<URL> {
  const container = await findContainer(ctx, podFullName, podUID, containerName);
  if (!container) throw new Error(`container not found (${JSON.stringify(containerName)})`);
  return await runtimeGetExec(ctx.runtime, container.id, cmd, streamOpts);
}

/**
 * kubelet's `GetAttach`: the streaming URL of the running container's main process. The TTY
 * setting is the container spec's (it cannot change after the start), not the request's.
 *
 * @example
 * ```ts
 * declare const ctx: StreamingContext;
 *
 * const url = await getAttach(ctx, "web_default", "", "app", {
 *   stdin: true,
 *   stdout: true,
 *   stderr: true,
 *   tty: false,
 * });
 * ```
 */
export async function getAttach(
  ctx: StreamingContext,
  podFullName: string,
  podUID: string,
  containerName: string,
  streamOpts: StreamOptions,
): Promise<URL> {
  const container = await findContainer(ctx, podFullName, podUID, containerName);
  const notFound = `container ${containerName} not found in pod ${podFullName}`;
  if (!container) throw new Error(notFound);
  const pod = ctx.podManager.getPodByFullName(podFullName);
  if (!pod || (podUID !== "" && pod.metadata.uid !== podUID)) {
    throw new Error(`pod ${podFullName} not found`);
  }
  const spec = [
    ...pod.spec.containers,
    ...(pod.spec.initContainers ?? []),
    ...(pod.spec.ephemeralContainers ?? []),
  ].find((c) => c.name === containerName);
  if (!spec) throw new Error(notFound);
  return await runtimeGetAttach(ctx.runtime, container.id, { ...streamOpts, tty: !!spec.tty });
}

/**
 * kubelet's `GetPortForward`: the streaming URL forwarding ports of the pod's sandbox.
 *
 * @example
 * ```ts
 * declare const ctx: StreamingContext;
 *
 * const url = await getPortForward(ctx, "web", "default", "6e4e0e5c", []);
 * ```
 */
export async function getPortForward(
  ctx: StreamingContext,
  podName: string,
  podNamespace: string,
  podUID: string,
  ports: number[],
): Promise<URL> {
  const pods = await runningPods(ctx);
  const uid = ctx.podManager.translatePodUID(podUID);
  const podFullName = buildPodFullName(podName, podNamespace);
  if (!findPod(pods, podFullName, uid)) {
    throw new Error(`pod not found (${JSON.stringify(podFullName)})`);
  }
  return await runtimeGetPortForward(ctx.runtime, {
    name: podName,
    namespace: podNamespace,
    uid,
  }, ports);
}

/**
 * The {@linkcode StreamingHost} over a context and a pod lookup.
 *
 * @example
 * ```ts
 * import type { Pod } from "../api/core/v1/mod.ts";
 *
 * declare const ctx: StreamingContext;
 * declare const pods: Pod[];
 *
 * const host = newStreamingHost(ctx, (namespace, name) =>
 *   pods.find((p) => p.metadata.namespace === namespace && p.metadata.name === name));
 * ```
 */
export function newStreamingHost(
  ctx: StreamingContext,
  getPodByName: (namespace: string, name: string) => Pod | undefined,
): StreamingHost {
  return {
    getPodByName,
    getExec: (fullName, uid, name, cmd, opts) => getExec(ctx, fullName, uid, name, cmd, opts),
    getAttach: (fullName, uid, name, opts) => getAttach(ctx, fullName, uid, name, opts),
    getPortForward: (name, ns, uid, ports) => getPortForward(ctx, name, ns, uid, ports),
    runInContainer: (fullName, uid, name, cmd) => runInContainer(ctx, fullName, uid, name, cmd),
  };
}
