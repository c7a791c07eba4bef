/**
 * Every timer an agent sets while it runs, by call site, printed as a table: how often each fires
 * a minute and with what delay, so an idle agent's wake-ups can be read beside kubelet's periods
 * (docs/benchmarks/memory.md, "The idle floor"). The agent runs in this process with the CLI
 * flags after `--`; timers are counted through `RealClock.afterFunc` and `RealClock.sleep` (which
 * the agent's loops use) and the global `setTimeout`/`setInterval` (everything else; the clock's
 * own shared `setTimeout` is left out). A call site is the first three frames in `src/` outside the
 * clock and the wait helpers, and the delay to two digits (loops whose stack an await cut short
 * share a call site).
 *
 *   deno run -A bench/idle_timers.ts [--seconds 120] [--skip 30] -- <probelet flags>
 *
 * `--skip` leaves out the first seconds (start-up); counts are over the rest.
 * @module
 */
import { RealClock } from "../src/util/clock.ts";

interface Site {
  count: number;
  delays: number[];
}

const sites = new Map<string, Site>();
let counting = false;

/** The call site of the caller of a timer: the first frames in src/ outside the timer helpers. */
function callSite(): string {
  const lines = (new Error().stack ?? "").split("\n").slice(1)
    .filter((l) => !l.includes("bench/idle_timers.ts"));
  const frames = lines
    .map((l) => /\/(src\/[^:)]+):(\d+)/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .filter((m) => !/src\/util\/(clock|wait\/wait)\.ts/.test(m[1]))
    .map((m) => `${m[1].replace(/^src\//, "")}:${m[2]}`);
  if (frames.length > 0) return frames.slice(0, 3).join(" < ");
  // No frame of ours: the runtime's or a package's, named by its innermost frames.
  return lines.slice(0, 2).map((l) => l.trim().replace(/^at /, "")).join(" < ") || "(unknown)";
}

function record(ms: number): void {
  if (!counting) return;
  // Loops whose stack is lost across an await (wait.jitterUntil's) share a call site: the delay,
  // to two significant digits, tells them apart.
  const site = `${callSite()} @${Number(ms.toPrecision(2))}`;
  const entry = sites.get(site) ?? { count: 0, delays: [] };
  entry.count++;
  if (entry.delays.length < 1000) entry.delays.push(ms);
  sites.set(site, entry);
}

// A sleep is counted where it is called; the afterFunc it sets is not counted again.
let inSleep = false;
const afterFunc = RealClock.prototype.afterFunc;
RealClock.prototype.afterFunc = function (ms, fn) {
  if (!inSleep) record(ms);
  return afterFunc.call(this, ms, fn);
};
const sleep = RealClock.prototype.sleep;
RealClock.prototype.sleep = function (ms, options) {
  record(ms);
  inSleep = true;
  try {
    return sleep.call(this, ms, options);
  } finally {
    inSleep = false;
  }
};
const globalSetTimeout = globalThis.setTimeout;
const globalSetInterval = globalThis.setInterval;
// deno-lint-ignore no-explicit-any
(globalThis as any).setTimeout = (fn: () => void, ms = 0, ...args: unknown[]) => {
  // The clock's wheel arms one setTimeout for the timers already counted above.
  if (!/src\/util\/clock\.ts/.test(new Error().stack ?? "")) record(ms);
  return (globalSetTimeout as unknown as (...a: unknown[]) => number)(fn, ms, ...args);
};
// deno-lint-ignore no-explicit-any
(globalThis as any).setInterval = (fn: () => void, ms = 0, ...args: unknown[]) => {
  record(ms);
  return (globalSetInterval as unknown as (...a: unknown[]) => number)(fn, ms, ...args);
};

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

async function main(args: string[]): Promise<void> {
  const split = args.indexOf("--");
  const own = split >= 0 ? args.slice(0, split) : args;
  const agentArgs = split >= 0 ? args.slice(split + 1) : [];
  const get = (name: string, fallback: number) => {
    const i = own.indexOf(`--${name}`);
    return i >= 0 ? Number(own[i + 1]) : fallback;
  };
  const seconds = get("seconds", 120);
  const skip = get("skip", 30);
  const { runKubelet } = await import("../src/cmd/probelet/app.ts");
  const { parseFlags } = await import("../src/cmd/probelet/flags.ts");
  const log = await import("../src/util/log.ts");
  log.setLogSink(() => {});
  const agent = await runKubelet(parseFlags(agentArgs));
  await new Promise((resolve) => globalSetTimeout(resolve, skip * 1000));
  counting = true;
  await new Promise((resolve) => globalSetTimeout(resolve, seconds * 1000));
  counting = false;
  const minutes = seconds / 60;
  const rows = [...sites].sort((a, b) => b[1].count - a[1].count).map(([site, s]) =>
    `| ${(s.count / minutes).toFixed(1)} | ${median(s.delays)} | ${site} |`
  );
  const load = Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  console.log(
    [
      `timers set over ${seconds} s after ${skip} s, ${new Date().toISOString()}, load ${load}`,
      "",
      "| per minute | median delay (ms) | call site |",
      "|--:|--:|---|",
      ...rows,
    ].join("\n"),
  );
  await agent.stop();
  Deno.exit(0);
}

if (import.meta.main) await main(Deno.args);
