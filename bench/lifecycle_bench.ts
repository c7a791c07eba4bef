/**
 * What items 5-7 of issue 16 add per container start and per exited container, for
 * `deno bench --allow-all bench/lifecycle_bench.ts`: the pod's DNS configuration (resolv.conf read
 * and parsed), its run options (the hosts file written, the message folder made) and message file,
 * and the termination message read back (from a file, and from a 80-line log tail).
 * @module
 */
import { join } from "node:path";
import type { Pod } from "../src/api/core/v1/mod.ts";
import type { ContainerStatus } from "../src/cri_client/api.ts";
import { FakeRecorder } from "../src/kubelet/events/mod.ts";
import { generateRunContainerOptions } from "../src/kubelet/kubelet_pods.ts";
import {
  convertToKubeContainerStatus,
  makeMounts,
} from "../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { Configurer } from "../src/kubelet/network/dns/dns.ts";

const dir = await Deno.makeTempDir({ prefix: "probelet-lifecycle-bench-" });
const resolvConf = join(dir, "resolv.conf");
await Deno.writeTextFile(
  resolvConf,
  "nameserver 192.168.0.1\nsearch example.test\noptions edns0\n",
);
const pod: Pod = {
  metadata: { name: "web", namespace: "default", uid: "u1" },
  spec: {
    containers: [{ name: "app", terminationMessagePath: "/dev/termination-log" }],
    hostAliases: [{ ip: "10.1.2.3", hostnames: ["a.local", "b.local"] }],
    dnsPolicy: "ClusterFirst",
  },
};
const dns = new Configurer({
  recorder: new FakeRecorder(),
  nodeRef: { kind: "Node", name: "n" },
  nodeIPs: ["10.0.0.2"],
  clusterDNS: ["10.96.0.10"],
  clusterDomain: "cluster.local",
  resolverConfig: resolvConf,
});
const podsDir = join(dir, "pod-dirs");
const messageFile = join(dir, "msg");
await Deno.writeTextFile(messageFile, "x".repeat(1000));
const logPath = join(dir, "0.log");
await Deno.writeTextFile(
  logPath,
  Array.from({ length: 200 }, (_, i) => `2026-01-01T00:00:00Z stderr F line ${i}\n`).join(""),
);
const exited = (policy: string, mounts: ContainerStatus["mounts"]): ContainerStatus => ({
  id: "c",
  metadata: { name: "app", attempt: 0 },
  state: "CONTAINER_EXITED",
  createdAt: 0n,
  startedAt: 0n,
  finishedAt: 0n,
  exitCode: 1,
  image: { image: "i" },
  imageRef: "",
  reason: "Error",
  message: "",
  labels: {},
  annotations: {
    "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
    "io.kubernetes.container.terminationMessagePolicy": policy,
  },
  mounts,
  logPath,
  imageId: "",
});
const fromFile = exited("File", [{ hostPath: messageFile, containerPath: "/dev/termination-log" }]);
const fromLogs = exited("FallbackToLogsOnError", []);

Deno.bench("getPodDNS (ClusterFirst, resolv.conf read)", async () => {
  await dns.getPodDNS(pod);
});
Deno.bench("generateRunContainerOptions + makeMounts (hosts file, message file)", async () => {
  const opts = await generateRunContainerOptions(pod, pod.spec.containers[0], {
    podsDir,
    podIPs: ["10.88.77.5"],
    clusterDomain: "cluster.local",
  });
  await makeMounts(opts, pod.spec.containers[0]);
});
Deno.bench("termination message from the file", async () => {
  await convertToKubeContainerStatus(fromFile, "containerd");
});
Deno.bench("termination message from a 200-line log", async () => {
  await convertToKubeContainerStatus(fromLogs, "containerd");
});
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
