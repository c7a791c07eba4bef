/**
 * The embedded runtime's shim: one small Deno process per running container, started by the agent
 * in its own session, that outlives the agent as containerd's `containerd-shim-runc-v2` outlives
 * containerd and kubelet. It
 *
 * - starts the container's command (inside the container's cgroup when there is one, else in its
 *   own process group with the shim as child subreaper, so that escaped descendants stay in the
 *   shim's `/proc` parent chain);
 * - holds the command's stdout and stderr and writes them to the CRI-format log, rotating it
 *   (`--container-log-max-size`, `--container-log-max-files`); it reads the next chunk only when
 *   the previous one is on disk, so a container printing faster than the disk blocks on its pipe;
 * - records the command's pid and start time (`state.json`) and, when it exits, kills whatever the
 *   container left behind (as the kernel does to a PID namespace when its init exits) and records
 *   the exit code and time (`exit.json`), so an agent that was away learns how it ended.
 *
 * Run as `deno run --allow-all shim.ts <container folder>`; the folder holds `spec.json` (what to
 * run, written by the agent). The first line on stdout is the start report (`{"pid":…}` or
 * `{"error":"…"}`); after it the shim never writes to stdout, so it does not depend on the agent.
 * @module
 */
import { join } from "node:path";
import { ContainerLog, type LogRotation, type LogStream } from "./log.ts";
import { cgroupPids, joinCgroupWrapper, killCgroup, removeCgroup } from "./cgroup.ts";
import { spawnError } from "./process.ts";
import { markedProcesses, procStat, writeJsonAtomic } from "./records.ts";
import { resolveExecutable } from "../../probe/exec/host_runner.ts";
import { errorText } from "../../util/errors.ts";

/** What the agent asks the shim to run (`spec.json`). */
export interface ShimSpec {
  /** The container ID, for the shim's own log. */
  id: string;
  command: string[];
  env: Record<string, string>;
  clearEnv: boolean;
  cwd?: string;
  logPath: string;
  logRotation: LogRotation;
  /** The container's cgroup (created by the agent); absent: process group + subreaper. */
  cgroup?: string;
}

/** What the shim records once the command runs (`state.json`). */
export interface ShimState {
  /** The command's pid, also its process group id. */
  pid: number;
  /** Field 22 of `/proc/<pid>/stat`: proves later that a pid is still this process. */
  pidStartTime: number;
  shimPid: number;
  shimStartTime: number;
  /** Wall-clock milliseconds since the epoch. */
  startedAtMs: number;
}

/** How the command ended (`exit.json`). */
export interface ShimExit {
  /** The exit code, or 128 + the signal number when it was killed, as runc reports it. */
  exitCode: number;
  signal: string | null;
  /** Wall-clock milliseconds since the epoch. */
  finishedAtMs: number;
}

/** The shim's start report, its first line on stdout. */
export type ShimReport = { pid: number; startedAtMs: number } | { error: string };

/** How long output may keep flowing after the main process exited and the rest was killed. */
export const outputDrainMs = 1000;

/** The files of a container folder. */
export const shimFiles = {
  spec: "spec.json",
  state: "state.json",
  exit: "exit.json",
  log: "shim.log",
} as const;

/** Path of this module, to start it with `deno run`. */
export const shimModulePath = new URL(import.meta.url).pathname;

const readBufferBytes = 64 * 1024;

/** Runs the shim for the container folder `dir`; resolves with the exit code of the shim. */
export async function runShim(dir: string): Promise<number> {
  const spec: ShimSpec = JSON.parse(Deno.readTextFileSync(join(dir, shimFiles.spec)));
  const clock = { now: () => Date.now() };
  let log: ContainerLog;
  try {
    log = await ContainerLog.open(spec.logPath, clock, spec.logRotation);
  } catch (err) {
    return report({ error: `failed to open log "${spec.logPath}": ${errorText(err)}` });
  }
  let child: Deno.ChildProcess;
  try {
    resolveExecutable(spec.command[0], spec);
    if (!spec.cgroup) becomeSubreaper();
    const argv = spec.cgroup ? [...joinCgroupWrapper(spec.cgroup), ...spec.command] : spec.command;
    child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      env: spec.env,
      clearEnv: spec.clearEnv,
      cwd: spec.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      detached: true, // its own process group: the agent signals the group
    }).spawn();
  } catch (err) {
    await log.close();
    return report({ error: spawnError(spec.command[0], spec.cwd, err).message });
  }
  // "Started" means inside its cgroup: a kill of the cgroup cannot miss the command.
  if (spec.cgroup) await joinedCgroup(spec.cgroup, child.pid);
  const startedAtMs = Date.now();
  const state: ShimState = {
    pid: child.pid,
    pidStartTime: procStat(child.pid)?.startTime ?? 0,
    shimPid: Deno.pid,
    shimStartTime: procStat(Deno.pid)?.startTime ?? 0,
    startedAtMs,
  };
  writeJsonAtomic(join(dir, shimFiles.state), state);
  report({ pid: child.pid, startedAtMs });

  const stop = new AbortController();
  const pumps = Promise.all([
    pump(child.stdout, "stdout", log, stop.signal),
    pump(child.stderr, "stderr", log, stop.signal),
  ]);
  const status = await child.status;
  const finishedAtMs = Date.now();
  // No orphans: whatever the main process left behind goes with it.
  if (spec.cgroup) killCgroup(spec.cgroup);
  else await killDescendants(child.pid, spec.id);
  const drain = setTimeout(() => stop.abort(), outputDrainMs);
  await pumps;
  clearTimeout(drain);
  await log.close();
  const exit: ShimExit = { exitCode: status.code, signal: status.signal, finishedAtMs };
  writeJsonAtomic(join(dir, shimFiles.exit), exit);
  if (spec.cgroup) {
    // The kernel removes a cgroup only once its killed processes are gone: retry briefly.
    for (let i = 0; i < 200 && !removeCgroup(spec.cgroup); i++) await delay(10);
  }
  return 0;
}

