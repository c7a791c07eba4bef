/**
 * Tests of the image manager and pullers.
 * Ports kubelet's pkg/kubelet/images/image_manager_test.go (TestParallelPuller,
 * TestSerializedPuller with the puller table, TestApplyDefaultImageTag,
 * TestPullAndListImageWithPodAnnotations, TestMaxParallelImagePullsLimit, TestEvalCRIPullErr) and
 * its KubeletEnsureSecretPulledImages cases against the in-memory pull records.
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Container, Pod } from "../../../src/api/core/v1/mod.ts";
import type { ImageSpec } from "../../../src/cri_client/api.ts";
import type { Secret, TrackedAuthConfig } from "../../../src/credentialprovider/keyring.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import {
  applyDefaultImageTag,
  evalCRIPullErr,
  newImageManager,
} from "../../../src/kubelet/images/image_manager.ts";
import type { ImagePullService } from "../../../src/kubelet/images/puller.ts";
import {
  ErrImageInspect,
  ErrImageNeverPull,
  ErrImagePull,
  ErrImagePullBackOff,
  ErrInvalidImageName,
  ErrRegistryUnavailable,
  ErrSignatureValidationFailed,
} from "../../../src/kubelet/images/types.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { Backoff } from "../../../src/util/flowcontrol/backoff.ts";
import { TokenBucketRateLimiter } from "../../../src/util/flowcontrol/throttle.ts";

/** kubelet's ctest.FakeRuntime image side: records the calls, holds images, fails on demand. */
class FakeImageService implements ImagePullService {
  calledFunctions: string[] = [];
  images = new Set<string>();
  inspectErr?: Error;
  pullerErr?: Error;
  pulled: { image: ImageSpec; credentials: TrackedAuthConfig[] }[] = [];
  /** Resolves pulls only when released (for the parallel-limit test). */
  gate?: Promise<void>;
  inFlight = 0;
  maxInFlight = 0;

  getImageRef(image: ImageSpec): Promise<string> {
    this.calledFunctions.push("GetImageRef");
    if (this.inspectErr) return Promise.reject(this.inspectErr);
    return Promise.resolve(this.images.has(image.image) ? `sha256:${image.image}` : "");
  }

  async pullImage(image: ImageSpec, credentials: TrackedAuthConfig[]) {
    this.calledFunctions.push("PullImage");
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.gate) await this.gate;
      if (this.pullerErr) throw this.pullerErr;
      this.pulled.push({ image, credentials });
      this.images.add(image.image);
      return { imageRef: `sha256:${image.image}`, credentialsUsed: credentials[0] };
    } finally {
      this.inFlight--;
    }
  }

  getImageSize(_image: ImageSpec): Promise<bigint> {
    this.calledFunctions.push("GetImageSize");
    return Promise.resolve(1234n);
  }
}

interface Expects {
  calls: string[];
  err?: string;
  events: string[];
  msg?: string;
}

interface PullerTestCase {
  testName: string;
  containerImage: string;
  policy: string;
  inspectErr?: Error;
  pullerErr?: Error;
  qps?: number;
  burst?: number;
  expected: Expects[];
}

const pull = (): Expects => ({
  calls: ["PullImage", "GetImageSize"],
  events: ["Pulling", "Pulled"],
});

