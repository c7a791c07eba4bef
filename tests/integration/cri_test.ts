/**
 * The CRI client, exec runner and pod status against a real containerd
 * (`bash scripts/containerd.sh up`). Every test is ignored, with the reason printed once, when not
 * root or when no runtime answers on `PROBELET_CRI_ENDPOINT` / `.run/containerd/containerd.sock`.
 */
import assert from "node:assert/strict";
import type { Container } from "../../src/api/core/v1/mod.ts";
import {
  CriError,
  GrpcCode,
  newRemoteImageService,
  type RuntimeService,
} from "../../src/cri_client/mod.ts";
import { getPodStatus } from "../../src/kubelet/kuberuntime/kuberuntime_status.ts";
import { RuntimeCommandRunner } from "../../src/kubelet/kuberuntime/kuberuntime_container.ts";
import { type ContainerID, parseContainerID } from "../../src/kubelet/container/mod.ts";
import { newProber } from "../../src/kubelet/prober/prober.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { newExecProber } from "../../src/probe/exec/exec.ts";
import { CommandTimedOutError, ExitError } from "../../src/util/exec/errors.ts";
import { newHttpProber, newRequestForHTTPGetAction } from "../../src/probe/http/mod.ts";
import { newTcpProber } from "../../src/probe/tcp/mod.ts";
import {
  connectRuntime,
  criEndpoint,
  eventually,
  integrationSkipReason,
  integrationTest,
  pauseImage,
  podSubnetPrefix,
  restartContainerd,
  startTestSandbox,
  testImage,
  testPod,
  type TestSandbox,
} from "./helpers.ts";

const skip = await integrationSkipReason();
if (skip) console.log(`tests/integration/cri_test.ts: skipping containerd tests: ${skip}`);

const httpdCommand = ["httpd", "-f", "-p", "8080", "-h", "/var/www"];
const web: Container = {
  name: "web",
  image: testImage,
  command: httpdCommand,
  ports: [{ name: "http", containerPort: 8080 }],
};
const rfc3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

/** A client, a sandbox with the httpd container running, and cleanup. */
async function withWebPod(
  name: string,
  fn: (
    ctx: { runtime: RuntimeService; sandbox: TestSandbox; containerId: string },
  ) => Promise<void>,
): Promise<void> {
  const runtime = await connectRuntime();
  let sandbox: TestSandbox | undefined;
  try {
    sandbox = await startTestSandbox(runtime, name);
    const containerId = await sandbox.startContainer("web", { command: httpdCommand });
    await fn({ runtime, sandbox, containerId });
  } finally {
    await sandbox?.remove();
    runtime.close();
  }
}

function containerdID(id: string): ContainerID {
  return { type: "containerd", id };
}

integrationTest("CRI Version and images", skip, async () => {
  const runtime = await connectRuntime();
  const images = await newRemoteImageService(criEndpoint());
  try {
    const v = await runtime.version();
    assert.equal(v.runtimeName, "containerd");
    assert.equal(v.runtimeApiVersion, "v1");
    assert.equal(v.version, "0.1.0");
    assert.match(v.runtimeVersion, /^\d+\.\d+/);

    const tags = (await images.listImages()).flatMap((i) => i.repoTags);
    assert.ok(tags.includes(pauseImage) && tags.includes(testImage), `images: ${tags}`);
    const { image } = await images.imageStatus({ image: testImage });
    assert.match(image?.id ?? "", /^sha256:[0-9a-f]{64}$/);
    assert.ok((image?.size ?? 0n) > 1_000_000n);
    assert.equal((await images.imageStatus({ image: "probelet.local/absent:0" })).image, undefined);
  } finally {
    images.close();
    runtime.close();
  }
});

integrationTest("Pod status of a running busybox httpd", skip, async () => {
  await withWebPod("status", async ({ runtime, sandbox, containerId }) => {
    assert.ok(sandbox.ip.startsWith(podSubnetPrefix), `pod IP ${sandbox.ip}`);
    const { status: cri } = await runtime.containerStatus(containerId);
    assert.equal(cri.state, "CONTAINER_RUNNING");
    assert.equal(cri.metadata.name, "web");
    assert.equal(cri.image?.image, testImage);

    const pod = testPod(sandbox, [web]);
    const status = await getPodStatus(runtime, { sandboxId: sandbox.id, pod });
    assert.equal(status.podIP, sandbox.ip);
    assert.deepEqual(status.podIPs, [{ ip: sandbox.ip }]);
    assert.match(status.startTime ?? "", rfc3339);
    const [web0] = status.containerStatuses ?? [];
    assert.equal(web0.name, "web");
    assert.equal(web0.containerID, `containerd://${containerId}`);
    assert.match(web0.containerID ?? "", /^containerd:\/\/[0-9a-f]{64}$/);
    assert.equal(web0.restartCount, 0);
    assert.equal(web0.ready, false);
    assert.equal(web0.image, testImage);
    assert.match(web0.imageID ?? "", /^sha256:/);
    const startedAt = web0.state?.running?.startedAt ?? "";
    assert.match(startedAt, rfc3339);
    assert.ok(Math.abs(Date.parse(startedAt) - Date.now()) < 60_000, `startedAt ${startedAt}`);
    assert.equal(web0.lastState, undefined);
  });
});

