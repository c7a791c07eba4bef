/**
 * The API pod source, ported from kubelet's pkg/kubelet/config/apiserver_test.go under the Go
 * names: a list then watch events, each delivered as a full SET from source "api".
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { newSourceApiserver } from "../../../src/kubelet/config/apiserver.ts";
import type { PodUpdate } from "../../../src/kubelet/types/mod.ts";
import { FakeClock, settle } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";
import { FakeClientset, FakeWatcher } from "../../testing/fake_clientset.ts";

setLogSink(() => {});

function pod(name: string, namespace: string, image: string): Pod {
  return {
    metadata: { name, namespace, resourceVersion: "1" },
    spec: { nodeName: "node-1", containers: [{ name: "c", image }] },
  };
}

function setup(items: Pod[], nodeHasSynced: () => boolean = () => true) {
  const client = new FakeClientset();
  const watcher = new FakeWatcher<Pod>();
  client.prependReactor("list", "pods", () => ({
    handled: true,
    ret: { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: "1" }, items },
  }));
  // deno-lint-ignore no-explicit-any
  client.prependWatchReactor("pods", () => watcher as any);
  const updates: PodUpdate[] = [];
  const clock = new FakeClock(Date.UTC(2026, 10, 23));
  const source = newSourceApiserver(client, {
    nodeName: "node-1",
    clock,
    nodeHasSynced,
    updates: (u) => updates.push(u),
    random: () => 0,
  });
  return { client, watcher, updates, clock, source };
}

async function next(updates: PodUpdate[], count: number): Promise<PodUpdate> {
  const deadline = Date.now() + 10_000;
  while (updates.length < count) {
    if (Date.now() > deadline) throw new Error(`expected ${count} updates, got ${updates.length}`);
    await settle();
  }
  return updates[count - 1];
}

const names = (u: PodUpdate) =>
  u.pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}:${p.spec.containers[0].image}`)
    .sort();

Deno.test("TestNewSourceApiserver_UpdatesAndMultiplePods", async () => {
  const pod1v1 = pod("p", "ns", "image/one");
  const pod1v2 = pod("p", "ns", "image/two");
  const pod2 = pod("q", "ns", "image/blah");
  const s = setup([pod1v1]);
  try {
    let u = await next(s.updates, 1);
    assertEquals({ op: u.op, source: u.source }, { op: "SET", source: "api" });
    assertEquals(names(u), ["ns/p:image/one"]);
    // The list and watch carry the node's field selector.
    const list = s.client.actions.find((a) => a.verb === "list");
    assertEquals(list?.listOptions?.fieldSelector, "spec.nodeName=node-1");
    await next(s.updates, 1);
    s.watcher.modify(pod1v2);
    u = await next(s.updates, 2);
    assertEquals(names(u), ["ns/p:image/two"]);
    s.watcher.add(pod2);
    u = await next(s.updates, 3);
    assertEquals(names(u), ["ns/p:image/two", "ns/q:image/blah"]);
    s.watcher.delete(pod1v2);
    u = await next(s.updates, 4);
    assertEquals(names(u), ["ns/q:image/blah"]);
    s.watcher.delete(pod2);
    u = await next(s.updates, 5);
    assertEquals(u.pods, []);
    const watch = s.client.actions.find((a) => a.verb === "watch");
    assertEquals(watch?.listOptions?.fieldSelector, "spec.nodeName=node-1");
    assertEquals(watch?.listOptions?.allowWatchBookmarks, true);
  } finally {
    await s.source.stop();
  }
});

Deno.test("TestNewSourceApiserver_TwoNamespacesSameName", async () => {
  const s = setup([pod("p", "one", "image/one"), pod("p", "two", "image/one")]);
  try {
    // Both pods arrive: the key is namespace/name.
    assertEquals(names(await next(s.updates, 1)), ["one/p:image/one", "two/p:image/one"]);
    s.watcher.modify(pod("p", "one", "image/two"));
    assertEquals(names(await next(s.updates, 2)), ["one/p:image/two", "two/p:image/one"]);
  } finally {
    await s.source.stop();
  }
});

Deno.test("TestNewSourceApiserverInitialEmptySendsEmptyPodUpdate", async () => {
  const s = setup([]);
  try {
    const u = await next(s.updates, 1);
    assertEquals(u, { op: "SET", source: "api", pods: [] });
  } finally {
    await s.source.stop();
  }
});

Deno.test("the source waits for the node before listing pods", async () => {
  let synced = false;
  const s = setup([pod("p", "ns", "image/one")], () => synced);
  try {
    await settle();
    await s.clock.step(1_000);
    await s.clock.step(1_000);
    assertEquals(s.client.actions, []);
    synced = true;
    await s.clock.step(1_000);
    assertEquals(names(await next(s.updates, 1)), ["ns/p:image/one"]);
  } finally {
    await s.source.stop();
  }
});
