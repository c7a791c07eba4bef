/**
 * The secure port's auth: kubelet's path → subresource mapping, the filter's 401/403/500 texts,
 * and the delegating authenticator/authorizer (x509 against a CA, TokenReview, SubjectAccessReview
 * with their caches on the fake clock). Ports kubelet's pkg/kubelet/server/auth_test.go and the
 * auth cases of server_test.go (TestAuthFilters, TestAuthenticationError,
 * TestAuthenticationFailure, TestAuthorizationSuccess).
 * @module
 */
import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import {
  type Attributes,
  type AuthInterface,
  isSubpath,
  newNodeAuthorizerAttributesGetter,
  type UserInfo,
  withAuth,
} from "../../../src/kubelet/server/auth.ts";
import {
  newDelegatingAuthenticator,
  newTokenReviewAuthenticator,
  newWebhookAuthorizer,
  newX509Authenticator,
} from "../../../src/kubelet/server/delegating_auth.ts";
import { newCertificateAuthority } from "../../../src/util/cert/cert.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const user: UserInfo = { name: "test", groups: [] };

Deno.test("TestIsSubPath", async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ["/stats/summary", "/stats/", true],
    ["/stats", "/stats/", true],
    ["/statsx", "/stats", false],
    ["/metrics/cadvisor", "/metrics", true],
    ["/metricsx", "/metrics", false],
    ["/pods", "/pods", true],
    ["/pods/", "/pods", true],
    ["/podsx", "/pods", false],
    ["/", "/pods", false],
  ];
  for (const [subpath, path, want] of cases) {
    await t.step(`${subpath} under ${path}: ${want}`, () => {
      assertEquals(isSubpath(subpath, path), want);
    });
  }
});

Deno.test("TestAuthFilters", async (t) => {
  // kubelet's AuthzTestCases: each path and the subresources asked, in order.
  const cases: Array<[string, string, string[]]> = [
    ["GET", "/containerLogs/default/web/app", ["proxy"]],
    ["GET", "/logs/", ["log"]],
    ["GET", "/logs/kubelet.log", ["log"]],
    ["GET", "/stats/summary", ["stats"]],
    ["GET", "/metrics", ["metrics"]],
    ["GET", "/metrics/probes", ["metrics"]],
    ["GET", "/metrics/resource", ["metrics"]],
    ["GET", "/pods", ["pods", "proxy"]],
    ["GET", "/runningpods/", ["pods", "proxy"]],
    ["GET", "/healthz", ["healthz", "proxy"]],
    ["GET", "/configz", ["configz", "proxy"]],
    ["GET", "/statusz", ["statusz", "proxy"]],
    ["POST", "/exec/default/web/app", ["proxy"]],
    ["POST", "/checkpoint/default/web/app", ["checkpoint"]],
    ["GET", "/events", ["proxy"]],
  ];
  const getter = newNodeAuthorizerAttributesGetter("node-1");
  const verbs: Record<string, string> = { GET: "get", POST: "create" };
  for (const [method, path, want] of cases) {
    await t.step(`${method} ${path} → ${want.join(",")}`, async () => {
      const attrs = getter.getRequestAttributes(user, new Request(`https://n${path}`, { method }));
      assertEquals(attrs.map((a) => a.subresource), want);
      for (const a of attrs) {
        assertEquals(
          [a.verb, a.resource, a.name, a.apiVersion, a.namespace, a.apiGroup, a.path],
          [verbs[method], "nodes", "node-1", "v1", "", "", path],
        );
      }
      // The filter asks in that order and stops at the first allow.
      const asked: string[] = [];
      const auth = fakeAuth({
        authorize: (a) => {
          asked.push(a.subresource);
          return a.subresource === want.at(-1) ? "Allow" : "Deny";
        },
      });
      const res = await withAuth(auth, () => new Response("handled"))({
        request: new Request(`https://n${path}`, { method }),
        peerCertificates: [],
      });
      assertEquals([res.status, await res.text()], [200, "handled"]);
      assertEquals(asked, want);
    });
  }
  await t.step("fine-grained authorization off: /pods asks proxy only", () => {
    const attrs = newNodeAuthorizerAttributesGetter("node-1", { fineGrained: false })
      .getRequestAttributes(user, new Request("https://n/pods"));
    assertEquals(attrs.map((a) => a.subresource), ["proxy"]);
  });
});

function fakeAuth(o: {
  authenticate?: () => UserInfo | undefined | Error;
  authorize?: (a: Attributes) => "Allow" | "Deny" | "NoOpinion" | Error;
}): AuthInterface {
  const getter = newNodeAuthorizerAttributesGetter("node-1");
  return {
    authenticateRequest: () => {
      const r = o.authenticate ? o.authenticate() : user;
      return r instanceof Error ? Promise.reject(r) : Promise.resolve(r);
    },
    getRequestAttributes: (u, r) => getter.getRequestAttributes(u, r),
    authorize: (a) => {
      const r = o.authorize ? o.authorize(a) : "Allow";
      return r instanceof Error ? Promise.reject(r) : Promise.resolve({ decision: r, reason: "" });
    },
  };
}

