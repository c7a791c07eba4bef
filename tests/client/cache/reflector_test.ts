/**
 * Reflector semantics on the fake clock with a scripted ListerWatcher (client-go reflector_test.go:
 * TestReflectorListAndWatch, TestReflectorWatchHandler, the 410 re-list and back-off cases), and
 * the UndeltaStore pushing full sets.
 * @module
 */
import assert from "node:assert/strict";
import { FakeClock } from "../../../src/util/clock.ts";
import { minWatchTimeoutSeconds, Reflector } from "../../../src/client/cache/reflector.ts";
import { UndeltaStore } from "../../../src/client/cache/undelta_store.ts";
import { MemoryStore } from "../../../src/client/cache/store.ts";
import type { ListerWatcher, ObjectList } from "../../../src/client/cache/listwatch.ts";
import type { ListOptions, Watch } from "../../../src/client/kubernetes/clientset.ts";
import { newResourceExpired, newTooManyRequests } from "../../../src/client/errors.ts";
import { FakeWatcher } from "../../testing/fake_clientset.ts";
import type { Pod } from "../../../src/api/core/v1/mod.ts";

const pod = (name: string, rv: string): Pod => ({
  metadata: { name, namespace: "default", resourceVersion: rv },
  spec: { containers: [] },
});

/** A ListerWatcher whose answers the test queues, recording every call's options. */
class ScriptedListWatch implements ListerWatcher<Pod> {
  lists: ListOptions[] = [];
  watches: ListOptions[] = [];
  listAnswers: (() => ObjectList<Pod>)[] = [];
  watchAnswers: (() => Watch<Pod>)[] = [];
  current?: FakeWatcher<Pod>;
  #called?: () => void;

