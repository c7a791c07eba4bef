/**
 * The few libc calls Deno has no API for (inotify without opening files, resource limits, socket
 * options and shutdown, pseudo-terminals), through Deno's FFI. Loaded once, on first use; `undefined` when FFI is
 * not allowed or libc is not glibc's `libc.so.6`, so that every caller has a fallback.
 * @module
 */

const symbols = {
  inotify_init1: { parameters: ["i32"], result: "i32" },
  inotify_add_watch: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
  pipe2: { parameters: ["buffer", "i32"], result: "i32" },
  // Blocks a thread of Deno's pool, not the event loop.
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32", nonblocking: true },
  open: { parameters: ["buffer", "i32", "u32"], result: "i32" },
  flock: { parameters: ["i32", "i32"], result: "i32" },
  ftruncate: { parameters: ["i32", "i64"], result: "i32" },
  getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  // Resetting a TCP connection a pending write holds (socket.ts).
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  shutdown: { parameters: ["i32", "i32"], result: "i32" },
  // Pseudo-terminals for exec with a TTY (pty.ts). ioctl is variadic; its third argument is a
  // pointer, passed as an integer register as the ABI does for variadic pointers.
  posix_openpt: { parameters: ["i32"], result: "i32" },
  grantpt: { parameters: ["i32"], result: "i32" },
  unlockpt: { parameters: ["i32"], result: "i32" },
  ptsname_r: { parameters: ["i32", "buffer", "usize"], result: "i32" },
  ioctl: { parameters: ["i32", "u64", "buffer"], result: "i32" },
} as const;

/** The loaded libc symbols. */
export type LibC = Deno.DynamicLibrary<typeof symbols>["symbols"];

let loaded: Deno.DynamicLibrary<typeof symbols> | null | undefined;

/**
 * The libc symbols, or `undefined` where they cannot be loaded (not Linux/glibc, or no
 * `--allow-ffi`).
 *
 * @example
 * ```ts
 * const c = libc();
 * if (c) c.close(42);
 * ```
 */
export function libc(): LibC | undefined {
  if (loaded === undefined) {
    try {
      loaded = Deno.build.os === "linux" ? Deno.dlopen("libc.so.6", symbols) : null;
    } catch {
      loaded = null;
    }
  }
  return loaded?.symbols;
}

/** A NUL-terminated copy of `s` for a `buffer` parameter. */
export function cString(s: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}
