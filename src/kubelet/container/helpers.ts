/**
 * Container helpers kubelet's runtime manager and pod status code share: whether a container
 * should be restarted, the container hash kept on created containers, the restart policy with its
 * default, and a pod's `namespace/name` for logs.
 * Mirrors kubelet's pkg/kubelet/container/helpers.go.
 * @module
 */
import type { Container, Pod } from "../../api/core/v1/mod.ts";
import { V } from "../../util/log.ts";
import { findContainerStatusByName, type PodStatus } from "./runtime.ts";
import { canonicalJSON } from "../../util/hash.ts";

/** The restart policy with the API default (`Always`) applied. */
export function podRestartPolicy(pod: Pod): "Always" | "OnFailure" | "Never" {
  return pod.spec.restartPolicy ?? "Always";
}

/** `namespace/name` of a pod, for logs. */
export function podKey(pod: Pod): string {
  const ns = pod.metadata.namespace ?? "";
  return ns ? `${ns}/${pod.metadata.name ?? ""}` : pod.metadata.name ?? "";
}

/**
 * Whether a container that is not running should be started again, by the pod's restart policy and
 * the last exit code. Kubelet's `ShouldContainerBeRestarted`.
 */
export function shouldContainerBeRestarted(
  container: Container,
  pod: Pod,
  podStatus: PodStatus,
): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const status = findContainerStatusByName(podStatus, container.name);
  if (!status) return true;
  if (status.state === "running") return false;
  if (status.state === "unknown" || status.state === "created") return true;
  const policy = podRestartPolicy(pod);
  if (policy === "Never") {
    V(4).info("Already ran container, do nothing", {
      pod: podKey(pod),
      containerName: container.name,
    });
    return false;
  }
  if (policy === "OnFailure" && status.exitCode === 0) {
    V(4).info("Already successfully ran container, do nothing", {
      pod: podKey(pod),
      containerName: container.name,
    });
    return false;
  }
  return true;
}

/**
 * The hash kept on each created container so that a changed definition is noticed: FNV-1a over
 * the JSON of the fields kubelet's `HashContainer` picks (`pickFieldsToHash`: name and image, the
 * only ones that can change under a running pod). Fields added to the spec by a later probelet
 * therefore never change it, so an upgraded agent restarts nothing.
 */
export function hashContainer(container: Container): string {
  // Go marshals the map with sorted keys.
  return fnv1a32(JSON.stringify({ image: container.image ?? "", name: container.name }));
}

/**
 * The hash earlier probelets kept: over the canonical JSON of the whole spec. Containers they
 * created still carry it and match their unchanged spec on it.
 */
export function legacyHashContainer(container: Container): string {
  return fnv1a32(canonicalJSON(container));
}

function fnv1a32(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}
