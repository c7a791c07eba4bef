/**
 * Image pulls on the project's containerd from a real registry (`scripts/registry.sh`: TLS with a
 * private CA, htpasswd auth): kubelet's runtime manager with its image manager, on a fake clock
 * for the pull back-off. Pulls with and without `imagePullSecrets`, `Always` pulling a changed tag,
 * a missing image ending in `ImagePullBackOff`, `Never` and `IfNotPresent` on local images.
 * @module
 */
import {
  deepStrictEqual as assertEquals,
  match as assertMatch,
  notDeepStrictEqual as assertNotEquals,
  ok as assert,
} from "node:assert/strict";
import type { Container, Pod } from "../../src/api/core/v1/mod.ts";
import { newRemoteImageService } from "../../src/cri_client/mod.ts";
import type { Secret } from "../../src/credentialprovider/keyring.ts";
import { FakeRecorder } from "../../src/kubelet/events/mod.ts";
import { newImageManager } from "../../src/kubelet/images/image_manager.ts";
import { KubeGenericRuntimeManager } from "../../src/kubelet/kuberuntime/kuberuntime_manager.ts";
import { newKubeImageService } from "../../src/kubelet/kuberuntime/kuberuntime_image.ts";
import { newResultsManager } from "../../src/kubelet/prober/mod.ts";
import { FakeClock } from "../../src/util/clock.ts";
import { Backoff } from "../../src/util/flowcontrol/backoff.ts";
import {
  connectRuntime,
  criEndpoint,
  integrationSkipReason,
  integrationTest,
  repoRoot,
  testImage,
} from "./helpers.ts";

