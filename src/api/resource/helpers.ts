/**
 * A pod's effective requests and limits: regular containers summed, init containers as the
 * largest any of them needs while it runs (with the sidecars started before it), sidecars added
 * for the pod's whole life, then the pod's overhead. Amounts are exact milli-units of each
 * resource (cpu `250m` → 250, memory `64Mi` → 67108864000), so sums never round.
 * Mirrors PodRequests and PodLimits in k8s.io/component-helpers/resource/helpers.go (without
 * pod-level resources, which this node refuses, and without in-place resize status).
 * @module
 */
import type { Container, Pod, ResourceList } from "../core/v1/mod.ts";
import { quantityMilliValue } from "./quantity.ts";

/** Resource name → milli-units. */
export type MilliResourceList = Record<string, number>;

/** Options of {@linkcode podRequests} and {@linkcode podLimits}. */
export interface PodResourcesOptions {
  /** Leave `spec.overhead` out. */
  excludeOverhead?: boolean;
  /** Called with each container's list (kubelet's `ContainerFn`), init containers included. */
  containerFn?: (res: ResourceList, isInit: boolean) => void;
}

function toMilli(list: ResourceList | undefined): MilliResourceList {
  const out: MilliResourceList = {};
  for (const [name, q] of Object.entries(list ?? {})) out[name] = quantityMilliValue(q);
  return out;
}

function addInto(target: MilliResourceList, add: MilliResourceList): void {
  for (const [name, v] of Object.entries(add)) target[name] = (target[name] ?? 0) + v;
}

function maxInto(target: MilliResourceList, other: MilliResourceList): void {
  for (const [name, v] of Object.entries(other)) {
    if (!(name in target) || v > target[name]) target[name] = v;
  }
}

function isSidecar(c: Container): boolean {
  return c.restartPolicy === "Always";
}

function aggregate(
  pod: Pod,
  pick: (c: Container) => ResourceList | undefined,
  options: PodResourcesOptions,
): MilliResourceList {
  const total: MilliResourceList = {};
  for (const c of pod.spec.containers) {
    options.containerFn?.(pick(c) ?? {}, false);
    addInto(total, toMilli(pick(c)));
  }
  const sidecars: MilliResourceList = {};
  const initMax: MilliResourceList = {};
  for (const c of pod.spec.initContainers ?? []) {
    options.containerFn?.(pick(c) ?? {}, true);
    const own = toMilli(pick(c));
    let running: MilliResourceList;
    if (isSidecar(c)) {
      // A sidecar runs alongside the regular containers and every later init container.
      addInto(total, own);
      addInto(sidecars, own);
      running = { ...sidecars };
    } else {
      running = { ...own };
      addInto(running, sidecars);
    }
    maxInto(initMax, running);
  }
  maxInto(total, initMax);
  if (!options.excludeOverhead && pod.spec.overhead) addInto(total, toMilli(pod.spec.overhead));
  return total;
}

/**
 * The pod's effective requests (`PodRequests`).
 *
 * @example
 * ```ts
 * podRequests({ metadata: {}, spec: { containers: [
 *   { name: "a", resources: { requests: { cpu: "100m" } } },
 *   { name: "b", resources: { requests: { cpu: "150m" } } },
 * ] } }); // { cpu: 250 }
 * ```
 */
export function podRequests(pod: Pod, options: PodResourcesOptions = {}): MilliResourceList {
  return aggregate(pod, (c) => c.resources?.requests, options);
}

/**
 * The pod's effective limits (`PodLimits`); a resource no container limits is absent.
 *
 * @example
 * ```ts
 * podLimits({ metadata: {}, spec: { containers: [
 *   { name: "a", resources: { limits: { memory: "64Mi" } } },
 * ] } }); // { memory: 67108864000 }
 * ```
 */
export function podLimits(pod: Pod, options: PodResourcesOptions = {}): MilliResourceList {
  return aggregate(pod, (c) => c.resources?.limits, options);
}
