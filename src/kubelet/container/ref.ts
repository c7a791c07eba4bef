/**
 * References to a container inside its pod, used as the target of container events.
 * Mirrors kubelet's pkg/kubelet/container/ref.go.
 * @module
 */
import type { Container, ObjectReference, Pod } from "../../api/core/v1/mod.ts";
import { goQuote } from "../../util/go_format.ts";

/**
 * An ObjectReference to the pod (with its resourceVersion, as client-go's `GetPartialReference`
 * fills it) whose `fieldPath` names the container: `spec.containers{name}` or
 * `spec.initContainers{name}`. A container the pod spec does not list gets
 * `implicitly required container <name>`, as kubelet does.
 *
 * @example
 * ```ts
 * const pod = { metadata: { name: "web", namespace: "default" }, spec: { containers: [{ name: "app" }] } };
 * generateContainerRef(pod, pod.spec.containers[0]).fieldPath; // "spec.containers{app}"
 * ```
 */
export function generateContainerRef(pod: Pod, container: Container): ObjectReference {
  const found = fieldPath(pod, container);
  return {
    ...getPodReference(pod),
    fieldPath: found.path ?? `implicitly required container ${container.name}`,
  };
}

/**
 * The field path of a container in its pod spec, or an error when the pod does not list it.
 *
 * @example
 * ```ts
 * fieldPath({ metadata: {}, spec: { containers: [], initContainers: [{ name: "init" }] } }, { name: "init" });
 * // { path: "spec.initContainers{init}" }
 * ```
 */
export function fieldPath(pod: Pod, container: Container): { path?: string; error?: Error } {
  const lists: [string, Container[] | undefined][] = [
    ["spec.containers", pod.spec?.containers],
    ["spec.initContainers", pod.spec?.initContainers],
  ];
  for (const [prefix, containers] of lists) {
    const list = containers ?? [];
    for (let i = 0; i < list.length; i++) {
      if (list[i].name !== container.name) continue;
      // An empty name can only be addressed by index.
      return { path: container.name === "" ? `${prefix}[${i}]` : `${prefix}{${container.name}}` };
    }
  }
  const ns = pod.metadata?.namespace ?? "";
  const name = pod.metadata?.name ?? "";
  return {
    error: new Error(`container ${goQuote(container.name)} not found in pod ${ns}/${name}`),
  };
}

/**
 * An ObjectReference to the whole pod (client-go's `reference.GetReference` for a pod): what
 * events about the pod itself (rejection, validation) point at. A pod read from the API server
 * carries its resourceVersion; a static pod from a file has none, so the field is left out.
 *
 * @example
 * ```ts
 * getPodReference({ metadata: { name: "web", namespace: "default", uid: "u" }, spec: { containers: [] } });
 * // { kind: "Pod", apiVersion: "v1", name: "web", namespace: "default", uid: "u" }
 * ```
 */
export function getPodReference(pod: Pod): ObjectReference {
  const ref: ObjectReference = {
    kind: "Pod",
    apiVersion: "v1",
    name: pod.metadata?.name,
    namespace: pod.metadata?.namespace,
    uid: pod.metadata?.uid,
  };
  if (pod.metadata?.resourceVersion !== undefined) {
    ref.resourceVersion = pod.metadata.resourceVersion;
  }
  return ref;
}
