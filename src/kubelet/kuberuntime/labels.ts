/**
 * The labels and annotations kubelet puts on sandboxes and containers, from which the runtime's
 * objects are mapped back to pods and container specs.
 * Mirrors kubelet's pkg/kubelet/kuberuntime/labels.go (and the pod label keys of
 * pkg/kubelet/types/labels.go).
 * @module
 */

/** Label keys kubelet puts on sandboxes and containers (labels.go). */
export const podNameLabel = "io.kubernetes.pod.name";
/** See {@linkcode podNameLabel}. */
export const podNamespaceLabel = "io.kubernetes.pod.namespace";
/** See {@linkcode podNameLabel}. */
export const podUIDLabel = "io.kubernetes.pod.uid";
/** See {@linkcode podNameLabel}. */
export const containerNameLabel = "io.kubernetes.container.name";
/** Annotation holding `hashContainer` of the spec a container was created from. */
export const containerHashAnnotation = "io.kubernetes.container.hash";
/** Annotation holding how many restarts preceded a container instance. */
export const containerRestartCountAnnotation = "io.kubernetes.container.restartCount";
/** Annotation holding the pod's termination grace period. */
export const podTerminationGracePeriodAnnotation = "io.kubernetes.pod.terminationGracePeriod";

/**
 * Label probelet adds to every sandbox and container it creates, so that housekeeping only ever
 * removes what this agent made (other clients of a shared runtime use kubelet's labels too).
 */
export const probeletManagedLabel = "io.probelet.managed";
