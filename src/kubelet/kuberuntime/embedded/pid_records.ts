/**
 * Process group records of the embedded runtime: one small file per running container under
 * `<rootDir>/pids/`, holding the group's id and the leader's start time from `/proc/<pid>/stat`.
 * A runtime that starts after a crash of the previous agent kills the groups those files name, but
 * only after checking that the processes are the ones it started (same leader start time, or, with
 * the leader gone, members that started no earlier than it): never by name, never a reused pid.
 * No Go counterpart (containerd's shims outlive the agent; host processes do not have one).
 * @module
 */
import { join } from "node:path";
import * as log from "../../../util/log.ts";

/** What is recorded for one container's process group. */
export interface PidRecord {
  /** The process group id (the leader's pid). */
  pgid: number;
  /** Field 22 of `/proc/<pgid>/stat` (clock ticks after boot) when the record was written. */
  startTime: number;
  /** The container, for the log line. */
  containerId: string;
}

/** The folder holding the records of a runtime rooted at `rootDir`. */
export function pidRecordDir(rootDir: string): string {
  return join(rootDir, "pids");
}

/**
 * The state, process group and start time of a process from `/proc/<pid>/stat`; undefined when
 * it does not exist (or `/proc` is not there).
 *
 * @example
 * ```ts
 * procStat(Deno.pid)?.pgrp;
 * ```
 */
export function procStat(
  pid: number,
): { state: string; pgrp: number; startTime: number } | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0], pgrp: Number(rest[2]), startTime: Number(rest[19]) };
}

/**
 * Writes the record of a process group just started (synchronously, so that a crash right after
 * the spawn still leaves it). Does nothing where `/proc` cannot be read.
 */
export function writePidRecord(rootDir: string, containerId: string, pgid: number): void {
  const stat = procStat(pgid);
  if (!stat) return;
  const dir = pidRecordDir(rootDir);
  const record: PidRecord = { pgid, startTime: stat.startTime, containerId };
  try {
    Deno.mkdirSync(dir, { recursive: true });
    Deno.writeTextFileSync(join(dir, `${containerId}.json`), JSON.stringify(record));
  } catch (e) {
    log.error(e, "Could not record container process group", { containerId, pgid });
  }
}

/** Removes the record of a container whose process group is gone. */
export function removePidRecord(rootDir: string, containerId: string): void {
  try {
    Deno.removeSync(join(pidRecordDir(rootDir), `${containerId}.json`));
  } catch {
    // never written, or already removed
  }
}

/**
 * Kills the process groups recorded by a previous run of the runtime on `rootDir` that are still
 * ours, and removes every record. Returns the process group ids that were signalled.
 */
export function killRecordedGroups(rootDir: string): number[] {
  const dir = pidRecordDir(rootDir);
  let names: string[];
  try {
    names = [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".json")).map((e) => e.name);
  } catch {
    return [];
  }
  const killed: number[] = [];
  for (const name of names) {
    const file = join(dir, name);
    let record: PidRecord | undefined;
    try {
      record = JSON.parse(Deno.readTextFileSync(file));
    } catch {
      record = undefined;
    }
    if (record && Number.isInteger(record.pgid) && record.pgid > 1 && isOurs(record)) {
      try {
        Deno.kill(-record.pgid, "SIGKILL");
        killed.push(record.pgid);
        log.info("Killed container processes left by a previous run", {
          containerID: record.containerId,
          pgid: record.pgid,
        });
      } catch {
        // exited meanwhile
      }
    }
    try {
      Deno.removeSync(file);
    } catch {
      // removed meanwhile
    }
  }
  return killed;
}

// The group still holds processes we started: the leader with the recorded start time, or — the
// leader gone, so its pid cannot have been reused while the group exists — members that started
// no earlier than it.
function isOurs(record: PidRecord): boolean {
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
