/**
 * What the running agent allocates per second, and where its CPU goes (issue 20, item 4): the
 * young generation V8 keeps committed grows with the allocation rate, so this finds the
 * allocators to cut.
 *
 * Starts the agent as `bench/memory_breakdown.ts --sections agent` does (its child process, the
 * CLI's flags on this checkout's containerd and the local kube-apiserver, one HTTP-readiness +
 * TCP-liveness busybox pod per slot, periods 10 s), with V8's inspector on
 * `--inspect=127.0.0.1:0`, and at each `--pods` count, once settled:
 *
 * 1. a quiet window: the agent's CPU seconds (/proc) and a memory snapshot (RSS, young and old
 *    generation), with no profiler attached;
 * 2. a sampling heap profile over `--window` seconds that keeps the samples of objects minor and
 *    major GCs collected (`HeapProfiler.startSampling` with `includeObjectsCollectedByMinorGC` and
 *    `includeObjectsCollectedByMajorGC`), so it counts every byte allocated, not only what lives;
 * 3. a CPU profile (`Profiler.start`) over another window.
 *
 * Prints bytes allocated per second, the top functions by self allocated bytes/s (`file:line`,
 * repo-relative or `npm:pkg@version/...`), allocation by area (inclusive: a byte counts for every
 * area on its stack), the top call stacks and the top CPU self-time functions, each with the load
 * average. Raw profiles (`.heapprofile`, `.cpuprofile`, loadable in Chrome DevTools) and the
 * printed report go under `.run/alloc-profile/`, with lines mapped to the TypeScript sources
 * through the modules' inline source maps (V8 reports the transpiled JavaScript's lines). Needs `scripts/containerd.sh up` and
 * `scripts/kube-apiserver.sh up`.
 *
 * CDP is spoken over Deno's built-in WebSocket (a request/response map of a few lines); the npm
 * `chrome-remote-interface` and `devtools-protocol` packages would add a dependency for that alone.
 *
 *   deno run -A bench/alloc_profile.ts [--pods 30,100] [--settle 30] [--window 60]
 *     [--interval 16384] [--top 25] [--v8-flags F] [--probelet-flag=--port=10350 ...]
 *     [--start-profile] (instead: a CPU profile of each slot's pods being created, until all
 *     are Ready, after `--settle` s)
 *   deno run -A bench/alloc_profile.ts --analyse .run/alloc-profile/X.heapprofile
 *     [--without npm:protobufjs,npm:@protobufjs] (a saved profile again, some areas left out)
 * @module
 */
import { join } from "node:path";
import { realKubeApiServer } from "../tests/testing/apiserver_targets.ts";
import { createAndWaitReady, deleteAll, waitNodeReady } from "./vs_kubelet.ts";
import { agentCommandLine } from "./memory_breakdown.ts";
import { flagValue, lineReader } from "./proc_stats.ts";

const repo = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const childModule = new URL("./memory_breakdown_child.ts", import.meta.url).pathname;
const CLOCK_TICKS_PER_SECOND = 100;

// ------------------------------------------------------------------------------------------------
// Chrome DevTools Protocol over a WebSocket

