/**
 * Tests of the fake clientset: tracker verbs, recorded actions, reactors, watches.
 * @module
 */
import assert from "node:assert/strict";
import { FakeClientset, FakeWatcher, type KubeObject } from "./fake_clientset.ts";
import {
  isAlreadyExists,
  isConflict,
  isNotFound,
  newConflict,
  StatusError,
} from "../../src/client/errors.ts";
import type { Node, Pod } from "../../src/api/core/v1/mod.ts";

const pod = (name: string, labels?: Record<string, string>): Pod => ({
  kind: "Pod",
  apiVersion: "v1",
  metadata: { name, namespace: "default", uid: `uid-${name}`, labels },
  spec: { containers: [{ name: "app" }] },
});

Deno.test("FakeClientset: tracker verbs and recorded actions", async (t) => {
  const client = new FakeClientset(pod("a", { app: "web" }), pod("b"));
  const pods = client.coreV1.pods("default");

  await t.step("get and list (label selector filters)", async () => {
    assert.deepStrictEqual((await pods.get("a")).metadata.uid, "uid-a");
    assert.deepStrictEqual((await pods.list()).items.map((p) => p.metadata.name), ["a", "b"]);
    assert.deepStrictEqual((await pods.list({ labelSelector: "app=web" })).items.length, 1);
  });

  await t.step(
    "create of a taken name is AlreadyExists; get of a missing one NotFound",
    async () => {
      const err = await pods.create(pod("a")).catch((e) => e);
      assert.ok(err instanceof StatusError);
      assert.deepStrictEqual(isAlreadyExists(err), true);
      assert.deepStrictEqual(err.message, 'pods "a" already exists');
      assert.deepStrictEqual(isNotFound(await pods.get("zz").catch((e) => e)), true);
    },
  );

  await t.step("strategic merge patch of the status merges conditions by type", async () => {
    await pods.patchStatus(
      "a",
      "application/strategic-merge-patch+json",
      '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
    );
    await pods.patchStatus(
      "a",
      "application/strategic-merge-patch+json",
      '{"status":{"conditions":[{"type":"Initialized","status":"True"}]}}',
    );
    // Without $setElementOrder, Go puts elements new to the list before the server's ones.
    assert.deepStrictEqual((await pods.get("a")).status?.conditions?.map((c) => c.type), [
      "Initialized",
      "Ready",
    ]);
  });

  await t.step("actions record verb, resource, subresource, name and patch bytes", () => {
    const patches = client.actions.filter((a) => a.verb === "patch");
    assert.deepStrictEqual(patches.map((a) => [a.subresource, a.name]), [["status", "a"], [
      "status",
      "a",
    ]]);
    assert.deepStrictEqual(
      patches[1].patch,
      '{"status":{"conditions":[{"type":"Initialized","status":"True"}]}}',
    );
    client.clearActions();
    assert.deepStrictEqual(client.actions.length, 0);
  });

  await t.step("delete records DeleteOptions without the signal", async () => {
    await pods.delete("b", {
      gracePeriodSeconds: 0,
      preconditions: { uid: "uid-b" },
      signal: new AbortController().signal,
    });
    assert.deepStrictEqual(client.actions[0].deleteOptions, {
      gracePeriodSeconds: 0,
      preconditions: { uid: "uid-b" },
    });
    assert.deepStrictEqual(isNotFound(await pods.get("b").catch((e) => e)), true);
  });
});

Deno.test("FakeClientset: reactors run before the tracker, newest first", async () => {
  const client = new FakeClientset({ kind: "Node", metadata: { name: "n1" } } as Node);
  let calls = 0;
  client.addReactor("update", "nodes", () => ({ handled: false }));
  client.prependReactor("update", "nodes", () => {
    calls++;
    return calls === 1
      ? { handled: true, err: newConflict({ resource: "nodes" }, "n1", "stale") }
      : { handled: false };
  });
  const node: Node = { metadata: { name: "n1", labels: { a: "b" } } };
  const err = await client.coreV1.nodes().update(node).catch((e) => e);
  assert.deepStrictEqual(isConflict(err), true);
  assert.deepStrictEqual((await client.coreV1.nodes().update(node)).metadata.labels, { a: "b" });
  assert.deepStrictEqual(client.actions.map((a) => a.verb), ["update", "update"]);
});

Deno.test("FakeClientset: a watch sees later writes in its namespace and stops cleanly", async () => {
  const client = new FakeClientset();
  const w = await client.coreV1.pods("default").watch({ resourceVersion: "0" });
  await client.coreV1.pods("other").create({ ...pod("x"), metadata: { name: "x" } });
  await client.coreV1.pods("default").create(pod("y"));
  await client.coreV1.pods("default").delete("y");
  w.stop();
  const seen: string[] = [];
  for await (const e of w) seen.push(`${e.type} ${e.object.metadata.name}`);
  assert.deepStrictEqual(seen, ["ADDED y", "DELETED y"]);
  assert.deepStrictEqual(client.tracker.watchCount("pods"), 0);
  assert.deepStrictEqual(client.actions[0].listOptions, { resourceVersion: "0" });
});

Deno.test("FakeClientset: a watch reactor supplies the watch; generateName gets a name", async () => {
  const client = new FakeClientset();
  const scripted = new FakeWatcher<KubeObject>();
  client.prependWatchReactor("pods", () => scripted);
  const w = await client.coreV1.pods("default").watch({ fieldSelector: "spec.nodeName=n1" });
  scripted.add(pod("p"));
  scripted.fail(new Error("connection reset"));
  const seen: string[] = [];
  await assert.rejects(async () => {
    for await (const e of w) seen.push(`${e.type} ${e.object.metadata.name}`);
  }, /connection reset/);
  assert.deepStrictEqual(seen, ["ADDED p"]);
  assert.deepStrictEqual(client.actions[0].listOptions, { fieldSelector: "spec.nodeName=n1" });

  const created = await client.coreV1.pods("default").create({
    metadata: { generateName: "web-" },
    spec: { containers: [] },
  });
  assert.match(created.metadata.name!, /^web-.+/);
});
