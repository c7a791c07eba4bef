/**
 * The verdict of one probe run, as kubelet's pkg/probe/probe.go defines it.
 * Mirrors kubelet's pkg/probe/probe.go.
 * @module
 */

/**
 * A probe handler's result. String-valued like kubelet's `probe.Result`; `warning` is logically a
 * success with extra debugging information attached (e.g. an HTTP probe that stopped at a redirect).
 */
export type ProbeResult = "success" | "warning" | "failure" | "unknown";

/** The four probe results by kubelet's names. */
export const ProbeResult = {
  Success: "success",
  Warning: "warning",
  Failure: "failure",
  Unknown: "unknown",
} as const satisfies Record<string, ProbeResult>;

/**
 * Go's `(probe.Result, string, error)` triple as one value: an error here means the probe could not be
 * run (the prober retries it), not that the target is unhealthy.
 *
 * @example
 * ```ts
 * const outcome: ProbeOutcome = { result: ProbeResult.Failure, output: "HTTP probe failed with statuscode: 500" };
 * ```
 */
export interface ProbeOutcome {
  result: ProbeResult;
  output: string;
  error?: Error;
}
