/**
 * The cost of building a container's environment, for `deno run --allow-all bench/env_bench.ts`:
 * `makeEnvironmentVariables` for a pod with 20 env entries (literals, `$(VAR)` expansions, the
 * downward API, a config map key, a resource field) and one `envFrom` config map of 50 keys, in a
 * cluster of S services of which a tenth are in the pod's namespace (`enableServiceLinks: true`).
 * kubelet lists every service of the cluster at each container start; so does probelet. Prints
 * microseconds per call (median and p95 of N calls) and the number of variables, per S.
 * @module
 */
import type { Container, Pod, Service } from "../src/api/core/v1/mod.ts";
import { type EnvironmentSources, makeEnvironmentVariables } from "../src/kubelet/kubelet_pods.ts";

const calls = Number(Deno.args[0] ?? 2000);
const data: Record<string, string> = {};
for (let i = 0; i < 50; i++) data[`KEY_${i}`] = `value-${i}`;

const container: Container = {
  name: "app",
  envFrom: [{ prefix: "CFG_", configMapRef: { name: "cfg" } }],
  env: [
    { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    { name: "APP", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
    { name: "CPU", valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "1m" } } },
    { name: "GREETING", valueFrom: { configMapKeyRef: { name: "cfg", key: "KEY_1" } } },
    ...Array.from({ length: 15 }, (_, i) => ({
      name: `V${i}`,
      value: i % 2 ? `literal-${i}` : `$(POD_NAME)-$(KUBERNETES_SERVICE_HOST)-${i}`,
    })),
  ],
};
const pod: Pod = {
  metadata: { name: "web", namespace: "ns0", uid: "u", labels: { app: "web" } },
  spec: { enableServiceLinks: true, containers: [container] },
};

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

for (const count of [10, 100, 1000, 5000]) {
  const services: Service[] = [
    {
      metadata: { name: "kubernetes", namespace: "default" },
      spec: { clusterIP: "10.0.0.1", ports: [{ name: "https", port: 443 }] },
    },
  ];
  for (let i = 0; i < count; i++) {
    services.push({
      metadata: { name: `svc-${i}`, namespace: `ns${i % 10}` },
      spec: { clusterIP: `10.1.${i >> 8}.${i & 255}`, ports: [{ name: "http", port: 80 }] },
    });
  }
  const sources: EnvironmentSources = {
    serviceLister: { list: () => services, hasSynced: () => true },
    configMapManager: { getConfigMap: () => Promise.resolve({ metadata: {}, data }) },
    getHostIPs: () => ["192.168.1.2"],
    getNodeAllocatable: () => ({ cpu: "4", memory: "8Gi" }),
  };
  const ips = { podIP: "10.88.0.5", podIPs: ["10.88.0.5"] };
  let vars = 0;
  for (let i = 0; i < 200; i++) await makeEnvironmentVariables(pod, container, ips, sources);
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    vars = (await makeEnvironmentVariables(pod, container, ips, sources)).length;
    times.push((performance.now() - start) * 1000);
  }
  times.sort((a, b) => a - b);
  console.log(
    `services=${count} vars=${vars} median_us=${percentile(times, 0.5).toFixed(1)} ` +
      `p95_us=${percentile(times, 0.95).toFixed(1)} calls=${calls}`,
  );
}