function pullerTestCases(): PullerTestCase[] {
  const sigErr = "image pull failed for typo_image because the signature validation failed";
  return [
    {
      testName: "image missing, pull",
      containerImage: "missing_image",
      policy: "IfNotPresent",
      expected: [{
        calls: ["GetImageRef", "PullImage", "GetImageSize"],
        events: ["Pulling", "Pulled"],
      }],
    },
    {
      testName: "image present, allow all, don't pull",
      containerImage: "present_image",
      policy: "IfNotPresent",
      expected: Array(3).fill({ calls: ["GetImageRef"], events: ["Pulled"] }),
    },
    {
      testName: "image present, pull",
      containerImage: "present_image",
      policy: "Always",
      expected: [pull(), pull(), pull()],
    },
    {
      testName: "image missing, never pull",
      containerImage: "missing_image",
      policy: "Never",
      expected: Array(3).fill({
        calls: ["GetImageRef"],
        err: ErrImageNeverPull,
        events: ["ErrImageNeverPull"],
      }),
    },
    {
      testName: "image missing, pull if not present, fail on image inspect",
      containerImage: "missing_image",
      policy: "IfNotPresent",
      inspectErr: new Error("unknown inspectError"),
      expected: Array(3).fill({
        calls: ["GetImageRef"],
        err: ErrImageInspect,
        events: ["InspectFailed"],
      }),
    },
    {
      testName: "image missing, unable to fetch",
      containerImage: "typo_image",
      policy: "IfNotPresent",
      pullerErr: new Error("404"),
      expected: [
        { calls: ["GetImageRef", "PullImage"], err: ErrImagePull, events: ["Pulling", "Failed"] },
        { calls: ["GetImageRef", "PullImage"], err: ErrImagePull, events: ["Pulling", "Failed"] },
        { calls: ["GetImageRef"], err: ErrImagePullBackOff, events: ["BackOff"] },
        { calls: ["GetImageRef", "PullImage"], err: ErrImagePull, events: ["Pulling", "Failed"] },
        { calls: ["GetImageRef"], err: ErrImagePullBackOff, events: ["BackOff"] },
        { calls: ["GetImageRef"], err: ErrImagePullBackOff, events: ["BackOff"] },
      ],
    },
    {
      testName: "image present and qps>0, pull",
      containerImage: "present_image",
      policy: "Always",
      qps: 400,
      burst: 600,
      expected: [pull(), pull(), pull()],
    },
    {
      testName: "image present and excessive qps rate, pull",
      containerImage: "present_image",
      policy: "Always",
      qps: 2000,
      burst: 0,
      expected: [
        { calls: [], err: ErrImagePull, events: ["Pulling", "Failed"] },
        { calls: [], err: ErrImagePull, events: ["Pulling", "Failed"] },
        { calls: [], err: ErrImagePullBackOff, events: ["BackOff"] },
      ],
    },
    {
      testName: "invalid image name, no pull",
      containerImage: "FAILED_IMAGE",
      policy: "Always",
      expected: [{ calls: [], err: ErrInvalidImageName, events: ["InspectFailed"] }],
    },
    {
      testName: "invalid image name with http, no pull",
      containerImage: "http://url",
      policy: "Always",
      expected: [{ calls: [], err: ErrInvalidImageName, events: ["InspectFailed"] }],
    },
    {
      testName: "invalid image name with sha256, no pull",
      containerImage: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      policy: "Always",
      expected: [{ calls: [], err: ErrInvalidImageName, events: ["InspectFailed"] }],
    },
    {
      testName: "image missing, SignatureValidationFailed",
      containerImage: "typo_image",
      policy: "IfNotPresent",
      pullerErr: new Error(ErrSignatureValidationFailed),
      expected: [
        {
          calls: ["GetImageRef", "PullImage"],
          err: ErrSignatureValidationFailed,
          events: ["Pulling", "Failed"],
          msg: sigErr,
        },
        {
          calls: ["GetImageRef", "PullImage"],
          err: ErrSignatureValidationFailed,
          events: ["Pulling", "Failed"],
          msg: sigErr,
        },
        {
          calls: ["GetImageRef"],
          err: ErrImagePullBackOff,
          events: ["BackOff"],
          msg: `Back-off pulling image "typo_image": SignatureValidationFailed: ${sigErr}`,
        },
      ],
    },
  ];
}

function pullerTestEnv(c: PullerTestCase, serialized: boolean) {
  const container: Container = { name: "container_name", image: c.containerImage };
  const clock = new FakeClock(0);
  const recorder = new FakeRecorder();
  const service = new FakeImageService();
  service.images.add("present_image:latest");
  service.inspectErr = c.inspectErr;
  service.pullerErr = c.pullerErr;
  const qps = c.qps ?? 0;
  const manager = newImageManager({
    recorder,
    imageService: service,
    // kubelet's test: 1 s doubling to 1 min.
    backOff: new Backoff(clock, { initialMs: 1_000, maxMs: 60_000 }),
    clock,
    serialized,
    // burst 0 at a positive qps: no token ever (Go's rate.Limiter with burst 0).
    limiter: qps > 0
      ? (c.burst ?? 0) > 0
        ? new TokenBucketRateLimiter(clock, { qps, burst: c.burst! })
        : { tryAccept: () => false, wait: () => Promise.resolve(), qps: () => qps }
      : undefined,
  });
  return { manager, clock, recorder, service, container };
}

const testPod: Pod = {
  metadata: { name: "test_pod", namespace: "test-ns", uid: "bar", resourceVersion: "42" },
  spec: { containers: [] },
};

async function runPullerTable(t: Deno.TestContext, serialized: boolean) {
  for (const c of pullerTestCases()) {
    await t.step(c.testName, async () => {
      const { manager, clock, recorder, service, container } = pullerTestEnv(c, serialized);
      for (const [i, expected] of c.expected.entries()) {
        service.calledFunctions = [];
        await clock.step(1_000);
        const result = await manager.ensureImageExists(testPod, {
          objRef: { kind: "Pod", name: "test_pod" },
          requestedImage: container.image!,
          pullSecrets: [],
          pullPolicy: c.policy,
        });
        assertEquals(service.calledFunctions, expected.calls, `attempt ${i}: calls`);
        assertEquals(result.error, expected.err, `attempt ${i}: error`);
        if (expected.msg !== undefined) assertEquals(result.message, expected.msg);
        const reasons = recorder.events.splice(0).map((e) => e.split(" ")[1]);
        assertEquals(reasons, expected.events, `attempt ${i}: events`);
      }
    });
  }
}

