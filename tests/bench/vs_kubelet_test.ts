/**
 * The `--vs-kubelet` table: each figure is an agent's range over its passes with the load average
 * beside it, and the ratio is probelet / kubelet per pass (never a ratio of two ranges).
 * @module
 */
import assert from "node:assert/strict";
import {
  type AgentRun,
  formatVsKubelet,
  leadingAssignments,
  parseVsKubeletFlags,
  type VsKubeletReport,
} from "../../bench/vs_kubelet.ts";

function run(
  agent: AgentRun["agent"],
  pass: number,
  figures: { rss: number; cpu: number; load: [number, number]; p99Ms: number },
): AgentRun {
  return {
    agent,
    pass,
    footprints: [{
      pods: 30,
      rssMiB: { median: figures.rss, min: figures.rss, max: figures.rss },
      cpuPercent: figures.cpu,
      load: figures.load,
      threads: 5,
    }],
    startup: { pods: 30, p50Ms: 1000, p99Ms: figures.p99Ms, allReadyMs: 4000, load: [1, 2] },
  };
}

Deno.test("formatVsKubelet", async (t) => {
  const flags = { ...parseVsKubeletFlags([]), slots: [30] };
  const report: VsKubeletReport = {
    meta: { startedAt: "a", finishedAt: "b", cpus: 2, flags },
    runs: [
      run("kubelet", 1, { rss: 80, cpu: 3, load: [1, 2], p99Ms: 5000 }),
      run("probelet", 1, { rss: 60, cpu: 2, load: [2, 3], p99Ms: 4000 }),
      run("kubelet", 2, { rss: 100, cpu: 4, load: [0.5, 1], p99Ms: 5000 }),
      run("probelet", 2, { rss: 90, cpu: 2, load: [1, 1.5], p99Ms: 4500 }),
    ],
    skipped: [],
  };
  const table = formatVsKubelet(report);
  const row = (label: string) => table.split("\n").find((l) => l.startsWith(`| ${label}`));
  await t.step("ranges over passes, load beside each", () => {
    assert.equal(
      row("agent RSS, 30 pods"),
      "| agent RSS, 30 pods (MiB) | 80.0–100.0 (load 0.5–2.0) | 60.0–90.0 (load 1.0–3.0) | " +
        "0.75–0.90× |",
    );
  });
  await t.step("ratio per pass", () => {
    // 2/3 and 2/4, not 2/4 .. 2/3 of the ranges' ends crossed.
    assert.match(row("agent CPU, 30 pods")!, /\| 0\.50–0\.67× \|$/);
    assert.match(row("30 pods created at once → Ready, p99")!, /\| 0\.80–0\.90× \|$/);
  });
  await t.step("a before column only with a before run", () => {
    assert.ok(!table.includes("probelet before"));
    const withBefore = formatVsKubelet({
      ...report,
      runs: [
        ...report.runs,
        run("probelet-before", 1, { rss: 150, cpu: 2, load: [1, 1], p99Ms: 1 }),
      ],
    });
    assert.match(withBefore, /\| 150\.0 \(load 1\.0\) \| 60\.0–90\.0/);
  });
});

Deno.test("probelet's environment: the start task's, or --probelet-env", async (t) => {
  await t.step("the start task's leading NAME=value words", () => {
    assert.deepEqual(
      leadingAssignments("MALLOC_ARENA_MAX=2 A_B=x=y deno run -A main.ts X=1"),
      { MALLOC_ARENA_MAX: "2", A_B: "x=y" },
    );
    assert.deepEqual(leadingAssignments("deno run --allow-all main.ts"), {});
  });
  await t.step("--probelet-env overrides; --probelet-env= alone means none", () => {
    assert.equal(parseVsKubeletFlags([]).probeletEnv, undefined);
    assert.deepEqual(
      parseVsKubeletFlags(["--probelet-env=MALLOC_ARENA_MAX=2", "--probelet-env=B=1"]).probeletEnv,
      { MALLOC_ARENA_MAX: "2", B: "1" },
    );
    assert.deepEqual(parseVsKubeletFlags(["--probelet-env="]).probeletEnv, {});
  });
});
