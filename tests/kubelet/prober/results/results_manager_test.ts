import assert from "node:assert/strict";
import {
  newManager,
  Result,
  resultString,
  toPrometheusType,
  type Update,
  updatesBufferSize,
} from "../../../../src/kubelet/prober/results/mod.ts";
import type { ContainerID } from "../../../../src/kubelet/container/mod.ts";
import type { Pod } from "../../../../src/api/core/v1/mod.ts";
import { settle } from "../../../../src/util/clock.ts";

const emptyPod: Pod = { metadata: {}, spec: { containers: [] } };

Deno.test("TestCacheOperations", () => {
  const m = newManager();
  const unsetID: ContainerID = { type: "test", id: "unset" };
  const setID: ContainerID = { type: "test", id: "set" };

  assert.deepEqual(m.get(unsetID), undefined, "unset result found");

  m.set(setID, Result.Success, emptyPod);
  assert.deepEqual(m.get(setID), Result.Success, "set result");

  m.remove(setID);
  assert.deepEqual(m.get(setID), undefined, "removed result found");
});

Deno.test("TestUpdates", async (t) => {
  const m = newManager();
  const pod: Pod = { metadata: { name: "test-pod", uid: "pod-uid" }, spec: { containers: [] } };
  const fooID: ContainerID = { type: "test", id: "foo" };
  const barID: ContainerID = { type: "test", id: "bar" };

  const expectUpdate = (expected: Update, msg: string) => {
    const u = m.updates().tryReceive();
    assert.ok(u && !u.done, `expected update ${JSON.stringify(expected)}: ${msg}`);
    assert.deepEqual(u.value, expected, msg);
  };
  const expectNoUpdate = (msg: string) => {
    const u = m.updates().tryReceive();
    assert.deepEqual(u, undefined, `unexpected update: ${msg}`);
  };

  await t.step("new result should always push an update", async () => {
    await m.set(fooID, Result.Success, pod);
    expectUpdate({ containerID: fooID, result: Result.Success, podUID: "pod-uid" }, "new success");
    await m.set(barID, Result.Failure, pod);
    expectUpdate({ containerID: barID, result: Result.Failure, podUID: "pod-uid" }, "new failure");
  });

  await t.step("unchanged results should not send an update", async () => {
    await m.set(fooID, Result.Success, pod);
    expectNoUpdate("unchanged foo");
    await m.set(barID, Result.Failure, pod);
    expectNoUpdate("unchanged bar");
  });

  await t.step("changed results should send an update", async () => {
    await m.set(fooID, Result.Failure, pod);
    expectUpdate({ containerID: fooID, result: Result.Failure, podUID: "pod-uid" }, "changed foo");
    await m.set(barID, Result.Success, pod);
    expectUpdate({ containerID: barID, result: Result.Success, podUID: "pod-uid" }, "changed bar");
  });

  await t.step("remove emits no update, and a set after it is new again", async () => {
    m.remove(fooID);
    expectNoUpdate("remove");
    await m.set(fooID, Result.Failure, pod);
    expectUpdate({ containerID: fooID, result: Result.Failure, podUID: "pod-uid" }, "re-added");
  });
});

// Not in the Go suite: the channel's buffer of 20 and the blocking send behind it.
Deno.test("TestUpdatesBackpressure", async () => {
  const m = newManager();
  const id = (i: number): ContainerID => ({ type: "test", id: `c${i}` });
  for (let i = 0; i < updatesBufferSize; i++) await m.set(id(i), Result.Success, emptyPod);
  assert.deepEqual(m.updates().length, 20);

  let buffered = false;
  const blocked = m.set(id(20), Result.Failure, emptyPod).then(() => buffered = true);
  // The cache is written at once, even though the update waits for room.
  assert.deepEqual(m.get(id(20)), Result.Failure);
  await settle();
  assert.deepEqual(buffered, false, "the 21st update must wait while 20 are pending");
  assert.deepEqual(m.updates().blockedSenders, 1);

  const first = await m.updates().receive();
  assert.deepEqual(first.value?.containerID, id(0));
  await blocked;
  assert.deepEqual(buffered, true);
  assert.deepEqual(m.updates().length, 20);

  // The blocked update kept its place at the end of the queue.
  const received: string[] = [];
  for (let i = 0; i < 20; i++) received.push((await m.updates().receive()).value!.containerID.id);
  assert.deepEqual(received.at(-1), "c20");
});

Deno.test("TestResultString", () => {
  assert.deepEqual(resultString(Result.Success), "Success");
  assert.deepEqual(resultString(Result.Failure), "Failure");
  assert.deepEqual(resultString(Result.Unknown), "UNKNOWN");
  assert.deepEqual(toPrometheusType(Result.Success), 0);
  assert.deepEqual(toPrometheusType(Result.Failure), 1);
  assert.deepEqual(toPrometheusType(Result.Unknown), -1);
});
