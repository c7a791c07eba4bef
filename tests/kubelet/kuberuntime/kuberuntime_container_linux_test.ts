import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import {
  calculateLinuxResources,
  generateLinuxContainerConfig,
  generateLinuxContainerResources,
} from "../../../src/kubelet/kuberuntime/kuberuntime_container_linux.ts";
import {
  milliCPUToQuota,
  quotaToMilliCPU,
  sharesToMilliCPU,
} from "../../../src/kubelet/kuberuntime/helpers_linux.ts";
import { generateContainerConfig } from "../../../src/kubelet/kuberuntime/kuberuntime_container.ts";

const options = {
  cpuCFSQuota: true,
  seccompProfileRoot: "/var/lib/kubelet/seccomp",
  seccompDefault: false,
  memoryCapacity: 8 * 2 ** 30,
};

function testPod(container: Partial<Container> = {}, spec: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { name: "bar", namespace: "new", uid: "12345678" },
    spec: { containers: [{ name: "foo", image: "busybox", ...container }], ...spec },
  };
}

Deno.test("TestCalculateLinuxResources", async (t) => {
  const cases: {
    name: string;
    cpuReq?: number;
    cpuLim?: number;
    memLim?: number;
    cfsQuota?: boolean;
    expected: ReturnType<typeof calculateLinuxResources>;
  }[] = [
    {
      name: "Request128MBLimit256MB",
      cpuReq: 1000,
      cpuLim: 2000,
      memLim: 134217728,
      expected: {
        cpuPeriod: 100000,
        cpuQuota: 200000,
        cpuShares: 1024,
        memoryLimitInBytes: 134217728,
      },
    },
    {
      name: "RequestNoMemory",
      cpuReq: 2000,
      cpuLim: 8000,
      memLim: 0,
      expected: { cpuPeriod: 100000, cpuQuota: 800000, cpuShares: 2048 },
    },
    {
      name: "RequestNilCPU",
      cpuLim: 2000,
      memLim: 0,
      expected: { cpuPeriod: 100000, cpuQuota: 200000, cpuShares: 2048 },
    },
    {
      name: "RequestZeroCPU",
      cpuReq: 0,
      cpuLim: 2000,
      memLim: 0,
      expected: { cpuPeriod: 100000, cpuQuota: 200000, cpuShares: 2 },
    },
    {
      name: "NoCFSQuota",
      cpuReq: 500,
      cpuLim: 1000,
      cfsQuota: false,
      expected: { cpuShares: 512 },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assertEquals(
        calculateLinuxResources(
          { cpuRequest: c.cpuReq, cpuLimit: c.cpuLim, memoryLimit: c.memLim },
          { cpuCFSQuota: c.cfsQuota ?? true },
        ),
        c.expected,
      );
    });
  }
});

Deno.test("TestGenerateLinuxContainerResources", async (t) => {
  await t.step("Burstable: shares, quota, memory and an OOM score from the request", () => {
    const pod = testPod({
      resources: {
        requests: { cpu: "250m", memory: "128Mi" },
        limits: { cpu: "500m", memory: "256Mi" },
      },
    });
    assertEquals(generateLinuxContainerResources(pod, pod.spec.containers[0], options), {
      cpuShares: 256,
      cpuQuota: 50000,
      cpuPeriod: 100000,
      memoryLimitInBytes: 268435456,
      // 1000 - 1000 * 128Mi / 8Gi
      oomScoreAdj: 985,
    });
  });
  await t.step("BestEffort: minimum shares, no quota, OOM score 1000", () => {
    const pod = testPod();
    assertEquals(generateLinuxContainerResources(pod, pod.spec.containers[0], options), {
      cpuShares: 2,
      cpuQuota: 0,
      cpuPeriod: 100000,
      oomScoreAdj: 1000,
    });
  });
  await t.step("Guaranteed: OOM score -998", () => {
    const pod = testPod({
      resources: {
        requests: { cpu: "1", memory: "1Gi" },
        limits: { cpu: "1", memory: "1Gi" },
      },
    });
    assertEquals(generateLinuxContainerResources(pod, pod.spec.containers[0], options), {
      cpuShares: 1024,
      cpuQuota: 100000,
      cpuPeriod: 100000,
      memoryLimitInBytes: 1073741824,
      oomScoreAdj: -998,
    });
  });
});

