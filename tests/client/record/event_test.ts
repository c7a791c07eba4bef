/**
 * The recorder, broadcaster and sink (client-go event_test.go's TestEventf and the sink write /
 * retry cases), on the fake clientset and the fake clock, and once over HTTP against the
 * API-server double as the node user, asserting the wire bytes of the POST and the count PATCH.
 * @module
 */
import assert from "node:assert/strict";
import type { Event, ObjectReference } from "../../../src/api/core/v1/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import {
  EventBroadcaster,
  EventSinkImpl,
  maxTriesPerEvent,
} from "../../../src/client/record/event.ts";
import { newForbidden, newNotFound } from "../../../src/client/errors.ts";
import { newForConfig } from "../../../src/client/kubernetes/clientset.ts";
import { AlwaysAcceptRateLimiter } from "../../../src/util/flowcontrol/throttle.ts";
import { setLogSink } from "../../../src/util/log.ts";
import { FakeClientset } from "../../testing/fake_clientset.ts";
import { nodeUser, startApiServer } from "../../testing/apiserver/mod.ts";

const start = Date.parse("2026-11-23T05:00:00Z");

const podRef: ObjectReference = {
  kind: "Pod",
  namespace: "baz",
  name: "foo",
  uid: "bar",
  apiVersion: "v1",
  resourceVersion: "4",
  fieldPath: "spec.containers{app}",
};

function setup(options: { random?: () => number } = {}) {
  const clock = new FakeClock(start);
  const client = new FakeClientset();
  const broadcaster = new EventBroadcaster({ clock, random: options.random ?? (() => 0.5) });
  broadcaster.startRecordingToSink(new EventSinkImpl(client));
  const recorder = broadcaster.newRecorder({ component: "kubelet", host: "node-1" });
  return { clock, client, broadcaster, recorder };
}

/** Silences error logs of the cases that provoke them, and collects them. */
function captureLogs(): { lines: string[]; restore: () => void } {
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  return { lines, restore: () => setLogSink(previous) };
}

Deno.test("TestEventf: the Event kubelet POSTs", async () => {
  const { client, broadcaster, recorder } = setup();
  recorder.event(podRef, {
    type: "Warning",
    reason: "Unhealthy",
    message: "Liveness probe failed: boom",
  });
  await broadcaster.flush();
  assert.deepStrictEqual(client.actions.map((a) => [a.verb, a.resource, a.namespace]), [[
    "create",
    "events",
    "baz",
  ]]);
  const nanos = (BigInt(start) * 1_000_000n).toString(16);
  assert.deepStrictEqual(client.actions[0].object, {
    metadata: { name: `foo.${nanos}`, namespace: "baz" },
    involvedObject: podRef,
    reason: "Unhealthy",
    message: "Liveness probe failed: boom",
    source: { component: "kubelet", host: "node-1" },
    firstTimestamp: "2026-11-23T05:00:00Z",
    lastTimestamp: "2026-11-23T05:00:00Z",
    count: 1,
    type: "Warning",
    eventTime: null,
    reportingComponent: "kubelet",
    reportingInstance: "node-1",
  });
});

Deno.test("TestEventf: a repeat PATCHes count, lastTimestamp and message on the first Event", async () => {
  const { client, broadcaster, recorder, clock } = setup();
  const options = {
    type: "Warning" as const,
    reason: "Unhealthy",
    message: "Liveness probe failed",
  };
  recorder.event(podRef, options);
  await broadcaster.flush();
  const name = client.actions[0].name;
  await clock.step(10_000);
  recorder.event(podRef, options);
  await clock.step(10_000);
  recorder.event(podRef, options);
  await broadcaster.flush();
  const patches = client.actions.filter((a) => a.verb === "patch");
  assert.deepStrictEqual(patches.map((a) => [a.name, a.patchType, a.patch]), [
    [
      name,
      "application/strategic-merge-patch+json",
      '{"count":2,"lastTimestamp":"2026-11-23T05:00:10Z","message":"Liveness probe failed"}',
    ],
    [
      name,
      "application/strategic-merge-patch+json",
      '{"count":3,"lastTimestamp":"2026-11-23T05:00:20Z","message":"Liveness probe failed"}',
    ],
  ]);
  const stored = client.tracker.get("events", "baz", name)!;
  assert.equal((stored as Event).count, 3);
  assert.equal((stored as Event).firstTimestamp, "2026-11-23T05:00:00Z");
});

