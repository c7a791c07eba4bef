/**
 * Strategic merge patch against apimachinery's test vectors (testdata/two_way_vectors.yaml, with
 * the test schema `mergeItem` of patch_test.go), plus the pod and node status shapes kubelet sends.
 * @module
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  createTwoWayMergeMap,
  createTwoWayMergePatch,
  strategicMergePatch,
} from "../../../src/util/strategicpatch/patch.ts";
import {
  nodeSchema,
  type PatchSchema,
  podSchema,
} from "../../../src/util/strategicpatch/schema.ts";
import { goJsonMarshal } from "../../../src/util/strategicpatch/marshal.ts";

// patch_test.go's MergeItem struct tags, as a schema (recursive through its lists).
const mergeItem: PatchSchema = { fields: {} };
mergeItem.fields = {
  mergingList: { patchStrategy: "merge", patchMergeKey: "name", items: mergeItem },
  nonMergingList: { items: mergeItem },
  mergingIntList: { patchStrategy: "merge" },
  mergeItemPtr: { patchStrategy: "merge", patchMergeKey: "name", items: mergeItem },
  replacingItem: { patchStrategy: "replace" },
  retainKeysMap: { patchStrategy: "retainKeys", fields: {} },
  retainKeysMergingList: {
    patchStrategy: "merge,retainKeys",
    patchMergeKey: "name",
    items: mergeItem,
  },
};

interface Vector {
  description: string;
  original: Record<string, unknown>;
  modified?: Record<string, unknown>;
  twoWay: Record<string, unknown>;
  twoWayResult?: Record<string, unknown>;
  skipApply?: boolean;
  expectedError?: string;
}

const vectors = parse(
  await Deno.readTextFile(new URL("./testdata/two_way_vectors.yaml", import.meta.url)),
) as { twoWay: Vector[]; applyOnly: Vector[] };

Deno.test("TestStrategicMergePatch: CreateTwoWayMergePatch vectors", async (t) => {
  for (const v of vectors.twoWay) {
    await t.step(v.description, () => {
      const patch = createTwoWayMergeMap(v.original, v.modified!, mergeItem);
      assert.deepStrictEqual(patch, v.twoWay);
      if (v.skipApply) return;
      const result = strategicMergePatch(v.original, patch, mergeItem);
      assert.deepStrictEqual(result, v.twoWayResult ?? v.modified);
    });
  }
});

Deno.test("TestCustomStrategicMergePatch: applying patches", async (t) => {
  for (const v of vectors.applyOnly) {
    await t.step(v.description, () => {
      if (v.expectedError) {
        assert.throws(() => strategicMergePatch(v.original, v.twoWay, mergeItem), (err: Error) => {
          assert.ok(err.message.includes(v.expectedError!), err.message);
          return true;
        });
        return;
      }
      assert.deepStrictEqual(strategicMergePatch(v.original, v.twoWay, mergeItem), v.modified);
    });
  }
});

Deno.test("createTwoWayMergePatch: Go's byte layout", async (t) => {
  await t.step("keys sorted at every level, HTML characters escaped", () => {
    assert.equal(
      createTwoWayMergePatch({ b: 1 }, { b: 2, a: { z: "<&>", y: 1 } }, {}),
      '{"a":{"y":1,"z":"\\u003c\\u0026\\u003e"},"b":2}',
    );
  });
  await t.step("the brief's node status example", () => {
    const oldNode = {
      status: { conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady" }] },
    };
    const newNode = {
      status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }] },
    };
    assert.equal(
      createTwoWayMergePatch(oldNode, newNode, nodeSchema),
      '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"reason":"KubeletReady","status":"True","type":"Ready"}]}}',
    );
  });
  await t.step("a condition kubelet no longer reports is deleted by type", () => {
    const before = {
      status: {
        conditions: [{ type: "Ready", status: "True" }, { type: "Custom", status: "True" }],
      },
    };
    const after = { status: { conditions: [{ type: "Ready", status: "True" }] } };
    assert.equal(
      createTwoWayMergePatch(before, after, podSchema),
      '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"$patch":"delete","type":"Custom"}]}}',
    );
  });
  await t.step("podIPs merge by ip; containerStatuses are replaced whole", () => {
    const before = {
      status: {
        podIPs: [{ ip: "10.0.0.1" }],
        containerStatuses: [{ name: "a", ready: false }, { name: "b", ready: true }],
      },
    };
    const after = {
      status: {
        podIPs: [{ ip: "10.0.0.1" }, { ip: "fd00::1" }],
        containerStatuses: [{ name: "a", ready: true }, { name: "b", ready: true }],
      },
    };
    const patch = createTwoWayMergePatch(before, after, podSchema);
    assert.equal(
      patch,
      '{"status":{"$setElementOrder/podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}],"containerStatuses":[{"name":"a","ready":true},{"name":"b","ready":true}],"podIPs":[{"ip":"fd00::1"}]}}',
    );
    assert.deepStrictEqual(strategicMergePatch(before, JSON.parse(patch), podSchema), after);
  });
  await t.step("undefined members are absent, as on the wire", () => {
    assert.equal(goJsonMarshal({ a: undefined, b: [undefined] }), '{"b":[null]}');
  });
});

Deno.test("strategicMergePatch: node addresses with $patch: replace", () => {
  const node = {
    status: {
      addresses: [{ type: "InternalIP", address: "10.0.0.1" }, { type: "Hostname", address: "n1" }],
    },
  };
  const patch = {
    status: {
      addresses: [
        { type: "InternalIP", address: "10.0.0.2" },
        { type: "InternalIP", address: "fd00::2" },
        { $patch: "replace" },
      ],
    },
  };
  assert.deepStrictEqual(strategicMergePatch(node, patch, nodeSchema), {
    status: {
      addresses: [
        { type: "InternalIP", address: "10.0.0.2" },
        { type: "InternalIP", address: "fd00::2" },
      ],
    },
  });
});
