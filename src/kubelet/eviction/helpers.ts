/**
 * Hard eviction thresholds as configured (`--eviction-hard`, `evictionHard`): kubelet's Linux
 * defaults, the parsing of `signal<value` statements and the quantity a threshold stands for. The
 * node reserves them from allocatable (cm's hardEvictionReservation); probelet has no eviction
 * manager, so nothing is evicted when a threshold is crossed.
 * Mirrors kubelet's pkg/kubelet/eviction/defaults_linux.go (DefaultEvictionHard), helpers.go
 * (parseThresholdStatements, parseThresholdStatement, parsePercentage) and api/types.go
 * (Threshold, GetThresholdQuantity).
 * @module
 */
import { parseQuantity } from "../../api/resource/quantity.ts";

/** kubelet's hard eviction thresholds on Linux when none are configured. */
export const DefaultEvictionHard: Readonly<Record<string, string>> = {
  "memory.available": "100Mi",
  "nodefs.available": "10%",
  "nodefs.inodesFree": "5%",
  "imagefs.available": "15%",
  "imagefs.inodesFree": "5%",
};

/** The eviction signals kubelet knows (evictionapi.OpForSignal's keys). */
const validSignals = new Set([
  "memory.available",
  "nodefs.available",
  "nodefs.inodesFree",
  "imagefs.available",
  "imagefs.inodesFree",
  "containerfs.available",
  "containerfs.inodesFree",
  "allocatableMemory.available",
  "pid.available",
]);

/**
 * A threshold's value: an absolute quantity, or a fraction of the capacity as Go's float32
 * holds it (0.1 is 0.10000000149011612).
 */
export type ThresholdValue = { quantity: number } | { percentage: number };

/** One eviction threshold (every signal's operator is `LessThan`). */
export interface Threshold {
  signal: string;
  operator: "LessThan";
  value: ThresholdValue;
}

/**
 * Parses `signal → value` statements (`{"memory.available": "100Mi", "nodefs.available": "10%"}`)
 * into thresholds; `0%` and `100%` are ignored. Throws kubelet's errors for an unknown signal or
 * a bad value.
 *
 * @example
 * ```ts
 * parseThresholdStatements({ "memory.available": "1Mi" });
 * // [{ signal: "memory.available", operator: "LessThan", value: { quantity: 1048576 } }]
 * ```
 */
export function parseThresholdStatements(statements: Record<string, string>): Threshold[] {
  const results: Threshold[] = [];
  for (const [signal, value] of Object.entries(statements)) {
    const threshold = parseThresholdStatement(signal, value);
    if (threshold) results.push(threshold);
  }
  return results;
}

function parseThresholdStatement(signal: string, value: string): Threshold | undefined {
  if (!validSignals.has(signal)) throw new Error(`unsupported eviction signal ${signal}`);
  if (value.endsWith("%")) {
    if (value === "0%" || value === "100%") return undefined;
    const percentage = parsePercentage(value);
    if (percentage < 0) {
      throw new Error(`eviction percentage threshold ${signal} must be >= 0%: ${value}`);
    }
    if (percentage > 1) {
      throw new Error(`eviction percentage threshold ${signal} must be <= 100%: ${value}`);
    }
    return { signal, operator: "LessThan", value: { percentage } };
  }
  const quantity = parseQuantity(value);
  if (Number.isNaN(quantity)) {
    throw new Error(`quantities must match the regular expression for ${signal}: ${value}`);
  }
  if (quantity < 0) {
    throw new Error(`eviction threshold ${signal} must be positive: ${value}`);
  }
  return { signal, operator: "LessThan", value: { quantity } };
}

// strconv.ParseFloat(s, 32) then float32 division, as kubelet's parsePercentage.
function parsePercentage(input: string): number {
  const text = input.replace(/%+$/, "");
  const value = Number(text);
  if (text.trim() === "" || Number.isNaN(value)) {
    throw new Error(`strconv.ParseFloat: parsing "${text}": invalid syntax`);
  }
  return Math.fround(Math.fround(value) / 100);
}

/**
 * The quantity a threshold stands for against `capacity` (bytes): the absolute value, or the
 * percentage of it truncated to an integer as kubelet's `int64(float64(capacity) * percentage)`.
 *
 * @example
 * ```ts
 * getThresholdQuantity({ percentage: Math.fround(0.01) }, 270553174016); // 2705531679
 * ```
 */
export function getThresholdQuantity(value: ThresholdValue, capacity: number): number {
  if ("quantity" in value) return value.quantity;
  return Math.trunc(capacity * value.percentage);
}
