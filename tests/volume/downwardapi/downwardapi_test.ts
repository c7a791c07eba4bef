/** Port of kubelet's pkg/volume/downwardapi/downwardapi_test.go: the payload of each field. */
import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import type { Pod } from "../../../src/api/core/v1/mod.ts";
import { collectData } from "../../../src/volume/downwardapi/downwardapi.ts";

const dec = new TextDecoder();
const pod: Pod = {
  metadata: {
    name: "test_pod_name",
    namespace: "test_pod_namespace",
    uid: "test_pod_uid",
    labels: { key1: "value1", key2: "value2" },
    annotations: { a1: "value1", a2: 'va"l2' },
  },
  spec: {
    containers: [{
      name: "c",
      resources: { limits: { memory: "64Mi" }, requests: { cpu: "250m" } },
    }, { name: "d", resources: { limits: { cpu: "70m" } } }],
  },
};
const host = { getNodeAllocatable: () => ({ cpu: "4", memory: "8Gi" }) };

Deno.test("TestDownwardAPI", async (t) => {
  const cases: {
    name: string;
    fieldPath?: string;
    resource?: string;
    divisor?: string;
    container?: string;
    want: string;
  }[] = [
    { name: "labels", fieldPath: "metadata.labels", want: 'key1="value1"\nkey2="value2"' },
    { name: "annotations", fieldPath: "metadata.annotations", want: 'a1="value1"\na2="va\\"l2"' },
    { name: "one label", fieldPath: "metadata.labels['key2']", want: "value2" },
    { name: "name", fieldPath: "metadata.name", want: "test_pod_name" },
    { name: "namespace", fieldPath: "metadata.namespace", want: "test_pod_namespace" },
    { name: "uid", fieldPath: "metadata.uid", want: "test_pod_uid" },
    { name: "limits.memory in Mi", resource: "limits.memory", divisor: "1Mi", want: "64" },
    { name: "limits.cpu from the node's allocatable", resource: "limits.cpu", want: "4" },
    { name: "requests.cpu in millicores", resource: "requests.cpu", divisor: "1m", want: "250" },
    { name: "requests.cpu rounded up to cores", resource: "requests.cpu", want: "1" },
    // Exact, as Go's MilliValue division: 70m / 10m is 7 (a float division gives 7.000…1 → 8).
    {
      name: "limits.cpu 70m in 10m units",
      resource: "limits.cpu",
      divisor: "10m",
      container: "d",
      want: "7",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const item = c.fieldPath ? { path: "f", fieldRef: { fieldPath: c.fieldPath } } : {
        path: "f",
        resourceFieldRef: {
          containerName: c.container ?? "c",
          resource: c.resource!,
          divisor: c.divisor,
        },
      };
      const data = collectData([item], pod, host, 0o644);
      assertEquals(dec.decode(data.f.data), c.want);
      assertEquals(data.f.mode, 0o644);
    });
  }
  await t.step("item mode and a cleaned path", () => {
    const data = collectData(
      [{ path: "a//b", mode: 0o400, fieldRef: { fieldPath: "metadata.name" } }],
      pod,
      host,
      0o644,
    );
    assertEquals(Object.keys(data), ["a/b"]);
    assertEquals(data["a/b"].mode, 0o400);
  });
  await t.step("an unsupported field fails the volume", () => {
    throws(
      () => collectData([{ path: "x", fieldRef: { fieldPath: "spec.foo" } }], pod, host, 0o644),
      {
        message: "unsupported fieldPath: spec.foo",
      },
    );
  });
});