async function pump(
  stream: ReadableStream<Uint8Array>,
  name: LogStream,
  log: ContainerLog,
  stop: AbortSignal,
): Promise<void> {
  const reader = stream.getReader({ mode: "byob" });
  const cancel = () => reader.cancel().catch(() => {});
  stop.addEventListener("abort", cancel, { once: true });
  let buffer = new Uint8Array(readBufferBytes);
  try {
    for (;;) {
      const { done, value } = await reader.read(buffer);
      if (done || !value) break;
      // Backpressure: the next read waits until this chunk is on disk.
      await log.write(name, value);
      buffer = new Uint8Array(value.buffer);
    }
  } catch {
    // cancelled or broken pipe: the output ends here
  } finally {
    stop.removeEventListener("abort", cancel);
    reader.releaseLock();
  }
}

// Waits (at most 2 s) until `pid` is in `cgroup` or has exited.
async function joinedCgroup(cgroup: string, pid: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const stat = procStat(pid);
    if (!stat || stat.state === "Z" || cgroupPids(cgroup).includes(pid)) return;
    await delay(5);
  }
}

function report(r: ShimReport): number {
  try {
    Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(r) + "\n"));
    Deno.stdout.close();
  } catch {
    // the agent is gone; state.json and exit.json say the rest
  }
  return "error" in r ? 1 : 0;
}

// ------------------------------------------------------------------------------------------------
// Without a cgroup: the shim is the child subreaper of everything the container starts (Linux
// PR_SET_CHILD_SUBREAPER), so a process that calls setsid and loses its parent is re-parented to
// the shim instead of init, and the /proc parent chain still leads to it.

interface Libc {
  prctl(option: number, a: bigint, b: bigint, c: bigint, d: bigint): number;
  waitpid(pid: number, status: null, options: number): number;
}

let libc: Libc | undefined;

function loadLibc(): Libc | undefined {
  if (libc || Deno.build.os !== "linux") return libc;
  try {
    const lib = Deno.dlopen("libc.so.6", {
      prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
      waitpid: { parameters: ["i32", "pointer", "i32"], result: "i32" },
    });
    libc = lib.symbols as unknown as Libc;
  } catch {
    libc = undefined;
  }
  return libc;
}

const prSetChildSubreaper = 36;
const wNoHang = 1;

function becomeSubreaper(): void {
  loadLibc()?.prctl(prSetChildSubreaper, 1n, 0n, 0n, 0n);
}

/**
 * Kills the group of `pid`, every descendant of the shim, and what the container's execs left
 * (marked in their environment), until none is left.
 */
async function killDescendants(pid: number, containerId: string): Promise<void> {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone
  }
  for (let round = 0; round < 100; round++) {
    const found = descendants(Deno.pid);
    for (const p of markedProcesses(`${containerId}:`, { prefix: true })) {
      found.push({ pid: p, ppid: 0, state: "R" });
    }
    if (found.length === 0) return;
    for (const p of found) {
      if (p.state !== "Z") {
        try {
          Deno.kill(p.pid, "SIGKILL");
        } catch {
          // gone meanwhile
        }
      }
      // Orphans re-parented to the shim are its children: reap them (never Deno's own child).
      if (p.ppid === Deno.pid && p.pid !== pid) loadLibc()?.waitpid(p.pid, null, wNoHang);
    }
    await delay(10);
  }
}

function descendants(root: number): { pid: number; ppid: number; state: string }[] {
  const children = new Map<number, { pid: number; ppid: number; state: string }[]>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = procStat(Number(entry.name));
    if (!stat) continue;
    const list = children.get(stat.ppid) ?? [];
    list.push({ pid: Number(entry.name), ppid: stat.ppid, state: stat.state });
    children.set(stat.ppid, list);
  }
  const out: { pid: number; ppid: number; state: string }[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const c of children.get(queue.shift()!) ?? []) {
      out.push(c);
      queue.push(c.pid);
    }
  }
  return out;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

if (import.meta.main) {
  const dir = Deno.args[0];
  let code = 1;
  try {
    code = await runShim(dir);
  } catch (err) {
    try {
      Deno.writeTextFileSync(
        join(dir, shimFiles.log),
        `${new Date().toISOString()} shim failed: ${
          err instanceof Error ? err.stack : String(err)
        }\n`,
        { append: true },
      );
    } catch {
      // nowhere left to say it
    }
  }
  Deno.exit(code);
}
