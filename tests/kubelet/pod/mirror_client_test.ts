/**
 * Mirror pods and the pod manager, ported from kubelet's pkg/kubelet/pod/mirror_client_test.go
 * and pod_manager_test.go under the Go names, with the FakeClientset.
 */
import {
  deepStrictEqual as assertEquals,
  ok as assert,
  rejects as assertRejects,
  throws as assertThrows,
} from "node:assert/strict";
import type { Node, Pod } from "../../../src/api/core/v1/mod.ts";
import { newConflict } from "../../../src/client/errors.ts";
import { BasicMirrorClient } from "../../../src/kubelet/pod/mirror_client.ts";
import { BasicPodManager } from "../../../src/kubelet/pod/pod_manager.ts";
import {
  ConfigHashAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  parsePodFullName,
} from "../../../src/kubelet/types/mod.ts";
import { setLogSink } from "../../../src/util/log.ts";
import { FakeClientset } from "../../testing/fake_clientset.ts";

setLogSink(() => {});

Deno.test("TestParsePodFullName", () => {
  const successful: Record<string, { name: string; namespace: string }> = {
    "bar_foo": { name: "bar", namespace: "foo" },
    "bar.org_foo.com": { name: "bar.org", namespace: "foo.com" },
    "bar-bar_foo": { name: "bar-bar", namespace: "foo" },
  };
  for (const [fullName, expected] of Object.entries(successful)) {
    assertEquals(parsePodFullName(fullName), expected);
  }
  for (const fullName of ["barfoo", "bar_foo_foo", "", "bar_", "_foo"]) {
    assertThrows(() => parsePodFullName(fullName), /failed to parse/);
  }
});

const testNodeName = "test-node-name";
const testNodeUID = "test-node-uid-1234";
const testPodName = "test-pod-name";
const testPodNS = "test-pod-ns";
const testPodHash = "123456789";

function staticPod(): Pod {
  return {
    metadata: {
      name: testPodName,
      namespace: testPodNS,
      uid: "static-uid",
      annotations: { [ConfigHashAnnotationKey]: testPodHash, [ConfigSourceAnnotationKey]: "file" },
    },
    spec: { containers: [{ name: "c" }] },
  };
}

Deno.test("TestCreateMirrorPod", async (t) => {
  const cases: { desc: string; node?: Node; nodeErr?: Error; expectSuccess: boolean }[] = [
    {
      desc: "cannot get node",
      nodeErr: new Error("expected: cannot get node"),
      expectSuccess: false,
    },
    { desc: "node missing UID", node: { metadata: { name: testNodeName } }, expectSuccess: false },
    {
      desc: "successfully fetched node",
      node: { metadata: { name: testNodeName, uid: testNodeUID } },
      expectSuccess: true,
    },
  ];
  for (const c of cases) {
    await t.step(c.desc, async () => {
      const clientset = new FakeClientset();
      const mc = new BasicMirrorClient(clientset, {
        nodeName: testNodeName,
        nodeGetter: () => {
          if (c.nodeErr) throw c.nodeErr;
          return c.node;
        },
      });
      if (!c.expectSuccess) {
        await assertRejects(mc.createMirrorPod(staticPod()), /failed to get node UID/);
        assertEquals(clientset.actions, []);
        return;
      }
      await mc.createMirrorPod(staticPod());
      const created = await clientset.coreV1.pods(testPodNS).get(testPodName);
      assertEquals(created.metadata.annotations?.[ConfigMirrorAnnotationKey], testPodHash);
      assertEquals(created.metadata.ownerReferences, [{
        apiVersion: "v1",
        kind: "Node",
        name: testNodeName,
        uid: testNodeUID,
        controller: true,
      }]);
      // The server assigns the mirror its own UID.
      assertEquals(clientset.actions[0].object?.metadata.uid, undefined);
    });
  }
});

Deno.test("createMirrorPod: an existing mirror with the same hash is success, another hash is not", async () => {
  const node: Node = { metadata: { name: testNodeName, uid: testNodeUID } };
  const clientset = new FakeClientset();
  const mc = new BasicMirrorClient(clientset, { nodeName: testNodeName, nodeGetter: () => node });
  await mc.createMirrorPod(staticPod());
  await mc.createMirrorPod(staticPod());
  const changed = staticPod();
  changed.metadata.annotations![ConfigHashAnnotationKey] = "other";
  await assertRejects(mc.createMirrorPod(changed), /already exists/);
});

