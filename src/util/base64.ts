/**
 * Base64 as the API writes `[]byte` fields in JSON (secret data, config map binary data):
 * standard alphabet, padded. Go's encoding/base64 StdEncoding.
 * @module
 */
import { Buffer } from "node:buffer";

/**
 * Decodes standard base64.
 *
 * @example
 * ```ts
 * new TextDecoder().decode(decodeBase64("Zm9v")); // "foo"
 * ```
 */
export function decodeBase64(text: string): Uint8Array {
  const b = Buffer.from(text, "base64");
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * Encodes bytes as standard base64.
 *
 * @example
 * ```ts
 * encodeBase64(new TextEncoder().encode("foo")); // "Zm9v"
 * ```
 */
export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}
