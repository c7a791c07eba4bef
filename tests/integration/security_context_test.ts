/**
 * The security context and resources of a pod reach the container on containerd: checked inside
 * the container (`/proc/1/status`, its cgroup v1 files, a write to `/`) after kubelet's runtime
 * manager created it from the pod spec. Needs root and `bash scripts/containerd.sh up`.
 * Covers kubelet's pkg/kubelet/kuberuntime security_context.go, kuberuntime_container_linux.go and
 * qos/policy.go end to end.
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import { newRemoteImageService } from "../../src/cri_client/mod.ts";
import type { RuntimeService } from "../../src/cri_client/mod.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { KubeGenericRuntimeManager } from "../../src/kubelet/kuberuntime/kuberuntime_manager.ts";
import { getMachineInfo } from "../../src/kubelet/cadvisor/cadvisor.ts";
import { RealClock } from "../../src/util/clock.ts";
import { Backoff } from "../../src/util/flowcontrol/backoff.ts";
import {
  connectRuntime,
  criEndpoint,
  integrationSkipReason,
  integrationTest,
  repoRoot,
  testImage,
} from "./helpers.ts";

const skip = await integrationSkipReason();

const noResults = { get: () => undefined };

function pod(
  name: string,
  spec: Partial<Pod["spec"]>,
  app: Partial<Pod["spec"]["containers"][0]> = {},
): Pod {
  return {
    metadata: { name, namespace: "default", uid: crypto.randomUUID() },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{ name: "app", image: testImage, command: ["sleep", "600"], ...app }],
      ...spec,
    },
  };
}

/** Runs `pod` through the runtime manager on containerd, calls `fn`, then removes the pod. */
async function withPod(
  runtime: RuntimeService,
  p: Pod,
  fn: (m: {
    manager: KubeGenericRuntimeManager;
    recorder: FakeRecorder;
    result: Awaited<ReturnType<KubeGenericRuntimeManager["syncPod"]>>;
    exec: (cmd: string[]) => Promise<string>;
  }) => Promise<void>,
): Promise<void> {
  const clock = new RealClock();
  const recorder = new FakeRecorder();
  const images = await newRemoteImageService(criEndpoint());
  const manager = new KubeGenericRuntimeManager({
    runtime,
    runtimeName: "containerd",
    clock,
    recorder,
    lookups: { livenessManager: noResults, startupManager: noResults },
    backoff: new Backoff(clock, { initialMs: 10_000, maxMs: 300_000 }),
    podLogsRootDir: `${repoRoot}/.run/containerd/pod-logs`,
    nodeName: "secctx-node",
    imageService: images,
    linux: { seccompProfileRoot: `${repoRoot}/.run/seccomp` },
  });
  try {
    const result = await manager.syncPod(p, await manager.getPodStatus(p));
    const status = await manager.getPodStatus(p);
    const exec = async (cmd: string[]) => {
      const c = status.containerStatuses.find((s) => s.name === "app");
      assert(c, `no container: ${JSON.stringify(result.startResults.get("app"))}`);
      const { stdout, stderr } = await runtime.execSync(c.id.id, cmd, { timeoutMs: 10_000 });
      return new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    };
    await fn({ manager, recorder, result, exec });
  } finally {
    await manager.killPod(p, await manager.getPodStatus(p)).catch((e) => console.error(e));
    await manager.removePod(p, await manager.getPodStatus(p)).catch((e) => console.error(e));
    images.close();
  }
}

function statusField(status: string, field: string): string {
  const line = status.split("\n").find((l) => l.startsWith(`${field}:`));
  return (line ?? "").slice(field.length + 1).trim().replace(/\s+/g, " ");
}

