/**
 * The Linux namespaces a pod's sandbox and containers join: the host's when the pod asks
 * (`hostNetwork`, `hostPID`, `hostIPC`), one PID namespace for the pod with
 * `shareProcessNamespace`, otherwise the pod's network and IPC namespaces and one PID namespace
 * per container.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/util/util.go (NamespacesForPod and the
 * per-namespace helpers), without user namespaces (`hostUsers: false` is refused here).
 * @module
 */
import type { Pod } from "../../../api/core/v1/mod.ts";
import type { NamespaceMode, NamespaceOption } from "../../../cri_client/api.ts";

/**
 * `NamespacesForPod`: the CRI namespace options of the pod.
 *
 * @example
 * ```ts
 * namespacesForPod({ metadata: {}, spec: { hostPID: true, containers: [] } });
 * // { network: "POD", pid: "NODE", ipc: "POD" }
 * ```
 */
export function namespacesForPod(pod: Pod): NamespaceOption {
  return {
    ipc: ipcNamespaceForPod(pod),
    network: networkNamespaceForPod(pod),
    pid: pidNamespaceForPod(pod),
  };
}

/** `IpcNamespaceForPod`: the host's IPC namespace with `hostIPC`, else the pod's. */
export function ipcNamespaceForPod(pod: Pod): NamespaceMode {
  return pod.spec.hostIPC ? "NODE" : "POD";
}

/** `NetworkNamespaceForPod`: the host's network namespace with `hostNetwork`, else the pod's. */
export function networkNamespaceForPod(pod: Pod): NamespaceMode {
  return pod.spec.hostNetwork ? "NODE" : "POD";
}

/**
 * `PidNamespaceForPod`: the host's PID namespace with `hostPID`, the pod's with
 * `shareProcessNamespace`, else each container its own.
 */
export function pidNamespaceForPod(pod: Pod): NamespaceMode {
  if (pod.spec.hostPID) return "NODE";
  if (pod.spec.shareProcessNamespace) return "POD";
  return "CONTAINER";
}
