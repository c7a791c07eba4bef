import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import {
  convertToRuntimeCapabilities,
  convertToRuntimeSecurityContext,
  determineEffectiveSecurityContext,
} from "../../../src/kubelet/kuberuntime/security_context.ts";
import {
  fieldSeccompProfile,
  getSeccompProfile,
} from "../../../src/kubelet/kuberuntime/helpers.ts";
import { namespacesForPod } from "../../../src/kubelet/kuberuntime/util/util.ts";

const seccomp = { seccompProfileRoot: "/var/lib/kubelet/seccomp", seccompDefault: false };

function testPod(spec: Partial<Pod["spec"]> = {}, container: Partial<Container> = {}): Pod {
  return {
    metadata: { name: "bar", namespace: "new", uid: "12345678" },
    spec: { containers: [{ name: "foo", image: "busybox", ...container }], ...spec },
  };
}

Deno.test("TestDetermineEffectiveSecurityContext", async (t) => {
  const image = { uid: undefined, username: "" };
  await t.step("the container overrides the pod field by field", () => {
    const pod = testPod({ securityContext: { runAsUser: 1000, runAsGroup: 2000 } }, {
      securityContext: { runAsUser: 3000, readOnlyRootFilesystem: true },
    });
    const sc = determineEffectiveSecurityContext(pod, pod.spec.containers[0], {
      ...image,
      ...seccomp,
    });
    assertEquals(sc.runAsUser, { value: 3000 });
    assertEquals(sc.runAsGroup, { value: 2000 });
    assertEquals(sc.readonlyRootfs, true);
  });
  await t.step("the image's uid when neither sets runAsUser", () => {
    const pod = testPod();
    const sc = determineEffectiveSecurityContext(pod, pod.spec.containers[0], {
      uid: 1234,
      username: "",
      ...seccomp,
    });
    assertEquals(sc.runAsUser, { value: 1234 });
    assertEquals(sc.runAsUsername, undefined);
  });
  await t.step("the image's user name when it is not numeric", () => {
    const pod = testPod();
    const sc = determineEffectiveSecurityContext(pod, pod.spec.containers[0], {
      uid: undefined,
      username: "www",
      ...seccomp,
    });
    assertEquals(sc.runAsUser, undefined);
    assertEquals(sc.runAsUsername, "www");
  });
  await t.step("fsGroup first, then supplementalGroups", () => {
    const pod = testPod({ securityContext: { fsGroup: 2000, supplementalGroups: [4000, 5000] } });
    const sc = determineEffectiveSecurityContext(pod, pod.spec.containers[0], {
      ...image,
      ...seccomp,
    });
    assertEquals(sc.supplementalGroups, [2000, 4000, 5000]);
  });
  await t.step("allowPrivilegeEscalation false sets no_new_privs; unset does not", () => {
    const off = testPod({}, { securityContext: { allowPrivilegeEscalation: false } });
    assertEquals(
      determineEffectiveSecurityContext(off, off.spec.containers[0], { ...image, ...seccomp })
        .noNewPrivs,
      true,
    );
    const unset = testPod();
    assertEquals(
      determineEffectiveSecurityContext(unset, unset.spec.containers[0], { ...image, ...seccomp })
        .noNewPrivs,
      false,
    );
  });
  await t.step("procMount Default masks kubelet's paths; Unmasked none", () => {
    const pod = testPod();
    const sc = determineEffectiveSecurityContext(pod, pod.spec.containers[0], {
      ...image,
      ...seccomp,
    });
    assertEquals(sc.maskedPaths?.includes("/proc/keys"), true);
    assertEquals(sc.readonlyPaths?.includes("/proc/sys"), true);
    const unmasked = testPod({}, { securityContext: { procMount: "Unmasked" } });
    const u = determineEffectiveSecurityContext(unmasked, unmasked.spec.containers[0], {
      ...image,
      ...seccomp,
    });
    assertEquals([u.maskedPaths, u.readonlyPaths], [[], []]);
  });
  await t.step("namespaces from the pod", () => {
    const pod = testPod({ hostPID: true, hostIPC: true, hostNetwork: true });
    const sc = determineEffectiveSecurityContext(pod, pod.spec.containers[0], {
      ...image,
      ...seccomp,
    });
    assertEquals(sc.namespaceOptions, { ipc: "NODE", network: "NODE", pid: "NODE" });
  });
});