Deno.test("TestGenerateLinuxContainerConfig", async (t) => {
  await t.step("security context and resources together", () => {
    const pod = testPod({
      securityContext: {
        runAsUser: 1000,
        capabilities: { drop: ["ALL"] },
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        seccompProfile: { type: "RuntimeDefault" },
      },
    }, { hostPID: true });
    const lc = generateLinuxContainerConfig(pod.spec.containers[0], pod, {
      uid: 0,
      username: "",
    }, options);
    assertEquals(lc.securityContext?.runAsUser, { value: 1000 });
    assertEquals(lc.securityContext?.capabilities, {
      addCapabilities: [],
      dropCapabilities: ["ALL"],
    });
    assertEquals(lc.securityContext?.noNewPrivs, true);
    assertEquals(lc.securityContext?.readonlyRootfs, true);
    assertEquals(lc.securityContext?.seccomp, { profileType: "RuntimeDefault" });
    assertEquals(lc.securityContext?.namespaceOptions?.pid, "NODE");
    assertEquals(lc.resources?.oomScoreAdj, 1000);
  });
});

Deno.test("TestGenerateContainerConfig", async (t) => {
  const base = { restartCount: 0, nodeName: "node", linux: options };
  await t.step("runAsNonRoot with a root image: kubelet's error", () => {
    const pod = testPod({ securityContext: { runAsNonRoot: true } });
    let message = "";
    try {
      generateContainerConfig(pod, pod.spec.containers[0], {
        ...base,
        image: { uid: 0, username: "" },
      });
    } catch (e) {
      message = (e as Error).message;
    }
    assertEquals(
      message,
      `container has runAsNonRoot and image will run as root (pod: "bar_new(12345678)", ` +
        "container: foo)",
    );
  });
  await t.step("runAsNonRoot with a non-root image user: the image's uid is passed", () => {
    const pod = testPod({ securityContext: { runAsNonRoot: true } });
    const config = generateContainerConfig(pod, pod.spec.containers[0], {
      ...base,
      image: { uid: 65534, username: "" },
    });
    assertEquals(config.linux?.securityContext?.runAsUser, { value: 65534 });
  });
  await t.step("stdin, stdinOnce and tty are passed to the runtime", () => {
    const pod = testPod({ stdin: true, stdinOnce: true, tty: true });
    const config = generateContainerConfig(pod, pod.spec.containers[0], base);
    assertEquals([config.stdin, config.stdinOnce, config.tty], [true, true, true]);
    const plain = testPod();
    const unset = generateContainerConfig(plain, plain.spec.containers[0], base);
    assertEquals([unset.stdin, unset.stdinOnce, unset.tty], [undefined, undefined, undefined]);
  });
});

Deno.test("TestMilliCPUToQuota", async (t) => {
  const cases: [number, number, number][] = [
    [0, 100000, 0],
    [5, 100000, 1000],
    [9, 100000, 1000],
    [10, 100000, 1000],
    [200, 100000, 20000],
    [500, 100000, 50000],
    [1000, 100000, 100000],
    [1500, 100000, 150000],
    [1500, 50000, 75000],
  ];
  for (const [cpu, period, quota] of cases) {
    await t.step(
      `${cpu}m over ${period}us`,
      () => assertEquals(milliCPUToQuota(cpu, period), quota),
    );
  }
});

Deno.test("TestSharesToMilliCPU", async (t) => {
  const cases: [number, number][] = [[0, 0], [1, 0], [2, 2], [1024, 1000], [256, 250], [102, 100]];
  for (const [shares, milli] of cases) {
    await t.step(`${shares} shares`, () => assertEquals(sharesToMilliCPU(shares), milli));
  }
});

Deno.test("TestQuotaToMilliCPU", async (t) => {
  const cases: [number, number, number][] = [
    [-1, 100000, 0],
    [50000, 100000, 500],
    [200000, 100000, 2000],
    [1000, 100000, 10],
  ];
  for (const [quota, period, milli] of cases) {
    await t.step(`${quota}/${period}`, () => assertEquals(quotaToMilliCPU(quota, period), milli));
  }
});
