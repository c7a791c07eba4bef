import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { Lease } from "../../../src/api/coordination/v1/mod.ts";
import type { Node } from "../../../src/api/core/v1/mod.ts";
import { newConflict, newInternalError, newNotFound } from "../../../src/client/errors.ts";
import {
  Controller,
  microTime,
  NamespaceNodeLease,
} from "../../../src/kubelet/nodelease/controller.ts";
import { setNodeOwnerFunc } from "../../../src/kubelet/util/nodelease.ts";
import { FakeClock } from "../../../src/util/clock.ts";
import { setLogSink } from "../../../src/util/log.ts";
import { actionMatches, FakeClientset, type KubeObject } from "../../testing/fake_clientset.ts";

const leaseGR = { group: "coordination.k8s.io", resource: "leases" };

function testNode(): Node {
  return { apiVersion: "v1", kind: "Node", metadata: { name: "foo", uid: "foo-uid" } };
}

const nodeOwner = [{ apiVersion: "v1", kind: "Node", name: "foo", uid: "foo-uid" }];

function newTestController(
  client: FakeClientset,
  options: { clock?: FakeClock; latestLease?: Lease; onRepeatedHeartbeatFailure?: () => void } = {},
): Controller {
  const c = new Controller({
    clock: options.clock ?? new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0)),
    client,
    holderIdentity: "foo",
    leaseDurationSeconds: 10,
    renewIntervalMs: 10_000,
    leaseNamespace: NamespaceNodeLease,
    onRepeatedHeartbeatFailure: options.onRepeatedHeartbeatFailure,
    newLeasePostProcessFunc: setNodeOwnerFunc(client, "foo"),
  });
  c.latestLease = options.latestLease;
  return c;
}

function quiet(): () => void {
  const previous = setLogSink(() => {});
  return () => setLogSink(previous);
}

Deno.test("TestMicroTime", () => {
  assertEquals(microTime(Date.UTC(2026, 10, 23, 4, 50, 0, 123)), "2026-11-23T04:50:00.123000Z");
  assertEquals(microTime(Date.UTC(2026, 10, 23, 4, 50, 0, 0) + 0.5), "2026-11-23T04:50:00.000500Z");
});

Deno.test("TestNewNodeLease", async (t) => {
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0));
  const now = microTime(clock.now());
  const tenSecondsAgo = microTime(clock.now() - 10_000);
  const cases: { desc: string; objects: KubeObject[]; base?: Lease; expect: Lease }[] = [
    {
      desc: "nil base without node",
      objects: [],
      expect: {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "foo", namespace: NamespaceNodeLease },
        spec: { holderIdentity: "foo", leaseDurationSeconds: 10, renewTime: now },
      },
    },
    {
      desc: "nil base with node",
      objects: [testNode()],
      expect: {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "foo", namespace: NamespaceNodeLease, ownerReferences: nodeOwner },
        spec: { holderIdentity: "foo", leaseDurationSeconds: 10, renewTime: now },
      },
    },
    {
      desc: "non-nil base without owner ref, renew time is updated",
      objects: [testNode()],
      base: {
        metadata: { name: "foo", namespace: NamespaceNodeLease },
        spec: { holderIdentity: "foo", leaseDurationSeconds: 10, renewTime: tenSecondsAgo },
      },
      expect: {
        metadata: { name: "foo", namespace: NamespaceNodeLease, ownerReferences: nodeOwner },
        spec: { holderIdentity: "foo", leaseDurationSeconds: 10, renewTime: now },
      },
    },
    {
      desc: "non-nil base with owner ref, renew time is updated",
      objects: [testNode()],
      base: {
        metadata: { name: "foo", namespace: NamespaceNodeLease, ownerReferences: nodeOwner },
        spec: { holderIdentity: "foo", leaseDurationSeconds: 10, renewTime: tenSecondsAgo },
      },
      expect: {
        metadata: { name: "foo", namespace: NamespaceNodeLease, ownerReferences: nodeOwner },
        spec: { holderIdentity: "foo", leaseDurationSeconds: 10, renewTime: now },
      },
    },
  ];
  for (const tc of cases) {
    await t.step(tc.desc, async () => {
      const restore = quiet();
      try {
        const c = newTestController(new FakeClientset(...tc.objects), { clock });
        const baseCopy = structuredClone(tc.base);
        // Without the Node the post-process step fails; the lease itself is still built.
        const { lease } = await c.newLease(tc.base);
        assert(lease !== tc.base, "the new lease must be newly allocated");
        assertEquals(lease, tc.expect);
        assertEquals(tc.base, baseCopy, "the base is not modified");
      } finally {
        restore();
      }
    });
  }
});

