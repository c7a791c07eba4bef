/**
 * The kubelet side of exec, attach, port-forward and run against a fake runtime: the running
 * container found by the pod's full name (exited ones are not), the CRI request as sent, the URL
 * back, the container spec's TTY for attach, the newest sandbox for port-forward, and kubelet's
 * error texts. Ports kubelet_pods_test.go's TestGetExec, TestGetPortForward, TestRunInContainer
 * and TestRunInContainerNoSuchPod.
 * @module
 */
import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import type { Pod } from "../../src/api/core/v1/mod.ts";
import type {
  AttachRequest,
  ExecRequest,
  PodSandbox,
  PodSandboxFilter,
  PortForwardRequest,
} from "../../src/cri_client/api.ts";
import type { RuntimePod } from "../../src/kubelet/container/runtime.ts";
import {
  getAttach,
  getExec,
  getPortForward,
  runInContainer,
  type StreamingContext,
} from "../../src/kubelet/kubelet_streaming.ts";
import { ExitError } from "../../src/util/exec/errors.ts";

const podName = "podFoo";
const podNamespace = "nsFoo";
const podUID = "12345678";
const podFullName = "podFoo_nsFoo";
const streamOpts = { stdin: true, stdout: true, stderr: false, tty: true };

function testContext(options: { streaming?: boolean; tty?: boolean } = {}) {
  const sent: Record<string, unknown[]> = { exec: [], attach: [], portForward: [], execSync: [] };
  const filters: (PodSandboxFilter | undefined)[] = [];
  const runtimePods: RuntimePod[] = [{
    id: podUID,
    name: podName,
    namespace: podNamespace,
    containers: [
      {
        id: { type: "containerd", id: "old" },
        name: "containerFoo",
        state: "exited",
        hash: "",
        createdAt: 1,
      },
      {
        id: { type: "containerd", id: "c1" },
        name: "containerFoo",
        state: "running",
        hash: "",
        createdAt: 2,
      },
    ],
    sandboxes: [{
      id: { type: "containerd", id: "s2" },
      name: podName,
      state: "running",
      hash: "",
      createdAt: 2,
    }],
  }];
  const sandboxes = [
    { id: "s1", createdAt: 1n },
    { id: "s2", createdAt: 2n },
  ] as PodSandbox[];
  const apiPod: Pod = {
    metadata: { name: podName, namespace: podNamespace, uid: podUID },
    spec: { containers: [{ name: "containerFoo", tty: options.tty ?? false }] },
  };
  const streaming = options.streaming ?? true;
  const ctx: StreamingContext = {
    runtime: {
      exec: streaming
        ? (req: ExecRequest) => {
          sent.exec.push(req);
          return Promise.resolve({ url: "http://127.0.0.1:1/exec/tok" });
        }
        : undefined,
      attach: streaming
        ? (req: AttachRequest) => {
          sent.attach.push(req);
          return Promise.resolve({ url: "http://127.0.0.1:1/attach/tok" });
        }
        : undefined,
      portForward: streaming
        ? (req: PortForwardRequest) => {
          sent.portForward.push(req);
          return Promise.resolve({ url: "http://127.0.0.1:1/portforward/tok" });
        }
        : undefined,
      execSync: (id: string, cmd: string[]) => {
        sent.execSync.push([id, cmd]);
        if (cmd[0] === "fail") {
          return Promise.reject(
            new ExitError(3, {
              output: new Uint8Array(),
              message: "command 'fail' exited with 3: ",
            }),
          );
        }
        return Promise.resolve({
          stdout: new TextEncoder().encode("foo"),
          stderr: new TextEncoder().encode("bar"),
        });
      },
      listPodSandbox: (filter?: PodSandboxFilter) => {
        filters.push(filter);
        return Promise.resolve(sandboxes);
      },
    },
    getPods: () => Promise.resolve(runtimePods),
    podManager: {
      getPodByFullName: (name) => (name === podFullName ? apiPod : undefined),
      translatePodUID: (uid) => uid,
    },
  };
  return { ctx, sent, filters };
}

