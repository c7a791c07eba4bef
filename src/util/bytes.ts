/**
 * Byte-slice helpers the HTTP/2, HTTP and log code share.
 * Plays the part of Go's `bytes.Join(parts, nil)` (and deno_std's `@std/bytes` `concat`, which is
 * on JSR, out of reach here).
 * @module
 */

/**
 * The bytes of `parts` in one array; with a single part, that part itself (not a copy).
 *
 * @example
 * ```ts
 * concat([new Uint8Array([1]), new Uint8Array([2, 3])]); // Uint8Array [1, 2, 3]
 * ```
 */
export function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
