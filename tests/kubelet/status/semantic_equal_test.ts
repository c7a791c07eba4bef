/**
 * isPodStatusByKubeletEqual's field comparison (apimachinery's semantic DeepEqual over decoded Go
 * structs: a missing field equals its zero value; `started` is a `*bool`), table cases and a
 * seeded comparison against the definition written the plain way (prune every zero value, then
 * compare deeply).
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import type { PodStatus } from "../../../src/api/core/v1/mod.ts";
import { isPodStatusByKubeletEqual } from "../../../src/kubelet/status/mod.ts";

// The definition: every zero value pruned (false, 0, "", null, empty list, all-zero object), a
// list's zero elements as null, `started` kept when it is a boolean.
function pruneZero(v: unknown): unknown {
  if (Array.isArray(v)) return v.length === 0 ? undefined : v.map((x) => pruneZero(x) ?? null);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const p = k === "started" && typeof x === "boolean" ? x : pruneZero(x);
      if (p !== undefined) out[k] = p;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  if (v === false || v === 0 || v === "" || v === null) return undefined;
  return v;
}

const reference = (a: PodStatus, b: PodStatus) => isDeepStrictEqual(pruneZero(a), pruneZero(b));

Deno.test("TestIsPodStatusByKubeletEqualZeroValues", async (t) => {
  const cases: { name: string; a: PodStatus; b: PodStatus; equal: boolean }[] = [
    { name: "empty", a: {}, b: {}, equal: true },
    { name: "empty string is absent", a: { message: "" }, b: {}, equal: true },
    { name: "different strings", a: { message: "a" }, b: { message: "b" }, equal: false },
    { name: "empty list is absent", a: { containerStatuses: [] }, b: {}, equal: true },
    {
      name: "all-zero object is absent",
      a: { containerStatuses: [{ name: "", ready: false, restartCount: 0 } as never] },
      b: { containerStatuses: [null as never] },
      equal: true,
    },
    {
      name: "started false is not unset",
      a: { containerStatuses: [{ name: "c", ready: false, restartCount: 0, started: false }] },
      b: { containerStatuses: [{ name: "c", ready: false, restartCount: 0 }] },
      equal: false,
    },
    {
      name: "started false equals started false",
      a: { containerStatuses: [{ name: "c", ready: false, restartCount: 0, started: false }] },
      b: { containerStatuses: [{ name: "c", ready: false, restartCount: 0, started: false }] },
      equal: true,
    },
    {
      name: "a zero field beside a set one",
      a: { containerStatuses: [{ name: "c", ready: false, restartCount: 0, image: "" }] },
      b: { containerStatuses: [{ name: "c", ready: false, restartCount: 0 }] },
      equal: true,
    },
    {
      name: "lists of different length",
      a: { podIPs: [{ ip: "10.0.0.1" }] },
      b: { podIPs: [{ ip: "10.0.0.1" }, { ip: "fd00::1" }] },
      equal: false,
    },
    { name: "a number is not its text", a: { podIP: 1 as never }, b: { podIP: "1" }, equal: false },
    { name: "object against text", a: { podIP: {} as never }, b: { podIP: "" }, equal: true },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assertEquals(isPodStatusByKubeletEqual(c.a, c.b), c.equal);
      assertEquals(isPodStatusByKubeletEqual(c.b, c.a), c.equal);
      assertEquals(reference(c.a, c.b), c.equal);
    });
  }
});

Deno.test("TestIsPodStatusByKubeletEqualAgainstDefinition", () => {
  // A small seeded generator of status-shaped values, zero values often.
  let seed = 20;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];
  const leaf = () => pick<unknown>([undefined, null, false, true, 0, 1, "", "x", "y", [], {}]);
  const value = (depth: number): unknown => {
    if (depth === 0 || random() < 0.4) return leaf();
    if (random() < 0.3) return Array.from({ length: pick([0, 1, 2]) }, () => value(depth - 1));
    const o: Record<string, unknown> = {};
    for (const k of ["name", "started", "ready", "state", "reason"]) {
      if (random() < 0.5) o[k] = value(depth - 1);
    }
    return o;
  };
  let equal = 0;
  for (let i = 0; i < 5000; i++) {
    const a = { containerStatuses: [value(3)], message: value(1) } as PodStatus;
    // Half the time a copy with zero values added or removed, so equal pairs are frequent.
    const b = random() < 0.5
      ? { containerStatuses: [value(3)], message: value(1) } as PodStatus
      : JSON.parse(JSON.stringify(a, (_, v) => v === "" ? undefined : v));
    const want = reference(a, b);
    if (want) equal++;
    assertEquals(isPodStatusByKubeletEqual(a, b), want, JSON.stringify({ a, b }));
  }
  // The generator made both kinds of pair.
  assertEquals(equal > 500 && equal < 4500, true, `${equal} equal pairs`);
});