Deno.test("TestEventf: node events go to the default namespace", async () => {
  const { client, broadcaster, recorder } = setup();
  recorder.event({ kind: "Node", name: "node-1", uid: "node-1", namespace: "" }, {
    type: "Normal",
    reason: "NodeReady",
    message: "Node node-1 status is now: NodeReady",
  });
  await broadcaster.flush();
  assert.equal(client.actions[0].namespace, "default");
});

Deno.test("recordToSink: a repeat whose Event is gone is created again", async () => {
  const { client, broadcaster, recorder } = setup();
  const options = { type: "Normal" as const, reason: "Pulled", message: "ok" };
  recorder.event(podRef, options);
  await broadcaster.flush();
  const name = client.actions[0].name;
  await client.tracker.delete("events", "baz", name);
  recorder.event(podRef, options);
  await broadcaster.flush();
  assert.deepStrictEqual(client.actions.map((a) => a.verb), ["create", "patch", "create"]);
  const recreated = client.actions[2].object as Event;
  assert.equal(recreated.metadata.name, name);
  assert.equal(recreated.count, 2);
  assert.equal(recreated.metadata.resourceVersion, undefined);
});

Deno.test("recordToSink: an API error is not retried", async () => {
  const logs = captureLogs();
  try {
    const { client, broadcaster, recorder, clock } = setup();
    client.prependReactor("create", "events", () => ({
      handled: true,
      err: newForbidden({ resource: "events" }, "", "nope"),
    }));
    recorder.event(podRef, { type: "Normal", reason: "R", message: "m" });
    await broadcaster.flush();
    await clock.step(600_000);
    assert.equal(client.actions.length, 1);
    assert.match(logs.lines.join("\n"), /Server rejected event \(will not retry!\)/);
  } finally {
    logs.restore();
  }
});

Deno.test("recordToSink: transport errors are retried 12 times, 10 s apart, the first pause random", async () => {
  const logs = captureLogs();
  try {
    const { client, broadcaster, recorder, clock } = setup({ random: () => 0.25 });
    const times: number[] = [];
    client.prependReactor("create", "events", () => {
      times.push(clock.now() - start);
      return { handled: true, err: new Error("connection reset") };
    });
    recorder.event(podRef, { type: "Normal", reason: "R", message: "m" });
    for (let i = 0; i < 20; i++) await clock.step(10_000);
    await broadcaster.flush();
    assert.equal(times.length, maxTriesPerEvent);
    assert.deepStrictEqual(times.slice(0, 4), [0, 2_500, 12_500, 22_500]);
    assert.match(logs.lines.at(-1)!, /retry limit exceeded/);
  } finally {
    logs.restore();
  }
});

Deno.test("recordToSink: a 404 on create is an API error too (not retried)", async () => {
  const logs = captureLogs();
  try {
    const { client, broadcaster, recorder, clock } = setup();
    client.prependReactor("create", "events", () => ({
      handled: true,
      err: newNotFound({ resource: "namespaces" }, "baz"),
    }));
    recorder.event(podRef, { type: "Normal", reason: "R", message: "m" });
    await broadcaster.flush();
    await clock.step(60_000);
    assert.equal(client.actions.length, 1);
  } finally {
    logs.restore();
  }
});