integrationTest("ExecSync probes through the runtime runner", skip, async (t) => {
  await withWebPod("exec", async ({ runtime, sandbox, containerId }) => {
    const runner = new RuntimeCommandRunner(runtime);
    const id = parseContainerID(`containerd://${containerId}`);
    const recorder = new FakeRecorder();
    const prober = newProber(runner, recorder);
    const exec = newExecProber();
    const probeExec = (cmd: string[], timeoutMs = 1000) =>
      exec.probe(prober.newExecInContainer(id, cmd, { timeoutMs }));

    await t.step("exit 0 → success with stdout then stderr", async () => {
      const out = await runner.runInContainer(id, ["sh", "-c", "echo err >&2; echo out"], {
        timeoutMs: 1000,
      });
      assert.equal(decode(out), "out\nerr\n");
      const outcome = await probeExec(["cat", "/var/www/index.html"]);
      assert.deepEqual(outcome, { result: "success", output: "probelet ok\n" });
    });

    await t.step("non-zero exit → ExitError with the output, probe failure", async () => {
      const cmd = ["sh", "-c", "echo out; echo bad >&2; exit 3"];
      const err = await runner.runInContainer(id, cmd, { timeoutMs: 1000 }).then(
        () => assert.fail("expected an ExitError"),
        (e) => e,
      );
      assert.ok(err instanceof ExitError, String(err));
      assert.equal(err.exitStatus(), 3);
      assert.equal(decode(err.output), "out\nbad\n");
      assert.equal(
        err.message,
        "command 'sh -c echo out; echo bad >&2; exit 3' exited with 3: bad\n",
      );
      assert.deepEqual(await probeExec(cmd), { result: "failure", output: "out\nbad\n" });
    });

    await t.step("past the timeout → CommandTimedOutError with kubelet's text", async () => {
      const start = Date.now();
      const err = await runner.runInContainer(id, ["sh", "-c", "sleep 10"], { timeoutMs: 1000 })
        .then(() => assert.fail("expected a timeout"), (e) => e);
      const elapsed = Date.now() - start;
      assert.ok(err instanceof CommandTimedOutError, String(err));
      assert.equal(err.message, 'command timed out: "sh -c sleep 10" timed out after 1s');
      assert.ok(elapsed >= 900 && elapsed < 5_000, `took ${elapsed} ms`);
    });

    await t.step("through the prober: timeout is a Liveness failure event", async () => {
      const container: Container = {
        ...web,
        livenessProbe: { exec: { command: ["sh", "-c", "sleep 10"] }, timeoutSeconds: 1 },
      };
      const pod = testPod(sandbox, [container]);
      const { result, error } = await prober.probe("liveness", {
        pod,
        status: { podIP: sandbox.ip },
        container,
        containerID: id,
      });
      assert.equal(error, undefined);
      assert.equal(result, 1 /* results.Failure */);
      assert.deepEqual(recorder.events, [
        'Warning Unhealthy Liveness probe failed: command timed out: "sh -c sleep 10" timed out after 1s',
      ]);
    });

    await t.step("missing binary → plain error, probe unknown", async () => {
      const err = await runner.runInContainer(id, ["/no/such/binary"], { timeoutMs: 1000 }).then(
        () => assert.fail("expected an error"),
        (e) => e,
      );
      assert.ok(err instanceof CriError, String(err));
      assert.ok(!(err instanceof ExitError) && !(err instanceof CommandTimedOutError));
      assert.equal(err.code, GrpcCode.Unknown);
      assert.match(err.message, /^rpc error: code = Unknown desc = .*no such file or directory/);
      const outcome = await probeExec(["/no/such/binary"]);
      assert.equal(outcome.result, "unknown");
      assert.equal(outcome.output, "");
      assert.ok(outcome.error instanceof CriError);
    });

    await t.step("exited container → plain error", async () => {
      await runtime.stopContainer(containerId, { timeoutMs: 2000 });
      const err = await runner.runInContainer(id, ["true"], { timeoutMs: 1000 }).then(
        () => assert.fail("expected an error"),
        (e) => e,
      );
      assert.ok(err instanceof CriError, String(err));
      assert.ok(!(err instanceof ExitError));
      assert.match(err.message, /CONTAINER_EXITED|not running|exited/i);
    });

    await t.step("unknown container → NotFound", async () => {
      const err = await runner.runInContainer(containerdID("0".repeat(64)), ["true"], {
        timeoutMs: 1000,
      }).then(() => assert.fail("expected an error"), (e) => e);
      assert.ok(err instanceof CriError, String(err));
      assert.equal(err.code, GrpcCode.NotFound);
    });
  });
});