/** One CDP session: `send` resolves with the method's result or rejects with its error. */
export class Cdp {
  #ws: WebSocket;
  #nextId = 1;
  #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #listeners = new Map<string, (params: Record<string, unknown>) => void>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (event) => {
      const message = JSON.parse(event.data as string);
      if (message.id === undefined) {
        this.#listeners.get(message.method)?.(message.params);
        return;
      }
      const waiter = this.#pending.get(message.id);
      if (!waiter) return;
      this.#pending.delete(message.id);
      if (message.error) waiter.reject(new Error(`CDP: ${JSON.stringify(message.error)}`));
      else waiter.resolve(message.result);
    };
    ws.onclose = () => {
      for (const waiter of this.#pending.values()) waiter.reject(new Error("CDP: closed"));
      this.#pending.clear();
    };
  }

  /** Opens a session on an inspector's WebSocket URL. */
  static connect(url: string): Promise<Cdp> {
    const ws = new WebSocket(url);
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve(new Cdp(ws));
      ws.onerror = (event) => reject(new Error(`CDP: cannot connect to ${url}: ${event.type}`));
    });
  }

  /** Calls `method` and resolves with its result. */
  send<T = Record<string, unknown>>(method: string, params: unknown = {}): Promise<T> {
    const id = this.#nextId++;
    this.#ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) =>
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
    );
  }

  /** Calls `listener` with the params of every later `method` event (one listener a method). */
  on(method: string, listener: ((params: Record<string, unknown>) => void) | undefined): void {
    if (listener) this.#listeners.set(method, listener);
    else this.#listeners.delete(method);
  }

  /** Closes the session. */
  close(): void {
    this.#ws.close();
  }
}

// ------------------------------------------------------------------------------------------------
// Profiles

/** A frame of a V8 profile (CDP `Runtime.CallFrame`; lines and columns 0-based). */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** A node of a sampling heap profile (CDP `HeapProfiler.SamplingHeapProfileNode`). */
export interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  id: number;
  children: HeapNode[];
}

/** A CPU profile (CDP `Profiler.Profile`). */
export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; hitCount?: number; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** A decoded source map: per generated line, its segments as [column, original line], 0-based. */
export type LineMap = [number, number][][];

const base64Digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

function decodeVlq(segment: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of segment) {
    const digit = base64Digits.indexOf(ch);
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(value % 2 ? -Math.floor(value / 2) : value / 2);
    value = 0;
    shift = 0;
  }
  return values;
}

/**
 * The generated-to-original line table of a source map's `mappings` (one source per map, as
 * Deno's inline maps of transpiled TypeScript have).
 *
 * @example
 * ```ts
 * decodeMappings("AAAA;AACA"); // [[[0, 0]], [[0, 1]]]
 * ```
 */
