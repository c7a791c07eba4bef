/**
 * Randomised cross-check of the two-way patch: for pairs of random pod and node statuses, the patch
 * from A to B, applied to A, must give B, both with our `strategicMergePatch` and with the
 * API-server double's independently written apply (tests/testing/apiserver/patch.ts). A seeded
 * generator keeps failures reproducible (the seed and case number are in the message).
 * @module
 */
import assert from "node:assert/strict";
import {
  createTwoWayMergePatch,
  strategicMergePatch,
} from "../../../src/util/strategicpatch/patch.ts";
import { nodeSchema, podSchema } from "../../../src/util/strategicpatch/schema.ts";
import { applyPatch } from "../../testing/apiserver/patch.ts";
import type { JsonObject } from "../../testing/apiserver/mod.ts";

/** mulberry32: a small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generators(rand: () => number) {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const maybe = <T>(v: () => T): T | undefined => rand() < 0.5 ? v() : undefined;
  const subset = <T>(xs: T[]): T[] => {
    const out = xs.filter(() => rand() < 0.6);
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  };
  const time = () => `2026-11-23T05:0${Math.floor(rand() * 10)}:00Z`;
  const clean = (o: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  const podStatus = () =>
    clean({
      phase: maybe(() => pick(["Pending", "Running", "Succeeded", "Failed"])),
      message: maybe(() => pick(["", "m1", "m2 <&>"])),
      reason: maybe(() => pick(["Evicted", "NodeLost"])),
      conditions: maybe(() =>
        subset(["PodScheduled", "Initialized", "Ready", "ContainersReady", "Custom/gate"]).map((
          type,
        ) =>
          clean({
            type,
            status: pick(["True", "False", "Unknown"]),
            lastProbeTime: null,
            lastTransitionTime: maybe(time),
            reason: maybe(() => pick(["ContainersNotReady", "PodCompleted"])),
            message: maybe(() => pick(["containers with unready status: [app]", "x"])),
          })
        )
      ),
      podIPs: maybe(() => subset(["10.0.0.7", "fd00::7", "10.0.0.8"]).map((ip) => ({ ip }))),
      hostIPs: maybe(() => subset(["192.168.1.2", "fd01::2"]).map((ip) => ({ ip }))),
      containerStatuses: maybe(() =>
        subset(["app", "sidecar"]).map((name) => ({
          name,
          ready: rand() < 0.5,
          restartCount: Math.floor(rand() * 3),
          state: pick([{}, { running: { startedAt: time() } }, {
            terminated: { exitCode: 137, reason: "Error" },
          }]),
          lastState: {},
          image: "busybox",
          imageID: "",
        }))
      ),
    });
  const nodeStatus = () =>
    clean({
      conditions: maybe(() =>
        subset(["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]).map((type) =>
          clean({
            type,
            status: pick(["True", "False"]),
            lastHeartbeatTime: time(),
            lastTransitionTime: time(),
            reason: maybe(() => pick(["KubeletReady", "KubeletNotReady"])),
          })
        )
      ),
      addresses: maybe(() =>
        subset(["InternalIP", "Hostname", "ExternalIP"]).map((type) => ({
          type,
          address: pick(["10.0.0.1", "10.0.0.2", "node-1"]),
        }))
      ),
      capacity: maybe(() => clean({ cpu: maybe(() => pick(["2", "4"])), pods: "110" })),
      images: maybe(() => subset(["a", "b", "c"]).map((n) => ({ names: [n], sizeBytes: 1 }))),
    });
  return { podStatus, nodeStatus };
}

/** B without null members: applying a patch drops them (a Go struct would print them as null). */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]),
    );
  }
  return v;
}

const seed = Number(Deno.env.get("SMP_SEED") ?? 20261123);

Deno.test(`two-way patch round trip on random statuses (seed ${seed})`, async (t) => {
  const rand = prng(seed);
  const gen = generators(rand);
  for (
    const [resource, schema, make] of [
      ["pods", podSchema, gen.podStatus],
      ["nodes", nodeSchema, gen.nodeStatus],
    ] as const
  ) {
    await t.step(`${resource}: 300 pairs`, () => {
      for (let i = 0; i < 300; i++) {
        const a = { metadata: { name: "x" }, status: make() };
        const b = { metadata: { name: "x" }, status: make() };
        const patch = createTwoWayMergePatch(a, b, schema);
        const where = `case ${i}: ${JSON.stringify(a)} -> ${JSON.stringify(b)} via ${patch}`;
        const expected = withoutNulls(b);
        const ours = strategicMergePatch(a, JSON.parse(patch), schema);
        assert.deepStrictEqual(withoutNulls(ours), expected, `ours, ${where}`);
        const theirs = applyPatch(a as unknown as JsonObject, {
          resource,
          type: "application/strategic-merge-patch+json",
          body: patch,
        });
        assert.deepStrictEqual(withoutNulls(theirs), expected, `double, ${where}`);
      }
    });
  }
});
