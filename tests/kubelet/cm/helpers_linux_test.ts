import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import {
  milliCPUToQuota,
  milliCPUToShares,
  resourceConfigForPod,
} from "../../../src/kubelet/cm/helpers_linux.ts";

function pod(containers: Partial<Container>[], overhead?: Record<string, string>): Pod {
  return {
    metadata: { name: "p", namespace: "default", uid: "u" },
    spec: {
      containers: containers.map((c, i) => ({ name: `c${i}`, image: "busybox", ...c })),
      ...(overhead ? { overhead } : {}),
    },
  };
}

function res(requests: Record<string, string>, limits: Record<string, string>) {
  return { resources: { requests, limits } };
}

Deno.test("TestMilliCPUToShares", async (t) => {
  const cases: [number, number][] = [[0, 2], [1, 2], [2, 2], [100, 102], [1000, 1024], [
    256001,
    262144,
  ]];
  for (const [milli, shares] of cases) {
    await t.step(`${milli}m`, () => assertEquals(milliCPUToShares(milli), shares));
  }
});

Deno.test("TestMilliCPUToQuota", async (t) => {
  const cases: [number, number, number][] = [
    [0, 100000, 0],
    [5, 100000, 1000],
    [200, 100000, 20000],
    // The CPUCFSQuotaPeriod feature gate is off: the period is always 100 ms.
    [200, 50000, 20000],
  ];
  for (const [milli, period, quota] of cases) {
    await t.step(`${milli}m/${period}`, () => assertEquals(milliCPUToQuota(milli, period), quota));
  }
});

Deno.test("TestResourceConfigForPod", async (t) => {
  const period = 100000;
  const cases: {
    name: string;
    pod: Pod;
    enforceCPULimits?: boolean;
    expected: ReturnType<typeof resourceConfigForPod>;
  }[] = [
    {
      name: "besteffort",
      pod: pod([{}]),
      expected: { cpuShares: 2 },
    },
    {
      name: "burstable-no-limits",
      pod: pod([res({ cpu: "100m", memory: "100Mi" }, {})]),
      expected: { cpuShares: 102 },
    },
    {
      name: "burstable-with-limits",
      pod: pod([res({ cpu: "100m", memory: "100Mi" }, { cpu: "200m", memory: "200Mi" })]),
      expected: { cpuShares: 102, cpuQuota: 20000, cpuPeriod: period, memory: 209715200 },
    },
    {
      name: "burstable-with-limits-no-cpu-enforcement",
      pod: pod([res({ cpu: "100m", memory: "100Mi" }, { cpu: "200m", memory: "200Mi" })]),
      enforceCPULimits: false,
      expected: { cpuShares: 102, cpuQuota: -1, cpuPeriod: period, memory: 209715200 },
    },
    {
      name: "burstable-partial-limits",
      pod: pod([
        res({ cpu: "100m", memory: "100Mi" }, { cpu: "200m", memory: "200Mi" }),
        res({ cpu: "100m", memory: "100Mi" }, {}),
      ]),
      expected: { cpuShares: 204 },
    },
    {
      name: "guaranteed",
      pod: pod([res({ cpu: "100m", memory: "100Mi" }, { cpu: "100m", memory: "100Mi" })]),
      expected: { cpuShares: 102, cpuQuota: 10000, cpuPeriod: period, memory: 104857600 },
    },
    {
      name: "guaranteed-with-overhead",
      pod: pod(
        [res({ cpu: "100m", memory: "100Mi" }, { cpu: "100m", memory: "100Mi" })],
        { cpu: "5m", memory: "5Mi" },
      ),
      expected: { cpuShares: 107, cpuQuota: 10500, cpuPeriod: period, memory: 110100480 },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assertEquals(
        resourceConfigForPod(c.pod, {
          enforceCPULimits: c.enforceCPULimits ?? true,
          cpuPeriod: period,
        }),
        c.expected,
      );
    });
  }
});
