/**
 * What the embedded runtime keeps on disk under its root folder, so that a later agent can adopt
 * running containers, learn how the others ended, and clean up only what it cannot adopt:
 *
 * ```
 * <root>/sandboxes/<id>.json            sandbox record (config, state, created time)
 * <root>/containers/<id>/container.json container record (config, created/started time, state)
 * <root>/containers/<id>/spec.json      what the shim runs (shim.ts)
 * <root>/containers/<id>/state.json     the shim's pid, the command's pid, /proc start times
 * <root>/containers/<id>/exit.json      exit code and time, written by the shim
 * <root>/containers/<id>.log            the CRI log when the sandbox sets no log folder
 * <root>/execs/<pgid>.json              a running exec (pgid, start time, cgroup)
 * ```
 *
 * A pid is only ever signalled after `/proc/<pid>/stat` shows the start time recorded with it:
 * never by name, never a reused pid. No Go counterpart: containerd keeps this in its metadata
 * store and its shims.
 * @module
 */
import { join } from "node:path";
import * as log from "../../util/log.ts";
import { killAndRemoveCgroup, killCgroup } from "./cgroup.ts";

/** The fields of `/proc/<pid>/stat` the runtime uses. */
export interface ProcStat {
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Clock ticks after boot (field 22). */
  startTime: number;
}

/**
 * The state, parent, process group, session and start time of a process from `/proc/<pid>/stat`;
 * undefined when it does not exist (or `/proc` is not there).
 *
 * @example
 * ```ts
 * procStat(Deno.pid)?.pgrp;
 * ```
 */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return {
    state: rest[0],
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    session: Number(rest[3]),
    startTime: Number(rest[19]),
  };
}

/** True while `pid` is the live (not zombie) process that started at `startTime`. */
export function isSameProcess(pid: number, startTime: number): boolean {
  if (!(pid > 1) || !(startTime > 0)) return false;
  const stat = procStat(pid);
  return stat !== undefined && stat.startTime === startTime && stat.state !== "Z";
}

