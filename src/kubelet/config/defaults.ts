/**
 * API defaults for a Pod as the API server (or kubelet, for static pods) applies them before
 * anything uses the pod: probe timings, HTTP probe and hook path and scheme, restart policy, grace
 * period, DNS policy, port protocol, image pull policy, termination message path and policy,
 * requests from limits.
 * Mirrors the Pod-related parts of kubernetes' pkg/apis/core/v1/defaults.go.
 * @module
 */
import type { Container, Pod, Probe } from "../../api/core/v1/mod.ts";

/** `SetDefaults_Pod`'s grace period when the spec sets none. */
export const defaultTerminationGracePeriodSeconds = 30;

/** Probe fields that default when absent or 0 (`SetDefaults_Probe`). */
export const probeDefaults = {
  timeoutSeconds: 1,
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 3,
} as const;

/**
 * Applies the API defaults to a validated pod, in place.
 *
 * @example
 * ```ts
 * import { Pod } from "../../api/core/v1/types.ts";
 *
 * const pod: Pod = {
 *   metadata: { name: "web" },
 *   spec: { containers: [{ name: "app", image: "busybox", livenessProbe: { httpGet: { port: 80 } } }] },
 * };
 * setDefaultsPod(pod);
 * pod.spec.restartPolicy; // "Always"
 * pod.spec.containers[0].livenessProbe?.periodSeconds; // 10
 * pod.spec.containers[0].livenessProbe?.httpGet?.path; // "/"
 * ```
 */
export function setDefaultsPod(pod: Pod): void {
  const spec = pod.spec;
  spec.restartPolicy ??= "Always";
  spec.terminationGracePeriodSeconds ??= defaultTerminationGracePeriodSeconds;
  spec.dnsPolicy ??= "ClusterFirst";
  for (const c of spec.initContainers ?? []) setDefaultsContainer(c);
  for (const c of spec.containers) setDefaultsContainer(c);
  // SetDefaults_Pod: a limit without a request requests the limit, so a pod that only limits cpu
  // and memory is Guaranteed (its QoS class, cpu shares and OOM score follow).
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    const limits = c.resources?.limits;
    if (!limits || Object.keys(limits).length === 0) continue;
    const requests = (c.resources!.requests ??= {});
    for (const [name, value] of Object.entries(limits)) requests[name] ??= value;
  }
}

/**
 * Applies the container-level defaults, in place.
 *
 * @example
 * ```ts
 * import { Container } from "../../api/core/v1/types.ts";
 *
 * const c: Container = { name: "app", image: "busybox:latest", ports: [{ containerPort: 80 }] };
 * setDefaultsContainer(c);
 * c.imagePullPolicy; // "Always"
 * c.ports?.[0].protocol; // "TCP"
 * ```
 */
export function setDefaultsContainer(c: Container): void {
  c.imagePullPolicy ??= defaultImagePullPolicy(c.image ?? "");
  c.terminationMessagePath ??= "/dev/termination-log";
  c.terminationMessagePolicy ??= "File";
  for (const p of c.ports ?? []) p.protocol ??= "TCP";
  for (const handler of [c.lifecycle?.postStart, c.lifecycle?.preStop]) {
    if (handler?.httpGet) {
      handler.httpGet.path ??= "/";
      handler.httpGet.scheme ??= "HTTP";
    }
  }
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
    if (probe) setDefaultsProbe(probe);
  }
}

/**
 * `SetDefaults_Probe` and `SetDefaults_HTTPGetAction`: absent or 0 timings take their defaults;
 * an HTTP probe without path probes `/` over plain HTTP.
 *
 * @example
 * ```ts
 * import { Probe } from "../../api/core/v1/types.ts";
 *
 * const probe: Probe = { tcpSocket: { port: 80 }, periodSeconds: 0 };
 * setDefaultsProbe(probe);
 * probe.periodSeconds; // 10
 * ```
 */
export function setDefaultsProbe(probe: Probe): void {
  probe.initialDelaySeconds ??= 0;
  for (const [field, value] of Object.entries(probeDefaults)) {
    const key = field as keyof typeof probeDefaults;
    if (!probe[key]) probe[key] = value;
  }
  if (probe.httpGet) {
    if (!probe.httpGet.path) probe.httpGet.path = "/";
    if (!probe.httpGet.scheme) probe.httpGet.scheme = "HTTP";
  }
}

// SetDefaults_Container: images tagged `latest`, or not tagged at all, are pulled every time.
function defaultImagePullPolicy(image: string): "Always" | "IfNotPresent" {
  if (image.includes("@")) return "IfNotPresent"; // pinned by digest
  const lastPart = image.slice(image.lastIndexOf("/") + 1);
  const colon = lastPart.lastIndexOf(":");
  const tag = colon < 0 ? "" : lastPart.slice(colon + 1);
  return tag === "" || tag === "latest" ? "Always" : "IfNotPresent";
}
