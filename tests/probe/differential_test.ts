/**
 * The differential test of issue 21: probelet's HTTP(S) and gRPC probe handlers against kubelet
 * v1.36.3's own (`pkg/probe/http`, `pkg/probe/grpc`, built by scripts/kubelet-handlers.sh) on a
 * fixed seed set of hostile responses served by raw servers on 127.0.0.1. Every variant of every
 * mutation class runs at least once; any difference not in tests/probe/differential_allow_list.ts
 * fails. `PROBELET_DIFF_STRICT=1` drops the known-bug sections, so the test fails until those
 * bugs are fixed. Without Go or the built program the test is ignored (not passed) and says why.
 * Longer runs: `deno task fuzz:kubelet --seed N --count N`.
 * Mirrors nothing upstream: kubelet has no such test.
 * @module
 */
import assert from "node:assert/strict";
import { findKubeletHandlers, KubeletHandlers } from "../testing/differential/kubelet_handlers.ts";
import {
  type AllowLists,
  type CaseOutcome,
  classify,
  formatReport,
  runDifferential,
} from "../testing/differential/run.ts";
import { http1Classes } from "../testing/differential/http1_cases.ts";
import { grpcClasses } from "../testing/differential/grpc_cases.ts";
import * as allowList from "./differential_allow_list.ts";

/** The CI seed set: one seed, every variant once, then random picks up to the count. */
const ciSeed = 20260121;
const variantCount = (classes: Record<string, Record<string, unknown>>) =>
  Object.values(classes).reduce((n, variants) => n + Object.keys(variants).length, 0);
const httpCount = variantCount(http1Classes) + 40;
const grpcCount = variantCount(grpcClasses) + 40;
// The HTTP/1.1 cases again over TLS: every variant once.
const httpsCount = variantCount(http1Classes);

const strict = Deno.env.get("PROBELET_DIFF_STRICT") === "1";
const lists: AllowLists = strict
  ? { allowed: allowList.allowed, knownBeingFixed: [], notInIssue: [] }
  : allowList;

const found = await findKubeletHandlers();
if ("missing" in found) {
  console.log(`differential_test: SKIPPED (not a pass): ${found.missing}`);
}

Deno.test({
  name: "TestDifferentialKubeletHandlers",
  ignore: "missing" in found,
  // The raw servers' pending reads and the handlers' sockets end with each case's servers; the
  // sanitizers would count those still settling between steps.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const handlers = KubeletHandlers.start((found as { path: string }).path);
    const outcomes: CaseOutcome[] = [];
    try {
      const steps = [["http", httpCount], ["https", httpsCount], ["grpc", grpcCount]] as const;
      for (const [kind, count] of steps) {
        await t.step(`${kind}: seed ${ciSeed}, ${count} cases, every variant`, async () => {
          const run = await runDifferential(handlers, {
            seed: ciSeed,
            count,
            kinds: [kind],
            everyVariant: true,
            timeoutMs: 1000,
            concurrency: 8,
          });
          for (const o of run) {
            assert(
              ["success", "warning", "failure", "unknown"].includes(o.kubelet.result) &&
                o.kubelet.error !== "kubelet-handlers exited",
              `kubelet-handlers gave no verdict for ${kind} ${o.cls}/${o.variant}`,
            );
          }
          // The valid responses must agree, or the harness itself is broken.
          const baseline = run.filter((o) => o.cls === "baseline");
          assert(baseline.length > 0);
          assert.deepEqual(baseline.filter((o) => o.difference).map((o) => o.kubelet), []);
          outcomes.push(...run);
        });
      }
    } finally {
      await handlers.close();
    }
    const classified = classify(outcomes, lists);
    console.log(formatReport(outcomes, classified));
    assert.deepEqual(
      classified.unexplained.map((o) =>
        `${o.kind} ${o.cls}/${o.variant} #${o.index}: kubelet ${o.kubelet.result} ` +
        `${JSON.stringify(o.kubelet.output)} / probelet ${o.probelet.result} ` +
        `${JSON.stringify(o.probelet.output)}`
      ),
      [],
      "differences not in tests/probe/differential_allow_list.ts",
    );
  },
});

Deno.test("TestDifferentialAllowList", () => {
  // A typo in a class or variant would make an entry match nothing, silently.
  const classesOf = (kind: string) => (kind === "grpc" ? grpcClasses : http1Classes);
  const unknown: string[] = [];
  for (const [section, entries] of Object.entries(allowList)) {
    for (const e of entries) {
      const variants = classesOf(e.kind)[e.cls];
      if (!variants) unknown.push(`${section}: ${e.kind} ${e.cls}`);
      for (const v of e.variants ?? []) {
        if (!variants?.[v]) unknown.push(`${section}: ${e.kind} ${e.cls}/${v}`);
      }
      if (e.why.trim() === "" || e.differences.length === 0) {
        unknown.push(`${section}: ${e.kind} ${e.cls}: no reason or no kind of difference`);
      }
    }
  }
  assert.deepEqual(unknown, []);
});

Deno.test("TestDifferentialClassify", async (t) => {
  const outcome = (difference?: "verdict" | "text"): CaseOutcome => ({
    kind: "http",
    index: 0,
    cls: "content-length",
    variant: "hex",
    kubelet: { result: "failure", output: "bad Content-Length", error: "" },
    probelet: { result: "success", output: "ok", error: "" },
    difference,
  });
  const entry = {
    kind: "http" as const,
    cls: "content-length",
    variants: ["hex"],
    differences: ["verdict" as const],
    why: "test",
    right: "kubelet" as const,
    row: "8",
  };
  await t.step("a difference with no entry is unexplained", () => {
    const c = classify([outcome("verdict")], { allowed: [], knownBeingFixed: [], notInIssue: [] });
    assert.deepEqual(c.unexplained.length, 1);
  });
  await t.step("an entry covers only the differences it names", () => {
    const c = classify([outcome("text")], {
      allowed: [],
      knownBeingFixed: [entry],
      notInIssue: [],
    });
    assert.deepEqual(c.unexplained.length, 1);
    assert.deepEqual(c.staleKnown, [entry]);
  });
  await t.step("a matching known entry explains it and is not stale", () => {
    const c = classify([outcome("verdict"), outcome()], {
      allowed: [],
      knownBeingFixed: [entry],
      notInIssue: [],
    });
    assert.deepEqual([c.knownBeingFixed.length, c.unexplained.length, c.staleKnown.length], [
      1,
      0,
      0,
    ]);
  });
});
