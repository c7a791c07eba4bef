/**
 * What the security context and resources add to each container start, printed as figures:
 * the `ImageStatus` round trip kubelet makes before every create (for `runAsNonRoot` and the image
 * user) against the project's containerd, and the CPU time of building a container's config with
 * its Linux part, beside the config without it.
 *
 *   bash scripts/containerd.sh up && deno run --allow-all bench/security_context_bench.ts
 * @module
 */
import type { Pod } from "../src/api/core/v1/mod.ts";
import { newRemoteImageService } from "../src/cri_client/mod.ts";
import { generateContainerConfig } from "../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { getImageUser } from "../src/kubelet/kuberuntime/helpers.ts";

const repoRoot = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
const endpoint = Deno.env.get("PROBELET_CRI_ENDPOINT") ||
  `unix://${repoRoot}/.run/containerd/containerd.sock`;

const pod: Pod = {
  metadata: { name: "web", namespace: "default", uid: "1234" },
  spec: {
    securityContext: { runAsUser: 1000, fsGroup: 2000, seccompProfile: { type: "RuntimeDefault" } },
    containers: [{
      name: "app",
      image: "probelet.local/busybox:1",
      command: ["sleep", "600"],
      resources: {
        requests: { cpu: "250m", memory: "32Mi" },
        limits: { cpu: "500m", memory: "64Mi" },
      },
      securityContext: { capabilities: { drop: ["ALL"] }, allowPrivilegeEscalation: false },
    }],
  },
};
const linux = {
  cpuCFSQuota: true,
  seccompProfileRoot: "/var/lib/kubelet/seccomp",
  seccompDefault: false,
  memoryCapacity: 8 * 2 ** 30,
};

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

const images = await newRemoteImageService(endpoint);
try {
  const samples: number[] = [];
  for (let i = 0; i < 520; i++) {
    const start = performance.now();
    await getImageUser(images, "probelet.local/busybox:1");
    if (i >= 20) samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  console.log(
    `image_status_ms calls=${samples.length} p50=${percentile(samples, 0.5).toFixed(3)} ` +
      `p99=${percentile(samples, 0.99).toFixed(3)} max=${samples.at(-1)!.toFixed(3)}`,
  );
} finally {
  images.close();
}

const iterations = 20_000;
const bare: Pod = {
  ...pod,
  spec: { containers: [{ name: "app", image: "probelet.local/busybox:1" }] },
};
const cases: [string, Pod][] = [["with_security_and_resources", pod], ["bare", bare]];
for (const [name, p] of cases) {
  for (let i = 0; i < 2000; i++) {
    generateContainerConfig(p, p.spec.containers[0], {
      restartCount: 0,
      nodeName: "n",
      image: { uid: 0, username: "" },
      linux,
    });
  }
  const start = performance.now();
  for (let i = 0; i < iterations; i++) {
    generateContainerConfig(p, p.spec.containers[0], {
      restartCount: 0,
      nodeName: "n",
      image: { uid: 0, username: "" },
      linux,
    });
  }
  const us = ((performance.now() - start) * 1000) / iterations;
  console.log(
    `generate_container_config pod=${name} iterations=${iterations} us_per_call=${us.toFixed(2)}`,
  );
}