interface Registry {
  addr: string;
  user: string;
  password: string;
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${out.code}):\n${text}`);
  return text;
}

async function registry(): Promise<Registry | string> {
  try {
    const env = Object.fromEntries(
      (await run("bash", [`${repoRoot}/scripts/registry.sh`, "env"])).trim().split("\n")
        .map((l) => l.split("=", 2) as [string, string]),
    );
    return {
      addr: env.PROBELET_REGISTRY,
      user: env.PROBELET_REGISTRY_USER,
      password: env.PROBELET_REGISTRY_PASSWORD,
    };
  } catch (e) {
    return `no test registry (start one with: bash scripts/registry.sh up): ${
      e instanceof Error ? e.message.split("\n").slice(-2).join(" ") : e
    }`;
  }
}

const skip = await integrationSkipReason();
const reg = skip ? undefined : await registry();
const skipReason = skip ?? (typeof reg === "string" ? reg : undefined);
const registryInfo = typeof reg === "object" ? reg : undefined;

function pullSecret(r: Registry, name = "regcred"): Secret {
  const auths = { [r.addr]: { auth: btoa(`${r.user}:${r.password}`) } };
  return {
    metadata: { name, namespace: "default", uid: crypto.randomUUID() },
    type: "kubernetes.io/dockerconfigjson",
    data: { ".dockerconfigjson": btoa(JSON.stringify({ auths })) },
  };
}

function podWith(name: string, container: Partial<Container>, secrets: string[] = []): Pod {
  return {
    metadata: { name, namespace: "default", uid: crypto.randomUUID() },
    spec: {
      containers: [{ name: "app", command: ["sleep", "3600"], ...container }],
      imagePullSecrets: secrets.map((s) => ({ name: s })),
    },
  };
}

async function setUp(secrets: Map<string, Secret>) {
  const clock = new FakeClock(Date.now());
  const recorder = new FakeRecorder();
  const runtime = await connectRuntime();
  const images = await newRemoteImageService(criEndpoint());
  const logs = await Deno.makeTempDir({ prefix: "probelet-image-pull-" });
  const manager = new KubeGenericRuntimeManager({
    runtime,
    runtimeName: "containerd",
    clock,
    recorder,
    lookups: { livenessManager: newResultsManager(), startupManager: newResultsManager() },
    backoff: new Backoff(clock, { initialMs: 10_000, maxMs: 300_000 }),
    podLogsRootDir: logs,
    nodeName: "image-pull-test",
    imageManager: newImageManager({
      recorder,
      imageService: newKubeImageService(images),
      backOff: new Backoff(clock, { initialMs: 10_000, maxMs: 300_000 }),
      clock,
    }),
    getPullSecrets: (pod) =>
      Promise.resolve(
        (pod.spec.imagePullSecrets ?? []).map((r) => secrets.get(String(r.name))!).filter(Boolean),
      ),
  });
  const pods: Pod[] = [];
  const sync = async (pod: Pod) => {
    if (!pods.includes(pod)) pods.push(pod);
    return await manager.syncPod(pod, await manager.getPodStatus(pod));
  };
  const events = () => recorder.events.splice(0);
  const cleanup = async () => {
    for (const pod of pods) {
      await manager.killPod(pod, await manager.getPodStatus(pod)).catch(() => {});
      for (const s of (await manager.getPodStatus(pod)).sandboxStatuses) {
        await runtime.removePodSandbox(s.id).catch(() => {});
      }
    }
    runtime.close();
    images.close();
    await Deno.remove(logs, { recursive: true });
  };
  return { clock, runtime, images, manager, sync, events, cleanup };
}

const ctr = (...args: string[]) =>
  run("ctr", ["-a", criEndpoint().replace("unix://", ""), "-n", "k8s.io", ...args]);

integrationTest("image pulls from a registry with TLS and auth", skipReason, async (t) => {
  const r = registryInfo!;
  const image = `${r.addr}/probelet/busybox:1`;
  const secrets = new Map([["regcred", pullSecret(r)]]);
  const stale = (await ctr("images", "ls", "-q")).split("\n").filter((n) =>
    n.startsWith(`${r.addr}/`)
  );
  if (stale.length > 0) await ctr("images", "rm", ...stale);
  const s = await setUp(secrets);
  try {
    await t.step("with imagePullSecrets: pulled, and the container runs the image", async () => {
      const pod = podWith("with-secret", { image, imagePullPolicy: "IfNotPresent" }, ["regcred"]);
      const result = await s.sync(pod);
      assertEquals(result.startResults.get("app"), null);
      const events = s.events();
      assertEquals(events[0], `Normal Pulling Pulling image "${image}"`);
      assertMatch(
        events[1],
        new RegExp(
          `^Normal Pulled Successfully pulled image "${image}" in \\S+ \\(\\S+ including waiting\\)\\. Image size: [1-9]\\d* bytes\\.$`,
        ),
      );
      // Inside the container: the image's own file.
      const status = await s.manager.getPodStatus(pod);
      const app = status.containerStatuses.find((c) => c.name === "app")!;
      assertEquals(app.state, "running");
      const { stdout } = await s.runtime.execSync(app.id.id, ["cat", "/var/www/index.html"], {
        timeoutMs: 5_000,
      });
      assertEquals(new TextDecoder().decode(stdout), "probelet ok\n");
    });

    await t.step("without imagePullSecrets: the registry refuses, ErrImagePull", async () => {
      // The image is on the node now, but was pulled with a secret this pod does not present
      // (KubeletEnsureSecretPulledImages): IfNotPresent must pull, and the pull is refused.
      const pod = podWith("no-secret", { image, imagePullPolicy: "IfNotPresent" });
      const result = await s.sync(pod);
      const failure = result.startResults.get("app")!;
      assertEquals(failure.reason, "ErrImagePull");
      assertMatch(failure.message, /^rpc error: code = Unknown desc = .*401 Unauthorized/);
      assert(result.syncFailed);
      const events = s.events();
      assertEquals(events[0], `Normal Pulling Pulling image "${image}"`);
      assertEquals(events[1], `Warning Failed Failed to pull image "${image}": ${failure.message}`);
      assertEquals(events[2], "Warning Failed Error: ErrImagePull");
      // At once again: in back-off, the last error in the message; no pull.
      const again = (await s.sync(pod)).startResults.get("app")!;
      assertEquals(again, {
        reason: "ImagePullBackOff",
        message: `Back-off pulling image "${image}": ErrImagePull: ${failure.message}`,
      });
      assertEquals(s.events(), [
        `Normal BackOff Back-off pulling image "${image}"`,
        "Warning Failed Error: ImagePullBackOff",
      ]);
      // After the 10 s back-off, it pulls again.
      await s.clock.step(10_000);
      assertEquals((await s.sync(pod)).startResults.get("app")!.reason, "ErrImagePull");
      assertEquals(s.events()[0], `Normal Pulling Pulling image "${image}"`);
    });

    await t.step("a pod presenting the secret uses the present image without a pull", async () => {
      const pod = podWith("same-secret", { image, imagePullPolicy: "IfNotPresent" }, ["regcred"]);
      assertEquals((await s.sync(pod)).startResults.get("app"), null);
      assertEquals(
        s.events()[0],
        `Normal Pulled Container image "${image}" already present on machine and can be accessed by the pod`,
      );
    });

    await t.step("a missing image ends in ImagePullBackOff", async () => {
      const missing = `${r.addr}/probelet/missing:1`;
      const pod = podWith("missing", { image: missing, imagePullPolicy: "IfNotPresent" }, [
        "regcred",
      ]);
      const first = (await s.sync(pod)).startResults.get("app")!;
      assertEquals(first.reason, "ErrImagePull");
      assertMatch(first.message, /not found/);
      const second = (await s.sync(pod)).startResults.get("app")!;
      assertEquals(second.reason, "ImagePullBackOff");
      assertEquals(
        second.message,
        `Back-off pulling image "${missing}": ErrImagePull: ${first.message}`,
      );
      const status = await s.manager.getPodStatus(pod);
      assertEquals(status.containerStatuses, []);
    });

    await t.step("Always pulls a changed tag", async () => {
      const changing = `${r.addr}/probelet/changing:1`;
      await run("bash", [
        `${repoRoot}/scripts/registry.sh`,
        "push",
        testImage,
        "probelet/changing:1",
      ]);
      const first = podWith("always-1", { image: changing, imagePullPolicy: "Always" }, [
        "regcred",
      ]);
      assertEquals((await s.sync(first)).startResults.get("app"), null);
      const firstRef = (await s.manager.getPodStatus(first)).containerStatuses[0].imageID;
      // The tag moves to another image (the pause image: its own config, so its own ID).
      await run("bash", [
        `${repoRoot}/scripts/registry.sh`,
        "push",
        "probelet.local/pause:1",
        "probelet/changing:1",
      ]);
      s.events();
      const second = podWith("always-2", { image: changing, imagePullPolicy: "Always" }, [
        "regcred",
      ]);
      assertEquals((await s.sync(second)).startResults.get("app"), null);
      assertEquals(s.events()[0], `Normal Pulling Pulling image "${changing}"`);
      const secondRef = (await s.manager.getPodStatus(second)).containerStatuses[0].imageID;
      assertNotEquals(secondRef, firstRef);
      // The tag on the node is now the pause image's (same ID), and the container runs it.
      const { image: pause } = await s.images.imageStatus({ image: "probelet.local/pause:1" });
      const { image: pulled } = await s.images.imageStatus({ image: changing });
      assertEquals(pulled!.id, pause!.id);
      assert(pulled!.repoDigests.includes(secondRef), `${secondRef} in ${pulled!.repoDigests}`);
    });

    await t.step("IfNotPresent with a preloaded image: already present, no pull", async () => {
      const pod = podWith("local", { image: testImage, imagePullPolicy: "IfNotPresent" });
      assertEquals((await s.sync(pod)).startResults.get("app"), null);
      assertEquals(
        s.events()[0],
        `Normal Pulled Container image "${testImage}" already present on machine and can be accessed by the pod`,
      );
    });

    await t.step("Never with an absent image: ErrImageNeverPull", async () => {
      const absent = `${r.addr}/probelet/never:1`;
      const pod = podWith("never", { image: absent, imagePullPolicy: "Never" });
      assertEquals((await s.sync(pod)).startResults.get("app"), {
        reason: "ErrImageNeverPull",
        message: `Container image "${absent}" is not present with pull policy of Never`,
      });
      assertEquals(s.events(), [
        `Warning ErrImageNeverPull Container image "${absent}" is not present with pull policy of Never`,
        "Warning Failed Error: ErrImageNeverPull",
      ]);
    });

    await t.step("an invalid image name: InvalidImageName", async () => {
      const pod = podWith("invalid", { image: "Probelet/Busybox:1", imagePullPolicy: "Always" });
      const failure = (await s.sync(pod)).startResults.get("app")!;
      assertEquals(failure.reason, "InvalidImageName");
      assertEquals(
        failure.message,
        `Failed to apply default image tag "Probelet/Busybox:1": couldn't parse image name "Probelet/Busybox:1": invalid reference format: repository name (Busybox) must be lowercase`,
      );
    });
  } finally {
    await s.cleanup();
    // Every reference the pulls left (tags and repo digests): while one names the test image's
    // ID, containerd reports that reference as the imageRef of every container of the image.
    const left = (await ctr("images", "ls", "-q")).split("\n").filter((n) =>
      n.startsWith(`${r.addr}/`)
    );
    if (left.length > 0) await ctr("images", "rm", ...left);
  }
});