integrationTest("TestSecurityContextOnContainerd", skip, async (t) => {
  const runtime = await connectRuntime();
  try {
    await t.step("ids, capabilities, no_new_privs, seccomp, read-only root", async () => {
      const p = pod("secure", {
        securityContext: {
          runAsUser: 1000,
          runAsGroup: 3000,
          fsGroup: 2000,
          supplementalGroups: [4000],
          runAsNonRoot: true,
          seccompProfile: { type: "RuntimeDefault" },
        },
      }, {
        securityContext: {
          capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
        },
      });
      await withPod(runtime, p, async ({ result, exec }) => {
        assertEquals(result.startResults.get("app"), null);
        const status = await exec(["cat", "/proc/1/status"]);
        assertEquals(statusField(status, "Uid"), "1000 1000 1000 1000");
        assertEquals(statusField(status, "Gid"), "3000 3000 3000 3000");
        // fsGroup and supplementalGroups; runc lists the primary group too.
        assertEquals(statusField(status, "Groups"), "2000 3000 4000");
        // A non-root process keeps no effective capabilities; the bounding set is what was asked.
        assertEquals(statusField(status, "CapEff"), "0000000000000000");
        assertEquals(statusField(status, "CapBnd"), "0000000000000400");
        assertEquals(statusField(status, "NoNewPrivs"), "1");
        assertEquals(statusField(status, "Seccomp"), "2");
        const write = await exec(["sh", "-c", "touch /probe 2>&1; echo rc=$?"]);
        assert(write.includes("Read-only file system") && write.includes("rc=1"), write);
        // procMount Default: kubelet's masked paths (/proc/keys reads as /dev/null).
        const keys = await exec(["sh", "-c", "wc -c < /proc/keys"]);
        assertEquals(keys.trim(), "0");
      });
    });

    await t.step("capabilities drop ALL, add NET_BIND_SERVICE, as root", async () => {
      const p = pod("caps", {}, {
        securityContext: { capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] } },
      });
      await withPod(runtime, p, async ({ exec }) => {
        const status = await exec(["cat", "/proc/1/status"]);
        assertEquals(statusField(status, "Uid"), "0 0 0 0");
        assertEquals(statusField(status, "CapEff"), "0000000000000400");
        assertEquals(statusField(status, "NoNewPrivs"), "0");
        // Without a seccompProfile (and without --seccomp-default) kubelet asks for Unconfined.
        assertEquals(statusField(status, "Seccomp"), "0");
      });
    });

    await t.step("runAsNonRoot with a root image: CreateContainerConfigError", async () => {
      const p = pod("nonroot", { securityContext: { runAsNonRoot: true } });
      await withPod(runtime, p, async ({ result, recorder, manager }) => {
        const message = `container has runAsNonRoot and image will run as root (pod: ` +
          `"nonroot_default(${p.metadata.uid})", container: app)`;
        assertEquals(result.startResults.get("app"), {
          reason: "CreateContainerConfigError",
          message,
        });
        assertEquals(recorder.events, [`Warning Failed Error: ${message}`]);
        // Nothing was created.
        assertEquals((await manager.getPodStatus(p)).containerStatuses, []);
      });
    });

    await t.step("Burstable: cpu shares, CFS quota, memory limit, oom_score_adj", async () => {
      const p = pod("burstable", {}, {
        resources: {
          requests: { cpu: "250m", memory: "32Mi" },
          limits: { cpu: "500m", memory: "64Mi" },
        },
      });
      await withPod(runtime, p, async ({ exec }) => {
        const read = async (f: string) => (await exec(["cat", f])).trim();
        assertEquals(await read("/sys/fs/cgroup/cpu/cpu.shares"), "256");
        assertEquals(await read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), "50000");
        assertEquals(await read("/sys/fs/cgroup/cpu/cpu.cfs_period_us"), "100000");
        assertEquals(await read("/sys/fs/cgroup/memory/memory.limit_in_bytes"), "67108864");
        const capacity = getMachineInfo().memoryCapacity;
        const expected = 1000 - Math.trunc((1000 * 32 * 2 ** 20) / capacity);
        assertEquals(await read("/proc/1/oom_score_adj"), String(expected));
      });
    });

    await t.step(
      "Guaranteed: -998 asked, containerd's restrict_oom_score_adj raises it",
      async () => {
        const p = pod("guaranteed", {}, {
          resources: { limits: { cpu: "100m", memory: "48Mi" } },
        });
        // What the API server (or kubelet for a static pod) defaults: requests = limits.
        p.spec.containers[0].resources!.requests = { cpu: "100m", memory: "48Mi" };
        await withPod(runtime, p, async ({ exec }) => {
          const read = async (f: string) => (await exec(["cat", f])).trim();
          assertEquals(await read("/sys/fs/cgroup/cpu/cpu.shares"), "102");
          assertEquals(await read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), "10000");
          assertEquals(await read("/sys/fs/cgroup/memory/memory.limit_in_bytes"), "50331648");
          // restrict_oom_score_adj: never below containerd's own score.
          const own = (await Deno.readTextFile(`/proc/${containerdPid()}/oom_score_adj`)).trim();
          assertEquals(await read("/proc/1/oom_score_adj"), String(Math.max(-998, Number(own))));
        });
      },
    );

    await t.step("BestEffort: minimum shares, no quota, no memory limit, 1000", async () => {
      await withPod(runtime, pod("besteffort", {}), async ({ exec }) => {
        const read = async (f: string) => (await exec(["cat", f])).trim();
        assertEquals(await read("/sys/fs/cgroup/cpu/cpu.shares"), "2");
        assertEquals(await read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), "-1");
        assert(Number(await read("/sys/fs/cgroup/memory/memory.limit_in_bytes")) > 2 ** 60);
        assertEquals(await read("/proc/1/oom_score_adj"), "1000");
      });
    });

    await t.step("hostPID, hostIPC: the host's namespaces; default: the pod's own", async () => {
      const hostPid = await Deno.readLink("/proc/self/ns/pid");
      const hostIpc = await Deno.readLink("/proc/self/ns/ipc");
      await withPod(runtime, pod("hostns", { hostPID: true, hostIPC: true }), async ({ exec }) => {
        assertEquals((await exec(["readlink", "/proc/self/ns/pid"])).trim(), hostPid);
        assertEquals((await exec(["readlink", "/proc/self/ns/ipc"])).trim(), hostIpc);
      });
      await withPod(runtime, pod("ownns", {}), async ({ exec }) => {
        assert((await exec(["readlink", "/proc/self/ns/pid"])).trim() !== hostPid);
        assert((await exec(["readlink", "/proc/self/ns/ipc"])).trim() !== hostIpc);
      });
    });

    await t.step("privileged: every capability, seccomp off", async () => {
      const p = pod("privileged", {}, { securityContext: { privileged: true } });
      await withPod(runtime, p, async ({ exec }) => {
        const status = await exec(["cat", "/proc/1/status"]);
        // Everything the host's root has (here without CAP_SYS_RESOURCE, see platform notes).
        const host = statusField(await Deno.readTextFile("/proc/self/status"), "CapBnd");
        assertEquals(statusField(status, "CapEff"), host);
        assertEquals(statusField(status, "Seccomp"), "0");
      });
    });

    await t.step("shareProcessNamespace: one PID namespace for the pod", async () => {
      const p = pod("sharepid", { shareProcessNamespace: true });
      p.spec.containers.push({ name: "side", image: testImage, command: ["sleep", "601"] });
      await withPod(runtime, p, async ({ exec }) => {
        const ps = await exec(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"]);
        assert(ps.includes("sleep 601"), ps);
      });
      await withPod(runtime, pod("ownpid", {}), async ({ exec }) => {
        const ps = await exec(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"]);
        assert(!ps.includes("sleep 601"), ps);
      });
    });

    await t.step("a Localhost seccomp profile from <root-dir>/seccomp", async () => {
      await Deno.mkdir(`${repoRoot}/.run/seccomp/profiles`, { recursive: true });
      // Allows everything but mkdir(at), which fails with EPERM.
      await Deno.writeTextFile(
        `${repoRoot}/.run/seccomp/profiles/no-mkdir.json`,
        JSON.stringify({
          defaultAction: "SCMP_ACT_ALLOW",
          syscalls: [{ names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO" }],
        }),
      );
      const p = pod("localhost", {}, {
        securityContext: {
          seccompProfile: { type: "Localhost", localhostProfile: "profiles/no-mkdir.json" },
        },
      });
      await withPod(runtime, p, async ({ exec }) => {
        const status = await exec(["cat", "/proc/1/status"]);
        assertEquals(statusField(status, "Seccomp"), "2");
        const out = await exec(["sh", "-c", "mkdir /tmp/d 2>&1; echo rc=$?"]);
        assert(out.includes("Operation not permitted") && out.includes("rc=1"), out);
      });
    });

    await t.step("a safe sysctl is set in the pod's namespace", async () => {
      const p = pod("sysctl", {
        securityContext: {
          sysctls: [{ name: "net.ipv4.ip_local_port_range", value: "2000 3000" }],
        },
      });
      await withPod(runtime, p, async ({ exec }) => {
        const range = await exec(["cat", "/proc/sys/net/ipv4/ip_local_port_range"]);
        assertEquals(range.trim().replace(/\s+/g, " "), "2000 3000");
      });
    });
  } finally {
    runtime.close();
  }
});

function containerdPid(): number {
  return Number(Deno.readTextFileSync(`${repoRoot}/.run/containerd/containerd.pid`).trim());
}
