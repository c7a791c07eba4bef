/**
 * The streaming server's token cache. Ported from cri-streaming's request_cache_test.go.
 * @module
 */
import assert from "node:assert/strict";
import { FakeClock } from "../../src/util/clock.ts";
import {
  cacheTtlMs,
  maxInFlight,
  RequestCache,
  StreamingError,
  tokenLen,
} from "../../src/cri_streaming/request_cache.ts";

Deno.test("TestInsert", async (t) => {
  await t.step("tokens are 8 base64url characters and unique", () => {
    const cache = new RequestCache<number>({ clock: new FakeClock(0) });
    const tokens = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const token = cache.insert(i);
      assert.match(token, new RegExp(`^[A-Za-z0-9_-]{${tokenLen}}$`));
      tokens.add(token);
    }
    assert.equal(tokens.size, 100);
  });
  await t.step("at maxInFlight: ResourceExhausted", () => {
    const cache = new RequestCache<number>({ clock: new FakeClock(0) });
    for (let i = 0; i < maxInFlight; i++) cache.insert(i);
    assert.throws(() => cache.insert(-1), (err: unknown) => {
      assert.ok(err instanceof StreamingError);
      assert.equal(
        err.message,
        "rpc error: code = ResourceExhausted desc = maximum number of in-flight requests exceeded",
      );
      return true;
    });
  });
  await t.step("a random source that repeats itself: no unique token after 10 tries", () => {
    const cache = new RequestCache<number>({ clock: new FakeClock(0), random: (b) => b.fill(1) });
    cache.insert(1);
    assert.throws(() => cache.insert(2), /failed to generate unique token/);
  });
});

Deno.test("TestConsume", async (t) => {
  await t.step("consumed once", () => {
    const cache = new RequestCache<string>({ clock: new FakeClock(0) });
    const token = cache.insert("req");
    assert.equal(cache.consume(token), "req");
    assert.equal(cache.consume(token), undefined);
  });
  await t.step("unknown token", () => {
    const cache = new RequestCache<string>({ clock: new FakeClock(0) });
    cache.insert("req");
    assert.equal(cache.consume("AAAAAAAA"), undefined);
  });
  await t.step("expired: after the TTL the token is gone", () => {
    const clock = new FakeClock(0);
    const cache = new RequestCache<string>({ clock });
    const token = cache.insert("req");
    clock.setTime(cacheTtlMs + 1);
    assert.equal(cache.consume(token), undefined);
    assert.equal(cache.size, 0);
  });
  await t.step("at the TTL exactly it is still valid", () => {
    const clock = new FakeClock(0);
    const cache = new RequestCache<string>({ clock });
    const token = cache.insert("req");
    clock.setTime(cacheTtlMs);
    assert.equal(cache.consume(token), "req");
  });
});

Deno.test("TestGC", () => {
  const clock = new FakeClock(0);
  const cache = new RequestCache<number>({ clock });
  cache.insert(1);
  clock.setTime(10_000);
  const young = cache.insert(2);
  clock.setTime(cacheTtlMs + 5_000);
  cache.insert(3); // collects the first, keeps the second
  assert.equal(cache.size, 2);
  assert.equal(cache.consume(young), 2);
});
