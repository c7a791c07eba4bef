/**
 * How `metav1.Time` is written on the wire: RFC 3339 in UTC with whole seconds.
 * Mirrors k8s.io/apimachinery/pkg/apis/meta/v1/time.go (Time.MarshalJSON).
 * @module
 */

/**
 * The `metav1.Time` text of epoch milliseconds (fractions of a second are dropped, as Go does).
 *
 * @example
 * ```ts
 * metav1Time(Date.UTC(2026, 10, 23, 4, 50, 0, 999)); // "2026-11-23T04:50:00Z"
 * ```
 */
export function metav1Time(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}