Deno.test("TestGetExec", async (t) => {
  const cases: Array<
    {
      description: string;
      podFullName: string;
      container: string;
      command: string[];
      error?: string;
    }
  > = [
    { description: "success case", podFullName, container: "containerFoo", command: ["ls"] },
    {
      description: "no such pod",
      podFullName: "bar" + podFullName,
      container: "containerFoo",
      command: ["ls"],
      error: `container not found ("containerFoo")`,
    },
    {
      description: "no such container",
      podFullName,
      container: "containerBar",
      command: ["ls"],
      error: `container not found ("containerBar")`,
    },
    { description: "null exec command", podFullName, container: "containerFoo", command: [] },
    {
      description: "multi exec commands",
      podFullName,
      container: "containerFoo",
      command: ["bash", "-c", "ls"],
    },
  ];
  for (const tc of cases) {
    await t.step(tc.description, async () => {
      const { ctx, sent } = testContext();
      const call = getExec(ctx, tc.podFullName, "", tc.container, tc.command, streamOpts);
      if (tc.error) {
        await rejects(call, { message: tc.error });
        assertEquals(sent.exec, []);
        return;
      }
      assertEquals((await call).href, "http://127.0.0.1:1/exec/tok");
      // The running container, not the exited one of the same name.
      assertEquals(sent.exec, [{ containerId: "c1", cmd: tc.command, ...streamOpts }]);
    });
  }
  await t.step("a runtime without a streaming server", async () => {
    const { ctx } = testContext({ streaming: false });
    await rejects(getExec(ctx, podFullName, "", "containerFoo", ["ls"], streamOpts), {
      message: "rpc error: code = Unimplemented desc = method Exec not implemented",
      code: 12,
    });
  });
});

Deno.test("TestGetAttach", async (t) => {
  await t.step("the container spec's tty, not the request's", async () => {
    const { ctx, sent } = testContext({ tty: false });
    await getAttach(ctx, podFullName, "", "containerFoo", streamOpts);
    assertEquals(sent.attach, [{
      containerId: "c1",
      stdin: true,
      stdout: true,
      stderr: false,
      tty: false,
    }]);
  });
  await t.step("errors: no container, a UID that is not the pod's", async () => {
    const { ctx } = testContext();
    await rejects(getAttach(ctx, podFullName, "", "containerBar", streamOpts), {
      message: "container containerBar not found in pod podFoo_nsFoo",
    });
    await rejects(getAttach(ctx, podFullName, "other", "containerFoo", streamOpts), {
      message: "pod podFoo_nsFoo not found",
    });
  });
});

Deno.test("TestGetPortForward", async (t) => {
  await t.step("success case: the newest sandbox, the pod's UID label", async () => {
    const { ctx, sent, filters } = testContext();
    const url = await getPortForward(ctx, podName, podNamespace, podUID, [5000]);
    assertEquals(url.href, "http://127.0.0.1:1/portforward/tok");
    assertEquals(sent.portForward, [{ podSandboxId: "s2", port: [5000] }]);
    assertEquals(filters, [{ labelSelector: { "io.kubernetes.pod.uid": podUID } }]);
  });
  await t.step("no such pod", async () => {
    const { ctx, sent } = testContext();
    await rejects(getPortForward(ctx, "bar", podNamespace, podUID, [5000]), {
      message: `pod not found ("bar_nsFoo")`,
    });
    assertEquals(sent.portForward, []);
  });
});

Deno.test("TestRunInContainer", async (t) => {
  await t.step("stdout then stderr", async () => {
    const { ctx, sent } = testContext();
    const out = await runInContainer(ctx, podFullName, "", "containerFoo", ["ls", "-a"]);
    assertEquals(new TextDecoder().decode(out), "foobar");
    assertEquals(sent.execSync, [["c1", ["ls", "-a"]]]);
  });
  await t.step("TestRunInContainerNoSuchPod", async () => {
    const { ctx, sent } = testContext();
    await rejects(runInContainer(ctx, "bar_nsFoo", "", "containerFoo", ["ls"]), {
      message: `container not found ("containerFoo")`,
    });
    assertEquals(sent.execSync, []);
  });
  await t.step("a non-zero exit: the runtime's ExitError", async () => {
    const { ctx } = testContext();
    await rejects(runInContainer(ctx, podFullName, "", "containerFoo", ["fail"]), {
      message: "command 'fail' exited with 3: ",
    });
  });
});
