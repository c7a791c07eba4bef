/**
 * The secure port on a real TLS socket (127.0.0.1, port 0): the API server's client certificate
 * let in, an ordinary user refused with kubelet's 403 text, no or a foreign certificate refused
 * with 401; and `/containerLogs` with kubelet's query parameters, errors, and a follow streamed
 * chunk by chunk. Ports kubelet's server_test.go (TestContainerLogs, TestContainerLogsWithTail,
 * TestContainerLogsWithLegacyTail, TestContainerLogsWithTailAll, TestContainerLogsWithInvalidTail,
 * TestContainerLogsWithFollow, TestServeRunInContainer's auth part) and kubelet_pods_test.go's
 * TestValidateContainerLogStatus.
 * @module
 */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import type { PodStatus } from "../../../src/api/core/v1/mod.ts";
import { validateContainerLogStatus } from "../../../src/kubelet/kubelet_pods.ts";
import { EventStore } from "../../../src/kubelet/kubelet_events.ts";
import { newProberMetrics } from "../../../src/kubelet/prober/metrics.ts";
import {
  newDelegatingAuthenticator,
  newKubeletAuth,
  newWebhookAuthorizer,
  newX509Authenticator,
} from "../../../src/kubelet/server/delegating_auth.ts";
import { newSecureHandler, serveKubeletServer } from "../../../src/kubelet/server/server.ts";
import { generateSelfSignedCertKey, newCertificateAuthority } from "../../../src/util/cert/cert.ts";
import { FakeClock, RealClock } from "../../../src/util/clock.ts";

const threeLines = "2016-10-06T00:17:09.669794202Z stdout F line1\n" +
  "2016-10-06T00:17:10.669794202Z stderr F line2\n" +
  "2016-10-06T00:17:11.669794202Z stdout F line3\n";

function runningStatus(): PodStatus {
  return {
    phase: "Running",
    containerStatuses: [{
      name: "app",
      ready: true,
      restartCount: 1,
      image: "busybox",
      imageID: "",
      containerID: "containerd://c2",
      state: { running: { startedAt: "2016-10-06T00:17:00Z" } },
      lastState: { terminated: { exitCode: 1, containerID: "containerd://c1" } },
    }],
  } as PodStatus;
}

async function fixture(state = "CONTAINER_RUNNING") {
  const dir = await Deno.makeTempDir();
  const logs: Record<string, string> = { c1: `${dir}/0.log`, c2: `${dir}/1.log` };
  await Deno.writeTextFile(logs.c1, "2016-10-06T00:16:00Z stdout F previous\n");
  await Deno.writeTextFile(logs.c2, threeLines);
  const status = runningStatus();
  const source = {
    events: new EventStore({ clock: new FakeClock(0), limit: 3 }),
    metrics: newProberMetrics(),
    clock: new RealClock(),
    pods: () => [{
      metadata: { name: "web", namespace: "default", uid: "u1" },
      spec: { containers: [{ name: "app" }] },
      status,
    }],
    runtime: {
      containerStatus: (id: string) =>
        logs[id]
          ? Promise.resolve({ status: { logPath: logs[id], state } })
          : Promise.reject(new Error("not found")),
    },
  };
  // deno-lint-ignore no-explicit-any
  return { dir, logs, status, source: source as any };
}