  list(options: ListOptions): Promise<ObjectList<Pod>> {
    this.lists.push(strip(options));
    this.#notify();
    const answer = this.listAnswers.shift();
    if (!answer) return Promise.reject(new Error("no list answer queued"));
    try {
      return Promise.resolve(answer());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  watch(options: ListOptions): Promise<Watch<Pod>> {
    this.watches.push(strip(options));
    this.#notify();
    const answer = this.watchAnswers.shift() ?? (() => new FakeWatcher<Pod>());
    try {
      const w = answer();
      this.current = w as FakeWatcher<Pod>;
      return Promise.resolve(w);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Resolves at the next list or watch call. */
  nextCall(): Promise<void> {
    return new Promise((r) => this.#called = r);
  }

  #notify() {
    const r = this.#called;
    this.#called = undefined;
    r?.();
  }
}

function strip(o: ListOptions): ListOptions {
  const { signal: _s, ...rest } = o;
  return rest;
}

const podList = (rv: string, ...items: Pod[]): ObjectList<Pod> => ({
  metadata: { resourceVersion: rv },
  items,
});

function start(lw: ScriptedListWatch, store = new MemoryStore<Pod>()) {
  const clock = new FakeClock(0);
  const reflector = new Reflector(lw, store, { clock, random: () => 0, name: "test" });
  const stop = new AbortController();
  const done = reflector.run(stop.signal);
  return { clock, reflector, stop, done, store };
}

Deno.test("TestReflectorListAndWatch: list from 0, watch from the list's version, re-watch from the last event", async () => {
  const lw = new ScriptedListWatch();
  lw.listAnswers.push(() => podList("10", pod("a", "9")));
  const firstWatch = lw.nextCall();
  const { stop, done, store, reflector } = start(lw);
  await firstWatch;
  await new Promise((r) => setTimeout(r, 0));
  assert.deepStrictEqual(lw.lists, [{ resourceVersion: "0" }]);
  assert.deepStrictEqual(lw.watches, [{
    resourceVersion: "10",
    timeoutSeconds: minWatchTimeoutSeconds,
    allowWatchBookmarks: true,
  }]);
  const w = lw.current!;
  w.add(pod("b", "11"));
  w.modify(pod("a", "12"));
  w.action("BOOKMARK", { metadata: { resourceVersion: "15" } } as Pod);
  const second = lw.nextCall();
  w.stop(); // the server closed the stream (its timeoutSeconds ran out)
  await second;
  assert.deepStrictEqual(store.listKeys(), ["default/a", "default/b"]);
  assert.equal(store.getByKey("default/a")?.metadata.resourceVersion, "12");
  assert.equal(lw.watches[1].resourceVersion, "15", "bookmarks advance the version");
  assert.equal(lw.lists.length, 1, "a closed stream is re-watched, not re-listed");
  lw.current!.delete(pod("b", "16"));
  await new Promise((r) => setTimeout(r, 0));
  assert.deepStrictEqual(store.listKeys(), ["default/a"]);
  assert.equal(reflector.lastSyncResourceVersion(), "16");
  stop.abort();
  await done;
  assert.equal(lw.current!.stopped, true);
});

Deno.test("TestReflectorWatchHandler: events whose object has no resourceVersion are applied", async () => {
  const lw = new ScriptedListWatch();
  lw.listAnswers.push(() => podList("10", pod("a", "9")));
  const firstWatch = lw.nextCall();
  const { stop, done, store, reflector } = start(lw);
  await firstWatch;
  await new Promise((r) => setTimeout(r, 0));
  const w = lw.current!;
  const noVersion = (name: string): Pod => ({
    metadata: { name, namespace: "default" },
    spec: { containers: [] },
  });
  w.add(noVersion("b"));
  w.modify({ ...noVersion("a"), spec: { containers: [], nodeName: "n1" } });
  await new Promise((r) => setTimeout(r, 0));
  assert.deepStrictEqual(store.listKeys(), ["default/a", "default/b"]);
  assert.equal(store.getByKey("default/a")?.spec?.nodeName, "n1");
  // client-go's watchHandler records the event's (empty) version, as it does for any other event.
  assert.equal(reflector.lastSyncResourceVersion(), "");
  w.delete(noVersion("b"));
  w.add(pod("c", "12"));
  await new Promise((r) => setTimeout(r, 0));
  assert.deepStrictEqual(store.listKeys(), ["default/a", "default/c"]);
  assert.equal(reflector.lastSyncResourceVersion(), "12");
  stop.abort();
  await done;
});

Deno.test("TestReflectorWatchHandler: 410 Expired re-lists after the back-off, without duplicates", async () => {
  const lw = new ScriptedListWatch();
  const pushes: string[][] = [];
  const store = new UndeltaStore<Pod>((pods) => pushes.push(pods.map((p) => p.metadata.name!)));
  lw.listAnswers.push(() => podList("10", pod("a", "9")));
  const firstWatch = lw.nextCall();
  const { stop, done, clock } = start(lw, store as unknown as MemoryStore<Pod>);
  await firstWatch;
  await clock.step(0);
  lw.current!.add(pod("b", "11"));
  lw.listAnswers.push(() => podList("20", pod("a", "9"), pod("b", "11"), pod("c", "19")));
  lw.current!.error({
    kind: "Status",
    code: 410,
    reason: "Expired",
    message: "too old resource version: 11 (15)",
  });
  await clock.step(0);
  assert.equal(lw.lists.length, 1, "no re-list before the back-off");
  await clock.step(799);
  assert.equal(lw.lists.length, 1);
  await clock.step(1);
  assert.deepStrictEqual(lw.lists[1], { resourceVersion: "11" });
  assert.deepStrictEqual(lw.watches.at(-1)?.resourceVersion, "20");
  assert.deepStrictEqual(pushes, [["a"], ["a", "b"], ["a", "b", "c"]]);
  stop.abort();
  await done;
});

Deno.test("TestReflectorListAndWatch: a LIST of a compacted version is retried at once as a consistent read", async () => {
  const lw = new ScriptedListWatch();
  lw.listAnswers.push(() => podList("10"));
  const firstWatch = lw.nextCall();
  const { stop, done, clock } = start(lw);
  await firstWatch;
  await clock.step(0);
  lw.current!.add(pod("a", "11"));
  lw.listAnswers.push(() => {
    throw newResourceExpired("too old resource version: 11 (30)");
  });
  lw.listAnswers.push(() => podList("31", pod("a", "11")));
  lw.current!.error({ kind: "Status", code: 410, reason: "Expired", message: "too old" });
  await clock.step(800);
  assert.deepStrictEqual(lw.lists.slice(1), [{ resourceVersion: "11" }, { resourceVersion: "" }]);
  assert.equal(lw.watches.at(-1)?.resourceVersion, "31");
  stop.abort();
  await done;
});

Deno.test("TestBackoff: failures back off 0.8 s doubling to 30 s; 429 on WATCH retries the watch only", async (t) => {
  const lw = new ScriptedListWatch();
  for (let i = 0; i < 10; i++) {
    lw.listAnswers.push(() => {
      throw new Error("connection refused");
    });
  }
  const { stop, done, clock } = start(lw);
  await t.step("LIST failures: 800, 1600, 3200, ... capped at 30000 ms apart", async () => {
    const times: number[] = [];
    for (let i = 0; i < 8; i++) {
      await clock.step(0);
      times.push(clock.now());
      const next = clock.nextTimerAt()!;
      await clock.step(next - clock.now());
    }
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    assert.deepStrictEqual(gaps, [800, 1600, 3200, 6400, 12800, 25600, 30000]);
  });
  stop.abort();
  await done;

  await t.step(
    "429 on WATCH: back off, watch again from the same version, no re-list",
    async () => {
      const lw2 = new ScriptedListWatch();
      lw2.listAnswers.push(() => podList("5"));
      lw2.watchAnswers.push(() => {
        throw newTooManyRequests("slow down", 1);
      });
      const r = start(lw2);
      await r.clock.step(0);
      assert.equal(lw2.watches.length, 1);
      await r.clock.step(800);
      assert.equal(lw2.watches.length, 2);
      assert.equal(lw2.watches[1].resourceVersion, "5");
      assert.equal(lw2.lists.length, 1);
      r.stop.abort();
      await r.done;
    },
  );
});

Deno.test("Reflector: a watch that ends at once with nothing counts as a failure", async () => {
  const lw = new ScriptedListWatch();
  lw.listAnswers.push(() => podList("5"), () => podList("6"));
  lw.watchAnswers.push(() => {
    const w = new FakeWatcher<Pod>();
    w.stop();
    return w;
  });
  const { stop, done, clock } = start(lw);
  await clock.step(0);
  assert.equal(lw.lists.length, 1);
  await clock.step(800);
  assert.equal(lw.lists.length, 2, "re-listed after the back-off");
  stop.abort();
  await done;
});

Deno.test("Reflector: stopping aborts a pending back-off and leaves no timers", async () => {
  const lw = new ScriptedListWatch();
  lw.listAnswers.push(() => {
    throw new Error("down");
  });
  const { stop, done, clock } = start(lw);
  await clock.step(0);
  assert.equal(clock.pendingTimers(), 1);
  stop.abort();
  await done;
  assert.equal(clock.pendingTimers(), 0);
});
