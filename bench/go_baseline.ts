/**
 * The Go side of `deno task bench -- --vs-go`: builds the kubelet-shaped Go prober and its targets
 * from ../shared/bench/go-baseline (standard library only), runs the targets as a process of their
 * own and the prober for one kind and worker count, and returns its JSON line.
 * @module
 */

/**
 * Where the Go baseline's sources are: `shared/bench/go-baseline` beside the repository (as the
 * docs put it, `../shared/bench/go-baseline` from the checkout) or beside one of its parents
 * (worktrees), unless `override` names the folder.
 *
 * @example
 * ```ts
 * findGoBaseline(); // "/work/shared/bench/go-baseline/"
 * ```
 */
export function findGoBaseline(override?: string): string | undefined {
  if (override) return override.endsWith("/") ? override : `${override}/`;
  let dir = new URL("../", import.meta.url);
  for (let i = 0; i < 4; i++) {
    dir = new URL("../", dir);
    const candidate = new URL("shared/bench/go-baseline/", dir).pathname;
    try {
      Deno.statSync(`${candidate}prober.go`);
      return candidate;
    } catch {
      // Not here: one level up.
    }
  }
  return undefined;
}

/** The fields of the Go prober's JSON line the comparison uses. */
export interface GoResult {
  kind: string;
  n: number;
  probes_per_s: number;
  probes_completed: number;
  probes_expected: number;
  failures: number;
  failure_kinds: Record<string, number>;
  cpu_ms_per_1000_probes: number;
  cpu_pct_of_one_core: number;
  lateness_ms: { p50: number; p99: number; max: number };
  probe_ms: { p50: number; p99: number; max: number };
  missed_periods: number;
  rss_kib_per_worker: number;
  target_cpu_s: number;
  go_version: string;
  gomaxprocs: number;
}

/**
 * Why the Go side cannot run (no `go` on PATH, no baseline sources), or undefined when it can.
 *
 * @example
 * ```ts
 * const reason = await goMissingReason(findGoBaseline()); // "`go` was not found on PATH ..."
 * ```
 */
export async function goMissingReason(
  baselineDir: string | undefined,
): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("go", { args: ["version"], stdout: "null", stderr: "null" })
      .output();
    if (!out.success) return "`go version` failed";
  } catch {
    return "`go` was not found on PATH (install Go, e.g. `apt-get install -y golang-go`, or run " +
      "without --vs-go); only probelet's side is measured";
  }
  if (!baselineDir) {
    return "the Go baseline (shared/bench/go-baseline beside the checkout) was not found; " +
      "pass --go-baseline DIR";
  }
  return undefined;
}

/**
 * Builds `prober` and `targets` into `outDir`; returns their paths and `go version`.
 *
 * @example
 * ```ts
 * const bins = await buildGoBaseline(findGoBaseline()!, await Deno.makeTempDir());
 * ```
 */
export async function buildGoBaseline(
  baselineDir: string,
  outDir: string,
): Promise<{ prober: string; targets: string; version: string }> {
  for (const name of ["prober", "targets"]) {
    const out = await new Deno.Command("go", {
      args: ["build", "-o", `${outDir}/${name}`, `${name}.go`],
      cwd: baselineDir,
      // A module-less build of one file; the project's own Go settings do not apply.
      env: { GO111MODULE: "off", GOFLAGS: "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`go build ${name}.go failed: ${new TextDecoder().decode(out.stderr)}`);
    }
  }
  const version = new TextDecoder().decode(
    (await new Deno.Command("go", { args: ["version"], stdout: "piped" }).output()).stdout,
  ).trim();
  return { prober: `${outDir}/prober`, targets: `${outDir}/targets`, version };
}

/**
 * Builds bench/go_targets (probelet's own Go targets for `--targets go`) into `outDir`; returns
 * the binary's path. Throws with a clear message when `go` is missing or the build fails.
 *
 * @example
 * ```ts
 * const binary = await buildGoTargets(await Deno.makeTempDir());
 * ```
 */
export async function buildGoTargets(outDir: string): Promise<string> {
  const binary = `${outDir}/go_targets`;
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("go", {
      args: ["build", "-o", binary, "main.go"],
      cwd: new URL("./go_targets/", import.meta.url).pathname,
      env: { GO111MODULE: "off", GOFLAGS: "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch {
    throw new Error("--targets go needs `go` on PATH (Go 1.24 or newer)");
  }
  if (!out.success) {
    throw new Error(`go build bench/go_targets failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return binary;
}

/** A free TCP port below 32768 on 127.0.0.1 (the ephemeral range can collide with TIME_WAIT). */
function freeLowPort(): number {
  for (let i = 0; i < 100; i++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch {
      // Taken: try another.
    }
  }
  throw new Error("no free port below 32768");
}

/** The Go targets process (HTTP 200 `ok`, TCP accept-and-close), stopped by its pid. */
export class GoTargets {
  readonly httpPort = freeLowPort();
  readonly tcpPort = freeLowPort();
  #child: Deno.ChildProcess;

  constructor(binary: string) {
    this.#child = new Deno.Command(binary, {
      args: ["-http", `127.0.0.1:${this.httpPort}`, "-tcp", `127.0.0.1:${this.tcpPort}`],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
  }

  /** The process id (the prober reports its CPU time). */
  get pid(): number {
    return this.#child.pid;
  }

  /** Resolves once the targets print `ready`. */
  async ready(): Promise<void> {
    const reader = this.#child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("ready")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`Go targets exited before ready: ${text}`);
      text += value;
    }
    reader.releaseLock();
    // Keep draining so the pipe never fills.
    this.#child.stdout.pipeTo(new WritableStream()).catch(() => {});
  }

  /** Stops the process (SIGTERM to its pid) and waits for it. */
  async close(): Promise<void> {
    try {
      this.#child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await this.#child.status;
  }
}

/**
 * Runs the Go prober once, with the soft open-file limit raised to the hard one as run.sh does.
 *
 * @example
 * ```ts
 * const r = await runGoProber(bins.prober, targets, { kind: "http", workers: 1000, periodS: 1, durationS: 15 });
 * ```
 */
export async function runGoProber(
  binary: string,
  targets: GoTargets,
  o: { kind: string; workers: number; periodS: number; durationS: number },
): Promise<GoResult> {
  const args = [
    "-kind",
    o.kind,
    "-n",
    String(o.workers),
    "-period",
    `${o.periodS}s`,
    "-duration",
    `${o.durationS}s`,
    "-url",
    `http://127.0.0.1:${targets.httpPort}/healthz`,
    "-tcp",
    `127.0.0.1:${targets.tcpPort}`,
    "-target-pid",
    String(targets.pid),
  ];
  const out = await new Deno.Command("bash", {
    args: ["-c", 'ulimit -Sn "$(ulimit -Hn)" 2>/dev/null; exec "$@"', "go-prober", binary, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim().split("\n").pop() ?? "";
  if (!out.success || !text.startsWith("{")) {
    throw new Error(
      `Go prober failed (exit ${out.code}): ${new TextDecoder().decode(out.stderr).slice(-500)}`,
    );
  }
  return JSON.parse(text);
}
