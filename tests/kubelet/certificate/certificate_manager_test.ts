/**
 * The rotating certificate manager against a fake API and a fake clock: deadlines, template
 * checks, failures of each step, renewal at the deadline and the hand-over of each certificate.
 * Mirrors k8s.io/client-go/util/certificate/certificate_manager_test.go.
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import {
  CertificateManager,
  type CertificateRequestTemplate,
  defaultKubeletServingGetUsages,
  jitteryDuration,
  type ManagerConfig,
} from "../../../src/kubelet/certificate/certificate_manager.ts";
import {
  newFileStore,
  type Store,
  type TlsCertificate,
} from "../../../src/kubelet/certificate/certificate_store.ts";
import { newKubeletServerCertificateManager } from "../../../src/kubelet/certificate/kubelet.ts";
import { FakeClock, settle } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";
import {
  newForbidden,
  newInternalError,
  newNotFound,
  StatusError,
} from "../../../src/client/errors.ts";
import { FakeClientset } from "../../testing/fake_clientset.ts";
import { newTestSigner } from "../../testing/csr_signer.ts";

const hour = 3600_000;

function leafCert(
  validity: { notBefore: number; notAfter: number },
  names: Partial<CertificateRequestTemplate> = {},
): TlsCertificate {
  return {
    certPem: "",
    keyPem: "",
    leaf: {
      ...validity,
      commonName: names.commonName ?? "",
      organizations: names.organizations ?? [],
      dnsNames: names.dnsNames ?? [],
      ipAddresses: names.ipAddresses ?? [],
      issuer: "CN=test",
    },
  };
}

const noStore: Store = {
  current: () => Promise.reject(new Error("unused")),
  update: () => Promise.reject(new Error("unused")),
};

function testManager(
  cert: TlsCertificate | undefined,
  config: Partial<ManagerConfig> & { clock: FakeClock },
): CertificateManager {
  return new CertificateManager(
    {
      getTemplate: () => ({ commonName: "", organizations: [], dnsNames: [], ipAddresses: [] }),
      signerName: "kubernetes.io/kubelet-serving",
      getUsages: defaultKubeletServingGetUsages,
      certificateStore: noStore,
      ...config,
    },
    cert,
    false,
  );
}

function quiet(): () => void {
  const previous = setLogSink(() => {});
  return () => setLogSink(previous);
}

Deno.test("TestSetRotationDeadline", async (t) => {
  const now = Date.UTC(2026, 10, 27, 8, 0, 0);
  const cases: [string, number, number][] = [
    ["just issued, still good", now - 1 * hour, now + 99 * hour],
    ["half way expired, still good", now - 24 * hour, now + 24 * hour],
    ["mostly expired, still good", now - 69 * hour, now + 31 * hour],
    ["just about expired, should rotate", now - 91 * hour, now + 9 * hour],
    ["nearly expired, should rotate", now - 99 * hour, now + 1 * hour],
    ["already expired, should rotate", now - 10 * hour, now - 1 * hour],
    ["long duration", now - 6 * 30 * 24 * hour, now + 6 * 30 * 24 * hour],
    ["short duration", now - 30_000, now + 30_000],
  ];
  for (const [name, notBefore, notAfter] of cases) {
    await t.step(name, () => {
      const restore = quiet();
      try {
        // A jitter of 0 puts the deadline at the lower bound, 70 % of the lifetime.
        const m = testManager(leafCert({ notBefore, notAfter }), {
          clock: new FakeClock(now),
          random: () => 0,
        });
        assertEquals(m.nextRotationDeadline(), notBefore + (notAfter - notBefore) * 0.7);
      } finally {
        restore();
      }
    });
  }
});

Deno.test("TestJitteryDuration", async (t) => {
  await t.step("70 % at the lowest jitter, 90 % at the highest, 80 % in the middle", () => {
    assertEquals(jitteryDuration(1000, () => 0), 700);
    assertEquals(jitteryDuration(1000, () => 0.5), 800);
    assertEquals(Math.round(jitteryDuration(1000, () => 0.999999)), 900);
  });
  await t.step("the default random source stays within 70–90 %", () => {
    for (let i = 0; i < 1000; i++) {
      const d = jitteryDuration(100 * hour);
      assert(d >= 70 * hour && d <= 90 * hour, String(d / hour));
    }
  });
});

Deno.test("TestCertSatisfiesTemplate", async (t) => {
  const now = Date.UTC(2026, 10, 27, 8, 0, 0);
  const validity = { notBefore: now - hour, notAfter: now + 99 * hour };
  const template: CertificateRequestTemplate = {
    commonName: "system:node:node-1",
    organizations: ["system:nodes"],
    dnsNames: ["node-1"],
    ipAddresses: ["10.0.0.5"],
  };
  const cases: [string, Partial<CertificateRequestTemplate>, boolean][] = [
    ["matches", template, true],
    ["extra names are fine", {
      ...template,
      dnsNames: ["node-1", "other"],
      ipAddresses: ["10.0.0.5", "10.0.0.6"],
      organizations: ["system:nodes", "extra"],
    }, true],
    ["another CN", { ...template, commonName: "system:node:node-2" }, false],
    ["a DNS name missing", { ...template, dnsNames: [] }, false],
    ["an IP address missing", { ...template, ipAddresses: ["10.0.0.6"] }, false],
    ["an organization missing", { ...template, organizations: [] }, false],
  ];
  for (const [name, names, satisfies] of cases) {
    await t.step(name, () => {
      const restore = quiet();
      try {
        const m = testManager(leafCert(validity, names), {
          clock: new FakeClock(now),
          getTemplate: () => template,
          random: () => 0,
        });
        // A certificate that does not satisfy the template is due now.
        assertEquals(m.nextRotationDeadline() === now, !satisfies);
      } finally {
        restore();
      }
    });
  }
});

Deno.test("TestRotateCertCreateCSRError", async () => {
  const restore = quiet();
  try {
    const now = Date.now();
    const client = new FakeClientset();
    client.prependReactor("create", "certificatesigningrequests", () => ({
      handled: true,
      err: newInternalError("create failed"),
    }));
    let failures = 0;
    const m = testManager(leafCert({ notBefore: now - 2 * hour, notAfter: now - hour }), {
      clock: new FakeClock(now),
      clientsetFn: () => client,
      certificateRenewFailure: () => failures++,
    });
    assertEquals(await m.rotateCerts(new AbortController().signal), false);
    assertEquals(failures, 1);
  } finally {
    restore();
  }
});

Deno.test("TestRotateCertWaitingForResultError", async (t) => {
  const restore = quiet();
  try {
    await t.step("the watch fails", async () => {
      const now = Date.now();
      const client = new FakeClientset();
      client.prependWatchReactor("certificatesigningrequests", () => {
        throw newInternalError("watch failed");
      });
      let failures = 0;
      const m = testManager(leafCert({ notBefore: now - 2 * hour, notAfter: now - hour }), {
        clock: new FakeClock(now),
        clientsetFn: () => client,
        certificateRenewFailure: () => failures++,
      });
      assertEquals(await m.rotateCerts(new AbortController().signal), false);
      assertEquals(failures, 1);
    });
    await t.step("nobody approves within certificateWaitTimeout", async () => {
      const now = Date.now();
      const clock = new FakeClock(now);
      const client = new FakeClientset();
      const m = testManager(undefined, {
        clock,
        clientsetFn: () => client,
        certificateWaitTimeoutMs: 60_000,
      });
      let result: boolean | undefined;
      const done = m.rotateCerts(new AbortController().signal).then((r) => result = r);
      for (
        let i = 0;
        i < 1000 && client.tracker.watchCount("certificatesigningrequests") === 0;
        i++
      ) {
        await settle();
      }
      await clock.step(59_999);
      assertEquals(result, undefined);
      await clock.step(1);
      await done;
      assertEquals(result, false);
      assertEquals(client.tracker.watchCount("certificatesigningrequests"), 0);
    });
    await t.step("the request is denied", async () => {
      const clock = new FakeClock(Date.now());
      const client = new FakeClientset();
      const signer = await newTestSigner(client);
      let failures = 0;
      const m = testManager(undefined, {
        clock,
        clientsetFn: () => client,
        certificateRenewFailure: () => failures++,
      });
      const done = m.rotateCerts(new AbortController().signal);
      await waitForRequests(signer, 1, client);
      signer.deny(signer.requests()[0].metadata.name!, "NotMine", "not a node of ours");
      assertEquals(await done, false);
      assertEquals(failures, 1);
      assertEquals(m.current(), undefined);
    });
  } finally {
    restore();
  }
});

Deno.test("TestServerHealth", async (t) => {
  const unexpected = new StatusError({
    code: 500,
    reason: "InternalError",
    message: "an error on the server",
    details: { causes: [{ reason: "UnexpectedServerResponse", message: "proxy" }] },
  });
  const info = { group: "certificates.k8s.io", resource: "certificatesigningrequests" };
  const cases: [string, Error, boolean][] = [
    [
      "unauthorized: an SSL terminating proxy may answer this",
      new StatusError({ code: 401, reason: "Unauthorized", message: "no" }),
      true,
    ],
    ["forbidden: the server works", newForbidden(info, "x", "no"), true],
    ["not found: the server works", newNotFound(info, "x"), true],
    ["unexpected server response: a proxy problem", unexpected, false],
    ["anything else", new Error("connection refused"), false],
  ];
  for (const [name, err, healthy] of cases) {
    await t.step(name, async () => {
      const restore = quiet();
      try {
        const client = new FakeClientset();
        client.prependReactor("create", "certificatesigningrequests", () => ({
          handled: true,
          err,
        }));
        const m = testManager(undefined, {
          clock: new FakeClock(Date.now()),
          clientsetFn: () => client,
        });
        assertEquals(await m.rotateCerts(new AbortController().signal), false);
        assertEquals(m.serverHealthy(), healthy);
      } finally {
        restore();
      }
    });
  }
});

// Lets the manager create its n-th request and start watching it (key generation is real async
// work; the fake's watch has no resourceVersion, so an answer before the watch would be missed).
async function waitForRequests(
  signer: Awaited<ReturnType<typeof newTestSigner>>,
  n: number,
  client: FakeClientset,
): Promise<void> {
  const ready = () =>
    signer.requests().length >= n && client.tracker.watchCount("certificatesigningrequests") > 0;
  for (let i = 0; i < 1000 && !ready(); i++) await settle();
  assertEquals(signer.requests().length, n);
  assert(ready(), "the manager watches its request");
}

Deno.test("TestRotateAtDeadline", async (t) => {
  const restore = quiet();
  const dir = await Deno.makeTempDir();
  const start = Date.now();
  const clock = new FakeClock(start);
  const client = new FakeClientset();
  const signer = await newTestSigner(client);
  const served: TlsCertificate[] = [];
  let next = Promise.withResolvers<void>();
  const m = await newKubeletServerCertificateManager({
    kubeClient: client,
    nodeName: "node-1",
    getAddresses: () => [
      { type: "InternalIP", address: "10.88.99.1" },
      { type: "Hostname", address: "node-1" },
    ],
    certDirectory: join(dir, "pki"),
    clock,
    // The deadline at 80 % of the lifetime, the backoff without jitter.
    random: () => 0.5,
    onCertificate: (c) => {
      served.push(c);
      next.resolve();
    },
  });
  try {
    m.start();
    await t.step("without a certificate it asks for one at once, as kubelet's CSR", async () => {
      assertEquals(m.current(), undefined);
      await waitForRequests(signer, 1, client);
      const csr = signer.requests()[0];
      assertEquals(csr.spec.signerName, "kubernetes.io/kubelet-serving");
      assertEquals(csr.spec.usages, ["digital signature", "server auth"]);
      assertEquals(csr.metadata.generateName, "csr-");
      const req = signer.parse(csr);
      assertEquals(req.subject, "O=system:nodes, CN=system:node:node-1");
      assert(await req.verify(), "the CSR is signed by its key");
      assertEquals(req.publicKey.algorithm.name, "ECDSA");
    });
    await t.step("the issued certificate is stored and handed over", async () => {
      await signer.issue(signer.requests()[0].metadata.name!, {
        notBefore: start,
        notAfter: start + 100_000,
      });
      await next.promise;
      assertEquals(served.length, 1);
      assertEquals(served[0].leaf.commonName, "system:node:node-1");
      assertEquals(served[0].leaf.ipAddresses, ["10.88.99.1"]);
      assertEquals(served[0].leaf.dnsNames, ["node-1"]);
      assertEquals(m.current(), served[0]);
      const current = join(dir, "pki", "kubelet-server-current.pem");
      assert((await Deno.lstat(current)).isSymlink);
      const target = await Deno.readLink(current);
      assert(/kubelet-server-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/.test(target), target);
      assertEquals((await Deno.stat(target)).mode! & 0o777, 0o600);
      const pair = await Deno.readTextFile(current);
      assert(pair.includes("BEGIN CERTIFICATE") && pair.includes("BEGIN EC PRIVATE KEY"));
    });
    await t.step("nothing is asked before the deadline (80 s of 100 s)", async () => {
      next = Promise.withResolvers<void>();
      await clock.step(79_000 - (clock.now() - start));
      assertEquals(signer.requests().length, 1);
    });
    await t.step("at the deadline a new certificate is requested and swapped in", async () => {
      await clock.step(1_000);
      await waitForRequests(signer, 2, client);
      await signer.issue(signer.requests()[1].metadata.name!, {
        notBefore: clock.now(),
        notAfter: clock.now() + 100_000,
      });
      await next.promise;
      assertEquals(served.length, 2);
      assert(served[1].certPem !== served[0].certPem);
      assertEquals(m.current(), served[1]);
      const stored = await (await newFileStore({
        pairNamePrefix: "kubelet-server",
        certDirectory: join(dir, "pki"),
        keyDirectory: join(dir, "pki"),
        certFile: "",
        keyFile: "",
      })).current();
      assertEquals(stored.certPem, served[1].certPem);
      assertEquals(stored.keyPem, served[1].keyPem);
    });
  } finally {
    await m.stop();
    assertEquals(clock.pendingTimers(), 0, "nothing left registered after stop");
    restore();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestRotateOnTemplateChange", async () => {
  const restore = quiet();
  const dir = await Deno.makeTempDir();
  const start = Date.now();
  const clock = new FakeClock(start);
  const client = new FakeClientset();
  const signer = await newTestSigner(client);
  let ip = "10.88.99.1";
  let next = Promise.withResolvers<void>();
  const m = await newKubeletServerCertificateManager({
    kubeClient: client,
    nodeName: "node-1",
    getAddresses: () => [{ type: "InternalIP", address: ip }],
    certDirectory: dir,
    clock,
    random: () => 0.5,
    onCertificate: () => next.resolve(),
  });
  try {
    m.start();
    await waitForRequests(signer, 1, client);
    await signer.issue(signer.requests()[0].metadata.name!, {
      notBefore: start,
      notAfter: start + 100 * hour,
    });
    await next.promise;
    next = Promise.withResolvers<void>();
    // The node's address changes long before the deadline: the template loop notices within a
    // second and a certificate for the new address is requested.
    ip = "10.88.99.2";
    await clock.step(1_000);
    await waitForRequests(signer, 2, client);
    const req = signer.parse(signer.requests()[1]);
    assert(JSON.stringify(req.extensions.map((e) => e.toString())).includes("10.88.99.2"));
    await signer.issue(signer.requests()[1].metadata.name!, {
      notBefore: clock.now(),
      notAfter: clock.now() + 100 * hour,
    });
    await next.promise;
    assertEquals(m.current()?.leaf.ipAddresses, ["10.88.99.2"]);
  } finally {
    await m.stop();
    restore();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestRotateCertsBackoff", async () => {
  // client-go's backoff: 2, 4, 8, 16 s between the first five tries, then every 32 s.
  const restore = quiet();
  try {
    const clock = new FakeClock(Date.now());
    const client = new FakeClientset();
    const tries: number[] = [];
    const start = clock.now();
    client.prependReactor("create", "certificatesigningrequests", () => {
      tries.push(clock.now() - start);
      return { handled: true, err: newInternalError("down") };
    });
    const m = testManager(undefined, {
      clock,
      clientsetFn: () => client,
      random: () => 0,
    });
    // No certificate: the first try is at once.
    m.start();
    for (let i = 0; i < 100 && tries.length < 1; i++) await settle();
    for (const ms of [2000, 4000, 8000, 16000, 32000, 32000]) {
      const before = tries.length;
      await clock.step(ms - 1);
      assertEquals(tries.length, before, `no try ${ms - 1} ms after the last`);
      await clock.step(1);
      for (let i = 0; i < 100 && tries.length === before; i++) await settle();
      assertEquals(tries.length, before + 1);
    }
    assertEquals(tries, [0, 2000, 6000, 14000, 30000, 62000, 94000]);
    await m.stop();
    assertEquals(clock.pendingTimers(), 0);
  } finally {
    restore();
  }
});

Deno.test("TestNewManagerNoRotation", async () => {
  // Without a client there is no rotation: only the stored certificate is used.
  const restore = quiet();
  const dir = await Deno.makeTempDir();
  try {
    const clock = new FakeClock(Date.now());
    const m = await newKubeletServerCertificateManager({
      kubeClient: undefined,
      nodeName: "node-1",
      getAddresses: () => [{ type: "InternalIP", address: "10.0.0.5" }],
      certDirectory: dir,
      clock,
    });
    m.start();
    await clock.step(10_000);
    assertEquals(m.current(), undefined);
    assertEquals(clock.pendingTimers(), 0);
    await m.stop();
  } finally {
    restore();
    await Deno.remove(dir, { recursive: true });
  }
});
