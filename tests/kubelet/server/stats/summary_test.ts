/**
 * The Summary API built from a fake CRI runtime and a fake /proc: the node's figures, the agent as
 * the `kubelet` system container, pods joined from sandboxes, containers and container stats with
 * kubelet's rules (latest ready sandbox, running containers only), CPU rates from the previous
 * sample, pod sums, network from the sandbox's netns, container logs, volumes and ephemeral
 * storage. Ports kubelet's summary_test.go (TestSummaryProviderGetStats,
 * TestSummaryProviderGetCPUAndMemoryStats) and cri_stats_provider_test.go (TestCRIListPodStats,
 * TestCRIListPodCPUAndMemoryStats, TestGetContainerUsageNanoCores, TestRemoveTerminatedContainer,
 * TestFilterTerminatedPodStats subsets).
 * @module
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { join } from "node:path";
import type { Container, PodSandbox } from "../../../../src/cri_client/api.ts";
import type { ContainerStats } from "../../../../src/cri_client/runtime_service.ts";
import {
  CRIStatsProvider,
  removeTerminatedContainers,
  removeTerminatedPods,
} from "../../../../src/kubelet/server/stats/cri_stats_provider.ts";
import type { FsInfo } from "../../../../src/kubelet/server/stats/host_stats.ts";
import { SummaryProvider } from "../../../../src/kubelet/server/stats/summary.ts";
import { handleSummary } from "../../../../src/kubelet/server/stats/handler.ts";
import type { PodStats } from "../../../../src/kubelet/server/stats/types.ts";

const sec = 1_000_000_000n;
// 2026-01-01T00:00:00Z in nanoseconds.
const t0 = 1767225600n * sec;

function getTestSandbox(
  id: string,
  name: string,
  opts: { uid?: string; state?: PodSandbox["state"]; createdAt?: bigint } = {},
): PodSandbox {
  return {
    id,
    metadata: { name, namespace: "ns", uid: opts.uid ?? `uid-${id}`, attempt: 0 },
    state: opts.state ?? "SANDBOX_READY",
    createdAt: opts.createdAt ?? t0,
    labels: {},
    annotations: {},
    runtimeHandler: "",
  };
}

function getTestContainer(
  id: string,
  sandbox: string,
  name: string,
  opts: { state?: Container["state"]; createdAt?: bigint } = {},
): Container {
  return {
    id,
    podSandboxId: sandbox,
    metadata: { name, attempt: 0 },
    imageRef: "",
    imageId: "",
    state: opts.state ?? "CONTAINER_RUNNING",
    createdAt: opts.createdAt ?? t0 + sec,
    labels: {},
    annotations: {},
  };
}

function getTestContainerStats(
  id: string,
  name: string,
  cpuNs: bigint,
  workingSet: bigint,
  at = t0 + 10n * sec,
): ContainerStats {
  return {
    id,
    name,
    labels: {},
    cpu: { timestampNs: at, usageCoreNanoSeconds: cpuNs },
    memory: {
      timestampNs: at,
      workingSetBytes: workingSet,
      usageBytes: workingSet + 100n,
      rssBytes: workingSet / 2n,
      pageFaults: 7n,
      majorPageFaults: 1n,
    },
    writableLayer: { timestampNs: at, usedBytes: 4096n, inodesUsed: 3n, mountpoint: "/images" },
  };
}

const rootFsInfo: FsInfo = {
  capacity: 1000_000,
  usage: 400_000,
  available: 600_000,
  inodes: 1000,
  inodesFree: 900,
};
const imageFsInfo: FsInfo = {
  capacity: 5000_000,
  usage: 1000_000,
  available: 4000_000,
  inodes: 5000,
  inodesFree: 4000,
};

// A fake /proc: the node's counters, the agent's own process and a sandbox's netns.
async function fakeProc(dir: string): Promise<string> {
  const proc = join(dir, "proc");
  const files: Record<string, string> = {
    // busy = 100 + 20 + 30 + 5 + 5 + 0 = 160 jiffies = 1.6 s
    "stat": "cpu  100 20 30 999 50 5 5 0 0 0\ncpu0 1 2 3 4\nbtime 1767225000\n",
    "meminfo": "MemTotal:       1000 kB\nMemFree:         200 kB\nInactive(file):  100 kB\n" +
      "AnonPages:       300 kB\n",
    "vmstat": "pgfault 11\npgmajfault 2\n",
    "loadavg": "0.10 0.20 0.30 3/456 789\n",
    "sys/kernel/pid_max": "4194304\n",
    "sys/kernel/threads-max": "127000\n",
    "net/dev": netDev([["lo", 1, 2], ["eth0", 1000, 2000], ["ens5", 10, 20]]),
    "self/stat": "42 (deno (agent)) S 1 42 42 0 -1 4194560 500 0 3 0 70 30 0 0 20 0 9 0\n",
    "self/status": "Name:\tdeno\nVmRSS:\t    2048 kB\n",
    "4242/net/dev": netDev([["lo", 5, 5], ["eth0", 123, 456]]),
  };
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(join(proc, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(proc, path), text);
  }
  return proc;
}

function netDev(rows: [string, number, number][]): string {
  const head = "Inter-|   Receive                                                |  Transmit\n" +
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";
  return head +
    rows.map(([n, rx, tx]) => `${n.padStart(6)}: ${rx} 1 0 0 0 0 0 0 ${tx} 1 0 0 0 0 0 0`)
      .join("\n") +
    "\n";
}

interface Fixture {
  dir: string;
  proc: string;
  provider: CRIStatsProvider;
  summary: SummaryProvider;
  setStats(stats: ContainerStats[]): void;
  setNow(ms: number): void;
}

// Two pods: "web" (sandbox s1 ready, an older sandbox s0 of the same pod not ready; containers
// app and sidecar running, an exited earlier app), and "job" (sandbox s2, one container).
async function fixture(): Promise<Fixture> {
  const dir = await Deno.makeTempDir();
  const proc = await fakeProc(dir);
  const sandboxes = [
    getTestSandbox("s0", "web", { uid: "uid-web", state: "SANDBOX_NOTREADY", createdAt: t0 - sec }),
    getTestSandbox("s1", "web", { uid: "uid-web" }),
    getTestSandbox("s2", "job"),
  ];
  const containers = [
    getTestContainer("c0", "s1", "app", { state: "CONTAINER_EXITED", createdAt: t0 }),
    getTestContainer("c1", "s1", "app"),
    getTestContainer("c2", "s1", "sidecar"),
    getTestContainer("c3", "s2", "main"),
    // In the not-ready sandbox: dropped.
    getTestContainer("c9", "s0", "app"),
  ];
  let stats: ContainerStats[] = [
    getTestContainerStats("c0", "app", 1n * sec, 10n),
    getTestContainerStats("c1", "app", 2n * sec, 1000n),
    getTestContainerStats("c2", "sidecar", 3n * sec, 2000n),
    getTestContainerStats("c3", "main", 4n * sec, 4000n),
    getTestContainerStats("c9", "app", 9n * sec, 9n),
  ];
  let now = Number((t0 + 10n * sec) / 1_000_000n);
  const runtime = {
    listPodSandbox: () => Promise.resolve(sandboxes),
    listContainers: () => Promise.resolve(containers),
    listContainerStats: () => Promise.resolve(stats),
    podSandboxStatus: (id: string) =>
      Promise.resolve({
        status: {},
        info: id === "s1" ? { info: JSON.stringify({ pid: 4242 }) } : {},
        // deno-lint-ignore no-explicit-any
      } as any),
  };
  // Logs: <pods>/ns_web_uid-web/app/0.log (3 blocks of 512) and a pod-level file.
  const pods = join(dir, "pods");
  const appLogs = join(pods, "ns_web_uid-web", "app");
  await Deno.mkdir(appLogs, { recursive: true });
  await Deno.writeTextFile(join(appLogs, "0.log"), "x");
  await Deno.writeTextFile(join(pods, "ns_web_uid-web", "pod.log"), "y");
  // Volumes: <pods>/uid-web/volumes/kubernetes.io~empty-dir/cache with one file.
  const cache = join(pods, "uid-web", "volumes", "kubernetes.io~empty-dir", "cache");
  await Deno.mkdir(cache, { recursive: true });
  await Deno.writeTextFile(join(cache, "f"), "z");
  // The pod's managed /etc/hosts: <dir>/pod-dirs/uid-web/etc-hosts.
  await Deno.mkdir(join(dir, "pod-dirs", "uid-web"), { recursive: true });
  await Deno.writeTextFile(join(dir, "pod-dirs", "uid-web", "etc-hosts"), "127.0.0.1 localhost\n");
  const provider = new CRIStatsProvider(runtime, {
    podLogsDir: pods,
    podsDir: pods,
    podEtcHostsPath: (uid) => join(dir, "pod-dirs", uid, "etc-hosts"),
    rootFsPath: dir,
    procDir: proc,
    now: () => now,
    fsInfo: (path) => Promise.resolve(path === "/images" ? imageFsInfo : rootFsInfo),
    // Every file 1536 bytes and 1 inode; a folder 0 bytes and 1 inode.
    dirUsage: async (path) => {
      const s = await Deno.stat(path);
      if (!s.isDirectory) return { bytes: 1536, inodes: 1 };
      let files = 0;
      for await (const e of Deno.readDir(path)) if (e.isFile) files++;
      return { bytes: files * 1536, inodes: files + 1 };
    },
  });
  const summary = new SummaryProvider(provider, {
    nodeName: "test-node",
    procDir: proc,
    now: () => now,
    kubeletCreationTimeMs: Number(t0 / 1_000_000n),
  });
  return {
    dir,
    proc,
    provider,
    summary,
    setStats: (s) => stats = s,
    setNow: (ms) => now = ms,
  };
}

// What goes on the wire (fields left undefined are omitted, as Go's omitempty).
function wire<T>(value: T): T {
  return JSON.parse(JSON.stringify(value));
}

function byName(pods: PodStats[], name: string): PodStats {
  const p = pods.find((p) => p.podRef.name === name);
  ok(p, `pod ${name} listed`);
  return p;
}

Deno.test("TestCRIListPodStats", async (t) => {
  const f = await fixture();
  try {
    const pods = wire(await f.provider.listPodStats());
    await t.step("one entry per pod: the ready sandbox, running containers only", () => {
      assertEquals(pods.map((p) => p.podRef).sort((a, b) => a.name.localeCompare(b.name)), [
        { name: "job", namespace: "ns", uid: "uid-s2" },
        { name: "web", namespace: "ns", uid: "uid-web" },
      ]);
      assertEquals(byName(pods, "web").containers.map((c) => c.name), ["app", "sidecar"]);
      assertEquals(byName(pods, "web").startTime, "2026-01-01T00:00:00Z");
    });
    await t.step("container CPU, memory, rootfs from the CRI stats", () => {
      const app = byName(pods, "web").containers[0];
      assertEquals(app.startTime, "2026-01-01T00:00:01Z");
      assertEquals(app.cpu, { time: "2026-01-01T00:00:10Z", usageCoreNanoSeconds: 2e9 });
      assertEquals(app.memory, {
        time: "2026-01-01T00:00:10Z",
        usageBytes: 1100,
        workingSetBytes: 1000,
        rssBytes: 500,
        pageFaults: 7,
        majorPageFaults: 1,
      });
      // The writable layer's use, on the image file system's capacity.
      assertEquals(app.rootfs, {
        time: "2026-01-01T00:00:10Z",
        availableBytes: 4000_000,
        capacityBytes: 5000_000,
        usedBytes: 4096,
        inodesFree: 4000,
        inodes: 5000,
        inodesUsed: 3,
      });
    });
    await t.step("container logs: the files of its log folder, on the root fs", () => {
      const app = byName(pods, "web").containers[0];
      assertEquals(app.logs?.usedBytes, 1536);
      assertEquals(app.logs?.inodesUsed, 1);
      assertEquals(app.logs?.capacityBytes, 1000_000);
      // No log folder: no logs figures.
      assertEquals(byName(pods, "web").containers[1].logs, undefined);
    });
    await t.step("pod CPU, memory and swap: the sum of its containers", () => {
      const web = byName(pods, "web");
      // CRI reports no swap: kubelet's zeros for each container, summed.
      assertEquals(web.swap, {
        time: "2026-01-01T00:00:10Z",
        swapAvailableBytes: 0,
        swapUsageBytes: 0,
      });
      assertEquals(web.cpu?.usageCoreNanoSeconds, 5e9);
      assertEquals(web.memory?.workingSetBytes, 3000);
      assertEquals(web.memory?.usageBytes, 3200);
    });
    await t.step("pod network from the sandbox's netns, eth0 inline, lo left out", () => {
      assertEquals(byName(pods, "web").network, {
        time: "2026-01-01T00:00:10Z",
        name: "eth0",
        rxBytes: 123,
        rxErrors: 0,
        txBytes: 456,
        txErrors: 0,
        interfaces: [{ name: "eth0", rxBytes: 123, rxErrors: 0, txBytes: 456, txErrors: 0 }],
      });
      assertEquals(byName(pods, "job").network, undefined);
    });
    await t.step("volumes and ephemeral storage", () => {
      const web = byName(pods, "web");
      assertEquals(web.volume?.map((v) => [v.name, v.usedBytes, v.inodesUsed]), [
        ["cache", 1536, 2],
      ]);
      // rootfs 2×4096 + app's log 1536 + volume 1536 + the pod's own log file 1536 + /etc/hosts
      // 1536.
      assertEquals(web["ephemeral-storage"]?.usedBytes, 2 * 4096 + 4 * 1536);
      // inodes: 2×3 (rootfs) + 1 (app log) + 2 (volume) + 1 (pod log) + 1 (/etc/hosts).
      assertEquals(web["ephemeral-storage"]?.inodesUsed, 11);
      // The job pod has no /etc/hosts, logs or volumes: its layer only.
      assertEquals(byName(pods, "job")["ephemeral-storage"]?.usedBytes, 4096);
      assertEquals(web["ephemeral-storage"]?.capacityBytes, 1000_000);
    });
  } finally {
    await Deno.remove(f.dir, { recursive: true });
  }
});

Deno.test("TestGetContainerUsageNanoCores", async (t) => {
  const f = await fixture();
  try {
    await t.step("first sample: no rate yet", async () => {
      const pods = wire(await f.provider.listPodStatsAndUpdateCPUNanoCoreUsage());
      assertEquals(byName(pods, "job").containers[0].cpu?.usageNanoCores, undefined);
    });
    await t.step("second sample 10 s later, 5 s more CPU: half a core", async () => {
      f.setStats([getTestContainerStats("c3", "main", 9n * sec, 4000n, t0 + 20n * sec)]);
      const pods = wire(await f.provider.listPodStatsAndUpdateCPUNanoCoreUsage());
      const job = byName(pods, "job");
      assertEquals(job.containers[0].cpu?.usageNanoCores, 500_000_000);
      assertEquals(job.cpu?.usageNanoCores, 500_000_000);
    });
    await t.step("the same sample again (the runtime's cache) keeps the rate", async () => {
      const pods = wire(await f.provider.listPodStatsAndUpdateCPUNanoCoreUsage());
      assertEquals(byName(pods, "job").containers[0].cpu?.usageNanoCores, 500_000_000);
    });
    await t.step("reading without updating returns the cached rate", async () => {
      const pods = wire(await f.provider.listPodStats());
      assertEquals(byName(pods, "job").containers[0].cpu?.usageNanoCores, 500_000_000);
    });
    await t.step("a counter that went back (restart) resets the cache", async () => {
      f.setStats([getTestContainerStats("c3", "main", 1n * sec, 4000n, t0 + 30n * sec)]);
      const pods = wire(await f.provider.listPodStatsAndUpdateCPUNanoCoreUsage());
      assertEquals(byName(pods, "job").containers[0].cpu?.usageNanoCores, undefined);
    });
    await t.step("the runtime's own rate is taken as is", async () => {
      const s = getTestContainerStats("c3", "main", 1n * sec, 4000n, t0 + 40n * sec);
      s.cpu!.usageNanoCores = 123n;
      f.setStats([s]);
      const pods = wire(await f.provider.listPodStatsAndUpdateCPUNanoCoreUsage());
      assertEquals(byName(pods, "job").containers[0].cpu?.usageNanoCores, 123);
    });
  } finally {
    await Deno.remove(f.dir, { recursive: true });
  }
});

Deno.test("TestCRIListPodCPUAndMemoryStats", async () => {
  const f = await fixture();
  try {
    const pods = wire(await f.provider.listPodCPUAndMemoryStats());
    const web = byName(pods, "web");
    assertEquals(web.containers.map((c) => c.name), ["app", "sidecar"]);
    assertEquals(web.memory?.workingSetBytes, 3000);
    // CPU and memory only: no file systems, network or volumes.
    assertEquals(web.containers[0].rootfs, undefined);
    assertEquals(web.containers[0].logs, undefined);
    assertEquals(web.network, undefined);
    assertEquals(web.volume, undefined);
    assertEquals(web["ephemeral-storage"], undefined);
  } finally {
    await Deno.remove(f.dir, { recursive: true });
  }
});

Deno.test("TestRemoveTerminatedContainer", () => {
  const containers = [
    getTestContainer("a", "s", "app", { state: "CONTAINER_EXITED" }),
    getTestContainer("b", "s", "app", { state: "CONTAINER_RUNNING", createdAt: t0 + 5n }),
    getTestContainer("c", "s", "app", { state: "CONTAINER_CREATED" }),
  ];
  assertEquals(removeTerminatedContainers(containers).map((c) => c.id), ["b"]);
});

Deno.test("TestFilterTerminatedPodStats", async (t) => {
  await t.step("a single sandbox is kept whatever its state", () => {
    const pods = [getTestSandbox("a", "p", { state: "SANDBOX_NOTREADY" })];
    assertEquals(removeTerminatedPods(pods).map((p) => p.id), ["a"]);
  });
  await t.step("of several, the ready ones", () => {
    const pods = [
      getTestSandbox("old", "p", { state: "SANDBOX_READY", createdAt: t0 }),
      getTestSandbox("new", "p", { state: "SANDBOX_NOTREADY", createdAt: t0 + sec }),
    ];
    assertEquals(removeTerminatedPods(pods).map((p) => p.id), ["old"]);
  });
  await t.step("none ready: the newest", () => {
    const pods = [
      getTestSandbox("new", "p", { state: "SANDBOX_NOTREADY", createdAt: t0 + sec }),
      getTestSandbox("old", "p", { state: "SANDBOX_NOTREADY", createdAt: t0 }),
    ];
    assertEquals(removeTerminatedPods(pods).map((p) => p.id), ["new"]);
  });
});

Deno.test("TestSummaryProviderGetStats", async (t) => {
  const f = await fixture();
  try {
    const { node, pods } = wire(await f.summary.get(true));
    await t.step("node name, boot time, root fs, rlimit", () => {
      assertEquals(node.nodeName, "test-node");
      // btime 1767225000 of /proc/stat.
      assertEquals(node.startTime, "2025-12-31T23:50:00Z");
      assertEquals(node.fs, {
        time: "2026-01-01T00:00:10Z",
        availableBytes: 600_000,
        capacityBytes: 1000_000,
        usedBytes: 400_000,
        inodesFree: 900,
        inodes: 1000,
        inodesUsed: 100,
      });
      // The lower of pid_max and threads-max; the running tasks of loadavg.
      assertEquals(node.rlimit, { time: "2026-01-01T00:00:10Z", maxpid: 127000, curproc: 456 });
    });
    await t.step("node CPU and memory from /proc", () => {
      assertEquals(node.cpu, { time: "2026-01-01T00:00:10Z", usageCoreNanoSeconds: 1.6e9 });
      assertEquals(node.memory, {
        time: "2026-01-01T00:00:10Z",
        availableBytes: 300 * 1024,
        usageBytes: 800 * 1024,
        workingSetBytes: 700 * 1024,
        rssBytes: 300 * 1024,
        pageFaults: 11,
        majorPageFaults: 2,
      });
    });
    await t.step("node swap from /proc/meminfo (none here)", () => {
      assertEquals(node.swap, {
        time: "2026-01-01T00:00:10Z",
        swapAvailableBytes: 0,
        swapUsageBytes: 0,
      });
    });
    await t.step("node network: every interface but lo, eth0 inline", () => {
      assertEquals(node.network?.name, "eth0");
      assertEquals(node.network?.rxBytes, 1000);
      assertEquals(node.network?.interfaces?.map((i) => i.name), ["eth0", "ens5"]);
    });
    await t.step("the agent as the kubelet system container", () => {
      assertEquals(node.systemContainers, [{
        name: "kubelet",
        startTime: "2026-01-01T00:00:00Z",
        cpu: { time: "2026-01-01T00:00:10Z", usageCoreNanoSeconds: 1e9 },
        memory: {
          time: "2026-01-01T00:00:10Z",
          usageBytes: 2048 * 1024,
          workingSetBytes: 2048 * 1024,
          rssBytes: 2048 * 1024,
          pageFaults: 500,
          majorPageFaults: 3,
        },
      }]);
    });
    await t.step("pods", () => {
      assertEquals(pods.length, 2);
    });
    await t.step("a second summary 2 s later has the node's CPU rate", async () => {
      await Deno.writeTextFile(join(f.proc, "stat"), "cpu  200 20 30 999 50 5 5 0\nbtime 1\n");
      f.setNow(Number((t0 + 12n * sec) / 1_000_000n));
      const again = wire(await f.summary.get(true));
      // 100 jiffies = 1 s of CPU in 2 s: half a core.
      assertEquals(again.node.cpu?.usageNanoCores, 500_000_000);
    });
  } finally {
    await Deno.remove(f.dir, { recursive: true });
  }
});

Deno.test("TestSummaryProviderGetCPUAndMemoryStats", async () => {
  const f = await fixture();
  try {
    const { node, pods } = wire(await f.summary.getCPUAndMemoryStats());
    assertEquals(Object.keys(node).sort(), [
      "cpu",
      "memory",
      "nodeName",
      "startTime",
      "swap",
      "systemContainers",
    ]);
    assertEquals(pods.length, 2);
  } finally {
    await Deno.remove(f.dir, { recursive: true });
  }
});

Deno.test("handleSummary", async (t) => {
  const f = await fixture();
  try {
    await t.step("GET: the whole summary as JSON", async () => {
      const res = await handleSummary(new Request("http://x/stats/summary"), f.summary);
      assertEquals(res.status, 200);
      assertEquals(res.headers.get("content-type"), "application/json");
      const body = await res.json();
      assertEquals(body.node.nodeName, "test-node");
      ok(body.node.fs);
    });
    await t.step("fields in the Go structs' order, indented by one space", async () => {
      const text = await (await handleSummary(new Request("http://x/stats/summary"), f.summary))
        .text();
      const keysOf = (o: Record<string, unknown>) => Object.keys(o);
      const body = JSON.parse(text);
      assertEquals(keysOf(body), ["node", "pods"]);
      assertEquals(keysOf(body.node), [
        "nodeName",
        "systemContainers",
        "startTime",
        "cpu",
        "memory",
        "network",
        "fs",
        "rlimit",
        "swap",
      ]);
      const web = body.pods.find((p: { podRef: { name: string } }) => p.podRef.name === "web");
      assertEquals(keysOf(web), [
        "podRef",
        "startTime",
        "containers",
        "cpu",
        "memory",
        "network",
        "volume",
        "ephemeral-storage",
        "swap",
      ]);
      assertEquals(keysOf(web.containers[0]), [
        "name",
        "startTime",
        "cpu",
        "memory",
        "rootfs",
        "logs",
        "swap",
      ]);
      assertEquals(keysOf(web.volume[0]), [
        "time",
        "availableBytes",
        "capacityBytes",
        "usedBytes",
        "inodesFree",
        "inodes",
        "inodesUsed",
        "name",
      ]);
      assertEquals(keysOf(web.network).slice(0, 3), ["time", "name", "rxBytes"]);
      ok(text.startsWith('{\n "node": {\n  "nodeName": "test-node",'));
    });
    await t.step("only_cpu_and_memory=true (also as a POST form)", async () => {
      for (
        const req of [
          new Request("http://x/stats/summary?only_cpu_and_memory=true"),
          new Request("http://x/stats/summary", {
            method: "POST",
            body: "only_cpu_and_memory=true",
            headers: { "content-type": "application/x-www-form-urlencoded" },
          }),
        ]
      ) {
        const body = await (await handleSummary(req, f.summary)).json();
        assertEquals(body.node.fs, undefined);
        assertEquals(body.pods.length, 2);
      }
    });
    await t.step("only_cpu_and_memory given twice is not taken", async () => {
      const req = new Request(
        "http://x/stats/summary?only_cpu_and_memory=true&only_cpu_and_memory=true",
      );
      ok((await (await handleSummary(req, f.summary)).json()).node.fs);
    });
    await t.step("a failure is kubelet's 500 Internal Error", async () => {
      await Deno.remove(join(f.proc, "stat"));
      const res = await handleSummary(new Request("http://x/stats/summary"), f.summary);
      assertEquals(res.status, 500);
      ok((await res.text()).startsWith("Internal Error: failed to get root cgroup stats: "));
    });
    await t.step("another path under /stats/ is not found", async () => {
      const res = await handleSummary(new Request("http://x/stats/container"), f.summary);
      assertEquals(res.status, 404);
      await res.body?.cancel();
    });
  } finally {
    await Deno.remove(f.dir, { recursive: true });
  }
});
