/**
 * Ending a TCP connection at a deadline even while a write to it is pending.
 *
 * In Deno 2.9.3, `conn.close()` with a `write()` in flight neither settles the write nor closes the
 * socket: the write holds the socket until the peer reads or closes, so a peer that stops reading
 * keeps the descriptor and megabytes of kernel buffers for as long as it likes
 * (scripts/deno_blocked_write_close.ts, docs/hardening/deadlines.md). `abortConn` finds the
 * connection's descriptor through libc (`getsockname`/`getpeername` over /proc/self/fd), sets
 * `SO_LINGER` to zero and shuts it down: the pending write fails, Deno drops the socket, and the
 * kernel resets the connection and frees its buffers at once. Go reaches the same end by closing
 * the descriptor under a blocked write; kubelet's probe sockets carry `SO_LINGER` too.
 *
 * Only the writes made through `writeAll` are known to be pending; without one, `abortConn` is a
 * plain `close()` (which does end a pending read). probelet's own addition.
 * @module
 */
import { libc } from "./libc.ts";

// Connections with a write in flight (through writeAll), and how many.
const pendingWrites = new WeakMap<Deno.Conn, number>();

/**
 * Writes all of `bytes` to `conn`. While it runs, {@linkcode abortConn} knows a write is pending
 * and resets the connection instead of leaving it to a `close()` that cannot end the write.
 *
 * @example
 * ```ts
 * const conn = await Deno.connect({ hostname: "127.0.0.1", port: 8080 });
 * await writeAll(conn, new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n"));
 * ```
 */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  pendingWrites.set(conn, (pendingWrites.get(conn) ?? 0) + 1);
  try {
    for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
  } finally {
    const left = (pendingWrites.get(conn) ?? 1) - 1;
    if (left > 0) pendingWrites.set(conn, left);
    else pendingWrites.delete(conn);
  }
}

/** True while a `writeAll` on `conn` has not settled. */
export function writePending(conn: Deno.Conn): boolean {
  return pendingWrites.has(conn);
}

/** How {@linkcode abortConn} ended a connection, for tests and figures. */
export type AbortHow = "closed" | "reset" | "close-only";

/**
 * Closes `conn` now. With a write pending (see {@linkcode writeAll}) on a TCP connection, the
 * connection is reset through libc first, so that the write fails and the descriptor and kernel
 * buffers are released; "close-only" when that was not possible (no FFI permission, not glibc, a
 * unix socket, or the descriptor was not found), where the socket stays until the peer reads or
 * closes. Never throws; calling it twice is harmless.
 *
 * @example
 * ```ts
 * import type { Clock } from "./clock.ts";
 *
 * declare const clock: Clock;
 * declare const timeoutMs: number;
 * declare const conn: Deno.Conn;
 *
 * const timer = clock.afterFunc(timeoutMs, () => abortConn(conn));
 * ```
 */
export function abortConn(conn: Deno.Conn): AbortHow {
  let how: AbortHow = "closed";
  if (pendingWrites.has(conn)) how = resetTcp(conn) ? "reset" : "close-only";
  try {
    conn.close();
  } catch {
    // Already closed.
  }
  return how;
}

const solSocket = 1;
const soLinger = 13;
const shutRdWr = 2;
const afInet = 2;
const afInet6 = 10;

// Sets SO_LINGER {on, 0} and shuts the socket down in both directions.
function resetTcp(conn: Deno.Conn): boolean {
  const c = libc();
  if (!c) return false;
  const fd = findTcpDescriptor(conn);
  if (fd === undefined) return false;
  const linger = new Uint8Array(new Int32Array([1, 0]).buffer);
  c.setsockopt(fd, solSocket, soLinger, linger, linger.length);
  return c.shutdown(fd, shutRdWr) === 0;
}

/**
 * The descriptor of a TCP connection of this process, found by both of its addresses (the pair is
 * unique among this process's connected sockets); undefined when not found or not TCP. Costs one
 * libc call per slot of the descriptor table (figures in docs/hardening/deadlines.md).
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 *
 * const fd = findTcpDescriptor(conn); // e.g. 23
 * ```
 */
export function findTcpDescriptor(conn: Deno.Conn): number | undefined {
  const c = libc();
  if (!c) return undefined;
  const local = conn.localAddr;
  const remote = conn.remoteAddr;
  if (local.transport !== "tcp" || remote.transport !== "tcp") return undefined;
  const wantLocal = addrKey(local.hostname, local.port);
  const wantRemote = addrKey(remote.hostname, remote.port);
  const sa = new Uint8Array(128);
  const len = new Uint32Array(1);
  const lenBytes = new Uint8Array(len.buffer);
  // Ports first (two bytes, no allocation), the whole address only for the few that match.
  const matches = (fn: "getsockname" | "getpeername", fd: number, port: number, key: string) => {
    len[0] = sa.length;
    return c[fn](fd, sa, lenBytes) === 0 && ((sa[2] << 8) | sa[3]) === port &&
      sockaddrKey(sa) === key;
  };
  // Every descriptor number below the size of the descriptor table: a libc call on a number that
  // is not open fails at once, and is cheaper than listing /proc/self/fd (≈ 1.5 µs an entry).
  const size = fdTableSize();
  for (let fd = 0; fd < size; fd++) {
    if (!matches("getsockname", fd, local.port, wantLocal)) continue;
    if (matches("getpeername", fd, remote.port, wantRemote)) return fd;
  }
  return undefined;
}

// The process's descriptor table size (FDSize in /proc/self/status): every open descriptor is
// below it.
function fdTableSize(): number {
  try {
    const status = Deno.readTextFileSync("/proc/self/status");
    const size = Number(status.match(/^FDSize:\s*(\d+)/m)?.[1]);
    if (size > 0) return size;
  } catch {
    // Not Linux's procfs.
  }
  return 1024;
}

// "4|127.0.0.1|8080" or "6|<16 bytes as hex>|8080": both sides of the comparison in one form.
function sockaddrKey(sa: Uint8Array): string | undefined {
  const family = sa[0] | (sa[1] << 8);
  const port = (sa[2] << 8) | sa[3];
  if (family === afInet) return `4|${sa[4]}.${sa[5]}.${sa[6]}.${sa[7]}|${port}`;
  if (family === afInet6) return `6|${hex(sa.subarray(8, 24))}|${port}`;
  return undefined;
}

function addrKey(hostname: string, port: number): string {
  if (!hostname.includes(":")) return `4|${hostname}|${port}`;
  return `6|${hex(ipv6Bytes(hostname))}|${port}`;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// An IPv6 literal (as Deno prints it: compressed, maybe with a dotted IPv4 tail) as 16 bytes.
function ipv6Bytes(text: string): Uint8Array {
  let s = text.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const dotted = s.match(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    s = s.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.includes("::") ? s.split("::") : [s, undefined];
  const headParts = head === "" ? [] : head.split(":");
  const tailParts = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined
    ? headParts
    : [...headParts, ...Array(8 - headParts.length - tailParts.length).fill("0"), ...tailParts];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16) || 0;
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}
