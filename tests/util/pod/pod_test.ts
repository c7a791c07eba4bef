/**
 * Port of pkg/util/pod/pod_test.go: the patch bytes must equal kubelet's byte for byte. Statuses
 * are written in the JSON form Go marshals `getPodStatus()` to (zero-valued fields included).
 * @module
 */
import assert from "node:assert/strict";
import { FakeClientset } from "../../testing/fake_clientset.ts";
import { patchPodStatus, preparePatchBytesForPodStatus } from "../../../src/util/pod/pod.ts";
import type { PodStatus } from "../../../src/api/core/v1/mod.ts";
import { isConflict, newConflict } from "../../../src/client/errors.ts";

// getPodStatus() as encoding/json writes it.
function getPodStatus(): PodStatus {
  const containerStatus = (name: string) => ({
    name,
    state: {},
    lastState: {},
    ready: true,
    restartCount: 0,
    image: "",
    imageID: "",
  });
  return {
    phase: "Running",
    conditions: [
      { type: "Ready", status: "True", lastProbeTime: null, lastTransitionTime: null },
      { type: "PodScheduled", status: "True", lastProbeTime: null, lastTransitionTime: null },
    ],
    message: "Message",
    containerStatuses: [containerStatus("container1"), containerStatus("container2")],
  };
}

Deno.test("TestPatchPodStatus", async (t) => {
  const ns = "ns";
  const name = "name";
  const uid = "myuid";
  const client = new FakeClientset();
  await client.coreV1.pods(ns).create({
    metadata: { namespace: ns, name },
    spec: { containers: [] },
  });

  const cases: {
    description: string;
    mutate: (s: PodStatus) => PodStatus;
    expectUnchanged: boolean;
    expectedPatchBytes: string;
  }[] = [
    {
      description: "no change",
      mutate: (s) => s,
      expectUnchanged: true,
      expectedPatchBytes: '{"metadata":{"uid":"myuid"}}',
    },
    {
      description: "message change",
      mutate: (s) => ({ ...s, message: "random message" }),
      expectUnchanged: false,
      expectedPatchBytes: '{"metadata":{"uid":"myuid"},"status":{"message":"random message"}}',
    },
    {
      description: "pod condition change",
      mutate: (s) => {
        s.conditions![0].status = "False";
        return s;
      },
      expectUnchanged: false,
      expectedPatchBytes:
        '{"metadata":{"uid":"myuid"},"status":{"$setElementOrder/conditions":[{"type":"Ready"},{"type":"PodScheduled"}],"conditions":[{"status":"False","type":"Ready"}]}}',
    },
    {
      description: "additional init container condition",
      mutate: (s) => ({
        ...s,
        initContainerStatuses: [{
          name: "init-container",
          state: {},
          lastState: {},
          ready: true,
          restartCount: 0,
          image: "",
          imageID: "",
        }],
      }),
      expectUnchanged: false,
      expectedPatchBytes:
        '{"metadata":{"uid":"myuid"},"status":{"initContainerStatuses":[{"image":"","imageID":"","lastState":{},"name":"init-container","ready":true,"restartCount":0,"state":{}}]}}',
    },
  ];
  for (const tc of cases) {
    await t.step(tc.description, async () => {
      client.clearActions();
      const result = await patchPodStatus(client, {
        namespace: ns,
        name,
        uid,
        oldPodStatus: getPodStatus(),
        newPodStatus: tc.mutate(getPodStatus()),
      });
      assert.equal(result.unchanged, tc.expectUnchanged);
      assert.equal(result.patchBytes, tc.expectedPatchBytes);
      // An unchanged status sends nothing; a change goes to pods/<name>/status as SMP.
      const sent = client.actions.map((a) => [a.verb, a.subresource, a.patchType, a.patch]);
      assert.deepStrictEqual(
        sent,
        tc.expectUnchanged
          ? []
          : [["patch", "status", "application/strategic-merge-patch+json", tc.expectedPatchBytes]],
      );
    });
  }
});

Deno.test("patchPodStatus: an API error stays classifiable through the wrapping", async () => {
  const client = new FakeClientset();
  client.prependReactor("patch", "pods", () => ({
    handled: true,
    err: newConflict(
      { resource: "pods" },
      "p",
      "Precondition failed: UID in precondition: a, UID in object meta: b",
    ),
  }));
  const err = await patchPodStatus(client, {
    namespace: "ns",
    name: "p",
    uid: "a",
    oldPodStatus: {},
    newPodStatus: { phase: "Running" },
  }).catch((e) => e);
  assert.equal(isConflict(err), true);
  assert.match(
    err.message,
    /^failed to patch status "\{\\"metadata\\":\{\\"uid\\":\\"a\\"\},\\"status\\":\{\\"phase\\":\\"Running\\"\}\}" for pod "ns\/p": /,
  );
});

Deno.test("preparePatchBytesForPodStatus: cleared fields are sent as null", () => {
  const { patchBytes } = preparePatchBytesForPodStatus(
    { phase: "Running", message: "m", reason: "r" },
    { phase: "Running" },
    { namespace: "ns", name: "p", uid: "u" },
  );
  assert.equal(patchBytes, '{"metadata":{"uid":"u"},"status":{"message":null,"reason":null}}');
});
