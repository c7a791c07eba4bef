/**
 * The text of a thrown value: Go's `err.Error()`. In Go every error is an `error` with a message;
 * in JavaScript anything can be thrown, so the one translation lives here.
 * No single Go counterpart: it stands for each `err.Error()` call in the ported code.
 * @module
 */

/**
 * The message of an `Error`, or the thrown value as a string (Go's `err.Error()`).
 *
 * @example
 * ```ts
 * errorText(new Error("connection refused")); // "connection refused"
 * errorText("gone"); // "gone"
 * ```
 */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
