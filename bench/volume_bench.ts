/**
 * The cost of volumes per pod, for `deno run --allow-all bench/volume_bench.ts` (root: tmpfs
 * mounts are real): setting up the `kube-api-access-*` projected volume plus a config map and a
 * secret for a new pod (three atomic writes, two tmpfs mounts), the re-set-up every pod sync does
 * when nothing changed (reads and compares, no write), one with a changed config map (a `..data`
 * swap), and the teardown. Prints milliseconds per pod (median and p95 of N pods).
 * @module
 */
import { join } from "node:path";
import type { Pod } from "../src/api/core/v1/mod.ts";
import { FakeRecorder } from "../src/kubelet/events/mod.ts";
import { VolumeManager } from "../src/kubelet/volumemanager/volume_manager.ts";
import type { VolumeHost } from "../src/volume/volume.ts";

const n = Number(Deno.args[0] ?? 50);
const dir = await Deno.makeTempDir({ prefix: "volume_bench" });
let version = 0;
const host: VolumeHost = {
  podsDir: join(dir, "pods"),
  getConfigMap: () =>
    Promise.resolve({
      metadata: {},
      data: { "app.conf": `v=${version}`, "ca.crt": "x".repeat(1200) },
    }),
  getSecret: () => Promise.resolve({ metadata: {}, data: { password: btoa("s3cr3t") } }),
  getServiceAccountToken: (_ns, _name, tr) =>
    Promise.resolve({ ...tr, status: { token: "t".repeat(900), expirationTimestamp: "" } }),
  getNodeAllocatable: () => ({}),
};
const vm = new VolumeManager({ host, recorder: new FakeRecorder() });

function pod(i: number): Pod {
  return {
    metadata: { name: `p${i}`, namespace: "default", uid: `uid-${i}` },
    spec: {
      containers: [{ name: "app" }],
      volumes: [
        { name: "cfg", configMap: { name: "cfg" } },
        { name: "sec", secret: { secretName: "sec" } },
        {
          name: "kube-api-access-x",
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
              {
                configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] },
              },
              {
                downwardAPI: {
                  items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }],
                },
              },
            ],
          },
        },
      ],
    },
  };
}

async function measure(what: string, fn: (i: number) => Promise<void>): Promise<void> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn(i);
    ms.push(performance.now() - start);
  }
  ms.sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))].toFixed(2);
  console.log(`${what.padEnd(40)} median=${q(0.5)}ms p95=${q(0.95)}ms pods=${n}`);
}

try {
  await measure("first set-up (3 volumes, 2 tmpfs)", (i) => vm.waitForAttachAndMount(pod(i)));
  await measure("re-set-up at a sync, nothing changed", (i) => vm.waitForAttachAndMount(pod(i)));
  version++;
  await measure("re-set-up, config map changed", (i) => vm.waitForAttachAndMount(pod(i)));
  await measure("teardown (unmount, remove)", (i) => vm.unmountPodVolumes(`uid-${i}`));
} finally {
  for (let i = 0; i < n; i++) await vm.unmountPodVolumes(`uid-${i}`).catch(() => {});
  await Deno.remove(dir, { recursive: true });
}