Deno.test("TestContainerLogs", async (t) => {
  const { dir, source } = await fixture("CONTAINER_EXITED");
  const handler = newSecureHandler(source);
  const get = async (path: string): Promise<[number, string]> => {
    const res = await handler(new Request(`https://n${path}`));
    return [res.status, await res.text()];
  };
  try {
    await t.step("TestContainerLogs", async () => {
      assertEquals(await get("/containerLogs/default/web/app"), [200, "line1\nline2\nline3\n"]);
    });
    await t.step("TestContainerLogsWithTail", async () => {
      assertEquals(await get("/containerLogs/default/web/app?tailLines=1"), [200, "line3\n"]);
    });
    await t.step("TestContainerLogsWithLegacyTail", async () => {
      assertEquals(await get("/containerLogs/default/web/app?tail=2"), [200, "line2\nline3\n"]);
    });
    await t.step("TestContainerLogsWithTailAll", async () => {
      assertEquals(await get("/containerLogs/default/web/app?tail=all"), [
        200,
        "line1\nline2\nline3\n",
      ]);
    });
    await t.step("TestContainerLogsWithInvalidTail", async () => {
      assertEquals(await get("/containerLogs/default/web/app?tail=-1"), [
        422,
        `{"message": "Invalid request."}`,
      ]);
    });
    await t.step("undecodable query", async () => {
      assertEquals(await get("/containerLogs/default/web/app?tailLines=x"), [
        400,
        `{"message": "Unable to decode query."}`,
      ]);
    });
    await t.step("previous, limitBytes, timestamps, sinceTime, stream", async () => {
      assertEquals(await get("/containerLogs/default/web/app?previous=true"), [200, "previous\n"]);
      assertEquals(await get("/containerLogs/default/web/app?limitBytes=8"), [200, "line1\nli"]);
      assertEquals(await get("/containerLogs/default/web/app?timestamps=true&tailLines=1"), [
        200,
        "2016-10-06T00:17:11.669794202Z line3\n",
      ]);
      assertEquals(
        await get("/containerLogs/default/web/app?sinceTime=2016-10-06T00:17:10.7Z"),
        [200, "line3\n"],
      );
      assertEquals(await get("/containerLogs/default/web/app?stream=Stderr"), [200, "line2\n"]);
      assertEquals((await get("/containerLogs/default/web/app?stream=Stderr&tailLines=1"))[0], 422);
    });
    await t.step("missing pod and container", async () => {
      assertEquals(await get("/containerLogs/default/nope/app"), [
        404,
        `pod "nope" does not exist`,
      ]);
      assertEquals(await get("/containerLogs/default/web/nope"), [
        404,
        `container "nope" not found in pod "web"`,
      ]);
      assertEquals(await get("/containerLogs/default/web/"), [
        400,
        `{"message": "Missing container name."}`,
      ]);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("TestValidateContainerLogStatus", async (t) => {
  const base = runningStatus().containerStatuses![0];
  const cases: Array<[string, Partial<typeof base>, boolean, string]> = [
    ["running", {}, false, "containerd://c2"],
    ["previous", {}, true, "containerd://c1"],
    [
      "previous without a last termination",
      { lastState: {} },
      true,
      'previous terminated container "app" in pod "web" not found',
    ],
    [
      "waiting on a pull",
      { state: { waiting: { reason: "ImagePullBackOff" } }, lastState: {} },
      false,
      'container "app" in pod "web" is waiting to start: trying and failing to pull image',
    ],
    [
      "waiting, ErrImagePull",
      { state: { waiting: { reason: "ErrImagePull" } }, lastState: {} },
      false,
      `container "app" in pod "web" is waiting to start: image can't be pulled`,
    ],
    [
      "waiting, ContainerCreating",
      { state: { waiting: { reason: "ContainerCreating" } }, lastState: {} },
      false,
      'container "app" in pod "web" is waiting to start: ContainerCreating',
    ],
    [
      "terminated without an ID falls back to the last one",
      { state: { terminated: { exitCode: 0 } } },
      false,
      "containerd://c1",
    ],
    [
      "terminated with no ID at all",
      { state: { terminated: { exitCode: 0 } }, lastState: {} },
      false,
      'container "app" in pod "web" is terminated',
    ],
    [
      "no state",
      { state: {}, lastState: {} },
      false,
      'container "app" in pod "web" is waiting to start - no logs yet',
    ],
  ];
  for (const [name, patch, previous, want] of cases) {
    await t.step(name, () => {
      const status = { phase: "Running", containerStatuses: [{ ...base, ...patch }] } as PodStatus;
      if (want.includes("://")) {
        assertEquals(validateContainerLogStatus("web", status, "app", previous), want);
      } else {
        throws(() => validateContainerLogStatus("web", status, "app", previous), { message: want });
      }
    });
  }
  await t.step("unknown container", () => {
    throws(() => validateContainerLogStatus("web", { phase: "Running" }, "x", false), {
      message: 'container "x" in pod "web" is not available',
    });
  });
});

Deno.test("TestServeSecure", async (t) => {
  const { dir, logs, source } = await fixture();
  const ca = await newCertificateAuthority("test-client-ca");
  const other = await newCertificateAuthority("other-ca");
  const serving = await generateSelfSignedCertKey("127.0.0.1");
  const apiserver = await ca.sign({
    commonName: "kube-apiserver-kubelet-client",
    organizations: ["kubeadm:cluster-admins"],
  });
  const alice = await ca.sign({ commonName: "alice" });
  const mallory = await other.sign({ commonName: "kube-apiserver-kubelet-client" });
  const clock = new RealClock();
  // The API server's RBAC, as SubjectAccessReview answers it: only the API server's user.
  const authz = newWebhookAuthorizer((_path, body) => {
    const spec = (body as { spec: { user: string } }).spec;
    return Promise.resolve({ status: { allowed: spec.user === "kube-apiserver-kubelet-client" } });
  }, { clock, authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000 });
  const authn = newDelegatingAuthenticator(
    [newX509Authenticator(() => [new X509Certificate(ca.certPem)], clock)],
    { anonymous: false },
  );
  const server = await serveKubeletServer(source, {
    hostname: "127.0.0.1",
    port: 0,
    certificate: serving,
    auth: newKubeletAuth(authn, "node-1", authz),
    requestClientCert: true,
  });
  const clientFor = (c?: { certPem: string; keyPem: string }) =>
    Deno.createHttpClient({
      caCerts: [serving.certPem],
      ...(c ? { cert: c.certPem, key: c.keyPem } : {}),
    });
  const get = async (
    client: Deno.HttpClient,
    path: string,
  ): Promise<[number, string]> => {
    const res = await fetch(`https://127.0.0.1:${server.port}${path}`, { client });
    return [res.status, await res.text()];
  };
  const clients = {
    apiserver: clientFor(apiserver),
    alice: clientFor(alice),
    none: clientFor(),
    mallory: clientFor(mallory),
  };
  try {
    await t.step("the API server's client certificate is let in", async () => {
      assertEquals(await get(clients.apiserver, "/healthz"), [200, "ok"]);
      assertEquals(await get(clients.apiserver, "/containerLogs/default/web/app?tailLines=1"), [
        200,
        "line3\n",
      ]);
    });
    await t.step("an ordinary user is refused with kubelet's text", async () => {
      assertEquals(await get(clients.alice, "/containerLogs/default/web/app"), [
        403,
        "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])\n",
      ]);
      assertEquals(await get(clients.alice, "/pods"), [
        403,
        "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])\n",
      ]);
    });
    await t.step("no certificate, or one another CA signed: 401", async () => {
      assertEquals(await get(clients.none, "/healthz"), [401, "Unauthorized"]);
      assertEquals(await get(clients.mallory, "/healthz"), [401, "Unauthorized"]);
    });
    await t.step("a follow streams lines as they are written", async () => {
      const ac = new AbortController();
      const res = await fetch(
        `https://127.0.0.1:${server.port}/containerLogs/default/web/app?follow=true&tailLines=1`,
        { client: clients.apiserver, signal: ac.signal },
      );
      assertEquals(res.status, 200);
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      let text = "";
      const readUntil = async (want: string) => {
        while (!text.endsWith(want)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`stream ended at ${JSON.stringify(text)}`);
          text += dec.decode(value);
        }
      };
      await readUntil("line3\n");
      await Deno.writeTextFile(logs.c2, "2016-10-06T00:17:12Z stdout F line4\n", { append: true });
      await readUntil("line4\n");
      assertEquals(text, "line3\nline4\n");
      ac.abort();
      await reader.cancel().catch(() => {});
    });
  } finally {
    for (const c of Object.values(clients)) c.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
