/**
 * The manifest folder's change notifications on Linux: inotify, called through libc.
 * Mirrors kubelet's pkg/kubelet/config/file_linux.go, which watches the folder with inotify.
 *
 * Why not `Deno.watchFs`: its watcher thread opens every file created in the folder, so a named
 * pipe (FIFO) dropped there blocks it forever (no more notifications, and closing it hangs the
 * agent's shutdown). inotify itself never opens the files it reports.
 * @module
 */
import { cString, libc } from "../../util/libc.ts";

const IN_NONBLOCK = 0o4000;
const IN_CLOEXEC = 0o2000000;
const O_NONBLOCK = 0o4000;
const O_CLOEXEC = 0o2000000;
const IN_MODIFY = 0x2;
const IN_ATTRIB = 0x4;
const IN_CLOSE_WRITE = 0x8;
const IN_MOVED_FROM = 0x40;
const IN_MOVED_TO = 0x80;
const IN_CREATE = 0x100;
const IN_DELETE = 0x200;
const IN_DELETE_SELF = 0x400;
const IN_MOVE_SELF = 0x800;
const IN_Q_OVERFLOW = 0x4000;
const IN_IGNORED = 0x8000;
const IN_ONLYDIR = 0x1000000;
const POLLIN = 0x1;
const watchMask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
  IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

/** Callbacks of {@link watchDirectory}. */
export interface DirectoryEvents {
  /** Names (not paths) of entries that changed; an empty list means "something changed". */
  onChange(names: string[]): void;
  /** The folder itself was removed or moved away; the watch has ended. */
  onGone(): void;
}

/** A running inotify watch of one folder. */
export interface DirectoryWatch {
  /** Ends the watch and releases its descriptors; resolves once they are closed. */
  close(): Promise<void>;
}

/**
 * Watches the entries of folder `dir` (not recursively) with inotify. Returns `undefined` when
 * inotify cannot be used here (not Linux, no FFI permission); throws when `dir` cannot be
 * watched (missing, not a folder).
 *
 * @example
 * ```ts
 * const watch = watchDirectory("/etc/probelet/pods", {
 *   onChange: (names) => console.log(names),
 *   onGone: () => console.log("folder removed"),
 * });
 * await watch?.close();
 * ```
 */
export function watchDirectory(dir: string, events: DirectoryEvents): DirectoryWatch | undefined {
  const c = libc();
  if (!c) return undefined;
  const fd = c.inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return undefined;
  if (c.inotify_add_watch(fd, cString(dir), watchMask) < 0) {
    c.close(fd);
    throw new Error(`inotify: cannot watch ${dir}`);
  }
  // A pipe wakes the poll up when the watch is closed.
  const pipe = new Int32Array(2);
  if (c.pipe2(new Uint8Array(pipe.buffer), O_NONBLOCK | O_CLOEXEC) < 0) {
    c.close(fd);
    return undefined;
  }
  const [wakeRead, wakeWrite] = pipe;
  let closing = false;
  let ended = false;
  const pollFds = new Uint8Array(16); // struct pollfd { int fd; short events, revents; } × 2
  const view = new DataView(pollFds.buffer);
  view.setInt32(0, fd, true);
  view.setInt16(4, POLLIN, true);
  view.setInt32(8, wakeRead, true);
  view.setInt16(12, POLLIN, true);
  const buffer = new Uint8Array(64 * 1024);
  const decoder = new TextDecoder();

  const loop = (async () => {
    try {
      while (!closing) {
        await c.poll(pollFds, 2n, -1);
        if (closing) return;
        const names: string[] = [];
        let gone = false;
        for (;;) {
          const n = Number(c.read(fd, buffer, BigInt(buffer.length)));
          if (n <= 0) break; // EAGAIN: drained
          // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[len]; }
          const events = new DataView(buffer.buffer, 0, n);
          for (let off = 0; off + 16 <= n;) {
            const mask = events.getUint32(off + 4, true);
            const len = events.getUint32(off + 12, true);
            const raw = buffer.subarray(off + 16, off + 16 + len);
            const end = raw.indexOf(0);
            const name = decoder.decode(end < 0 ? raw : raw.subarray(0, end));
            if (mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) gone = true;
            else if (mask & IN_Q_OVERFLOW) names.push("");
            else if (name !== "") names.push(name);
            off += 16 + len;
          }
        }
        if (names.length > 0) events.onChange(names.filter((n) => n !== ""));
        if (gone) {
          events.onGone();
          return;
        }
      }
    } finally {
      ended = true;
      c.close(fd);
      c.close(wakeRead);
      c.close(wakeWrite);
    }
  })();

  return {
    close: async () => {
      if (!closing && !ended) {
        closing = true;
        c.write(wakeWrite, new Uint8Array([1]), 1n);
      }
      await loop;
    },
  };
}

const O_RDONLY = 0;

/**
 * Opens `path` for reading only if it is a regular file, without ever blocking on a named pipe:
 * the file is opened with `O_NONBLOCK` through libc, its type is read from the open descriptor
 * (`/proc/self/fd/<fd>`), and only a regular file is reopened through that descriptor for Deno.
 * So a file swapped for a FIFO between a listing's `stat` and the read is still never waited on.
 * Returns `undefined` where libc is not available (callers then open the path directly).
 *
 * @example
 * ```ts
 * const opened = await openRegularFile("/etc/probelet/pods/web.yaml");
 * if (opened && "file" in opened) opened.file.close();
 * ```
 */
export async function openRegularFile(
  path: string,
): Promise<{ file: Deno.FsFile; info: Deno.FileInfo } | { info: Deno.FileInfo } | undefined> {
  const c = libc();
  if (!c) return undefined;
  const fd = c.open(cString(path), O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
  if (fd < 0) return undefined; // gone or unreadable: the caller's open reports why
  try {
    const self = `/proc/self/fd/${fd}`;
    const info = await Deno.stat(self);
    if (!info.isFile) return { info };
    return { file: await Deno.open(self, { read: true }), info };
  } finally {
    c.close(fd);
  }
}
