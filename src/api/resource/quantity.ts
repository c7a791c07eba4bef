/**
 * Resource quantities as the API writes them (`500m`, `64Mi`, `1e3`, `2`), read as numbers of base
 * units (cores, bytes, pods).
 * Mirrors the parsing half of k8s.io/apimachinery/pkg/api/resource (Quantity), as a float.
 * @module
 */

const quantitySuffixes: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * A resource quantity (`1800m`, `10Gi`, `100e6`, `2`) as a number of base units; NaN when it
 * is not one.
 *
 * @example
 * ```ts
 * parseQuantity("1800m"); // 1.8
 * parseQuantity("64Mi"); // 67108864
 * ```
 */
export function parseQuantity(q: string): number {
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/
    .exec(q.trim());
  if (!m) return NaN;
  return Number(m[1]) * quantitySuffixes[m[2] ?? ""];
}
