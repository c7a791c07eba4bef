/**
 * Node-side admission, ported from kubelet's pkg/kubelet/lifecycle/predicate_test.go
 * (TestGeneralPredicates, TestRejectPodAdmissionBasedOnOSSelector) plus probelet's
 * embedded-runtime rule.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Node, Pod, ResourceList } from "../../../src/api/core/v1/mod.ts";
import {
  AgentTaintNotTolerated,
  generalFilter,
  PredicateAdmitHandler,
  type PredicateFailureReason,
  rejectPodAdmissionBasedOnOSSelector,
  toleratesAgentTaint,
} from "../../../src/kubelet/lifecycle/predicate.ts";

function makeAllocatableResources(milliCPU: number, memory: number, pods: number): ResourceList {
  return { cpu: `${milliCPU}m`, memory: String(memory), pods: String(pods) };
}

function machine1(spec: Node["spec"] = {}): Node {
  return {
    metadata: { name: "machine1" },
    spec,
    status: {
      capacity: makeAllocatableResources(10, 20, 32),
      allocatable: makeAllocatableResources(10, 20, 32),
    },
  };
}

function newResourcePod(...requests: ResourceList[]): Pod {
  return {
    metadata: {},
    spec: { containers: requests.map((r, i) => ({ name: `c${i}`, resources: { requests: r } })) },
  };
}

function newPodWithPort(...hostPorts: number[]): Pod {
  return {
    metadata: {},
    spec: {
      containers: [{
        name: "c",
        ports: hostPorts.map((p) => ({ hostPort: p, containerPort: p })),
      }],
    },
  };
}

const emptyPod = (): Pod => ({ metadata: {}, spec: { containers: [] } });

Deno.test("TestGeneralPredicates", async (t) => {
  const cases: {
    name: string;
    pod: Pod;
    pods: Pod[];
    node: Node;
    reasons: PredicateFailureReason[];
  }[] = [
    {
      name: "no resources/port/host requested always fits",
      pod: emptyPod(),
      pods: [newResourcePod({ cpu: "9m", memory: "19" })],
      node: machine1(),
      reasons: [],
    },
    {
      name: "not enough cpu and memory resource",
      pod: newResourcePod({ cpu: "8m", memory: "10" }),
      pods: [newResourcePod({ cpu: "5m", memory: "19" })],
      node: machine1(),
      reasons: [
        { kind: "resource", resourceName: "cpu", requested: 8, used: 5, capacity: 10 },
        { kind: "resource", resourceName: "memory", requested: 10, used: 19, capacity: 20 },
      ],
    },
    {
      name: "host not match",
      pod: { metadata: {}, spec: { containers: [], nodeName: "machine2" } },
      pods: [],
      node: machine1(),
      reasons: [{
        kind: "predicate",
        predicateName: "NodeName",
        predicateDesc: "node(s) didn't match the requested node name",
      }],
    },
    {
      name: "hostport conflict",
      pod: newPodWithPort(123),
      pods: [newPodWithPort(123)],
      node: machine1(),
      reasons: [{
        kind: "predicate",
        predicateName: "NodePorts",
        predicateDesc: "node(s) didn't have free ports for the requested pod ports",
      }],
    },
    {
      name: "taint/toleration match",
      pod: {
        metadata: {},
        spec: { containers: [], tolerations: [{ key: "foo" }, { key: "bar" }] },
      },
      pods: [],
      node: machine1({
        taints: [{ key: "foo", effect: "NoSchedule" }, { key: "bar", effect: "NoExecute" }],
      }),
      reasons: [],
    },
    {
      name: "NoSchedule taint/toleration not match",
      pod: emptyPod(),
      pods: [],
      node: machine1({ taints: [{ key: "foo", effect: "NoSchedule" }] }),
      reasons: [],
    },
    {
      name: "NoExecute taint/toleration not match",
      pod: emptyPod(),
      pods: [],
      node: machine1({ taints: [{ key: "bar", effect: "NoExecute" }] }),
      reasons: [{
        kind: "predicate",
        predicateName: "TaintToleration",
        predicateDesc: "node(s) had taints that the pod didn't tolerate",
      }],
    },
    {
      name: "PreferNoSchedule taint/toleration not match",
      pod: emptyPod(),
      pods: [],
      node: machine1({ taints: [{ key: "baz", effect: "PreferNoSchedule" }] }),
      reasons: [],
    },
    {
      name: "static pods ignore taints",
      pod: {
        metadata: { annotations: { "kubernetes.io/config.source": "file" } },
        spec: { containers: [] },
      },
      pods: [],
      node: machine1({
        taints: [{ key: "foo", effect: "NoSchedule" }, { key: "bar", effect: "NoExecute" }],
      }),
      reasons: [],
    },
    {
      name: "static pods do not ignore node affinity",
      pod: {
        metadata: { annotations: { "kubernetes.io/config.source": "file" } },
        spec: {
          containers: [],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: "foo", operator: "Exists" }] }],
              },
            },
          },
        },
      },
      pods: [],
      node: machine1(),
      reasons: [{
        kind: "predicate",
        predicateName: "NodeAffinity",
        predicateDesc: "node(s) didn't match Pod's node affinity/selector",
      }],
    },
    {
      name: "node selector matches the node's labels",
      pod: {
        metadata: {},
        spec: { containers: [], nodeSelector: { "probelet.io/agent": "true" } },
      },
      pods: [],
      node: {
        ...machine1(),
        metadata: { name: "machine1", labels: { "probelet.io/agent": "true" } },
      },
      reasons: [],
    },
    {
      name: "too many pods",
      pod: emptyPod(),
      pods: Array.from({ length: 32 }, emptyPod),
      node: machine1(),
      reasons: [{ kind: "resource", resourceName: "pods", requested: 1, used: 32, capacity: 32 }],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assertEquals(generalFilter(c.pod, { node: c.node, pods: c.pods }), c.reasons);
    });
  }
});

Deno.test("TestRejectPodAdmissionBasedOnOSSelector", async (t) => {
  const pod = (os?: string): Pod => ({
    metadata: { labels: os ? { "kubernetes.io/os": os } : {} },
    spec: { containers: [] },
  });
  const node = (os?: string): Node => ({
    metadata: { name: "n", labels: os ? { "kubernetes.io/os": os } : {} },
  });
  await t.step("OS label match", () => {
    assertEquals(rejectPodAdmissionBasedOnOSSelector(pod("linux"), node("linux"), "linux"), false);
  });
  await t.step("dummyOS label, but the underlying OS matches", () => {
    assertEquals(
      rejectPodAdmissionBasedOnOSSelector(pod("linux"), node("dummyOS"), "linux"),
      false,
    );
  });
  await t.step("dummyOS label, but the underlying OS doesn't match", () => {
    assertEquals(
      rejectPodAdmissionBasedOnOSSelector(pod("dummyOS"), node("dummyOS"), "linux"),
      true,
    );
  });
  await t.step("no label on the pod", () => {
    assertEquals(rejectPodAdmissionBasedOnOSSelector(pod(), node("linux"), "linux"), false);
  });
});

Deno.test("admit reports the first failure the kubelet way", () => {
  const handler = new PredicateAdmitHandler({
    getNode: () => machine1({ taints: [{ key: "bar", effect: "NoExecute" }] }),
  });
  assertEquals(handler.admit({ pod: newPodWithPort(80), otherPods: [newPodWithPort(80)] }), {
    admit: false,
    reason: "NodePorts",
    message:
      "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
  });
  assertEquals(
    handler.admit({ pod: newResourcePod({ memory: "1Ki" }), otherPods: [] }).reason,
    "OutOfmemory",
  );
  assertEquals(
    new PredicateAdmitHandler({ getNode: () => undefined }).admit({
      pod: emptyPod(),
      otherPods: [],
    }),
    { admit: false, reason: "InvalidNodeInfo", message: "Kubelet cannot get node info." },
  );
});

Deno.test("embedded runtime: only pods tolerating probelet.io/agent by key are admitted", async (t) => {
  const node: Node = {
    metadata: { name: "machine1", labels: { "probelet.io/agent": "true" } },
    spec: { taints: [{ key: "probelet.io/agent", value: "true", effect: "NoExecute" }] },
    status: { allocatable: makeAllocatableResources(4000, 1 << 30, 110) },
  };
  const handler = new PredicateAdmitHandler({ getNode: () => node, requireAgentToleration: true });
  const withTolerations = (tolerations: NonNullable<Pod["spec"]["tolerations"]>): Pod => ({
    metadata: { name: "p", namespace: "default" },
    spec: { containers: [{ name: "c" }], tolerations },
  });
  await t.step("explicit key (Exists) is admitted", () => {
    assertEquals(
      handler.admit({
        pod: withTolerations([{ key: "probelet.io/agent", operator: "Exists" }]),
        otherPods: [],
      }),
      { admit: true },
    );
  });
  await t.step("explicit key (Equal true) is admitted", () => {
    const pod = withTolerations([{
      key: "probelet.io/agent",
      operator: "Equal",
      value: "true",
      effect: "NoExecute",
    }]);
    assertEquals(handler.admit({ pod, otherPods: [] }), { admit: true });
  });
  await t.step("a wildcard Exists toleration (DaemonSets) does not count", () => {
    const pod = withTolerations([{ operator: "Exists" }]);
    assertEquals(toleratesAgentTaint(pod), false);
    const result = handler.admit({ pod, otherPods: [] });
    assertEquals(result.admit, false);
    assertEquals(result.reason, AgentTaintNotTolerated);
  });
  await t.step("no tolerations at all", () => {
    assertEquals(handler.admit({ pod: withTolerations([]), otherPods: [] }).admit, false);
  });
  await t.step("static pods are the operator's own and are exempt", () => {
    const pod = withTolerations([]);
    pod.metadata.annotations = { "kubernetes.io/config.source": "file" };
    assertEquals(handler.admit({ pod, otherPods: [] }), { admit: true });
  });
  await t.step(
    "without the rule (containerd) a wildcard toleration passes the NoExecute taint",
    () => {
      const plain = new PredicateAdmitHandler({ getNode: () => node });
      assertEquals(
        plain.admit({ pod: withTolerations([{ operator: "Exists" }]), otherPods: [] }),
        { admit: true },
      );
    },
  );
});