integrationTest("HTTP and TCP probes against the pod IP", skip, async (t) => {
  await withWebPod("net", async ({ sandbox }) => {
    const http = newHttpProber();
    const tcp = newTcpProber();
    // httpd needs a moment after start before it accepts connections.
    await eventually("httpd to listen", async () => {
      const o = await tcp.probe(sandbox.ip, { port: 8080, timeoutMs: 1000 });
      return o.result === "success" ? o : undefined;
    });

    await t.step("HTTP 200 → success with the body", async () => {
      const { request } = newRequestForHTTPGetAction({ port: "http", path: "/" }, {
        container: web,
        podIP: sandbox.ip,
      });
      assert.ok(request);
      const outcome = await http.probe(request, { timeoutMs: 1000 });
      assert.deepEqual(outcome, { result: "success", output: "probelet ok\n" });
    });

    await t.step("HTTP 404 → failure with kubelet's text", async () => {
      const { request } = newRequestForHTTPGetAction({ port: 8080, path: "/missing" }, {
        container: web,
        podIP: sandbox.ip,
      });
      const outcome = await http.probe(request!, { timeoutMs: 1000 });
      assert.deepEqual(outcome, {
        result: "failure",
        output: "HTTP probe failed with statuscode: 404",
      });
    });

    await t.step("TCP open port → success, closed port → connection refused", async () => {
      assert.deepEqual(await tcp.probe(sandbox.ip, { port: 8080, timeoutMs: 1000 }), {
        result: "success",
        output: "",
      });
      const refused = await tcp.probe(sandbox.ip, { port: 8081, timeoutMs: 1000 });
      assert.equal(refused.result, "failure");
      assert.equal(refused.output, `dial tcp ${sandbox.ip}:8081: connect: connection refused`);
    });
  });
});

integrationTest(
  "Stopped and recreated containers: exit code, reason, new ID, restartCount",
  skip,
  async (t) => {
    const runtime = await connectRuntime();
    let sandbox: TestSandbox | undefined;
    try {
      sandbox = await startTestSandbox(runtime, "restarts");
      const init: Container = { name: "init", image: testImage, command: ["true"] };
      // A shell that ignores SIGTERM as PID 1 (busybox sleep alone exits on it).
      const stubbornCommand = ["sh", "-c", "trap '' TERM; sleep 3600 & wait"];
      const stubborn: Container = {
        name: "stubborn",
        image: testImage,
        command: stubbornCommand,
      };
      const pod = testPod(sandbox, [web, stubborn]);
      pod.spec.initContainers = [init];
      const status = () => getPodStatus(runtime, { sandboxId: sandbox!.id, pod });

      await t.step("no containers yet → waiting PodInitializing / ContainerCreating", async () => {
        const s = await status();
        assert.deepEqual(s.initContainerStatuses?.[0].state, {
          waiting: { reason: "ContainerCreating" },
        });
        assert.deepEqual(s.containerStatuses?.[0].state, {
          waiting: { reason: "PodInitializing" },
        });
      });

      await t.step("init container exits 0 → terminated Completed", async () => {
        const initId = await sandbox!.startContainer("init", { command: ["true"] });
        const terminated = await eventually("init to exit", async () => {
          const s = await status();
          return s.initContainerStatuses?.[0].state?.terminated;
        });
        assert.equal(terminated.exitCode, 0);
        assert.equal(terminated.reason, "Completed");
        assert.equal(terminated.containerID, `containerd://${initId}`);
        assert.match(terminated.startedAt ?? "", rfc3339);
        assert.match(terminated.finishedAt ?? "", rfc3339);
        const s = await status();
        assert.deepEqual(s.containerStatuses?.[0].state, {
          waiting: { reason: "ContainerCreating" },
        });
      });

      const first = await sandbox.startContainer("web", { command: httpdCommand });
      await t.step("stop (SIGTERM) → terminated, exit 143, reason Error", async () => {
        await runtime.stopContainer(first, { timeoutMs: 2000 });
        const web0 = (await status()).containerStatuses?.[0];
        assert.equal(web0?.containerID, `containerd://${first}`);
        assert.equal(web0?.state?.terminated?.exitCode, 143);
        assert.equal(web0?.state?.terminated?.reason, "Error");
        assert.match(web0?.state?.terminated?.finishedAt ?? "", rfc3339);
        assert.equal(web0?.restartCount, 0);
      });

      await t.step("recreate with attempt 1 → new ID, restartCount 1, lastState", async () => {
        const second = await sandbox!.startContainer("web", { command: httpdCommand, attempt: 1 });
        assert.notEqual(second, first);
        const web1 = (await status()).containerStatuses?.[0];
        assert.equal(web1?.containerID, `containerd://${second}`);
        assert.equal(web1?.restartCount, 1);
        assert.ok(web1?.state?.running, JSON.stringify(web1?.state));
        assert.equal(web1?.lastState?.terminated?.exitCode, 143);
        assert.equal(web1?.lastState?.terminated?.containerID, `containerd://${first}`);
      });

      await t.step("same name and attempt again → refused (name reserved)", async () => {
        await assert.rejects(
          sandbox!.startContainer("web", { command: httpdCommand, attempt: 1 }),
          /reserved|already/i,
        );
      });

      await t.step("PID 1 ignoring SIGTERM → killed after the grace period, exit 137", async () => {
        const id = await sandbox!.startContainer("stubborn", { command: stubbornCommand });
        const start = Date.now();
        await runtime.stopContainer(id, { timeoutMs: 1000 });
        const elapsed = Date.now() - start;
        assert.ok(elapsed >= 900 && elapsed < 5_000, `stop took ${elapsed} ms`);
        const s = (await status()).containerStatuses?.[1];
        assert.equal(s?.name, "stubborn");
        assert.equal(s?.state?.terminated?.exitCode, 137);
        assert.equal(s?.state?.terminated?.reason, "Error");
      });
    } finally {
      await sandbox?.remove();
      runtime.close();
    }
  },
);

