import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod, SecurityContext } from "../../../src/api/core/v1/mod.ts";
import { verifyRunAsNonRoot } from "../../../src/kubelet/kuberuntime/security_context_others.ts";

function testPod(sc: SecurityContext | undefined): Pod {
  return {
    metadata: { uid: "12345678", name: "bar", namespace: "new" },
    spec: {
      containers: [{
        name: "foo",
        image: "busybox",
        imagePullPolicy: "IfNotPresent",
        command: ["testCommand"],
        workingDir: "testWorkingDir",
        securityContext: sc,
      }],
    },
  };
}

Deno.test("TestVerifyRunAsNonRoot", async (t) => {
  const cases: {
    desc: string;
    sc?: SecurityContext;
    uid?: number;
    username?: string;
    error?: string;
  }[] = [
    { desc: "Pass if SecurityContext is not set", uid: 0 },
    {
      desc: "Pass if RunAsUser is non-root and RunAsNonRoot is true",
      sc: { runAsNonRoot: true, runAsUser: 1000 },
    },
    { desc: "Pass if RunAsNonRoot is not set", sc: { runAsUser: 0 }, uid: 0 },
    {
      desc: "Pass if RunAsNonRoot is false (image user is root)",
      sc: { runAsNonRoot: false },
      uid: 0,
    },
    {
      desc: "Pass if RunAsNonRoot is false (RunAsUser is root)",
      sc: { runAsNonRoot: false, runAsUser: 0 },
      uid: 0,
    },
    {
      desc: "Fail if container's RunAsUser is root and RunAsNonRoot is true",
      sc: { runAsNonRoot: true, runAsUser: 0 },
      uid: 0,
      error:
        `container's runAsUser breaks non-root policy (pod: "bar_new(12345678)", container: foo)`,
    },
    {
      desc: "Fail if image's user is root and RunAsNonRoot is true",
      sc: { runAsNonRoot: true },
      uid: 0,
      error: `container has runAsNonRoot and image will run as root (pod: "bar_new(12345678)", ` +
        `container: foo)`,
    },
    {
      desc: "Fail if image's username is set and RunAsNonRoot is true",
      sc: { runAsNonRoot: true },
      username: "test",
      error: "container has runAsNonRoot and image has non-numeric user (test), cannot verify " +
        `user is non-root (pod: "bar_new(12345678)", container: foo)`,
    },
    {
      desc: "Pass if image's user is non-root and RunAsNonRoot is true",
      sc: { runAsNonRoot: true },
      uid: 1000,
    },
    {
      desc: "Pass if container's user and image's user aren't set and RunAsNonRoot is true",
      sc: { runAsNonRoot: true },
    },
    {
      desc: "Fail if image's user is invalid and RunAsNonRoot is true",
      sc: { runAsNonRoot: true },
      uid: 2147483648,
      error: "container has runAsNonRoot and image has an invalid user id (2147483648). " +
        "(Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive " +
        `(pod: "bar_new(12345678)", container: foo)`,
    },
    {
      desc: "Fail if image's user is negative and RunAsNonRoot is true",
      sc: { runAsNonRoot: true },
      uid: -1000,
      error: "container has runAsNonRoot and image has an invalid user id (-1000). " +
        "(Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive " +
        `(pod: "bar_new(12345678)", container: foo)`,
    },
    {
      desc: "Pass if image's user is math.MaxInt32 and RunAsNonRoot is true",
      sc: { runAsNonRoot: true },
      uid: 2147483647,
    },
    {
      desc: "the pod's runAsNonRoot applies when the container sets none",
      uid: 0,
      error: `container has runAsNonRoot and image will run as root (pod: "bar_new(12345678)", ` +
        `container: foo)`,
    },
  ];
  for (const c of cases) {
    await t.step(c.desc, () => {
      const pod = testPod(c.sc);
      if (c.desc.startsWith("the pod's")) pod.spec.securityContext = { runAsNonRoot: true };
      const err = verifyRunAsNonRoot(pod, pod.spec.containers[0], {
        uid: c.uid,
        username: c.username ?? "",
      });
      assertEquals(err?.message, c.error);
    });
  }
});