Deno.test("TestRetryUpdateNodeLease", async (t) => {
  const noConnectionUpdateErr = newInternalError("put lease: server timeout");
  const optimisticLockUpdateErr = newConflict(leaseGR, "lease", "conflict");
  const cases: {
    desc: string;
    update: () => { ret?: Lease; err?: Error };
    get?: () => { ret?: Lease; err?: Error };
    failOnRepeatedHeartbeatFailure: boolean;
    expectErr: boolean;
  }[] = [
    {
      desc: "no errors",
      update: () => ({ ret: { metadata: {} } }),
      failOnRepeatedHeartbeatFailure: false,
      expectErr: false,
    },
    {
      desc: "connection errors",
      update: () => ({ err: noConnectionUpdateErr }),
      failOnRepeatedHeartbeatFailure: false,
      expectErr: true,
    },
    {
      desc: "optimistic lock errors",
      update: (() => {
        let i = 0;
        return () => {
          i++;
          if (i === 1) return { err: noConnectionUpdateErr };
          if (i === 2) return { err: optimisticLockUpdateErr };
          return { ret: { metadata: {} } };
        };
      })(),
      get: () => ({ ret: { metadata: {} } }),
      failOnRepeatedHeartbeatFailure: true,
      expectErr: false,
    },
  ];
  for (const tc of cases) {
    await t.step(tc.desc, async () => {
      const restore = quiet();
      try {
        const cl = new FakeClientset(testNode());
        cl.prependReactor("update", "leases", () => ({ handled: true, ...tc.update() }));
        if (tc.get) cl.prependReactor("get", "leases", () => ({ handled: true, ...tc.get!() }));
        let failures = 0;
        const c = newTestController(cl, { onRepeatedHeartbeatFailure: () => failures++ });
        let err: unknown;
        try {
          await c.retryUpdateLease(undefined);
        } catch (e) {
          err = e;
        }
        assertEquals(err !== undefined, tc.expectErr, String(err));
        if (tc.failOnRepeatedHeartbeatFailure) {
          assertEquals(failures, 0, "onRepeatedHeartbeatFailure called");
        }
        if (tc.desc === "connection errors") {
          // Called after every failed try but the first.
          assertEquals(failures, 4);
          assertEquals(cl.actions.filter((a) => actionMatches(a, "update", "leases")).length, 5);
        }
        if (tc.desc === "optimistic lock errors") {
          // The conflict is followed by exactly one GET of the lease, then the PUT.
          const verbs = cl.actions.filter((a) => a.resource === "leases").map((a) => a.verb);
          assertEquals(verbs, ["update", "update", "get", "update"]);
        }
      } finally {
        restore();
      }
    });
  }
});

Deno.test("TestUpdateUsingLatestLease", async (t) => {
  const notFoundErr = newNotFound(leaseGR, "foo");
  const makeLease = (name: string, resourceVersion: string): Lease => ({
    metadata: { namespace: NamespaceNodeLease, name, resourceVersion },
  });
  const cases: {
    desc: string;
    existingObjs: KubeObject[];
    latestLease?: Lease;
    update?: () => { ret?: Lease; err?: Error };
    get?: () => { ret?: Lease; err?: Error };
    create?: () => { ret?: Lease; err?: Error };
    expectLatestLease: boolean;
    expectLeaseResourceVersion: string;
  }[] = [
    {
      desc: "latestLease is nil and need to create",
      existingObjs: [testNode()],
      get: () => ({ err: notFoundErr }),
      create: () => ({ ret: makeLease("foo", "1") }),
      expectLatestLease: true,
      expectLeaseResourceVersion: "1",
    },
    {
      desc: "latestLease is nil and need to create, node doesn't exist",
      existingObjs: [],
      get: () => ({ err: notFoundErr }),
      create: () => ({ ret: makeLease("foo", "1") }),
      expectLatestLease: false,
      expectLeaseResourceVersion: "1",
    },
    {
      desc: "latestLease is nil and need to update",
      existingObjs: [testNode()],
      update: () => ({ ret: makeLease("foo", "2") }),
      get: () => ({ ret: makeLease("foo", "1") }),
      expectLatestLease: true,
      expectLeaseResourceVersion: "2",
    },
    {
      desc: "latestLease exist and need to update",
      existingObjs: [testNode()],
      latestLease: makeLease("foo", "1"),
      update: () => ({ ret: makeLease("foo", "2") }),
      expectLatestLease: true,
      expectLeaseResourceVersion: "2",
    },
    {
      desc: "update with latest lease failed",
      existingObjs: [testNode()],
      latestLease: makeLease("foo", "1"),
      update: (() => {
        let i = 0;
        return () => {
          i++;
          if (i === 1) return { err: notFoundErr };
          if (i === 2) return { ret: makeLease("foo", "3") };
          throw new Error("unexpect call update lease");
        };
      })(),
      get: () => ({ ret: makeLease("foo", "2") }),
      expectLatestLease: true,
      expectLeaseResourceVersion: "3",
    },
  ];
  for (const tc of cases) {
    await t.step(tc.desc, async () => {
      const restore = quiet();
      try {
        const cl = new FakeClientset(...tc.existingObjs);
        if (tc.update) {
          cl.prependReactor("update", "leases", () => ({ handled: true, ...tc.update!() }));
        }
        if (tc.get) cl.prependReactor("get", "leases", () => ({ handled: true, ...tc.get!() }));
        if (tc.create) {
          cl.prependReactor("create", "leases", () => ({ handled: true, ...tc.create!() }));
        }
        const c = newTestController(cl, { latestLease: tc.latestLease });
        await c.sync();
        if (tc.expectLatestLease) {
          assertEquals(c.latestLease?.metadata.resourceVersion, tc.expectLeaseResourceVersion);
        } else {
          assertEquals(c.latestLease, undefined);
        }
      } finally {
        restore();
      }
    });
  }
});

