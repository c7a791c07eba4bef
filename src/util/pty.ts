/**
 * Pseudo-terminals through libc (`posix_openpt`, `grantpt`, `unlockpt`, `ptsname_r`, `ioctl`),
 * for commands run with a TTY: Deno has no pty API. The master side is read without blocking the
 * event loop (`poll` runs on Deno's blocking pool, then a non-blocking `read`); the slave side is
 * opened by the child through its path.
 *
 * What runc does with a console socket for `exec -t`, and Go's `github.com/creack/pty` for tools;
 * probelet's own, for the embedded runtime.
 * @module
 */
import { libc } from "./libc.ts";

const oRdwr = 0o2;
const oNoctty = 0o400;
const oNonblock = 0o4000;
const tiocswinsz = 0x5414;
const pollIn = 0x001;
const eagain = 11;
// How long one poll on the blocking pool waits before looking whether the pty was closed.
const pollSliceMs = 250;

/**
 * One pseudo-terminal: `slavePath` is given to the child as its stdin, stdout, stderr and
 * controlling terminal; the parent reads and writes the master.
 *
 * @example
 * ```ts
 * const pty = openPty();
 * if (pty) {
 *   pty.resize({ width: 80, height: 24 });
 *   await pty.write(new TextEncoder().encode("ls\n"));
 *   const out = await pty.read(); // null once every holder of the slave closed it
 *   pty.close();
 * }
 * ```
 */
export class Pty {
  /** The master's file descriptor. */
  readonly fd: number;
  /** `/dev/pts/<n>`. */
  readonly slavePath: string;
  #closed = false;

  /** @internal Use {@linkcode openPty}. */
  constructor(fd: number, slavePath: string) {
    this.fd = fd;
    this.slavePath = slavePath;
  }

  /**
   * The next output of the terminal; `null` when the slave side is closed by every process (the
   * kernel answers EIO) or the pty was closed.
   */
  async read(): Promise<Uint8Array | null> {
    const c = libc()!;
    const pfd = new Uint8Array(8);
    const view = new DataView(pfd.buffer);
    const buf = new Uint8Array(32 * 1024);
    while (!this.#closed) {
      view.setInt32(0, this.fd, true);
      view.setInt16(4, pollIn, true);
      view.setInt16(6, 0, true);
      const ready = await c.poll(pfd, 1n, pollSliceMs);
      if (this.#closed) return null;
      if (ready <= 0) continue;
      const n = Number(c.read(this.fd, buf, BigInt(buf.length)));
      if (n > 0) return buf.slice(0, n);
      if (n === 0) return null;
      if (errno() === eagain) continue;
      return null; // EIO: the slave is closed
    }
    return null;
  }

  /** Writes all of `data` to the terminal (what the user typed). */
  async write(data: Uint8Array): Promise<void> {
    const c = libc()!;
    let off = 0;
    while (off < data.length && !this.#closed) {
      const chunk = data.slice(off);
      const n = Number(c.write(this.fd, chunk, BigInt(chunk.length)));
      if (n > 0) {
        off += n;
        continue;
      }
      if (errno() !== eagain) throw new Error("write to pty failed");
      // Full: wait until it drains.
      const pfd = new Uint8Array(8);
      const view = new DataView(pfd.buffer);
      view.setInt32(0, this.fd, true);
      view.setInt16(4, 0x004, true); // POLLOUT
      await c.poll(pfd, 1n, pollSliceMs);
    }
  }

  /** Sets the terminal's size (TIOCSWINSZ); the foreground process gets SIGWINCH. */
  resize(size: { width: number; height: number }): void {
    if (this.#closed) return;
    const ws = new Uint8Array(8);
    const view = new DataView(ws.buffer);
    view.setUint16(0, size.height, true);
    view.setUint16(2, size.width, true);
    libc()!.ioctl(this.fd, BigInt(tiocswinsz), ws);
  }

  /** Closes the master; a pending `read` resolves `null` within a poll slice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    libc()!.close(this.fd);
  }
}

// errno through glibc's __errno_location.
let errnoLib:
  | Deno.DynamicLibrary<{ __errno_location: { parameters: []; result: "pointer" } }>
  | undefined;
function errno(): number {
  errnoLib ??= Deno.dlopen("libc.so.6", {
    __errno_location: { parameters: [], result: "pointer" },
  });
  const p = errnoLib.symbols.__errno_location();
  return p ? new Deno.UnsafePointerView(p).getInt32() : 0;
}

/**
 * A new pseudo-terminal, or `undefined` where libc cannot be loaded (no FFI permission, not glibc).
 * Throws when the kernel refuses one (no /dev/pts, out of ptys).
 */
export function openPty(): Pty | undefined {
  const c = libc();
  if (!c) return undefined;
  const fd = c.posix_openpt(oRdwr | oNoctty | oNonblock);
  if (fd < 0) throw new Error(`posix_openpt failed (errno ${errno()})`);
  const name = new Uint8Array(128);
  if (c.grantpt(fd) !== 0 || c.unlockpt(fd) !== 0 || c.ptsname_r(fd, name, 128n) !== 0) {
    const e = errno();
    c.close(fd);
    throw new Error(`pty setup failed (errno ${e})`);
  }
  const end = name.indexOf(0);
  return new Pty(fd, new TextDecoder().decode(name.subarray(0, end < 0 ? name.length : end)));
}

/**
 * The argv that runs `cmd` with `pty`'s slave as stdin, stdout, stderr and controlling terminal,
 * in a new session (util-linux `setsid --ctty`, through `sh` for the redirections). Start it with
 * `detached: false`: `setsid` then needs no fork, so the child's pid is its session and group.
 */
export function ptyCommand(pty: Pty, cmd: string[]): string[] {
  return ["/bin/sh", "-c", 'exec setsid -c "$@" <>"$0" >&0 2>&0', pty.slavePath, ...cmd];
}