async function call(auth: AuthInterface, path = "/pods"): Promise<[number, string]> {
  let called = false;
  const res = await withAuth(auth, () => {
    called = true;
    return new Response("handled");
  })({ request: new Request(`https://n${path}`), peerCertificates: [] });
  const text = await res.text();
  assertEquals(called, res.status === 200);
  return [res.status, text];
}

Deno.test("TestAuthenticationError", async () => {
  assertEquals(await call(fakeAuth({ authenticate: () => new Error("boom") })), [
    401,
    "Unauthorized",
  ]);
});

Deno.test("TestAuthenticationFailure", async () => {
  assertEquals(await call(fakeAuth({ authenticate: () => undefined })), [401, "Unauthorized"]);
});

Deno.test("TestAuthorizationSuccess", async () => {
  assertEquals(await call(fakeAuth({})), [200, "handled"]);
});

Deno.test("TestAuthorizationFailure", async (t) => {
  await t.step("denied on every subresource: kubelet's 403 text", async () => {
    assertEquals(
      await call(fakeAuth({ authorize: () => "Deny" })),
      [403, "Forbidden (user=test, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"],
    );
    assertEquals(
      await call(fakeAuth({ authorize: () => "NoOpinion" }), "/containerLogs/ns/p/c"),
      [403, "Forbidden (user=test, verb=get, resource=nodes, subresource(s)=[proxy])\n"],
    );
  });
  await t.step("an authorizer error is a 500", async () => {
    assertEquals(
      await call(fakeAuth({ authorize: () => new Error("webhook down") }), "/stats/summary"),
      [500, "Authorization error (user=test, verb=get, resource=nodes, subresource=stats)"],
    );
  });
});

Deno.test("TestX509Authenticator", async (t) => {
  const clock = new FakeClock(Date.now());
  const ca = await newCertificateAuthority("test-ca");
  const other = await newCertificateAuthority("other-ca");
  const roots = [new X509Certificate(ca.certPem)];
  const authn = newX509Authenticator(() => roots, clock);
  const ctx = (pem: string) => ({
    request: new Request("https://n/pods"),
    peerCertificates: [new X509Certificate(pem)],
  });
  await t.step("a certificate the CA signed: CN is the user, O the groups", async () => {
    const c = await ca.sign({
      commonName: "kube-apiserver",
      organizations: ["system:masters", "b"],
    });
    assertEquals(await authn.authenticateRequest(ctx(c.certPem)), {
      name: "kube-apiserver",
      groups: ["system:masters", "b"],
    });
  });
  await t.step("no certificate: no opinion", async () => {
    assertEquals(
      await authn.authenticateRequest({ request: new Request("https://n/"), peerCertificates: [] }),
      undefined,
    );
  });
  await t.step("another CA's certificate is an error", async () => {
    const c = await other.sign({ commonName: "mallory" });
    await rejects(
      authn.authenticateRequest(ctx(c.certPem)),
      /certificate signed by unknown authority/,
    );
  });
  await t.step("a serving-only certificate is refused", async () => {
    const c = await ca.sign({ commonName: "server" }, { usage: "server" });
    await rejects(authn.authenticateRequest(ctx(c.certPem)), /incompatible key usage/);
  });
  await t.step("an expired certificate is refused", async () => {
    const c = await ca.sign({ commonName: "old" }, { notAfter: new Date(clock.now() + 1000) });
    await clock.step(60_000);
    await rejects(authn.authenticateRequest(ctx(c.certPem)), /expired or is not yet valid/);
  });
});

