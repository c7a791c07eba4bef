/**
 * The shipped pod fixtures: they load without errors, fit the runtime they are meant for, and the
 * host ones actually come up under the embedded runtime with their probe targets answering.
 */
import assert from "node:assert/strict";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import type { ContainerConfig } from "../../../src/cri_client/api.ts";
import { loadPodManifests } from "../../../src/kubelet/config/mod.ts";
import { EmbeddedRuntimeService } from "../../../src/runtime/embedded/mod.ts";
import { newGrpcProber } from "../../../src/probe/grpc/mod.ts";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const hostDir = join(repo, "fixtures/pods/host");
const containerdDir = join(repo, "fixtures/pods/containerd");
const nodeName = "fixtures";
const podNames = ["exec-worker", "grpc-health", "http-app", "slow-starter", "tcp-service"];

function probes(c: Container) {
  return [c.livenessProbe, c.readinessProbe, c.startupProbe].filter((p) => p !== undefined);
}

Deno.test("TestFixturesLoad", async (t) => {
  await t.step("fixtures/pods/host", async () => {
    const { pods, errors } = await loadPodManifests(hostDir, { nodeName });
    assert.deepEqual(errors.map((e) => e.message), []);
    assert.deepEqual(pods.map((p) => p.metadata.name), podNames.map((n) => `${n}-${nodeName}`));

    const ports = new Map<number, string>();
    for (const pod of pods) {
      for (const c of pod.spec.containers) {
        assert.ok(c.command?.length, `${pod.metadata.name}/${c.name} needs a command on the host`);
        for (const arg of [...c.command!, ...(c.args ?? [])]) {
          if (arg.startsWith("fixtures/")) {
            assert.ok((await Deno.stat(join(repo, arg))).isFile, `${arg} exists`);
          }
        }
        assert.ok(probes(c).length > 0, `${pod.metadata.name}/${c.name} has probes`);
        for (const p of c.ports ?? []) {
          // Host pods share one network namespace: no two may listen on the same port.
          assert.equal(ports.get(p.containerPort), undefined, `port ${p.containerPort} reused`);
          ports.set(p.containerPort, pod.metadata.name!);
        }
      }
    }
  });

  await t.step("fixtures/pods/containerd", async () => {
    const { pods, errors } = await loadPodManifests(containerdDir, { nodeName });
    assert.deepEqual(errors.map((e) => e.message), []);
    assert.deepEqual(
      pods.map((p) => p.metadata.name),
      ["exec-worker", "grpc-no-server", "http-app", "slow-starter", "tcp-service"].map((n) =>
        `${n}-${nodeName}`
      ),
    );
    for (const pod of pods) {
      for (const c of pod.spec.containers) {
        assert.equal(c.image, "probelet.local/busybox:1", "the image scripts/containerd.sh builds");
        assert.ok(probes(c).length > 0);
      }
    }
  });

  await t.step("fixtures/all_probes.yaml", async () => {
    const { pods, errors } = await loadPodManifests(join(repo, "fixtures/all_probes.yaml"), {
      nodeName,
    });
    assert.deepEqual(errors.map((e) => e.message), []);
    assert.equal(pods.length, 1);
  });
});

// ------------------------------------------------------------------------------------------------
// Smoke test: the host pods run under the embedded runtime and their probe targets answer.

/** Speeds the demos up: no warm-up, no scheduled failure during the test. */
const envOverrides: Record<string, string> = {
  READY_AFTER_SECONDS: "0",
  STARTUP_SECONDS: "0",
  UNHEALTHY_AFTER_SECONDS: "0",
  NOT_SERVING_AFTER_SECONDS: "0",
  BREAK_AFTER_SECONDS: "3600",
};

function containerConfig(c: Container): ContainerConfig {
  return {
    metadata: { name: c.name },
    image: { image: c.image ?? "" },
    command: c.command,
    args: c.args,
    // Container commands name files relative to the repository, where `deno task start` runs.
    workingDir: c.workingDir ?? repo,
    envs: (c.env ?? []).map((e) => ({ key: e.name, value: envOverrides[e.name] ?? e.value ?? "" })),
  };
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000; // a cold `deno run` with npm imports can take a while
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function httpStatus(port: number, path: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  await res.body?.cancel();
  return res.status;
}

async function tcpAccepts(port: number): Promise<boolean> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  conn.close();
  return true;
}

Deno.test({
  name: "TestHostFixturesRun",
  // The fixtures listen on fixed ports (1818x): skip when something else holds them.
  ignore: Deno.env.get("PROBELET_SKIP_FIXTURE_SMOKE") === "1",
  fn: async () => {
    const { pods } = await loadPodManifests(hostDir, { nodeName });
    const rootDir = await Deno.makeTempDir({ prefix: "probelet-fixtures-" });
    const runtime = new EmbeddedRuntimeService({ rootDir });
    const ids = new Map<string, string>();
    try {
      for (const pod of pods as Pod[]) {
        const sandbox = await runtime.runPodSandbox({
          metadata: {
            name: pod.metadata.name!,
            uid: pod.metadata.uid!,
            namespace: pod.metadata.namespace!,
          },
        });
        for (const c of pod.spec.containers) {
          const id = await runtime.createContainer(sandbox, containerConfig(c));
          await runtime.startContainer(id);
          ids.set(pod.metadata.name!.replace(`-${nodeName}`, ""), id);
        }
      }

      await waitFor(async () => await httpStatus(18180, "/ready") === 200, "http-app /ready");
      assert.equal(await httpStatus(18180, "/healthz"), 200);
      await waitFor(async () => await httpStatus(18181, "/healthz") === 200, "slow-starter");
      await waitFor(() => tcpAccepts(18182), "tcp-service");
      const grpc = newGrpcProber();
      await waitFor(async () => {
        const outcome = await grpc.probe("127.0.0.1", {
          service: "probelet",
          port: 18183,
          timeoutMs: 1000,
        });
        return outcome.result === "success";
      }, "grpc-health SERVING");
      await waitFor(async () => {
        await runtime.execSync(ids.get("exec-worker")!, [
          "cat",
          "/tmp/probelet-exec-worker/healthy",
        ], { timeoutMs: 1000 });
        return true;
      }, "exec-worker's health file");

      for (const id of ids.values()) {
        const { status } = await runtime.containerStatus(id);
        assert.equal(status.state, "CONTAINER_RUNNING", `${status.metadata.name} still runs`);
      }
    } finally {
      await runtime.shutdown();
      await Deno.remove(rootDir, { recursive: true });
    }
  },
});