Deno.test("deleteMirrorPod: grace 0 with the UID precondition; missing or mismatched is false", async () => {
  const mirror: Pod & { kind: string } = {
    kind: "Pod",
    metadata: {
      name: testPodName,
      namespace: testPodNS,
      uid: "mirror-1",
      annotations: { [ConfigMirrorAnnotationKey]: testPodHash },
    },
    spec: { containers: [] },
  };
  const clientset = new FakeClientset(mirror);
  const mc = new BasicMirrorClient(clientset, {
    nodeName: testNodeName,
    nodeGetter: () => undefined,
  });
  clientset.prependReactor("delete", "pods", (action) => {
    if (action.deleteOptions?.preconditions?.uid !== "mirror-1") {
      return {
        handled: true,
        err: newConflict({ group: "", resource: "pods" }, testPodName, "Precondition failed"),
      };
    }
    return { handled: false };
  });
  assertEquals(await mc.deleteMirrorPod(`${testPodName}_${testPodNS}`, "stale-uid"), false);
  assertEquals(await mc.deleteMirrorPod(`${testPodName}_${testPodNS}`, "mirror-1"), true);
  assertEquals(clientset.actions.at(-1)?.deleteOptions, {
    gracePeriodSeconds: 0,
    preconditions: { uid: "mirror-1" },
  });
  assertEquals(await mc.deleteMirrorPod(`${testPodName}_${testPodNS}`, "mirror-1"), false);
  await assertRejects(mc.deleteMirrorPod("no-namespace"), /failed to parse/);
});

function pod(uid: string, name: string, annotations: Record<string, string> = {}): Pod {
  return {
    metadata: { uid, name, namespace: "default", annotations },
    spec: { containers: [] },
  };
}

// pod_manager_test.go TestGetSetPods: mirror pods are kept apart from regular pods.
Deno.test("TestGetSetPods", () => {
  const mirror = pod("987654321", "bar", {
    [ConfigSourceAnnotationKey]: "api",
    [ConfigMirrorAnnotationKey]: "mirror",
  });
  const staticPod = pod("123456789", "bar", { [ConfigSourceAnnotationKey]: "file" });
  const expected = [pod("999999999", "taco", { [ConfigSourceAnnotationKey]: "api" }), staticPod];
  const m = new BasicPodManager();
  m.setPods([...expected, mirror]);
  assertEquals(m.getPods(), expected);
  // Regular pods by full name and by UID.
  for (const p of expected) {
    assertEquals(m.getPodByFullName(`${p.metadata.name}_default`), p);
    assertEquals(m.getPodByName("default", p.metadata.name!), p);
    assertEquals(m.getPodByUID(p.metadata.uid!), p);
  }
  // The mirror translates to the static pod.
  assertEquals(m.getMirrorPodByPod(staticPod), mirror);
  assertEquals(m.getPodByMirrorPod(mirror), staticPod);
  assertEquals(m.translatePodUID("987654321"), "123456789");
  assertEquals(m.translatePodUID("999999999"), "999999999");
  assertEquals(m.getPodByUID("987654321"), undefined);
});

// pod_manager_test.go TestRemovePods.
Deno.test("TestRemovePods", () => {
  const mirror = pod("mirror-uid", "mirror-pod", {
    [ConfigSourceAnnotationKey]: "api",
    [ConfigMirrorAnnotationKey]: "mirror",
  });
  const staticPod = pod("static-uid", "mirror-pod", { [ConfigSourceAnnotationKey]: "file" });
  const updates = [
    pod("extra-pod-uid", "extra-pod", { [ConfigSourceAnnotationKey]: "api" }),
    mirror,
    staticPod,
  ];
  const m = new BasicPodManager();
  m.setPods(updates);
  m.removePod(staticPod);
  const { pods, mirrorPods } = m.getPodsAndMirrorPods();
  assertEquals(pods, [updates[0]]);
  assertEquals(mirrorPods, [mirror]);
  // The mirror of the removed static pod is now an orphan.
  assertEquals(m.getOrphanedMirrorPodNames(), ["mirror-pod_default"]);
  m.removePod(mirror);
  assertEquals(m.getOrphanedMirrorPodNames(), []);
});

Deno.test("getUIDTranslations and isMirrorPodOf", () => {
  const m = new BasicPodManager();
  const staticPod = pod("static-uid", "web", {
    [ConfigSourceAnnotationKey]: "file",
    [ConfigHashAnnotationKey]: "h1",
  });
  m.addPod(staticPod);
  let t = m.getUIDTranslations();
  assertEquals([...t.podToMirror], [["static-uid", ""]]);
  assertEquals([...t.mirrorToPod], []);
  const mirror = pod("mirror-uid", "web", {
    [ConfigSourceAnnotationKey]: "api",
    [ConfigMirrorAnnotationKey]: "h1",
  });
  m.addPod(mirror);
  t = m.getUIDTranslations();
  assertEquals([...t.podToMirror], [["static-uid", "mirror-uid"]]);
  assertEquals([...t.mirrorToPod], [["mirror-uid", "static-uid"]]);
  assert(m.isMirrorPodOf(mirror, staticPod));
  const stale = pod("mirror-uid", "web", { [ConfigMirrorAnnotationKey]: "h0" });
  assertEquals(m.isMirrorPodOf(stale, staticPod), false);
  assertEquals(m.getPodAndMirrorPod(mirror), {
    pod: staticPod,
    mirrorPod: mirror,
    wasMirror: true,
  });
});
