import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { applySandboxResources } from "../../../src/kubelet/kuberuntime/kuberuntime_sandbox_linux.ts";
import {
  generatePodSandboxConfig,
  generatePodSandboxLinuxConfig,
} from "../../../src/kubelet/kuberuntime/kuberuntime_sandbox.ts";

function testPod(spec: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { name: "bar", namespace: "new", uid: "12345678" },
    spec: { containers: [{ name: "foo", image: "busybox" }], ...spec },
  };
}

Deno.test("TestApplySandboxResources", async (t) => {
  const cases: {
    description: string;
    pod: Pod;
    expectedResource: object;
    expectedOverhead: object;
  }[] = [
    {
      description: "pod with overhead defined",
      pod: testPod({
        containers: [{
          name: "foo",
          resources: {
            requests: { memory: "128Mi", cpu: "2" },
            limits: { memory: "256Mi", cpu: "4" },
          },
        }],
        overhead: { memory: "128Mi", cpu: "1" },
      }),
      expectedResource: {
        memoryLimitInBytes: 268435456,
        cpuPeriod: 100000,
        cpuQuota: 400000,
        cpuShares: 2048,
      },
      expectedOverhead: {
        memoryLimitInBytes: 134217728,
        cpuPeriod: 100000,
        cpuQuota: 100000,
        cpuShares: 1024,
      },
    },
    {
      description: "pod without overhead defined",
      pod: testPod({
        containers: [{
          name: "foo",
          resources: {
            requests: { memory: "128Mi", cpu: "2" },
            limits: { memory: "256Mi", cpu: "4" },
          },
        }],
      }),
      expectedResource: {
        memoryLimitInBytes: 268435456,
        cpuPeriod: 100000,
        cpuQuota: 400000,
        cpuShares: 2048,
      },
      expectedOverhead: {},
    },
    {
      description: "sidecar and init containers count as kubelet sums them",
      pod: testPod({
        initContainers: [
          { name: "init", resources: { requests: { cpu: "3" }, limits: { cpu: "3" } } },
          {
            name: "sidecar",
            restartPolicy: "Always",
            resources: { requests: { cpu: "500m" }, limits: { cpu: "500m" } },
          },
        ],
        containers: [{ name: "foo", resources: { requests: { cpu: "1" }, limits: { cpu: "1" } } }],
      }),
      expectedResource: { cpuPeriod: 100000, cpuQuota: 300000, cpuShares: 3072 },
      expectedOverhead: {},
    },
  ];
  for (const c of cases) {
    await t.step(c.description, () => {
      const config = { metadata: { name: "bar", namespace: "new", uid: "1" }, linux: {} };
      applySandboxResources(c.pod, config, { cpuCFSQuota: true });
      assertEquals(config, {
        metadata: config.metadata,
        linux: { resources: c.expectedResource, overhead: c.expectedOverhead },
      });
    });
  }
});

Deno.test("TestGeneratePodSandboxLinuxConfigSeccomp", () => {
  // The sandbox always asks for RuntimeDefault, whatever the pod's profile.
  const pod = testPod({ securityContext: { seccompProfile: { type: "Unconfined" } } });
  assertEquals(generatePodSandboxLinuxConfig(pod).securityContext?.seccomp, {
    profileType: "RuntimeDefault",
  });
});

Deno.test("TestGeneratePodSandboxLinuxConfig", async (t) => {
  await t.step("identity, groups, namespaces, sysctls in dotted form", () => {
    const pod = testPod({
      hostIPC: true,
      securityContext: {
        runAsUser: 1000,
        runAsGroup: 2000,
        fsGroup: 3000,
        supplementalGroups: [4000],
        sysctls: [{ name: "net/ipv4/ip_local_port_range", value: "2000 3000" }],
      },
    });
    assertEquals(generatePodSandboxLinuxConfig(pod), {
      securityContext: {
        privileged: false,
        seccomp: { profileType: "RuntimeDefault" },
        namespaceOptions: { ipc: "NODE", network: "POD", pid: "CONTAINER" },
        runAsUser: { value: 1000 },
        runAsGroup: { value: 2000 },
        supplementalGroups: [3000, 4000],
      },
      sysctls: { "net.ipv4.ip_local_port_range": "2000 3000" },
    });
  });
  await t.step("privileged when any container is (containerd refuses it otherwise)", () => {
    const pod = testPod({
      initContainers: [{ name: "init", securityContext: { privileged: true } }],
    });
    assertEquals(generatePodSandboxLinuxConfig(pod).securityContext?.privileged, true);
  });
  await t.step("the full sandbox config carries resources", () => {
    const config = generatePodSandboxConfig(
      testPod({
        containers: [{ name: "foo", resources: { requests: { cpu: "100m" } } }],
      }),
      { attempt: 0, podLogsRootDir: "/tmp/pods", nodeName: "node" },
    );
    assertEquals(config.linux?.resources, { cpuShares: 102, cpuQuota: 0, cpuPeriod: 100000 });
  });
});
