/**
 * An exclusive lock on a file, held for the life of the process (or until released), like
 * kubelet's pkg/util/flock (`--lock-file`): the agent locks its state folder so that a second
 * agent on the same folder stops before it touches anything. The lock is `flock(2)` on a file
 * opened through libc: the kernel drops it when the process ends, however it ends.
 * @module
 */
import { cString, libc } from "./libc.ts";

const O_RDWR = 0o2;
const O_CREAT = 0o100;
const O_CLOEXEC = 0o2000000;
const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

/** The lock is held by another process (or another open of the file). */
export class LockHeldError extends Error {
  /** The lock file. */
  readonly path: string;
  /** The holder's pid as it wrote it, when readable. */
  readonly holderPid?: number;

  /** Builds the message naming the file and the holder. */
  constructor(path: string, holderPid?: number) {
    super(
      `${path} is locked by another process${holderPid ? ` (pid ${holderPid})` : ""}`,
    );
    this.name = "LockHeldError";
    this.path = path;
    this.holderPid = holderPid;
  }
}

/** A held lock. */
export interface FileLock {
  readonly path: string;
  /** Releases the lock (the file stays). */
  release(): void;
}

/**
 * Takes the exclusive lock on `path` without waiting: creates the file if needed, writes this
 * process's pid into it, and throws {@link LockHeldError} when someone else holds it. Without
 * FFI (no `--allow-ffi`) an error says so.
 *
 * @example
 * ```ts
 * const lock = tryLockFile(".run/probelet/probelet.lock");
 * // ...
 * lock.release();
 * ```
 */
export function tryLockFile(path: string): FileLock {
  const c = libc();
  if (!c) throw new Error(`cannot lock ${path}: file locking needs libc through FFI (--allow-ffi)`);
  const fd = c.open(cString(path), O_RDWR | O_CREAT | O_CLOEXEC, 0o644);
  if (fd < 0) throw new Error(`cannot open lock file ${path}`);
  if (c.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    c.close(fd);
    let pid: number | undefined;
    try {
      pid = Number.parseInt(Deno.readTextFileSync(path).trim(), 10) || undefined;
    } catch {
      // unreadable: the message goes without the pid
    }
    throw new LockHeldError(path, pid);
  }
  c.ftruncate(fd, 0n);
  const text = new TextEncoder().encode(`${Deno.pid}\n`);
  c.write(fd, text, BigInt(text.length));
  let released = false;
  return {
    path,
    release: () => {
      if (released) return;
      released = true;
      c.flock(fd, LOCK_UN);
      c.close(fd);
    },
  };
}