Deno.test("TestDelegatingAuthenticator", async (t) => {
  const clock = new FakeClock(Date.now());
  const posted: unknown[] = [];
  const tokens = newTokenReviewAuthenticator((path, body) => {
    posted.push([path, body]);
    const token = (body as { spec: { token: string } }).spec.token;
    return Promise.resolve(
      token === "good"
        ? { status: { authenticated: true, user: { username: "alice", groups: ["devs"] } } }
        : { status: { authenticated: false } },
    );
  }, { clock, cacheTtlMs: 120_000 });
  const req = (auth?: string) => ({
    request: new Request("https://n/pods", { headers: auth ? { authorization: auth } : {} }),
    peerCertificates: [],
  });
  await t.step("a token the API server knows; system:authenticated added", async () => {
    const authn = newDelegatingAuthenticator([tokens], { anonymous: false });
    assertEquals(await authn.authenticateRequest(req("Bearer good")), {
      name: "alice",
      groups: ["devs", "system:authenticated"],
      uid: undefined,
      extra: undefined,
    });
    assertEquals(posted, [[
      "/apis/authentication.k8s.io/v1/tokenreviews",
      { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token: "good" } },
    ]]);
  });
  await t.step("cached for the TTL, asked again after it", async () => {
    const authn = newDelegatingAuthenticator([tokens], { anonymous: false });
    await authn.authenticateRequest(req("Bearer good"));
    assertEquals(tokens.reviews, 1);
    await clock.step(119_999);
    await authn.authenticateRequest(req("Bearer good"));
    assertEquals(tokens.reviews, 1);
    // apimachinery's Expiring cache: gone at the expiry itself.
    await clock.step(1);
    await authn.authenticateRequest(req("Bearer good"));
    assertEquals(tokens.reviews, 2);
  });
  await t.step("a refused token is cached too, for the same TTL", async () => {
    const authn = newDelegatingAuthenticator([tokens], { anonymous: false });
    const before = tokens.reviews;
    await rejects(authn.authenticateRequest(req("Bearer nope")), /invalid bearer token/);
    await rejects(authn.authenticateRequest(req("Bearer nope")), /invalid bearer token/);
    assertEquals(tokens.reviews, before + 1);
    await clock.step(120_000);
    await rejects(authn.authenticateRequest(req("Bearer nope")), /invalid bearer token/);
    assertEquals(tokens.reviews, before + 2);
  });
  await t.step("a review that answers with an error is not cached", async () => {
    let n = 0;
    const failing = newTokenReviewAuthenticator(() => {
      n++;
      return Promise.resolve({ status: { authenticated: false, error: "webhook down" } });
    }, { clock, cacheTtlMs: 120_000 });
    const authn = newDelegatingAuthenticator([failing], { anonymous: false });
    await rejects(authn.authenticateRequest(req("Bearer x")), /webhook down/);
    await rejects(authn.authenticateRequest(req("Bearer x")), /webhook down/);
    assertEquals(n, 2);
  });
  await t.step("a bad token is refused even with anonymous allowed", async () => {
    const authn = newDelegatingAuthenticator([tokens], { anonymous: true });
    await rejects(authn.authenticateRequest(req("Bearer bad")), /invalid bearer token/);
  });
  await t.step("no credential: anonymous only when allowed", async () => {
    assertEquals(
      await newDelegatingAuthenticator([tokens], { anonymous: false }).authenticateRequest(req()),
      undefined,
    );
    assertEquals(
      await newDelegatingAuthenticator([tokens], { anonymous: true }).authenticateRequest(req()),
      { name: "system:anonymous", groups: ["system:unauthenticated"] },
    );
  });
});

Deno.test("TestWebhookAuthorizer", async (t) => {
  const clock = new FakeClock(Date.now());
  const specs: unknown[] = [];
  const authz = newWebhookAuthorizer((path, body) => {
    assertEquals(path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
    const spec = (body as { spec: { user: string } }).spec;
    specs.push(spec);
    return Promise.resolve({ status: { allowed: spec.user === "kube-apiserver", reason: "rbac" } });
  }, { clock, authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000 });
  const attrs = (name: string): Attributes =>
    newNodeAuthorizerAttributesGetter("node-1").getRequestAttributes(
      { name, groups: ["system:authenticated"] },
      new Request("https://n/containerLogs/ns/p/c"),
    )[0];
  await t.step("the review carries kubelet's attributes", async () => {
    assertEquals(await authz.authorize(attrs("kube-apiserver")), {
      decision: "Allow",
      reason: "rbac",
    });
    assertEquals(specs[0], {
      resourceAttributes: {
        namespace: "",
        verb: "get",
        group: "",
        version: "v1",
        resource: "nodes",
        subresource: "proxy",
        name: "node-1",
      },
      user: "kube-apiserver",
      uid: undefined,
      groups: ["system:authenticated"],
      extra: undefined,
    });
  });
  await t.step("allowed answers cached 5m, denied ones 30s", async () => {
    assertEquals((await authz.authorize(attrs("bob"))).decision, "NoOpinion");
    const before = authz.reviews;
    await authz.authorize(attrs("bob"));
    await authz.authorize(attrs("kube-apiserver"));
    assertEquals(authz.reviews, before);
    // LRUExpireCache keeps an answer until the time is past its TTL.
    await clock.step(30_000);
    await authz.authorize(attrs("bob"));
    assertEquals(authz.reviews, before);
    await clock.step(1);
    await authz.authorize(attrs("bob"));
    await authz.authorize(attrs("kube-apiserver"));
    assertEquals(authz.reviews, before + 1);
    await clock.step(269_999);
    await authz.authorize(attrs("kube-apiserver"));
    assertEquals(authz.reviews, before + 1);
    await clock.step(1);
    await authz.authorize(attrs("kube-apiserver"));
    assertEquals(authz.reviews, before + 2);
  });
});