Deno.test("TestLeaseRenewedEveryTenSecondsWithJitter", async () => {
  const restore = quiet();
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 5, 0, 0));
  const start = clock.now();
  const cl = new FakeClientset(testNode());
  const randoms = [0, 0.999, 0.5, 0.25];
  let r = 0;
  const c = new Controller({
    clock,
    client: cl,
    holderIdentity: "foo",
    leaseDurationSeconds: 40,
    renewIntervalMs: 10_000,
    leaseNamespace: NamespaceNodeLease,
    newLeasePostProcessFunc: setNodeOwnerFunc(cl, "foo"),
    random: () => randoms[r++ % randoms.length],
  });
  const writeTimes: number[] = [];
  cl.prependReactor("*", "leases", (a) => {
    if (a.verb === "create" || a.verb === "update") writeTimes.push(clock.now() - start);
    return { handled: false };
  });
  try {
    c.run();
    for (let i = 0; i < 50; i++) await clock.step(1000);
    await c.stop();
    // The first sync creates the lease at once; each later one renews it 10 s × (1 + 0.04 r)
    // after the previous one finished.
    const gaps = writeTimes.slice(1).map((t, i) => t - writeTimes[i]);
    assertEquals(writeTimes[0], 0);
    const expected = [0, 0.999, 0.5, 0.25].map((x) => 10_000 * (1 + 0.04 * x));
    for (const [i, want] of expected.entries()) {
      assert(Math.abs(gaps[i] - want) < 0.01, `gap ${i}: ${gaps[i]} != ${want}`);
    }
    for (const g of gaps) assert(g >= 10_000 && g < 10_400, `gap ${g} outside 10 s + 4 %`);
    assert(gaps.length >= 4, `${gaps.length} renewals`);
    const lease = cl.tracker.get("leases", NamespaceNodeLease, "foo") as Lease;
    assertEquals(lease.spec?.holderIdentity, "foo");
    assertEquals(lease.spec?.leaseDurationSeconds, 40);
    assertEquals(lease.metadata.ownerReferences, nodeOwner);
    assertEquals(clock.pendingTimers(), 0, "nothing left registered after stop");
  } finally {
    restore();
  }
});

Deno.test("TestLeaseEnsureBackoff", async () => {
  // GET fails: the controller waits 200 ms, 400 ms, ... capped at 7 s between attempts.
  const restore = quiet();
  const clock = new FakeClock(0);
  const cl = new FakeClientset(testNode());
  const getTimes: number[] = [];
  cl.prependReactor("get", "leases", () => {
    getTimes.push(clock.now());
    return { handled: true, err: newInternalError("etcd is down") };
  });
  const c = newTestController(cl, { clock });
  try {
    c.run();
    for (let i = 0; i < 40; i++) await clock.step(1000);
    await c.stop();
    const gaps = getTimes.slice(1).map((t, i) => t - getTimes[i]);
    assertEquals(gaps.slice(0, 8), [200, 400, 800, 1600, 3200, 6400, 7000, 7000]);
  } finally {
    restore();
  }
});
