/**
 * Keeps the probe scale benchmark from rotting: runs `bench/probe_scale.ts --quick --json` as a
 * subprocess (targets in Node, each scenario in its own Deno process) and checks the report's shape
 * and that its numbers are sane.
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";

const repoRoot = new URL("../../", import.meta.url).pathname;

async function hasNode(): Promise<boolean> {
  try {
    const out = await new Deno.Command("node", { args: ["--version"], stdout: "null" }).output();
    return out.success;
  } catch {
    return false;
  }
}

interface QuickScenario {
  name: string;
  workers: number;
  probesPerSecond: number;
  expectedPerSecond: number;
  cpuPer1000: number | null;
  latenessMs: { p50: number | null; p99: number | null; max: number | null; samples: number };
  missedPeriods: number;
  rssPerWorkerIdle: number;
  heapPerWorkerIdle: number;
  failures: number;
  errors: number;
  floor?: { cpuPer1000: number | null; completed: number };
}

Deno.test({
  name: "deno task bench -- --quick --json reports every scenario with sane figures",
  ignore: !(await hasNode()),
  async fn() {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "bench/probe_scale.ts", "--quick", "--json"],
      cwd: repoRoot,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert(out.success, `bench exited with ${out.code}:\n${stderr}`);
    const report = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      meta: { loadAverageBefore: number[]; cpus: number };
      scenarios: QuickScenario[];
      skipped: { name: string; reason: string }[];
    };
    assertEquals(report.meta.loadAverageBefore.length, 3);
    assert(report.meta.cpus > 0);

    const names = report.scenarios.map((s) => s.name);
    for (const name of ["http", "https", "tcp", "grpc", "mix", "exec-host"]) {
      assert(names.includes(name), `scenario ${name} missing from ${names.join(", ")}`);
    }
    // CRI exec runs when containerd is up, and is otherwise skipped with a reason.
    assert(
      names.includes("exec-cri") || report.skipped.some((s) => s.name.startsWith("exec-cri")),
      "exec-cri neither ran nor was skipped with a reason",
    );

    for (const s of report.scenarios) {
      const what = `${s.name} × ${s.workers}`;
      assert(s.probesPerSecond > 0, `${what}: no probes completed`);
      assert(s.probesPerSecond <= s.expectedPerSecond * 2, `${what}: more probes than ticks`);
      assert(s.cpuPer1000 !== null && s.cpuPer1000 >= 0, `${what}: CPU per probe missing`);
      assert(s.latenessMs.samples > 0, `${what}: no lateness samples`);
      for (const q of ["p50", "p99", "max"] as const) {
        const v = s.latenessMs[q];
        assert(v !== null && v >= 0 && v < 5_000, `${what}: lateness ${q} = ${v}`);
      }
      assert(s.latenessMs.p50! <= s.latenessMs.p99! && s.latenessMs.p99! <= s.latenessMs.max!);
      assert(s.missedPeriods >= 0);
      assert(Number.isFinite(s.rssPerWorkerIdle) && Number.isFinite(s.heapPerWorkerIdle));
      // Healthy targets: every probe should succeed.
      assertEquals(s.errors, 0, `${what}: probe errors`);
      if (["http", "https", "tcp", "grpc", "mix"].includes(s.name)) {
        assert(s.floor && s.floor.completed > 0, `${what}: floor missing`);
      }
    }
  },
});

Deno.test({
  name: "deno task bench -- --vs-go says so when go is missing and still measures probelet",
  ignore: !(await hasNode()),
  async fn() {
    // A PATH with deno and node but no go.
    const node = new TextDecoder().decode(
      (await new Deno.Command("bash", { args: ["-c", "command -v node"], stdout: "piped" })
        .output()).stdout,
    ).trim();
    const bin = await Deno.makeTempDir({ prefix: "probelet-nogo-" });
    try {
      await Deno.symlink(node, `${bin}/node`);
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          "bench/probe_scale.ts",
          "--vs-go",
          "--quick",
          "--kinds",
          "tcp",
          "--workers",
          "5",
          "--json",
        ],
        cwd: repoRoot,
        env: { PATH: `${bin}:/usr/bin:/bin` },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert(out.success, `bench exited with ${out.code}:\n${stderr}`);
      assert(/Go side not run: `go` was not found on PATH/.test(stderr), stderr.slice(-2000));
      const report = JSON.parse(new TextDecoder().decode(out.stdout)) as {
        scenarios: QuickScenario[];
        vsGo: { skipped?: string; pairs: { kind: string; workers: number; probelet?: string }[] };
      };
      assert(report.vsGo.skipped?.includes("`go` was not found"), JSON.stringify(report.vsGo));
      assertEquals(report.vsGo.pairs, [{ kind: "tcp", workers: 5, probelet: "tcp" }]);
      assert(report.scenarios[0].probesPerSecond > 0);
    } finally {
      await Deno.remove(bin, { recursive: true });
    }
  },
});
