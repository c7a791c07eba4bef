/**
 * One cgroup (v2) per container of the embedded runtime, where the machine lets the agent create
 * one: every process the container or an exec in it starts stays in it whatever it does (setsid,
 * double fork), and `cgroup.kill` ends them all at once, as runc does with a container's cgroup.
 * Only the unified hierarchy is used, with no controllers (nothing is limited: the cgroup is for
 * tracking). Without a writable cgroup2 mount (not root, macOS, cgroup v1 only) the runtime falls
 * back to process groups and the shim's `/proc` parent chain (see shim.ts).
 * No Go counterpart in kubelet: this is the part of runc the embedded runtime needs.
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";

/** The cgroup folder name of a container's execs: `<container cgroup>/exec-<id>`. */
export const execCgroupPrefix = "exec-";

/**
 * The cgroup2 mount point, from `/proc/self/mountinfo`; undefined when there is none (or `/proc`
 * cannot be read).
 */
export function cgroup2Mount(): string | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync("/proc/self/mountinfo");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    // <id> <parent> <major:minor> <root> <mount point> <options> ... - <fs type> <source> <opts>
    const [left, right] = line.split(" - ");
    if (!right?.startsWith("cgroup2 ")) continue;
    const mountPoint = left.split(" ")[4];
    if (mountPoint) return mountPoint.replace(/\\040/g, " ");
  }
  return undefined;
}

/**
 * The cgroup under which the runtime rooted at `rootDir` puts its containers
 * (`<mount>/probelet/<hash of rootDir>`), created if needed; undefined when it cannot be created
 * or processes cannot be moved into it. Two runtimes on different root folders never share one.
 */
export function runtimeCgroup(rootDir: string): string | undefined {
  const mount = cgroup2Mount();
  if (!mount) return undefined;
  const hash = createHash("sha256").update(rootDir).digest("hex").slice(0, 16);
  const dir = join(mount, "probelet", hash);
  try {
    Deno.mkdirSync(dir, { recursive: true });
    // Needs cgroup.kill (Linux 5.14+) and a writable cgroup.procs.
    Deno.statSync(join(dir, "cgroup.kill"));
    const probe = join(dir, `probe-${Deno.pid}`);
    Deno.mkdirSync(probe, { recursive: true });
    Deno.removeSync(probe);
  } catch {
    return undefined;
  }
  // Created again with the first container; an empty one is not left behind meanwhile.
  removeCgroup(dir);
  return dir;
}

/** Creates a cgroup folder (and its parents); returns its path. */
export function createCgroup(path: string): string {
  Deno.mkdirSync(path, { recursive: true });
  return path;
}

/**
 * The words that make a command join `cgroup` before it starts: a shell writes its own pid to
 * `cgroup.procs` and then `exec`s the command, so that nothing the command starts can run outside.
 */
export function joinCgroupWrapper(cgroup: string): string[] {
  return ["/bin/sh", "-c", 'echo 0 > "$0/cgroup.procs" && exec "$@"', cgroup];
}

/** Pids of the processes in the cgroup and its descendants (empty when it is gone). */
export function cgroupPids(cgroup: string): number[] {
  const pids: number[] = [];
  const walk = (dir: string) => {
    try {
      for (const line of Deno.readTextFileSync(join(dir, "cgroup.procs")).split("\n")) {
        if (line) pids.push(Number(line));
      }
      for (const entry of Deno.readDirSync(dir)) {
        if (entry.isDirectory) walk(join(dir, entry.name));
      }
    } catch {
      // removed meanwhile
    }
  };
  walk(cgroup);
  return pids;
}

/** Kills every process in the cgroup and its descendants (`cgroup.kill`); false when it is gone. */
export function killCgroup(cgroup: string): boolean {
  try {
    Deno.writeTextFileSync(join(cgroup, "cgroup.kill"), "1");
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes the cgroup and its descendants once they hold no process; false when a process is
 * still in one (the kernel refuses to remove it: try again later).
 */
export function removeCgroup(cgroup: string): boolean {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(cgroup)];
  } catch {
    return true; // already gone
  }
  let ok = true;
  for (const entry of entries) {
    if (entry.isDirectory) ok = removeCgroup(join(cgroup, entry.name)) && ok;
  }
  try {
    Deno.removeSync(cgroup);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) ok = false;
  }
  return ok;
}

/**
 * Kills every process in the cgroup and removes it once the kernel has let them go, waiting at
 * most `waitMs` (synchronously: for clean-up paths that cannot wait on a timer). False when the
 * cgroup is still there afterwards.
 */
export function killAndRemoveCgroup(cgroup: string, waitMs = 1000): boolean {
  killCgroup(cgroup);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0;; waited += 10) {
    if (removeCgroup(cgroup)) return true;
    if (waited >= waitMs) return false;
    Atomics.wait(pause, 0, 0, 10);
  }
}
