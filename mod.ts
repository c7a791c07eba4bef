/**
 * probelet's public surface, one namespace per kubelet package so names stay kubelet's
 * (`prober.newManager`, `results.newManager`, `status.newManager` do not collide).
 *
 * @example
 * ```ts
 * import { probe, prober, results } from "./mod.ts";
 * const tcp = probe.newTcpProber();
 * const outcome = await tcp.probe("127.0.0.1", { port: 8080, timeoutMs: 1000 });
 * ```
 * @module
 */
export * as v1 from "./src/api/core/v1/mod.ts";
export * as probe from "./src/probe/mod.ts";
export * as prober from "./src/kubelet/prober/mod.ts";
export * as results from "./src/kubelet/prober/results/mod.ts";
export * as status from "./src/kubelet/status/mod.ts";
export * as container from "./src/kubelet/container/mod.ts";
export * as events from "./src/kubelet/events/mod.ts";
export * as config from "./src/kubelet/config/mod.ts";
export * as cri from "./src/cri_client/mod.ts";
export * as kubelet from "./src/kubelet/mod.ts";
export * as nodestatus from "./src/kubelet/nodestatus/mod.ts";
export * as nodelease from "./src/kubelet/nodelease/mod.ts";
export { runKubelet } from "./src/cmd/probelet/app.ts";
export * as flowcontrol from "./src/util/flowcontrol/backoff.ts";
export * as clock from "./src/util/clock.ts";
export * as channel from "./src/util/channel.ts";
export * as log from "./src/util/log.ts";
export { kubernetesVersion, kubeUserAgent } from "./src/version.ts";