export function decodeMappings(mappings: string): LineMap {
  const lines: LineMap = [];
  let originalLine = 0;
  for (const text of mappings.split(";")) {
    const segments: [number, number][] = [];
    let column = 0;
    for (const segment of text ? text.split(",") : []) {
      const values = decodeVlq(segment);
      column += values[0];
      if (values.length >= 4) {
        originalLine += values[2];
        segments.push([column, originalLine]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

/** The original line (0-based) of generated `line`:`column` (0-based), or undefined. */
export function originalLine(map: LineMap, line: number, column: number): number | undefined {
  for (let l = Math.min(line, map.length - 1); l >= 0; l--) {
    const segments = map[l];
    if (segments.length === 0) continue;
    if (l < line) return segments[segments.length - 1][1];
    let found = segments[0][1];
    for (const [c, original] of segments) {
      if (c > column) break;
      found = original;
    }
    return found;
  }
  return undefined;
}

/**
 * The line tables of this checkout's transpiled modules in the inspected isolate, from the
 * inline source maps `Debugger.scriptParsed` reports (the Debugger domain is on only for this).
 */
async function sourceMaps(cdp: Cdp): Promise<Map<string, LineMap>> {
  const maps = new Map<string, LineMap>();
  cdp.on("Debugger.scriptParsed", (params) => {
    const url = params.url as string;
    const sourceMapURL = params.sourceMapURL as string | undefined;
    if (!url.startsWith(`file://${repo}/`) || !sourceMapURL?.startsWith("data:")) return;
    try {
      const json = JSON.parse(atob(sourceMapURL.slice(sourceMapURL.indexOf(",") + 1)));
      maps.set(url, decodeMappings(json.mappings));
    } catch { /* no usable map: the generated line stays */ }
  });
  await cdp.send("Debugger.enable");
  await cdp.send("Debugger.disable");
  cdp.on("Debugger.scriptParsed", undefined);
  return maps;
}

/** Rewrites each frame's line to the TypeScript source's (V8 reports the transpiled JS's). */
function mapFrames(frames: Iterable<CallFrame>, maps: Map<string, LineMap>): void {
  for (const frame of frames) {
    const map = maps.get(frame.url);
    if (!map || frame.lineNumber < 0) continue;
    frame.lineNumber = originalLine(map, frame.lineNumber, frame.columnNumber) ??
      frame.lineNumber;
  }
}

function* heapFrames(node: HeapNode): Generator<CallFrame> {
  yield node.callFrame;
  for (const child of node.children) yield* heapFrames(child);
}

/**
 * A script URL as a reader finds it: repo-relative for this checkout's files,
 * `npm:pkg@version/path` for npm packages, unchanged otherwise (`ext:`, `node:`).
 */
export function shortUrl(url: string): string {
  const path = url.startsWith("file://") ? decodeURIComponent(new URL(url).pathname) : url;
  const npm = /\/node_modules\/\.deno\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  if (npm) {
    const version = /\/node_modules\/\.deno\/(?:@[^+]+\+)?[^@/]+@([^/_]+)/.exec(path)?.[1];
    return `npm:${npm[1]}${version ? `@${version}` : ""}/${npm[2]}`;
  }
  if (path.startsWith(`${repo}/`)) return path.slice(repo.length + 1);
  return path;
}

/** `function file:line` of a frame; V8's pseudo-frames (`(root)`, `(GC)`) as they are. */
export function frameName(frame: CallFrame): string {
  const name = frame.functionName || "(anonymous)";
  if (!frame.url) return name;
  return `${name} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
}

/**
 * The part of the code a frame belongs to: `src/<dir>/<dir>` (e.g. `src/kubelet/pleg`),
 * `bench`, `npm:<pkg>`, `ext:deno_node` and the like; undefined for V8's pseudo-frames.
 */
export function areaOf(frame: CallFrame): string | undefined {
  if (!frame.url) return undefined;
  const short = shortUrl(frame.url);
  if (short.startsWith("npm:")) return /^npm:(?:@[^/]+\/)?[^@/]+/.exec(short)?.[0];
  if (short.startsWith("src/")) {
    const parts = short.split("/");
    return parts.slice(0, Math.min(3, parts.length - 1)).join("/");
  }
  if (short.startsWith("ext:") || short.startsWith("node:")) return short.split("/")[0];
  return short.split("/")[0];
}

/** Bytes allocated per function, per area (inclusive) and per stack, from one heap profile. */
export interface AllocationSummary {
  totalBytes: number;
  byFunction: Map<string, number>;
  byArea: Map<string, number>;
  stacks: { bytes: number; frames: string[] }[];
}

/**
 * Folds a sampling heap profile (kept samples of collected objects included); samples with an
 * area of `without` on their stack are left out (e.g. `npm:protobufjs` to see what remains
 * besides the CRI client's decoding).
 */
export function summariseHeapProfile(head: HeapNode, without: string[] = []): AllocationSummary {
  const summary: AllocationSummary = {
    totalBytes: 0,
    byFunction: new Map(),
    byArea: new Map(),
    stacks: [],
  };
  const walk = (node: HeapNode, stack: CallFrame[]) => {
    const frames = [...stack, node.callFrame];
    const skip = without.length > 0 && frames.some((f) => without.includes(areaOf(f) ?? ""));
    if (node.selfSize > 0 && !skip) {
      summary.totalBytes += node.selfSize;
      const name = frameName(node.callFrame);
      summary.byFunction.set(name, (summary.byFunction.get(name) ?? 0) + node.selfSize);
      for (const area of new Set(frames.map(areaOf).filter((a) => a !== undefined))) {
        summary.byArea.set(area, (summary.byArea.get(area) ?? 0) + node.selfSize);
      }
      summary.stacks.push({
        bytes: node.selfSize,
        frames: frames.filter((f) => f.url || f.functionName !== "(root)").map(frameName)
          .reverse(),
      });
    }
    for (const child of node.children) walk(child, frames);
  };
  walk(head, []);
  summary.stacks.sort((a, b) => b.bytes - a.bytes);
  return summary;
}

/**
 * Self samples per function of a CPU profile. Samples, not the time between them: on a loaded
 * machine the thread is often off the CPU between two samples, and the gap would be charged to
 * whatever the last sample caught.
 */
export function summariseCpuProfile(profile: CpuProfile): {
  totalSamples: number;
  byFunction: Map<string, number>;
} {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  let totalSamples = 0;
  for (const id of profile.samples ?? []) {
    const name = frameName(byNode.get(id)!.callFrame);
    byFunction.set(name, (byFunction.get(name) ?? 0) + 1);
    totalSamples++;
  }
  return { totalSamples, byFunction };
}

// ------------------------------------------------------------------------------------------------
// The run

function loadAverage(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
}

function procCpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const kib = (bytes: number) => (bytes / 1024).toFixed(1);

function table(header: string[], rows: string[][]): string[] {
  return [
    `| ${header.join(" | ")} |`,
    `|${
      header.map((_, i) => i === 0 ? "--:" : i === header.length - 1 ? "---" : "--:").join("|")
    }|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ];
}

function top(map: Map<string, number>, n: number): [string, number][] {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
}

function printAllocation(
  alloc: AllocationSummary,
  seconds: number,
  topN: number,
  out: (line: string) => void,
): void {
  const perS = (bytes: number) => kib(bytes / seconds);
  const share = (bytes: number) => (100 * bytes / alloc.totalBytes).toFixed(1);
  out(`Top ${topN} functions by self allocated bytes:\n`);
  const functions = top(alloc.byFunction, topN);
  for (
    const line of table(
      ["#", "KiB/s", "%", "function file:line"],
      functions.map(([name, bytes], i) => [String(i + 1), perS(bytes), share(bytes), name]),
    )
  ) out(line);
  out(`\nBy area (inclusive: a byte counts for each area on its stack):\n`);
  for (
    const line of table(
      ["#", "KiB/s", "%", "area"],
      top(alloc.byArea, 20).map((
        [area, bytes],
        i,
      ) => [String(i + 1), perS(bytes), share(bytes), area]),
    )
  ) out(line);
  out(`\nTop 15 call stacks (innermost first, 12 frames at most):\n`);
  alloc.stacks.slice(0, 15).forEach((stack, i) => {
    out(`${i + 1}. ${perS(stack.bytes)} KiB/s (${share(stack.bytes)} %)`);
    for (const frame of stack.frames.slice(0, 12)) out(`     ${frame}`);
  });
}

interface Options {
  pods: number[];
  settleS: number;
  windowS: number;
  intervalBytes: number;
  top: number;
  v8Flags?: string;
  probeletFlags: string[];
  /** Profile the creation of each slot's pods (until all are Ready) instead of a settled agent. */
  startProfile: boolean;
}

async function profileAt(
  cdp: Cdp,
  pid: number,
  pods: number,
  options: Options,
  snapshot: () => Promise<Record<string, number>>,
  out: (line: string) => void,
): Promise<void> {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const dir = join(repo, ".run", "alloc-profile");
  await Deno.mkdir(dir, { recursive: true });

  // 1. Quiet: CPU seconds and memory without a profiler.
  const cpu0 = procCpuSeconds(pid);
  const t0 = performance.now();
  await delay(options.windowS * 1000);
  const cpuPerMinute = (procCpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 60_000);
  const loadQuiet = loadAverage();
  const snap = await snapshot();
  out(`\n## ${pods} pods (${new Date().toISOString()})\n`);
  out(
    `quiet ${options.windowS} s (load ${loadQuiet}): agent CPU ${
      cpuPerMinute.toFixed(2)
    } s/min; RSS ${snap.rss.toFixed(1)} MiB, young generation ${
      snap.newSpace.toFixed(1)
    } MiB committed (${snap.newSpaceUsed.toFixed(1)} live), old generation ${
      snap.oldSpace.toFixed(1)
    } MiB, V8 heap used ${snap.heapUsed.toFixed(1)} MiB`,
  );

  // 2. Sampling heap profile, collected objects included.
  await cdp.send("HeapProfiler.enable");
  await cdp.send("HeapProfiler.startSampling", {
    samplingInterval: options.intervalBytes,
    includeObjectsCollectedByMinorGC: true,
    includeObjectsCollectedByMajorGC: true,
  });
  const h0 = performance.now();
  await delay(options.windowS * 1000);
  const { profile: heap } = await cdp.send<{ profile: { head: HeapNode } }>(
    "HeapProfiler.stopSampling",
  );
  const heapS = (performance.now() - h0) / 1000;
  const loadHeap = loadAverage();
  await cdp.send("HeapProfiler.disable");
  const maps = await sourceMaps(cdp);
  mapFrames(heapFrames(heap.head), maps);
  await Deno.writeTextFile(
    join(dir, `${stamp}-${pods}pods.heapprofile`),
    JSON.stringify({ ...heap, windowSeconds: heapS }),
  );
  const alloc = summariseHeapProfile(heap.head);
  out(
    `\nallocated (sampling heap profile, ${
      heapS.toFixed(0)
    } s, interval ${options.intervalBytes} B, load ${loadHeap}): ${
      kib(alloc.totalBytes / heapS)
    } KiB/s (${(alloc.totalBytes / heapS * 60 / 1048576).toFixed(1)} MiB/min)\n`,
  );
  printAllocation(alloc, heapS, options.top, out);

  // 3. CPU profile.
  await cpuProfile(cdp, `${pods}pods`, () => delay(options.windowS * 1000), out);
}

/**
 * A CPU profile of the agent's main thread while `during` runs: saved as `<label>.cpuprofile`
 * under .run/alloc-profile/, summarised as the busy samples and the top functions by self time.
 */
async function cpuProfile(
  cdp: Cdp,
  label: string,
  during: () => Promise<void>,
  out: (line: string) => void,
): Promise<void> {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const dir = join(repo, ".run", "alloc-profile");
  await Deno.mkdir(dir, { recursive: true });
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 1000 });
  await cdp.send("Profiler.start");
  await during();
  const { profile: cpuProfile } = await cdp.send<{ profile: CpuProfile }>("Profiler.stop");
  const loadCpu = loadAverage();
  await cdp.send("Profiler.disable");
  mapFrames(cpuProfile.nodes.map((n) => n.callFrame), await sourceMaps(cdp));
  await Deno.writeTextFile(join(dir, `${stamp}-${label}.cpuprofile`), JSON.stringify(cpuProfile));
  const cpu = summariseCpuProfile(cpuProfile);
  const busy = [...cpu.byFunction].filter(([name]) => name !== "(idle)")
    .reduce((sum, [, n]) => sum + n, 0);
  const seconds = (cpuProfile.endTime - cpuProfile.startTime) / 1e6;
  out(
    `\nCPU profile, ${label} (${
      seconds.toFixed(0)
    } s, 1 ms sampling, load ${loadCpu}): ${cpu.totalSamples} ` +
      `samples, ${busy} of them busy (not idle) on the main thread\n`,
  );
  out(`Top 20 functions by self samples:\n`);
  for (
    const line of table(
      ["#", "samples", "% of busy", "function file:line"],
      top(new Map([...cpu.byFunction].filter(([n]) => n !== "(idle)")), 20).map((
        [name, n],
        i,
      ) => [String(i + 1), String(n), (100 * n / busy).toFixed(1), name]),
    )
  ) out(line);
}

async function main(args: string[]): Promise<void> {
  const get = (name: string) => flagValue(args, name);
  const options: Options = {
    pods: (get("pods") ?? "100").split(",").map(Number),
    settleS: Number(get("settle") ?? 30),
    windowS: Number(get("window") ?? 60),
    intervalBytes: Number(get("interval") ?? 16384),
    top: Number(get("top") ?? 25),
    v8Flags: get("v8-flags"),
    probeletFlags: args.filter((a) => a.startsWith("--probelet-flag=")).map((a) =>
      a.slice("--probelet-flag=".length)
    ),
    startProfile: args.includes("--start-profile"),
  };
  const analyse = get("analyse");
  if (analyse) {
    // A saved profile again, e.g. without the CRI client's decoding: --without npm:protobufjs
    const heap = JSON.parse(await Deno.readTextFile(analyse));
    const seconds = heap.windowSeconds ?? options.windowS;
    const without = get("without")?.split(",") ?? [];
    const alloc = summariseHeapProfile(heap.head, without);
    console.log(
      `${analyse}${without.length ? ` without ${without.join(", ")}` : ""}: ${
        kib(alloc.totalBytes / seconds)
      } KiB/s\n`,
    );
    printAllocation(alloc, seconds, options.top, console.log);
    return;
  }
  const api = await realKubeApiServer();
  if (typeof api === "string") throw new Error(`no kube-apiserver: ${api}`);
  const agentArgs = await agentCommandLine(api, "alloc-profile", options.probeletFlags);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--inspect=127.0.0.1:0",
      `--v8-flags=--expose-gc${options.v8Flags ? `,${options.v8Flags}` : ""}`,
      childModule,
      "--child-agent",
      JSON.stringify(agentArgs),
    ],
    cwd: repo,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // The inspector's URL is on stderr; the rest of stderr is passed through.
  const inspectorUrl = Promise.withResolvers<string>();
  const stderrDone = (async () => {
    let pending = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        const url = /Debugger listening on (ws:\/\/\S+)/.exec(line)?.[1];
        if (url) inspectorUrl.resolve(url);
        else if (!line.includes("chrome://inspect")) console.error(line);
      }
    }
    inspectorUrl.reject(new Error("the agent exited before its inspector listened"));
  })();
  const nextLine = lineReader(child.stdout);
  const snapshot = async () => {
    child.kill("SIGUSR2");
    return JSON.parse(await nextLine()) as Record<string, number>;
  };
  const report: string[] = [
    `# alloc profile, ${new Date().toISOString()}, load ${loadAverage()}, agent V8 flags: ${
      options.v8Flags ?? "none"
    }`,
  ];
  const out = (line: string) => {
    report.push(line);
    console.log(line);
  };
  console.log(report[0]);
  let cdp: Cdp | undefined;
  try {
    cdp = await Cdp.connect(await inspectorUrl.promise);
    await waitNodeReady(api, api.nodeName, 120_000, () => child.pid);
    let pods = 0;
    for (const slot of options.pods) {
      const from = pods;
      pods = slot;
      if (slot > from) {
        const create = async () => {
          await createAndWaitReady(api, api.nodeName, { from, to: slot });
        };
        if (options.startProfile) {
          await delay(options.settleS * 1000);
          await cpuProfile(cdp, `${from}-to-${slot}pods-start`, create, out);
          continue;
        }
        await create();
      }
      await delay(options.settleS * 1000);
      await profileAt(cdp, child.pid, pods, options, snapshot, out);
    }
  } finally {
    cdp?.close();
    await deleteAll(api, api.nodeName).catch(() => {});
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await stderrDone.catch(() => {});
    await api.close();
    const dir = join(repo, ".run", "alloc-profile");
    await Deno.mkdir(dir, { recursive: true });
    const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-report.md`;
    await Deno.writeTextFile(join(dir, name), report.join("\n") + "\n");
    console.log(`\nraw profiles and this report: .run/alloc-profile/ (${name})`);
  }
}

if (import.meta.main) await main(Deno.args);