/** Writes JSON so that a reader never sees half of it (a temporary file renamed over it). */
export function writeJsonAtomic(path: string, value: unknown): void {
  const tmp = `${path}.${Deno.pid}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify(value));
  Deno.renameSync(tmp, path);
}

/** Reads JSON written by {@link writeJsonAtomic}: undefined when missing, an Error when corrupt. */
export function readJson<T>(path: string): T | undefined | Error {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    return e instanceof Deno.errors.NotFound ? undefined : e as Error;
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    return e as Error;
  }
}

/**
 * Without cgroups, an exec's processes carry `PROBELET_EXEC=<container id>:<exec id>` in their
 * environment (inherited by everything they start), so that those which escaped its process group
 * and lost their parent can still be found in `/proc` and killed with the container.
 */
export const execMarkerVariable = "PROBELET_EXEC";

/**
 * Pids of live processes whose environment holds `PROBELET_EXEC=<value>` (or, with `prefix`, a
 * value starting with it). Only processes whose environment this process may read are seen.
 */
export function markedProcesses(value: string, options: { prefix?: boolean } = {}): number[] {
  const needle = `${execMarkerVariable}=${value}`;
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name) || Number(entry.name) === Deno.pid) continue;
    let environ: string;
    try {
      environ = Deno.readTextFileSync(`/proc/${entry.name}/environ`);
    } catch {
      continue; // gone, or not ours to read
    }
    const hit = environ.split("\0").some((kv) =>
      options.prefix ? kv.startsWith(needle) : kv === needle
    );
    if (hit && procStat(Number(entry.name))?.state !== "Z") found.push(Number(entry.name));
  }
  return found;
}

/** Folders of the layout. */
export const recordDirs = {
  sandboxes: (root: string) => join(root, "sandboxes"),
  containers: (root: string) => join(root, "containers"),
  execs: (root: string) => join(root, "execs"),
  /** Process group records of the previous version (one file per container). */
  legacyPids: (root: string) => join(root, "pids"),
} as const;

/** A running exec, recorded so that a later start can kill it if the agent dies meanwhile. */
export interface ExecRecord {
  pgid: number;
  startTime: number;
  containerId: string;
  cgroup?: string;
  /** The exec's `PROBELET_EXEC` value, when it runs without a cgroup. */
  marker?: string;
}

/** Records a running exec (synchronously: a crash right after the spawn still leaves it). */
export function writeExecRecord(rootDir: string, record: ExecRecord): void {
  try {
    Deno.mkdirSync(recordDirs.execs(rootDir), { recursive: true });
    writeJsonAtomic(join(recordDirs.execs(rootDir), `${record.pgid}.json`), record);
  } catch (e) {
    log.error(e, "Could not record an exec", {
      containerID: record.containerId,
      pgid: record.pgid,
    });
  }
}

/** Removes the record of an exec that is over. */
export function removeExecRecord(rootDir: string, pgid: number): void {
  try {
    Deno.removeSync(join(recordDirs.execs(rootDir), `${pgid}.json`));
  } catch {
    // never written, or removed already
  }
}

/**
 * Kills the execs a previous agent left running (it was killed during a probe) and removes their
 * records; returns the process groups signalled.
 */
export function killRecordedExecs(rootDir: string): number[] {
  const killed: number[] = [];
  for (const [file, record] of readRecords<ExecRecord>(recordDirs.execs(rootDir))) {
    if (record) {
      const inGroup = isSameProcess(record.pgid, record.startTime) && signal(-record.pgid);
      const inCgroup = record.cgroup !== undefined && killCgroup(record.cgroup);
      if (record.cgroup) killAndRemoveCgroup(record.cgroup);
      const marked = record.marker ? markedProcesses(record.marker) : [];
      for (const pid of marked) signal(pid);
      if (inGroup || inCgroup || marked.length > 0) killed.push(record.pgid);
      if (killed.includes(record.pgid)) {
        log.info("Killed an exec left running by a previous run", {
          containerID: record.containerId,
          pgid: record.pgid,
        });
      }
    }
    removeFile(file);
  }
  return killed;
}

/** A process group recorded by the previous version of the runtime (`<root>/pids/<id>.json`). */
interface LegacyPidRecord {
  pgid: number;
  startTime: number;
  containerId: string;
}

/**
 * Kills the process groups recorded by the previous version of the runtime, which kept no record
 * a later run could adopt: the leader with the recorded start time, or, the leader gone (so its
 * pid cannot have been reused while the group exists), members that started no earlier than it.
 * Removes the records; returns the groups signalled.
 */
export function killLegacyPidRecords(rootDir: string): number[] {
  const killed: number[] = [];
  for (const [file, record] of readRecords<LegacyPidRecord>(recordDirs.legacyPids(rootDir))) {
    if (record && record.pgid > 1 && legacyGroupIsOurs(record) && signal(-record.pgid)) {
      killed.push(record.pgid);
      log.info("Killed container processes left by a previous run", {
        containerID: record.containerId,
        pgid: record.pgid,
      });
    }
    removeFile(file);
  }
  return killed;
}

function legacyGroupIsOurs(record: LegacyPidRecord): boolean {
  const leader = procStat(record.pgid);
  if (leader) return leader.startTime === record.startTime;
  let members = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = procStat(Number(entry.name));
    if (!stat || stat.pgrp !== record.pgid || stat.state === "Z") continue;
    if (stat.startTime < record.startTime) return false;
    members++;
  }
  return members > 0;
}

/** `[file, parsed record or undefined when corrupt]` of every `*.json` in `dir`. */
export function readRecords<T>(dir: string): [string, T | undefined][] {
  let names: string[];
  try {
    names = [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.endsWith(".json"))
      .map((e) => e.name);
  } catch {
    return [];
  }
  return names.map((name) => {
    const file = join(dir, name);
    const value = readJson<T>(file);
    return [file, value instanceof Error ? undefined : value];
  });
}

/** Sends SIGKILL to `target` (a pid, or minus a process group id); false when it is gone. */
export function signal(target: number, sig: Deno.Signal = "SIGKILL"): boolean {
  try {
    Deno.kill(target, sig);
    return true;
  } catch {
    return false;
  }
}

function removeFile(file: string): void {
  try {
    Deno.removeSync(file);
  } catch {
    // removed meanwhile
  }
}
