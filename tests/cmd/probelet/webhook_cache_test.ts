/**
 * The webhook cache flags reach the authenticator and authorizer `buildAuth` makes:
 * `--authentication-token-webhook-cache-ttl`, `--authorization-webhook-cache-authorized-ttl` and
 * `--authorization-webhook-cache-unauthorized-ttl`, on the fake clock, through the secure port's
 * filter (kubelet's `BuildAuth` with the delegating authenticator and authorizer configs).
 * Mirrors kubelet's cmd/kubelet/app/auth.go.
 * @module
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { buildAuth } from "../../../src/cmd/probelet/auth.ts";
import { parseFlags } from "../../../src/cmd/probelet/flags.ts";
import { withAuth } from "../../../src/kubelet/server/auth.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";

Deno.test("TestWebhookCacheTTLFlags", async (t) => {
  const previous = setLogSink(() => {});
  try {
    const clock = new FakeClock(Date.now());
    const posts: Record<string, number> = { tokenreviews: 0, subjectaccessreviews: 0 };
    const flags = parseFlags([
      "--node-name=node-1",
      "--authentication-token-webhook",
      "--authentication-token-webhook-cache-ttl=10s",
      "--authorization-mode=Webhook",
      "--authorization-webhook-cache-authorized-ttl=20s",
      "--authorization-webhook-cache-unauthorized-ttl=5s",
    ]);
    const auth = await buildAuth(flags, {
      clock,
      post: () => (path, body) => {
        const kind = path.split("/").at(-1)!;
        posts[kind]++;
        if (kind === "tokenreviews") {
          const token = (body as { spec: { token: string } }).spec.token;
          return Promise.resolve({
            status: { authenticated: true, user: { username: token, groups: [] } },
          });
        }
        const user = (body as { spec: { user: string } }).spec.user;
        return Promise.resolve({ status: { allowed: user === "admin" } });
      },
    });
    const handler = withAuth(auth, () => new Response("ok"));
    const get = async (token: string) =>
      (await handler({
        request: new Request("https://node-1:10250/pods", {
          headers: { authorization: `Bearer ${token}` },
        }),
        peerCertificates: [],
      })).status;
    await t.step("first requests ask the API server", async () => {
      assertEquals(await get("admin"), 200);
      assertEquals(await get("bob"), 403);
      // bob's /pods is asked as pods, then proxy: two reviews for him.
      assertEquals(posts, { tokenreviews: 2, subjectaccessreviews: 3 });
    });
    await t.step("the denied answers expire after 5s, nothing else yet", async () => {
      await clock.step(5_001);
      assertEquals(await get("admin"), 200);
      assertEquals(await get("bob"), 403);
      assertEquals(posts, { tokenreviews: 2, subjectaccessreviews: 5 });
    });
    await t.step("the tokens expire at 10s", async () => {
      await clock.step(4_999);
      assertEquals(await get("admin"), 200);
      // admin's token is reviewed again at its expiry; bob's was not asked for.
      assertEquals(posts.tokenreviews, 3);
    });
    await t.step("the allowed answer expires after 20s", async () => {
      const before = posts.subjectaccessreviews;
      await clock.step(9_999);
      assertEquals(await get("admin"), 200);
      assertEquals(posts.subjectaccessreviews, before);
      await clock.step(2);
      assertEquals(await get("admin"), 200);
      assertEquals(posts.subjectaccessreviews, before + 1);
    });
  } finally {
    setLogSink(previous);
  }
});
