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

const decimalExponents: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const binaryExponents: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

/**
 * Go's `Quantity.ScaledValue(scale)`: the quantity in units of 10^scale, rounded up (away from
 * zero), computed exactly (`100m` is 100 milli-units, not 100.00000000000001); NaN when the text
 * is not a quantity.
 *
 * @example
 * ```ts
 * scaledValue("100m", -3); // 100
 * scaledValue("1.5Ki", 0); // 1536
 * scaledValue("1m", 0); // 1 (rounded up)
 * ```
 */
export function scaledValue(q: string, scale: number): number {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/
    .exec(q.trim());
  if (!m || (m[2] === "" && (m[3] ?? "") === "")) return NaN;
  const [, sign, whole, fraction = "", exponent = "0", suffix = ""] = m;
  let numerator = BigInt(`${whole}${fraction}` || "0");
  let denominator = 1n;
  let exp10 = Number(exponent) - fraction.length - scale;
  if (suffix in binaryExponents) numerator *= 2n ** BigInt(binaryExponents[suffix]);
  else exp10 += decimalExponents[suffix];
  if (exp10 >= 0) numerator *= 10n ** BigInt(exp10);
  else denominator = 10n ** BigInt(-exp10);
  const rounded = (numerator + denominator - 1n) / denominator;
  return Number(sign === "-" ? -rounded : rounded);
}

/**
 * Go's `Quantity.Value()`: whole base units, rounded up.
 *
 * @example
 * ```ts
 * quantityValue("64Mi"); // 67108864
 * ```
 */
export function quantityValue(q: string): number {
  return scaledValue(q, 0);
}

/**
 * Go's `Quantity.MilliValue()`: thousandths of a base unit, rounded up.
 *
 * @example
 * ```ts
 * quantityMilliValue("0.25"); // 250
 * ```
 */
export function quantityMilliValue(q: string): number {
  return scaledValue(q, -3);
}

/** How a quantity prints (Go's `resource.Format`). */
export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

/**
 * The format Go gives a parsed quantity: a binary suffix (`Ki`...) is BinarySI, an exponent
 * (`1e3`) DecimalExponent, anything else DecimalSI.
 *
 * @example
 * ```ts
 * quantityFormat("64Mi"); // "BinarySI"
 * ```
 */
export function quantityFormat(q: string): QuantityFormat {
  const text = q.trim();
  if (/[KMGTPE]i$/.test(text)) return "BinarySI";
  if (/[eE][+-]?\d+$/.test(text)) return "DecimalExponent";
  return "DecimalSI";
}

const decimalSuffixes: Record<number, string> = {
  [-9]: "n",
  [-6]: "u",
  [-3]: "m",
  0: "",
  3: "k",
  6: "M",
  9: "G",
  12: "T",
  15: "P",
  18: "E",
};
const binarySuffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/**
 * Go's `Quantity.String()` of an amount given in milli-units (`CanonicalizeBytes`): DecimalSI
 * with the largest suffix that keeps the number whole (`1500m`, `2`, `1500k`); BinarySI with the
 * largest power of 1024 dividing it (`128Mi`), as DecimalSI when it is not a whole number or
 * below 1024; DecimalExponent as `<n>e<3k>`.
 *
 * @example
 * ```ts
 * formatMilliQuantity(250, "DecimalSI"); // "250m"
 * formatMilliQuantity(134217728000, "BinarySI"); // "128Mi"
 * ```
 */
export function formatMilliQuantity(milli: number, format: QuantityFormat): string {
  if (milli === 0) return "0";
  if (format === "BinarySI") {
    const value = milli / 1000;
    if (Number.isInteger(value) && Math.abs(value) >= 1024) {
      let amount = value;
      let exponent = 0;
      while (exponent < binarySuffixes.length - 1 && amount % 1024 === 0) {
        amount /= 1024;
        exponent++;
      }
      return `${amount}${binarySuffixes[exponent]}`;
    }
    format = "DecimalSI";
  }
  // Strip the factors of ten, then step down to an exponent that is a multiple of three.
  let amount = milli;
  let exponent = -3;
  while (amount % 10 === 0) {
    amount /= 10;
    exponent++;
  }
  while (((exponent % 3) + 3) % 3 !== 0) {
    amount *= 10;
    exponent--;
  }
  if (format === "DecimalSI" && exponent in decimalSuffixes) {
    return `${amount}${decimalSuffixes[exponent]}`;
  }
  return exponent === 0 ? `${amount}` : `${amount}e${exponent}`;
}