Deno.test("spam filter: one object gets 25 writes in a burst, then one per 5 minutes", async () => {
  const { client, broadcaster, recorder, clock } = setup();
  for (let i = 0; i < 30; i++) {
    recorder.event(podRef, { type: "Warning", reason: "Unhealthy", message: "probe failed" });
  }
  await broadcaster.flush();
  assert.equal(client.actions.length, 25);
  assert.equal(broadcaster.stats.skipped, 5);
  const events = client.tracker.list("events", "baz") as Event[];
  assert.deepStrictEqual(events.map((e) => e.count), [25]);
  await clock.step(300_000);
  recorder.event(podRef, { type: "Warning", reason: "Unhealthy", message: "probe failed" });
  recorder.event(podRef, { type: "Warning", reason: "Unhealthy", message: "probe failed" });
  await broadcaster.flush();
  assert.equal(client.actions.length, 26);
});

Deno.test("recorder: event types other than Normal/Warning are dropped; shutdown stops retries", async () => {
  const logs = captureLogs();
  try {
    const { client, broadcaster, recorder, clock } = setup();
    recorder.event(podRef, { type: "Odd" as "Normal", reason: "R", message: "m" });
    await broadcaster.flush();
    assert.equal(client.actions.length, 0);
    client.prependReactor("create", "events", () => ({ handled: true, err: new Error("down") }));
    recorder.event(podRef, { type: "Normal", reason: "R", message: "m" });
    await clock.step(0);
    assert.equal(clock.pendingTimers(), 1, "waiting to retry");
    await broadcaster.shutdown();
    await clock.step(600_000);
    assert.equal(client.actions.length, 1);
    assert.equal(clock.pendingTimers(), 0);
  } finally {
    logs.restore();
  }
});

Deno.test("events over HTTP to the API-server double as the node: POST, then PATCH with a growing count", async () => {
  const server = await startApiServer({ tokens: { node: nodeUser("node-1") } });
  const clock = new FakeClock(start);
  const client = newForConfig({
    host: server.url,
    bearerToken: "node",
    rateLimiter: new AlwaysAcceptRateLimiter(),
  });
  const broadcaster = new EventBroadcaster({ clock });
  broadcaster.startRecordingToSink(new EventSinkImpl(client));
  const recorder = broadcaster.newRecorder({ component: "kubelet", host: "node-1" });
  try {
    const ref = { ...podRef, namespace: "default" };
    const options = {
      type: "Warning" as const,
      reason: "Unhealthy",
      message: "Liveness probe failed: 500",
    };
    recorder.event(ref, options);
    await broadcaster.flush();
    await clock.step(1_000);
    recorder.event(ref, options);
    await broadcaster.flush();
    const writes = server.double.requests.filter((r) => r.path.includes("/events"));
    assert.deepStrictEqual(writes.map((r) => [r.method, r.status, r.contentType]), [
      ["POST", 201, "application/json"],
      ["PATCH", 200, "application/strategic-merge-patch+json"],
    ]);
    const name = JSON.parse(writes[0].body).metadata.name;
    assert.equal(writes[0].path, "/api/v1/namespaces/default/events");
    assert.equal(writes[1].path, `/api/v1/namespaces/default/events/${name}`);
    assert.equal(
      writes[0].body,
      JSON.stringify({
        kind: "Event",
        apiVersion: "v1",
        metadata: { name, namespace: "default" },
        involvedObject: ref,
        reason: "Unhealthy",
        message: "Liveness probe failed: 500",
        source: { component: "kubelet", host: "node-1" },
        firstTimestamp: "2026-11-23T05:00:00Z",
        lastTimestamp: "2026-11-23T05:00:00Z",
        count: 1,
        type: "Warning",
        eventTime: null,
        reportingComponent: "kubelet",
        reportingInstance: "node-1",
      }),
    );
    assert.equal(
      writes[1].body,
      '{"count":2,"lastTimestamp":"2026-11-23T05:00:01Z","message":"Liveness probe failed: 500"}',
    );
    const stored = server.double.get("events", "default", name) as unknown as Event;
    assert.equal(stored.count, 2);
    assert.ok(writes.every((r) => r.user === "system:node:node-1"));
  } finally {
    await broadcaster.shutdown();
    client.close();
    await server.close();
  }
});
