/**
 * End to end through the node agent (`runKubelet`, static pods from manifest files): on containerd
 * a pod's security context and resources reach the container, `status.qosClass` is kubelet's, a
 * root image with `runAsNonRoot` waits in `CreateContainerConfigError`, an unsafe sysctl is
 * `SysctlForbidden`; on the embedded runtime the same secure pod is refused with the admission
 * message naming each field. Needs root and `bash scripts/containerd.sh up` for the containerd half.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { containerStatus, startAgent, waitFor } from "./helpers.ts";
import { criEndpoint, integrationSkipReason, testImage } from "../integration/helpers.ts";

const idle = "trap 'exit 0' TERM; sleep 600 & wait";

function manifest(name: string, image: string, spec: string, container = ""): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 2
${spec}  containers:
  - name: app
    image: ${image}
    command: ["sh", "-c", ${JSON.stringify(idle)}]
${container}`;
}

function manifests(image: string): Record<string, string> {
  return {
    "secure.yaml": manifest(
      "secure",
      image,
      `  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    runAsNonRoot: true
    seccompProfile:
      type: RuntimeDefault
`,
      `    securityContext:
      capabilities:
        drop: ["ALL"]
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
    resources:
      limits:
        cpu: 200m
        memory: 40Mi
`,
    ),
    "nonroot.yaml": manifest(
      "nonroot",
      image,
      `  securityContext:
    runAsNonRoot: true
`,
    ),
    "sysctl.yaml": manifest(
      "sysctl",
      image,
      `  securityContext:
    sysctls:
    - name: kernel.msgmax
      value: "65536"
`,
    ),
  };
}

function statusField(status: string, field: string): string {
  const line = status.split("\n").find((l) => l.startsWith(`${field}:`));
  return (line ?? "").slice(field.length + 1).trim().replace(/\s+/g, " ");
}

const containerdSkip = await integrationSkipReason();

Deno.test({
  name: "security context e2e: containerd",
  ignore: containerdSkip !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const agent = await startAgent("containerd", manifests(testImage), { endpoint: criEndpoint() });
    try {
      await t.step("the secure pod runs as asked, Guaranteed (requests from limits)", async () => {
        const pod = await waitFor(
          "secure running",
          () => containerStatus(agent.pod("secure"), "app")?.state?.running && agent.pod("secure"),
          { describe: () => agent.pod("secure")?.status },
        );
        assertEquals(pod.status.qosClass, "Guaranteed");
        const id = containerStatus(pod, "app")!.containerID!.replace(/^containerd:\/\//, "");
        const exec = async (cmd: string[]) => {
          const { stdout } = await agent.runtime.execSync(id, cmd, { timeoutMs: 10_000 });
          return new TextDecoder().decode(stdout);
        };
        const status = await exec(["cat", "/proc/1/status"]);
        assertEquals(statusField(status, "Uid"), "1000 1000 1000 1000");
        assertEquals(statusField(status, "Gid"), "3000 3000 3000 3000");
        assertEquals(statusField(status, "CapBnd"), "0000000000000000");
        assertEquals(statusField(status, "NoNewPrivs"), "1");
        assertEquals(statusField(status, "Seccomp"), "2");
        const write = await exec(["sh", "-c", "touch /x 2>&1; echo rc=$?"]);
        assert(write.includes("Read-only file system"), write);
        assertEquals((await exec(["cat", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"])).trim(), "20000");
        assertEquals((await exec(["cat", "/sys/fs/cgroup/cpu/cpu.shares"])).trim(), "204");
        assertEquals(
          (await exec(["cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"])).trim(),
          "41943040",
        );
      });

      await t.step("runAsNonRoot with a root image: CreateContainerConfigError", async () => {
        const pod = await waitFor(
          "nonroot waiting",
          () =>
            containerStatus(agent.pod("nonroot"), "app")?.state?.waiting?.reason ===
              "CreateContainerConfigError" && agent.pod("nonroot"),
          { describe: () => agent.pod("nonroot")?.status },
        );
        const message = `container has runAsNonRoot and image will run as root (pod: ` +
          `"nonroot-e2e_default(${pod.metadata.uid})", container: app)`;
        assertEquals(containerStatus(pod, "app")?.state?.waiting?.message, message);
        assert(
          agent.eventsOf("nonroot").includes(`Warning Failed Error: ${message}`),
          JSON.stringify(agent.eventsOf("nonroot")),
        );
        assertEquals(pod.status.phase, "Pending");
      });

      await t.step("an unsafe sysctl: SysctlForbidden, nothing started", async () => {
        // A refused pod is listed with its Failed status (kubelet's rejectPod).
        const refused = () => agent.kubelet.pods().find((p) => p.metadata.name === "sysctl-e2e");
        const pod = await waitFor(
          "sysctl Failed",
          () => refused()?.status.phase === "Failed" && refused(),
          { describe: () => refused()?.status },
        );
        assertEquals(pod.status.reason, "SysctlForbidden");
        assertEquals(
          pod.status.message,
          `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`,
        );
        const selector = { labelSelector: { "io.kubernetes.pod.uid": pod.metadata.uid! } };
        assertEquals(await agent.runtime.listPodSandbox(selector), []);
      });
    } finally {
      await agent.close();
    }
  },
});

Deno.test({
  name: "security context e2e: embedded refuses what a host process cannot honour",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const agent = await startAgent("embedded", {
      "secure.yaml": manifests("busybox")["secure.yaml"],
    });
    try {
      const refused = () => agent.kubelet.pods().find((p) => p.metadata.name === "secure-e2e");
      const pod = await waitFor(
        "secure Failed",
        () => refused()?.status.phase === "Failed" && refused(),
        { describe: () => refused()?.status },
      );
      assertEquals(pod.status.reason, "PodFeatureUnsupported");
      const message = pod.status.message ?? "";
      for (
        const field of [
          "spec.containers[0].securityContext.capabilities.drop",
          "spec.containers[0].securityContext.allowPrivilegeEscalation",
          "spec.containers[0].securityContext.readOnlyRootFilesystem",
          "spec.containers[0].resources.limits",
          "spec.securityContext.seccompProfile.type",
        ]
      ) {
        assert(message.includes(`${field} is not supported by this node`), message);
      }
    } finally {
      await agent.close();
    }
  },
});
