/**
 * The messages between the probe pool and its threads: plain data that survives structured
 * cloning, and the conversions of requests and outcomes to and from it.
 * @module
 */
import type { ProbeOutcome, ProbeResult } from "../probe.ts";
import { HeaderMap } from "../http/header.ts";
import type { ProbeRequest } from "../http/request.ts";
import { ProbeURL } from "../http/url.ts";

/** One probe for a pool thread to run. */
export type PoolCall =
  | { id: number; kind: "http"; request: WireRequest; timeoutMs: number }
  | { id: number; kind: "tcp"; host: string; port: number; timeoutMs: number }
  | { id: number; kind: "grpc"; host: string; port: number; service: string; timeoutMs: number };

/** A finished probe: the handler's outcome, its error reduced to the message. */
export interface PoolReply {
  id: number;
  result: ProbeResult;
  output: string;
  error?: string;
}

/** What a pool thread is told once, before any call. */
export interface PoolInit {
  followNonLocalRedirects: boolean;
}

/** A ProbeRequest as plain data. */
export interface WireRequest {
  url: Record<string, unknown>;
  headers: [string, string[]][];
  host: string;
}

/** Flattens a request for posting. */
export function requestToWire(request: ProbeRequest): WireRequest {
  return {
    url: { ...request.url },
    headers: [...request.headers.entries()].map(([name, values]) => [name, [...values]]),
    host: request.host,
  };
}

/** Rebuilds a request posted by `requestToWire`. */
export function requestFromWire(wire: WireRequest): ProbeRequest {
  const headers = new HeaderMap(Object.fromEntries(wire.headers));
  return { url: Object.assign(new ProbeURL(), wire.url), headers, host: wire.host };
}

/** An outcome as a reply. */
export function outcomeToReply(id: number, outcome: ProbeOutcome): PoolReply {
  const reply: PoolReply = { id, result: outcome.result, output: outcome.output };
  if (outcome.error) reply.error = outcome.error.message;
  return reply;
}

/** The outcome a reply carries. */
export function outcomeFromReply(reply: PoolReply): ProbeOutcome {
  const outcome: ProbeOutcome = { result: reply.result, output: reply.output };
  if (reply.error !== undefined) outcome.error = new Error(reply.error);
  return outcome;
}