Deno.test("TestParallelPuller", async (t) => {
  await runPullerTable(t, false);
});

Deno.test("TestSerializedPuller", async (t) => {
  await runPullerTable(t, true);
});

Deno.test("TestApplyDefaultImageTag", async (t) => {
  const digest = "sha256:e0f1bb84c2c6ab0e7a3e3e0a2a4b0b9d9b4ad4d5a1d7b1d3e2f3c4b5a6978899";
  for (
    const [input, output] of [
      ["root", "root:latest"],
      ["root:tag", "root:tag"],
      [`root@${digest}`, `root@${digest}`],
      [`root:latest@${digest}`, `root:latest@${digest}`],
    ]
  ) {
    await t.step(input, () => assertEquals(applyDefaultImageTag(input), output));
  }
});

Deno.test("TestPullAndListImageWithPodAnnotations", async () => {
  const c = pullerTestCases()[0];
  const { manager, service, clock } = pullerTestEnv(c, true);
  const pod: Pod = {
    ...testPod,
    metadata: {
      ...testPod.metadata,
      annotations: { "kubernetes.io/runtimehandler": "handler_name" },
    },
  };
  await clock.step(1_000);
  const result = await manager.ensureImageExists(pod, {
    objRef: {},
    requestedImage: "missing_image",
    pullSecrets: [],
    pullPolicy: "IfNotPresent",
  });
  assertEquals(result.error, undefined);
  assertEquals(service.pulled.length, 1);
  assertEquals(service.pulled[0].image.image, "missing_image:latest");
  assertEquals(service.pulled[0].image.annotations, {
    "kubernetes.io/runtimehandler": "handler_name",
  });
});

Deno.test("TestMaxParallelImagePullsLimit", async () => {
  const clock = new FakeClock(0);
  const service = new FakeImageService();
  let release!: () => void;
  service.gate = new Promise((r) => release = r);
  const manager = newImageManager({
    recorder: new FakeRecorder(),
    imageService: service,
    backOff: new Backoff(clock, { initialMs: 1_000, maxMs: 60_000 }),
    clock,
    serialized: false,
    maxParallelImagePulls: 3,
  });
  const pulls = Array.from(
    { length: 5 },
    (_, i) =>
      manager.ensureImageExists({ ...testPod, metadata: { ...testPod.metadata, uid: `p${i}` } }, {
        objRef: {},
        requestedImage: `image_${i}`,
        pullSecrets: [],
        pullPolicy: "Always",
      }),
  );
  // Let every pull reach the service or the limit.
  for (let i = 0; i < 20; i++) await Promise.resolve();
  assertEquals(service.inFlight, 3);
  release();
  const results = await Promise.all(pulls);
  assert(results.every((r) => r.error === undefined));
  assertEquals(service.maxInFlight, 3);
  assertEquals(service.pulled.length, 5);
});

Deno.test("TestSerializedPullerOneAtATime", async () => {
  const clock = new FakeClock(0);
  const service = new FakeImageService();
  let release!: () => void;
  service.gate = new Promise((r) => release = r);
  const manager = newImageManager({
    recorder: new FakeRecorder(),
    imageService: service,
    backOff: new Backoff(clock, { initialMs: 1_000, maxMs: 60_000 }),
    clock,
  });
  const pulls = ["a", "b", "c"].map((image) =>
    manager.ensureImageExists(testPod, {
      objRef: {},
      requestedImage: image,
      pullSecrets: [],
      pullPolicy: "Always",
    })
  );
  for (let i = 0; i < 20; i++) await Promise.resolve();
  assertEquals(service.inFlight, 1);
  release();
  await Promise.all(pulls);
  assertEquals(service.maxInFlight, 1);
  assertEquals(service.pulled.map((p) => p.image.image), ["a:latest", "b:latest", "c:latest"]);
});

