/**
 * Port of kubelet's pkg/kubelet/token/token_manager_test.go: TestTokenCachingAndExpiration,
 * TestRequiresRefresh, TestDeleteServiceAccountToken and TestCleanup, on the fake clock.
 */
import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import type { TokenRequest } from "../../../src/api/core/v1/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { TokenManager } from "../../../src/kubelet/token/token_manager.ts";

const hour = 3600_000;

function request(uid: string, expirationSeconds = 3600): TokenRequest {
  return {
    spec: {
      audiences: ["api"],
      expirationSeconds,
      boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "p", uid },
    },
  };
}

// A fake TokenRequest API: each call mints a new token valid for the requested seconds.
function fakeAPI(clock: FakeClock) {
  const calls: TokenRequest[] = [];
  let fail = false;
  return {
    calls,
    failNext: (v: boolean) => fail = v,
    getToken: (_ns: string, _name: string, tr: TokenRequest): Promise<TokenRequest> => {
      if (fail) return Promise.reject(new Error("apiserver down"));
      calls.push(tr);
      return Promise.resolve({
        spec: tr.spec,
        status: {
          token: `token-${calls.length}`,
          expirationTimestamp: new Date(clock.now() + tr.spec.expirationSeconds! * 1000)
            .toISOString(),
        },
      });
    },
  };
}

Deno.test("TestTokenCachingAndExpiration", async (t) => {
  const steps: { name: string; advanceMs: number; wantRefresh: boolean }[] = [
    { name: "a fresh token is served from the cache", advanceMs: 10 * 60_000, wantRefresh: false },
    {
      name: "at 79 % of the lifetime still cached",
      advanceMs: 0.79 * hour - 11_000,
      wantRefresh: false,
    },
    { name: "past 80 % (less jitter) renewed", advanceMs: 0.81 * hour, wantRefresh: true },
  ];
  for (const s of steps) {
    await t.step(s.name, async () => {
      const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
      const api = fakeAPI(clock);
      const m = new TokenManager({ getToken: api.getToken, clock, random: () => 0.99 });
      const first = await m.getServiceAccountToken("ns", "sa", request("u1"));
      assertEquals(first.status!.token, "token-1");
      clock.setTime(clock.now() + s.advanceMs);
      const second = await m.getServiceAccountToken("ns", "sa", request("u1"));
      assertEquals(second.status!.token, s.wantRefresh ? "token-2" : "token-1");
      assertEquals(api.calls.length, s.wantRefresh ? 2 : 1);
    });
  }
});

Deno.test("TestRequiresRefresh", async (t) => {
  const start = Date.parse("2026-01-01T00:00:00Z");
  const cases: { name: string; expirationSeconds: number; nowMs: number; want: boolean }[] = [
    { name: "young token", expirationSeconds: 7200, nowMs: start + 1000, want: false },
    { name: "80 % of 2 h passed", expirationSeconds: 7200, nowMs: start + 1.7 * hour, want: true },
    // A 48 h token is renewed after 24 h, long before 80 % of its lifetime.
    {
      name: "older than 24 h",
      expirationSeconds: 48 * 3600,
      nowMs: start + 24 * hour + 1,
      want: true,
    },
    { name: "23 h of 48 h", expirationSeconds: 48 * 3600, nowMs: start + 23 * hour, want: false },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const clock = new FakeClock(c.nowMs);
      const m = new TokenManager({ getToken: () => Promise.reject(), clock, random: () => 0 });
      const tr: TokenRequest = {
        spec: { expirationSeconds: c.expirationSeconds },
        status: {
          token: "t",
          expirationTimestamp: new Date(start + c.expirationSeconds * 1000).toISOString(),
        },
      };
      assertEquals(m.requiresRefresh(tr), c.want);
    });
  }
});

Deno.test("TestTokenServedWhileAPIDownUntilExpiry", async () => {
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  const api = fakeAPI(clock);
  const m = new TokenManager({ getToken: api.getToken, clock, random: () => 0 });
  await m.getServiceAccountToken("ns", "sa", request("u1"));
  api.failNext(true);
  clock.setTime(clock.now() + 0.9 * hour);
  assertEquals(
    (await m.getServiceAccountToken("ns", "sa", request("u1"))).status!.token,
    "token-1",
  );
  clock.setTime(clock.now() + 0.2 * hour);
  await rejects(m.getServiceAccountToken("ns", "sa", request("u1")), { message: "apiserver down" });
});

Deno.test("TestDeleteServiceAccountToken", async () => {
  const clock = new FakeClock();
  const api = fakeAPI(clock);
  const m = new TokenManager({ getToken: api.getToken, clock });
  await m.getServiceAccountToken("ns", "sa", request("u1"));
  await m.getServiceAccountToken("ns", "sa", request("u1", 7200));
  await m.getServiceAccountToken("ns", "sa", request("u2"));
  assertEquals(m.size, 3);
  m.deleteServiceAccountToken("u1");
  assertEquals(m.size, 1);
});

Deno.test("TestCleanup", async () => {
  const clock = new FakeClock();
  const api = fakeAPI(clock);
  const m = new TokenManager({ getToken: api.getToken, clock });
  await m.getServiceAccountToken("ns", "sa", request("u1", 600));
  await m.getServiceAccountToken("ns", "sa", request("u2", 7200));
  clock.setTime(clock.now() + 601_000);
  m.cleanup();
  assertEquals(m.size, 1);
});