integrationTest("The same client keeps working across a containerd restart", skip, async () => {
  await withWebPod("restart", async ({ runtime, containerId }) => {
    const runner = new RuntimeCommandRunner(runtime);
    const id = containerdID(containerId);
    assert.equal(
      decode(await runner.runInContainer(id, ["echo", "before"], { timeoutMs: 1000 })),
      "before\n",
    );

    await restartContainerd();

    // The channel saw the old containerd go away; the next calls reconnect by themselves.
    const start = Date.now();
    const { status } = await runtime.containerStatus(containerId);
    const firstCallMs = Date.now() - start;
    assert.equal(status.state, "CONTAINER_RUNNING", "containers survive a containerd restart");
    assert.ok(firstCallMs < 5_000, `first call after restart took ${firstCallMs} ms`);
    assert.equal(
      decode(await runner.runInContainer(id, ["echo", "after"], { timeoutMs: 1000 })),
      "after\n",
    );
    assert.equal((await runtime.version()).runtimeName, "containerd");
  });
});

integrationTest(
  "An ExecSync in flight while containerd restarts ends at once; the next calls work",
  skip,
  async () => {
    await withWebPod("restart-exec", async ({ runtime, containerId }) => {
      const id = containerdID(containerId);
      // A 20 s command with a 30 s timeout: only the restart can end the call early.
      const started = Date.now();
      const exec = runtime.execSync(containerId, ["sleep", "20"], { timeoutMs: 30_000 })
        .then(() => "finished", (e) => e);
      await restartContainerd();
      const outcome = await exec;
      const tookMs = Date.now() - started;
      // containerd's stop drops the connection (or its GOAWAY covers the stream and the socket then
      // closes): the call fails with Unavailable, is not retried (ExecSync is not idempotent), and
      // does not wait for its deadline.
      assert.ok(outcome instanceof CriError, `ExecSync ended with ${outcome}`);
      assert.equal(outcome.code, GrpcCode.Unavailable, outcome.message);
      assert.ok(tookMs < 15_000, `the call took ${tookMs} ms`);
      const runner = new RuntimeCommandRunner(runtime);
      assert.equal(
        decode(await runner.runInContainer(id, ["echo", "after"], { timeoutMs: 5_000 })),
        "after\n",
      );
    });
  },
);

integrationTest(
  "A 400 KB ExecSync request flows through containerd's 64 KiB windows",
  skip,
  async () => {
    await withWebPod("big-request", async ({ runtime, containerId }) => {
      // Four 100 KB arguments (one argument may not exceed 128 KiB on Linux): the request is six
      // times containerd's initial stream window, so it only goes through as WINDOW_UPDATEs come.
      const part = "x".repeat(100_000);
      const result = await runtime.execSync(containerId, [
        "sh",
        "-c",
        "echo $(( ${#1} + ${#2} + ${#3} + ${#4} ))",
        "sh",
        part,
        part,
        part,
        part,
      ], { timeoutMs: 10_000 });
      assert.equal(decode(result.stdout), "400000\n");
    });
  },
);