Deno.test("TestEvalCRIPullErr", async (t) => {
  const cases: [string, Error, string, string][] = [
    ["fallback error", new Error("test"), "test", ErrImagePull],
    [
      "registry is unavailable",
      new Error(ErrRegistryUnavailable),
      "image pull failed for test because the registry is unavailable",
      ErrRegistryUnavailable,
    ],
    [
      "registry is unavailable with additional error message",
      new Error(`${ErrRegistryUnavailable}: foo`),
      "image pull failed for test because the registry is unavailable: foo",
      ErrRegistryUnavailable,
    ],
    [
      "signature is invalid",
      new Error(ErrSignatureValidationFailed),
      "image pull failed for test because the signature validation failed",
      ErrSignatureValidationFailed,
    ],
    [
      "signature is invalid with additional error message (wrapped)",
      new Error(`${ErrSignatureValidationFailed}: bar`),
      "image pull failed for test because the signature validation failed: bar",
      ErrSignatureValidationFailed,
    ],
  ];
  for (const [name, input, message, error] of cases) {
    await t.step(name, () => assertEquals(evalCRIPullErr("test", input), { message, error }));
  }
});

function dockerConfigSecret(
  meta: { namespace: string; name: string; uid: string },
  repo: string,
  password = "pass",
): Secret {
  const auths = { [repo]: { auth: btoa(`user:${password}`) } };
  return {
    metadata: meta,
    type: "kubernetes.io/dockerconfigjson",
    data: { ".dockerconfigjson": btoa(JSON.stringify({ auths })) },
  };
}

Deno.test("TestEnsureSecretPulledImages", async (t) => {
  const setUp = () => {
    const env = pullerTestEnv(pullerTestCases()[0], true);
    env.service.images.clear();
    return env;
  };
  const ensure = (
    env: ReturnType<typeof setUp>,
    image: string,
    secrets: Secret[],
    policy = "IfNotPresent",
  ) =>
    env.manager.ensureImageExists(testPod, {
      objRef: {},
      requestedImage: image,
      pullSecrets: secrets,
      pullPolicy: policy,
    });
  const meta = { namespace: "testns", name: "testname", uid: "testuid" };
  const secret = dockerConfigSecret(meta, "docker.io/library/private_image");

  await t.step("pulled with a secret: the credentials reach the pull", async () => {
    const env = setUp();
    assertEquals((await ensure(env, "private_image", [secret])).error, undefined);
    assertEquals(env.service.pulled[0].credentials.map((c) => [c.username, c.password]), [[
      "user",
      "pass",
    ]]);
    assertEquals(env.service.pulled[0].credentials[0].source, meta);
  });

  await t.step("image pulled with a secret, pod without it: pull again", async () => {
    const env = setUp();
    await ensure(env, "private_image", [secret]);
    env.service.calledFunctions = [];
    env.recorder.events.splice(0);
    assertEquals((await ensure(env, "private_image", [])).error, undefined);
    assertEquals(env.service.calledFunctions, ["GetImageRef", "PullImage", "GetImageSize"]);
  });

  await t.step("image pulled with a secret, pod with the same secret: no pull", async () => {
    const env = setUp();
    await ensure(env, "private_image", [secret]);
    env.service.calledFunctions = [];
    env.recorder.events.splice(0);
    assertEquals((await ensure(env, "private_image", [secret])).error, undefined);
    assertEquals(env.service.calledFunctions, ["GetImageRef"]);
    assertEquals(env.recorder.events, [
      'Normal Pulled Container image "private_image" already present on machine and can be accessed by the pod',
    ]);
  });

  await t.step("same credentials in another secret: no pull", async () => {
    const env = setUp();
    await ensure(env, "private_image", [secret]);
    env.service.calledFunctions = [];
    const other = dockerConfigSecret(
      { ...meta, name: "other", uid: "otheruid" },
      "docker.io/library/private_image",
    );
    assertEquals((await ensure(env, "private_image", [other])).error, undefined);
    assertEquals(env.service.calledFunctions, ["GetImageRef"]);
  });

  await t.step("another secret with other credentials: pull", async () => {
    const env = setUp();
    await ensure(env, "private_image", [secret]);
    env.service.calledFunctions = [];
    const other = dockerConfigSecret(
      { ...meta, uid: "someothertestuid" },
      "docker.io/library/private_image",
      "other-pass",
    );
    assertEquals((await ensure(env, "private_image", [other])).error, undefined);
    assertEquals(env.service.calledFunctions, ["GetImageRef", "PullImage", "GetImageSize"]);
  });

  await t.step("present, not accessible, Never: ErrImageNeverPull", async () => {
    const env = setUp();
    await ensure(env, "private_image", [secret]);
    assertEquals((await ensure(env, "private_image", [], "Never")).error, ErrImageNeverPull);
  });

  await t.step("pulled without credentials: every pod may use it", async () => {
    const env = setUp();
    await ensure(env, "public_image", []);
    env.service.calledFunctions = [];
    assertEquals((await ensure(env, "public_image", [])).error, undefined);
    assertEquals(env.service.calledFunctions, ["GetImageRef"]);
  });
});
