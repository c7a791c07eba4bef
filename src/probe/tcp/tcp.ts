/**
 * The TCP socket probe: healthy when a TCP handshake with host:port completes within the timeout.
 * Mirrors kubelet's pkg/probe/tcp/tcp.go.
 *
 * Deviation: kubelet's probe dialer sets SO_LINGER to 1 s on every socket to shorten TIME-WAIT;
 * Deno cannot set socket options, so probe sockets close normally here.
 * @module
 */
import { type ProbeOutcome, ProbeResult } from "../probe.ts";
import { type Clock, RealClock } from "../../util/clock.ts";
import * as log from "../../util/log.ts";
import { errorText } from "../../util/errors.ts";

/**
 * Checks that a TCP connection can be opened. Never returns an error: every dial problem is a
 * Failure whose output is Go's dial error text.
 *
 * @example
 * ```ts
 * const outcome = await newTcpProber().probe("127.0.0.1", { port: 8080, timeoutMs: 1000 });
 * outcome.result; // "success" when something listens on 8080
 * ```
 */
export interface TcpProber {
  /** Dials `host:port` once; an empty host means this machine, as in Go. */
  probe(host: string, options: { port: number; timeoutMs: number }): Promise<ProbeOutcome>;
}

/**
 * Creates a TCP prober. The connect timeout is measured on `clock` (default: the wall clock).
 *
 * @example
 * ```ts
 * const prober = newTcpProber();
 * const { result, output } = await prober.probe("10.0.0.1", { port: 8080, timeoutMs: 1000 });
 * // result "failure", output "dial tcp 10.0.0.1:8080: connect: connection refused"
 * ```
 */
export function newTcpProber(options: { clock?: Clock } = {}): TcpProber {
  const clock = options.clock ?? new RealClock();
  return {
    probe: (host, { port, timeoutMs }) => doTcpProbe(host, port, { timeoutMs, clock }),
  };
}

/**
 * Go's `net.JoinHostPort`: brackets a host that contains a colon (an IPv6 literal).
 *
 * @example
 * ```ts
 * joinHostPort("fd00::1", 8080); // "[fd00::1]:8080"
 * joinHostPort("", 32); // ":32"
 * ```
 */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

async function doTcpProbe(
  host: string,
  port: number,
  options: { timeoutMs: number; clock: Clock },
): Promise<ProbeOutcome> {
  const addr = joinHostPort(host, port);
  // Go rejects the port before dialing, without naming the address.
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    return failure(`dial tcp: address ${port}: invalid port`);
  }
  const controller = new AbortController();
  const timer = options.clock.afterFunc(options.timeoutMs, () => controller.abort());
  try {
    // Go dials the local system for an empty host.
    const conn = await Deno.connect({
      hostname: host === "" ? "127.0.0.1" : host,
      port,
      signal: controller.signal,
    });
    try {
      conn.close();
    } catch (err) {
      log.error(err, "Unexpected error closing TCP probe socket");
    }
    return { result: ProbeResult.Success, output: "" };
  } catch (err) {
    return failure(dialErrorText(addr, host, err, controller.signal.aborted));
  } finally {
    timer.stop();
  }
}

function failure(output: string): ProbeOutcome {
  return { result: ProbeResult.Failure, output };
}

// errno codes Deno reports, with the text Go's syscall.Errno prints for them.
const errnoText: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset by peer",
  EHOSTUNREACH: "no route to host",
  ENETUNREACH: "network is unreachable",
  EADDRNOTAVAIL: "cannot assign requested address",
  ETIMEDOUT: "connection timed out",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
};

/**
 * Go's `*net.OpError` text for a failed dial (`dial tcp 10.0.0.1:80: connect: connection refused`),
 * built from what Deno tells us; `timedOut` gives the `i/o timeout` text.
 *
 * @example
 * ```ts
 * declare const err: unknown;
 *
 * dialErrorText("10.0.0.1:80", "10.0.0.1", err, false);
 * ```
 */
export function dialErrorText(addr: string, host: string, err: unknown, timedOut: boolean): string {
  if (timedOut) return `dial tcp ${addr}: i/o timeout`;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && code in errnoText) {
    return `dial tcp ${addr}: connect: ${errnoText[code]}`;
  }
  const message = errorText(err);
  if (/lookup address information|Name or service not known|No address associated/.test(message)) {
    return `dial tcp: lookup ${host}: no such host`;
  }
  return `dial tcp ${addr}: ${message.replace(/ \(os error \d+\)$/, "").toLowerCase()}`;
}
