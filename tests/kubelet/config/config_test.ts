/**
 * Tests of the pod source merge, ported from kubelet's pkg/kubelet/config/config_test.go under the
 * Go names.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import {
  PodConfig,
  type PodConfigNotificationMode,
  podsDifferSemantically,
} from "../../../src/kubelet/config/config.ts";
import { FakeRecorder } from "../../../src/kubelet/events/mod.ts";
import {
  AllSource,
  ConfigFirstSeenAnnotationKey,
  ConfigSourceAnnotationKey,
  type PodOperation,
  type PodUpdate,
} from "../../../src/kubelet/types/mod.ts";
import { FakeClock } from "../../../src/util/clock.ts";

const TestSource = "test";

function createValidPod(name: string, namespace: string): Pod {
  return {
    metadata: { uid: name + namespace, name, namespace },
    spec: {
      restartPolicy: "Always",
      containers: [{ name: "ctr", image: "image", imagePullPolicy: "IfNotPresent" }],
    },
  };
}

function createPodUpdate(op: PodOperation, source: string, ...pods: Pod[]): PodUpdate {
  return { pods, op, source };
}

function createPodConfigTester(mode: PodConfigNotificationMode) {
  const recorder = new FakeRecorder();
  const config = new PodConfig({ recorder, mode, clock: new FakeClock(0) });
  const channel = config.channel(TestSource);
  return { channel, ch: config.updates(), config, recorder };
}

type Updates = ReturnType<PodConfig["updates"]>;

const byNamespace = (a: Pod, b: Pod) =>
  (a.metadata.namespace ?? "") < (b.metadata.namespace ?? "") ? -1 : 1;

function expectPodUpdate(ch: Updates, ...expected: PodUpdate[]): void {
  for (const want of expected) {
    const next = ch.tryReceive();
    assert(next && !next.done, `expected ${want.op} from ${want.source}, got nothing`);
    const got = next.value;
    assertEquals({ op: got.op, source: got.source }, { op: want.op, source: want.source });
    assertEquals(got.pods.length, want.pods.length, JSON.stringify(got));
    const gotPods = [...got.pods].sort(byNamespace);
    const wantPods = [...want.pods].sort(byNamespace);
    // Compared the way kubelet does: local annotations do not count.
    for (let j = 0; j < wantPods.length; j++) {
      assert(
        !podsDifferSemantically(wantPods[j], gotPods[j]) &&
          isDeepStrictEqual(wantPods[j].status, gotPods[j].status),
        `expected ${JSON.stringify(wantPods[j])}, got ${JSON.stringify(gotPods[j])}`,
      );
    }
  }
  expectNoPodUpdate(ch);
}

function expectNoPodUpdate(ch: Updates): void {
  const next = ch.tryReceive();
  assert(next === undefined, `expected no update, got ${JSON.stringify(next?.value)}`);
}

Deno.test("TestNewPodAdded", () => {
  const { channel, ch, config } = createPodConfigTester("Incremental");
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  config.sync();
  expectPodUpdate(ch, createPodUpdate("SET", AllSource, createValidPod("foo", "new")));
});

Deno.test("TestNewPodAddedInvalidNamespace", () => {
  const { channel, ch, config } = createPodConfigTester("Incremental");
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "")));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, createValidPod("foo", "")));
  config.sync();
  expectPodUpdate(ch, createPodUpdate("SET", AllSource, createValidPod("foo", "")));
});

Deno.test("TestNewPodAddedDefaultNamespace", () => {
  const { channel, ch, config } = createPodConfigTester("Incremental");
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "default")));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, createValidPod("foo", "default")));
  config.sync();
  expectPodUpdate(ch, createPodUpdate("SET", AllSource, createValidPod("foo", "default")));
});

Deno.test("TestNewPodAddedDifferentNamespaces", () => {
  const { channel, ch, config } = createPodConfigTester("Incremental");
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "default")));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, createValidPod("foo", "default")));
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  config.sync();
  expectPodUpdate(
    ch,
    createPodUpdate(
      "SET",
      AllSource,
      createValidPod("foo", "default"),
      createValidPod("foo", "new"),
    ),
  );
});

Deno.test("TestInvalidPodFiltered", () => {
  const { channel, ch, recorder } = createPodConfigTester("Incremental");
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  // An update with the same pod twice: the second copy is refused with a FailedValidation event.
  channel(
    createPodUpdate("ADD", TestSource, createValidPod("foo", "new"), createValidPod("foo", "new")),
  );
  expectNoPodUpdate(ch);
  assertEquals(recorder.events, [
    'Warning FailedValidation Error validating pod foo_new(foonew) from test due to duplicate pod name "foo", ignoring',
  ]);
});

Deno.test("TestNewPodAddedSnapshotAndUpdates", () => {
  const { channel, ch, config } = createPodConfigTester("SnapshotAndUpdates");
  const podUpdate = createPodUpdate("ADD", TestSource, createValidPod("foo", "new"));
  channel(podUpdate);
  expectPodUpdate(ch, createPodUpdate("SET", TestSource, createValidPod("foo", "new")));
  config.sync();
  expectPodUpdate(ch, createPodUpdate("SET", AllSource, createValidPod("foo", "new")));
  // Container changes come as UPDATE.
  const pod = structuredClone(podUpdate.pods[0]);
  pod.spec.containers = [{ name: "bar", image: "test", imagePullPolicy: "IfNotPresent" }];
  channel(createPodUpdate("ADD", TestSource, pod));
  expectPodUpdate(ch, createPodUpdate("UPDATE", TestSource, pod));
});

Deno.test("TestNewPodAddedSnapshot", () => {
  const { channel, ch, config } = createPodConfigTester("Snapshot");
  const podUpdate = createPodUpdate("ADD", TestSource, createValidPod("foo", "new"));
  channel(podUpdate);
  expectPodUpdate(ch, createPodUpdate("SET", TestSource, createValidPod("foo", "new")));
  config.sync();
  expectPodUpdate(ch, createPodUpdate("SET", AllSource, createValidPod("foo", "new")));
  const pod = structuredClone(podUpdate.pods[0]);
  pod.spec.containers = [{ name: "bar", image: "test", imagePullPolicy: "IfNotPresent" }];
  channel(createPodUpdate("ADD", TestSource, pod));
  expectPodUpdate(ch, createPodUpdate("SET", TestSource, pod));
});

Deno.test("TestNewPodAddedUpdatedRemoved", () => {
  const { channel, ch } = createPodConfigTester("Incremental");
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  // An identical ADD is ignored.
  channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
  expectNoPodUpdate(ch);
  // A changed ADD becomes an UPDATE.
  const pod = createValidPod("foo", "new");
  pod.spec.containers = [{ name: "bar", image: "test", imagePullPolicy: "IfNotPresent" }];
  channel(createPodUpdate("ADD", TestSource, pod));
  expectPodUpdate(ch, createPodUpdate("UPDATE", TestSource, pod));
  channel(createPodUpdate("REMOVE", TestSource, createValidPod("foo", "new")));
  expectPodUpdate(ch, createPodUpdate("REMOVE", TestSource, pod));
});

Deno.test("TestNewPodAddedDelete", () => {
  const { channel, ch } = createPodConfigTester("Incremental");
  const addedPod = createValidPod("foo", "new");
  channel(createPodUpdate("ADD", TestSource, addedPod));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, addedPod));
  // Marked deleted: the existing pod is gracefully deleted.
  const deletedPod = createValidPod("foo", "new");
  deletedPod.metadata.deletionTimestamp = "2026-11-23T05:00:00Z";
  channel(createPodUpdate("DELETE", TestSource, deletedPod));
  const next = ch.tryReceive();
  assert(next && !next.done);
  assertEquals(next.value.op, "DELETE");
  assertEquals(next.value.pods[0].metadata.deletionTimestamp, "2026-11-23T05:00:00Z");
  expectNoPodUpdate(ch);
});

Deno.test("TestNewPodAddedUpdatedSet", () => {
  const { channel, ch } = createPodConfigTester("Incremental");
  channel(
    createPodUpdate(
      "ADD",
      TestSource,
      createValidPod("foo", "new"),
      createValidPod("foo2", "new"),
      createValidPod("foo3", "new"),
    ),
  );
  expectPodUpdate(
    ch,
    createPodUpdate(
      "ADD",
      TestSource,
      createValidPod("foo", "new"),
      createValidPod("foo2", "new"),
      createValidPod("foo3", "new"),
    ),
  );
  // A SET becomes REMOVE, ADD and UPDATE, in that order.
  const pod = createValidPod("foo2", "new");
  pod.spec.containers = [{ name: "bar", image: "test", imagePullPolicy: "IfNotPresent" }];
  channel(
    createPodUpdate(
      "SET",
      TestSource,
      pod,
      createValidPod("foo3", "new"),
      createValidPod("foo4", "new"),
    ),
  );
  expectPodUpdate(
    ch,
    createPodUpdate("REMOVE", TestSource, createValidPod("foo", "new")),
    createPodUpdate("ADD", TestSource, createValidPod("foo4", "new")),
    createPodUpdate("UPDATE", TestSource, pod),
  );
});

Deno.test("TestNewPodAddedSetReconciled", async (t) => {
  let n = 0;
  const newTestPods = (touchStatus: boolean, touchSpec: boolean): [Pod[], Pod] => {
    const pods = [
      createValidPod("changeable-pod-0", "new"),
      createValidPod("constant-pod-1", "new"),
      createValidPod("constant-pod-2", "new"),
    ];
    if (touchStatus) pods[0].status = { message: String(++n) };
    if (touchSpec) pods[0].spec.containers[0].name = String(++n);
    return [pods, pods[0]];
  };
  for (const op of ["ADD", "SET"] as const) {
    await t.step(op, () => {
      let [pods] = newTestPods(false, false);
      const { channel, ch } = createPodConfigTester("Incremental");
      // A SET first, to mark the source as seen.
      channel(createPodUpdate("SET", TestSource, ...pods));
      expectPodUpdate(ch, createPodUpdate("ADD", TestSource, ...pods));
      // Unchanged status: no reconcile.
      channel(createPodUpdate(op, TestSource, ...pods));
      expectNoPodUpdate(ch);
      // Changed status alone: a reconcile.
      let changed: Pod;
      [pods, changed] = newTestPods(true, false);
      channel(createPodUpdate(op, TestSource, ...pods));
      expectPodUpdate(ch, createPodUpdate("RECONCILE", TestSource, changed));
      // Changed status and spec: an update, no reconcile.
      [pods, changed] = newTestPods(true, true);
      channel(createPodUpdate(op, TestSource, ...pods));
      expectPodUpdate(ch, createPodUpdate("UPDATE", TestSource, changed));
    });
  }
});

Deno.test("TestInitialEmptySet", async (t) => {
  const cases: [PodConfigNotificationMode, PodOperation][] = [
    ["Incremental", "ADD"],
    ["Snapshot", "SET"],
    ["SnapshotAndUpdates", "SET"],
  ];
  for (const [mode, op] of cases) {
    await t.step(mode, () => {
      const { channel, ch } = createPodConfigTester(mode);
      // The first empty SET yields an empty update (the source is ready).
      channel(createPodUpdate("SET", TestSource));
      expectPodUpdate(ch, createPodUpdate(op, TestSource));
      // Later empty SETs are ignored.
      channel(createPodUpdate("SET", TestSource));
      channel(createPodUpdate("ADD", TestSource, createValidPod("foo", "new")));
      expectPodUpdate(ch, createPodUpdate(op, TestSource, createValidPod("foo", "new")));
    });
  }
});

Deno.test("TestPodUpdateAnnotations", () => {
  const { channel, ch } = createPodConfigTester("Incremental");
  const pod = createValidPod("foo2", "new");
  pod.metadata.annotations = { "kubernetes.io/blah": "blah" };
  const clone = structuredClone(pod);
  channel(
    createPodUpdate(
      "SET",
      TestSource,
      createValidPod("foo1", "new"),
      clone,
      createValidPod("foo3", "new"),
    ),
  );
  expectPodUpdate(
    ch,
    createPodUpdate(
      "ADD",
      TestSource,
      createValidPod("foo1", "new"),
      pod,
      createValidPod("foo3", "new"),
    ),
  );
  const set = () =>
    channel(
      createPodUpdate(
        "SET",
        TestSource,
        createValidPod("foo1", "new"),
        structuredClone(pod),
        createValidPod("foo3", "new"),
      ),
    );
  pod.metadata.annotations["kubernetes.io/blah"] = "superblah";
  set();
  expectPodUpdate(ch, createPodUpdate("UPDATE", TestSource, pod));
  pod.metadata.annotations["kubernetes.io/otherblah"] = "doh";
  set();
  expectPodUpdate(ch, createPodUpdate("UPDATE", TestSource, pod));
  delete pod.metadata.annotations["kubernetes.io/blah"];
  set();
  expectPodUpdate(ch, createPodUpdate("UPDATE", TestSource, pod));
});

Deno.test("TestPodUpdateLabels", () => {
  const { channel, ch } = createPodConfigTester("Incremental");
  const pod = createValidPod("foo2", "new");
  pod.metadata.labels = { key: "value" };
  channel(createPodUpdate("SET", TestSource, structuredClone(pod)));
  expectPodUpdate(ch, createPodUpdate("ADD", TestSource, pod));
  pod.metadata.labels.key = "newValue";
  channel(createPodUpdate("SET", TestSource, structuredClone(pod)));
  expectPodUpdate(ch, createPodUpdate("UPDATE", TestSource, pod));
});

// Go's version races Channel() against SeenAllSources() on goroutines; on one event loop the
// interesting part is that registering sources and asking never disagree.
Deno.test("TestPodConfigRace", () => {
  const config = new PodConfig({ recorder: new FakeRecorder() });
  const seen = new Set([TestSource]);
  for (let i = 0; i < 100; i++) {
    config.channel(String(i));
    assertEquals(config.seenAllSources(seen), false);
  }
});

Deno.test("SeenAllSources gates on a SET from every registered source", () => {
  const config = new PodConfig({ recorder: new FakeRecorder() });
  const file = config.channel("file");
  const api = config.channel("api");
  const both = new Set(["file", "api"]);
  assertEquals(config.seenAllSources(both), false);
  file({ op: "SET", source: "file", pods: [] });
  // An ADD is not a SET: the API source is still not known to be complete.
  api({ op: "ADD", source: "api", pods: [createValidPod("a", "ns")] });
  assertEquals(config.seenAllSources(both), false);
  api({ op: "SET", source: "api", pods: [createValidPod("a", "ns")] });
  assertEquals(config.seenAllSources(both), true);
  assertEquals(config.seenAllSources(new Set(["file"])), false);
});

Deno.test("merge stamps config.source and config.seen, keeps the first-seen time, leaves the sender's pods alone", () => {
  const clock = new FakeClock(Date.parse("2026-11-23T05:00:00.250Z"));
  const config = new PodConfig({ recorder: new FakeRecorder(), clock });
  const api = config.channel("api");
  const pod = createValidPod("web", "default");
  api({ op: "SET", source: "api", pods: [pod] });
  assertEquals(pod.metadata.annotations, undefined);
  const added = config.updates().tryReceive()!.value!;
  assertEquals(added.pods[0].metadata.annotations, {
    [ConfigSourceAnnotationKey]: "api",
    [ConfigFirstSeenAnnotationKey]: "2026-11-23T05:00:00.250Z",
  });
  clock.setTime(clock.now() + 60_000);
  const changed = structuredClone(pod);
  changed.metadata.labels = { a: "b" };
  api({ op: "SET", source: "api", pods: [changed] });
  const updated = config.updates().tryReceive()!.value!;
  assertEquals(updated.op, "UPDATE");
  assertEquals(
    updated.pods[0].metadata.annotations?.[ConfigFirstSeenAnnotationKey],
    "2026-11-23T05:00:00.250Z",
  );
});

Deno.test("merge of a re-sent set: the same objects are no change, new objects are compared", () => {
  const config = new PodConfig({ recorder: new FakeRecorder(), clock: new FakeClock(0) });
  const api = config.channel("api");
  const web = createValidPod("web", "default");
  const db = createValidPod("db", "default");
  api({ op: "SET", source: "api", pods: [web, db] });
  assertEquals(config.updates().tryReceive()?.value?.op, "ADD");
  // The API source re-sends its whole set after every watch event, mostly the same objects.
  api({ op: "SET", source: "api", pods: [web, db] });
  expectNoPodUpdate(config.updates());
  // A new object with another status only (as after a status patch) is a reconcile...
  const webRunning: Pod = { ...web, status: { phase: "Running" } };
  api({ op: "SET", source: "api", pods: [webRunning, db] });
  expectPodUpdate(config.updates(), createPodUpdate("RECONCILE", "api", webRunning));
  // ...an equal copy of it is no change, and a new spec is an update.
  api({ op: "SET", source: "api", pods: [structuredClone(webRunning), db] });
  expectNoPodUpdate(config.updates());
  const webLabelled: Pod = {
    ...webRunning,
    metadata: { ...webRunning.metadata, labels: { tier: "front" } },
  };
  api({ op: "SET", source: "api", pods: [webLabelled, db] });
  expectPodUpdate(config.updates(), createPodUpdate("UPDATE", "api", webLabelled));
  assertEquals(web.metadata.annotations, undefined);
  assertEquals(webLabelled.metadata.annotations, undefined);
});

Deno.test("merge of a re-sent set of 30 unchanged pods copies none of them", () => {
  const config = new PodConfig({ recorder: new FakeRecorder(), clock: new FakeClock(0) });
  const api = config.channel("api");
  const pods = Array.from({ length: 30 }, (_, i) => createValidPod(`web-${i}`, "default"));
  api({ op: "SET", source: "api", pods });
  assertEquals(config.updates().tryReceive()?.value?.pods.length, 30);
  // Deep copies of every pod on every send were O(pods²) while pods start (one send per watch
  // event): count them for a send that changes nothing.
  const original = globalThis.structuredClone;
  let copies = 0;
  globalThis.structuredClone = ((value: unknown, options?: StructuredSerializeOptions) => {
    copies++;
    return original(value, options);
  }) as typeof structuredClone;
  try {
    api({ op: "SET", source: "api", pods });
  } finally {
    globalThis.structuredClone = original;
  }
  expectNoPodUpdate(config.updates());
  assertEquals(copies, 0);
});