Deno.test("TestConvertToRuntimeSecurityContext", () => {
  assertEquals(
    convertToRuntimeSecurityContext({
      runAsUser: 1000,
      runAsGroup: 2000,
      privileged: true,
      readOnlyRootFilesystem: true,
      capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] },
    }),
    {
      capabilities: { addCapabilities: ["NET_ADMIN"], dropCapabilities: ["ALL"] },
      runAsUser: { value: 1000 },
      runAsGroup: { value: 2000 },
      privileged: true,
      readonlyRootfs: true,
    },
  );
  assertEquals(convertToRuntimeSecurityContext({}), {});
});

Deno.test("TestConvertToRuntimeCapabilities", () => {
  assertEquals(convertToRuntimeCapabilities(undefined), undefined);
  assertEquals(convertToRuntimeCapabilities({ add: ["SYS_ADMIN"] }), {
    addCapabilities: ["SYS_ADMIN"],
    dropCapabilities: [],
  });
});

Deno.test("TestNamespacesForPod", async (t) => {
  const cases: [string, Partial<Pod["spec"]>, ReturnType<typeof namespacesForPod>][] = [
    ["nil pod -> default v1 namespaces", {}, { ipc: "POD", network: "POD", pid: "CONTAINER" }],
    ["v1 all host namespaces", { hostIPC: true, hostNetwork: true, hostPID: true }, {
      ipc: "NODE",
      network: "NODE",
      pid: "NODE",
    }],
    ["shareProcessNamespace", { shareProcessNamespace: true }, {
      ipc: "POD",
      network: "POD",
      pid: "POD",
    }],
  ];
  for (const [name, spec, want] of cases) {
    await t.step(name, () => assertEquals(namespacesForPod(testPod(spec)), want));
  }
});

Deno.test("TestGetSeccompProfile", async (t) => {
  const cases: {
    description: string;
    pod?: Pod["spec"]["securityContext"];
    container?: Container["securityContext"];
    seccompDefault?: boolean;
    want: ReturnType<typeof getSeccompProfile>;
  }[] = [
    { description: "no seccomp should return unconfined", want: { profileType: "Unconfined" } },
    {
      description: "no seccomp with SeccompDefault should return runtime/default",
      seccompDefault: true,
      want: { profileType: "RuntimeDefault" },
    },
    {
      description: "pod seccomp profile set to unconfined returns unconfined",
      pod: { seccompProfile: { type: "Unconfined" } },
      want: { profileType: "Unconfined" },
    },
    {
      description: "container seccomp profile set to unconfined returns unconfined",
      container: { seccompProfile: { type: "Unconfined" } },
      want: { profileType: "Unconfined" },
    },
    {
      description:
        "pod seccomp profile set to SeccompProfileTypeRuntimeDefault returns runtime/default",
      pod: { seccompProfile: { type: "RuntimeDefault" } },
      want: { profileType: "RuntimeDefault" },
    },
    {
      description:
        "pod seccomp profile set to SeccompProfileTypeLocalhost returns 'localhost/' + LocalhostProfile",
      pod: { seccompProfile: { type: "Localhost", localhostProfile: "filename" } },
      want: { profileType: "Localhost", localhostRef: "/var/lib/kubelet/seccomp/filename" },
    },
    {
      description:
        "container seccomp profile set to SeccompProfileTypeLocalhost returns 'localhost/' + LocalhostProfile",
      container: { seccompProfile: { type: "Localhost", localhostProfile: "filename2" } },
      want: { profileType: "Localhost", localhostRef: "/var/lib/kubelet/seccomp/filename2" },
    },
    {
      description: "prioritise container field over pod field",
      pod: { seccompProfile: { type: "Unconfined" } },
      container: { seccompProfile: { type: "RuntimeDefault" } },
      want: { profileType: "RuntimeDefault" },
    },
  ];
  for (const c of cases) {
    await t.step(c.description, () => {
      assertEquals(
        getSeccompProfile(c.pod, c.container, {
          seccompProfileRoot: "/var/lib/kubelet/seccomp",
          seccompDefault: c.seccompDefault ?? false,
        }),
        c.want,
      );
    });
  }
  await t.step(
    "pod seccomp profile set to SeccompProfileTypeLocalhost with empty LocalhostProfile returns error",
    () => {
      assertThrows(
        () => fieldSeccompProfile({ type: "Localhost" }, seccomp),
        /localhostProfile must be set if seccompProfile type is Localhost\./,
      );
    },
  );
});
