/**
 * API errors as values: the `Status` an API server answers a failed request with becomes a
 * `StatusError`, and `isNotFound`/`isConflict`/... classify it the way apimachinery does (by reason,
 * or by HTTP code when the reason is one this client does not know). Constructors build the same
 * statuses the API server would send, for fakes and tests.
 * Mirrors k8s.io/apimachinery/pkg/api/errors/errors.go.
 * @module
 */
import type { Status, StatusReason } from "../api/meta/v1/mod.ts";

/**
 * A failed API request, carrying the server's `Status`.
 *
 * @example
 * ```ts
 * import type { Clientset } from "./kubernetes/clientset.ts";
 *
 * declare const client: Clientset;
 *
 * try {
 *   await client.coreV1.pods("default").get("web");
 * } catch (err) {
 *   if (isNotFound(err)) console.log((err as StatusError).status.message);
 * }
 * ```
 */
export class StatusError extends Error {
  /** The `Status` object as the server sent it (or as a constructor below built it). */
  readonly status: Status;

  /** Wraps `status`; the error message is the status message. */
  constructor(status: Status) {
    super(status.message || `the server responded with code ${status.code ?? "unknown"}`);
    this.name = "StatusError";
    this.status = { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", ...status };
  }

  /** The HTTP status code (`status.code`), 0 when unknown. */
  get code(): number {
    return this.status.code ?? 0;
  }

  /** The machine-readable reason (`status.reason`), "" when unknown. */
  get reason(): StatusReason {
    return this.status.reason ?? "";
  }
}

/** A resource and its API group, as errors name it (`pods`, `leases.coordination.k8s.io`). */
export interface GroupResource {
  group?: string;
  resource: string;
}

/** `pods` or `leases.coordination.k8s.io`, as Go's `GroupResource.String()`. */
export function groupResourceString(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

// Reasons this package knows; an unknown reason falls back to classifying by HTTP code.
const knownReasons = new Set<string>([
  "Unauthorized",
  "Forbidden",
  "NotFound",
  "AlreadyExists",
  "Conflict",
  "Gone",
  "Invalid",
  "ServerTimeout",
  "StoreReadError",
  "Timeout",
  "TooManyRequests",
  "BadRequest",
  "MethodNotAllowed",
  "NotAcceptable",
  "RequestEntityTooLarge",
  "UnsupportedMediaType",
  "InternalError",
  "Expired",
  "ServiceUnavailable",
]);

/** The `StatusError` inside `err` (itself or its `cause` chain), if any. */
export function asStatusError(err: unknown): StatusError | undefined {
  for (let e = err, depth = 0; e && depth < 10; depth++) {
    if (e instanceof StatusError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The reason of `err`, "" when it is not an API error (Go's `ReasonForError`). */
export function reasonForError(err: unknown): StatusReason {
  return asStatusError(err)?.reason ?? "";
}

function matches(err: unknown, reason: StatusReason, code: number): boolean {
  const se = asStatusError(err);
  if (!se) return false;
  if (se.reason !== "" && knownReasons.has(se.reason)) return se.reason === reason;
  return se.code === code;
}

/** The object does not exist (404 `NotFound`). */
export function isNotFound(err: unknown): boolean {
  return matches(err, "NotFound", 404);
}

/** A create found the name taken (409 `AlreadyExists`). */
export function isAlreadyExists(err: unknown): boolean {
  return matches(err, "AlreadyExists", 409);
}

/** A write lost an optimistic-concurrency race or failed a precondition (409 `Conflict`). */
export function isConflict(err: unknown): boolean {
  return matches(err, "Conflict", 409);
}

/** The requested resource version is gone (410 `Gone`). */
export function isGone(err: unknown): boolean {
  return matches(err, "Gone", 410);
}

/** The resource version is too old to watch from (410 `Expired`): the reflector re-lists. */
export function isResourceExpired(err: unknown): boolean {
  return matches(err, "Expired", 410);
}

/** The caller may not do this (403 `Forbidden`). */
export function isForbidden(err: unknown): boolean {
  return matches(err, "Forbidden", 403);
}

/** The caller is not authenticated (401 `Unauthorized`). */
export function isUnauthorized(err: unknown): boolean {
  return matches(err, "Unauthorized", 401);
}

/** The server throttled the request (429 `TooManyRequests`). */
export function isTooManyRequests(err: unknown): boolean {
  return matches(err, "TooManyRequests", 429);
}

/** The object failed validation (422 `Invalid`). */
export function isInvalid(err: unknown): boolean {
  return matches(err, "Invalid", 422);
}

/** The request was malformed (400 `BadRequest`). */
export function isBadRequest(err: unknown): boolean {
  return matches(err, "BadRequest", 400);
}

/** The server failed (500 `InternalError`). */
export function isInternalError(err: unknown): boolean {
  return matches(err, "InternalError", 500);
}

/** The server could not finish in time (500 `ServerTimeout` or 504 `Timeout`). */
export function isTimeout(err: unknown): boolean {
  return matches(err, "Timeout", 504) || matches(err, "ServerTimeout", 500);
}

/** The server asked the client to retry after this many seconds (details or a 429/5xx), if it did. */
export function suggestsClientDelay(err: unknown): number | undefined {
  const se = asStatusError(err);
  const seconds = se?.status.details?.retryAfterSeconds;
  return seconds !== undefined && seconds > 0 ? seconds : undefined;
}

/** `pods "web" not found` (404). */
export function newNotFound(gr: GroupResource, name: string): StatusError {
  return new StatusError({
    code: 404,
    reason: "NotFound",
    details: { group: gr.group ?? "", kind: gr.resource, name },
    message: `${groupResourceString(gr)} "${name}" not found`,
  });
}

/** `pods "web" already exists` (409). */
export function newAlreadyExists(gr: GroupResource, name: string): StatusError {
  return new StatusError({
    code: 409,
    reason: "AlreadyExists",
    details: { group: gr.group ?? "", kind: gr.resource, name },
    message: `${groupResourceString(gr)} "${name}" already exists`,
  });
}

/** `Operation cannot be fulfilled on pods "web": <why>` (409). */
export function newConflict(gr: GroupResource, name: string, why: string): StatusError {
  return new StatusError({
    code: 409,
    reason: "Conflict",
    details: { group: gr.group ?? "", kind: gr.resource, name },
    message: `Operation cannot be fulfilled on ${groupResourceString(gr)} "${name}": ${why}`,
  });
}

/** A 410 `Gone` with `message`. */
export function newGone(message: string): StatusError {
  return new StatusError({ code: 410, reason: "Gone", message });
}

/** A 410 `Expired` with `message` (`too old resource version: 5 (10)`). */
export function newResourceExpired(message: string): StatusError {
  return new StatusError({ code: 410, reason: "Expired", message });
}

/** `pods "web" is forbidden: <why>` (403); without a name, `pods is forbidden: <why>`. */
export function newForbidden(gr: GroupResource, name: string, why: string): StatusError {
  const what = name ? `${groupResourceString(gr)} "${name}"` : groupResourceString(gr);
  return new StatusError({
    code: 403,
    reason: "Forbidden",
    details: { group: gr.group ?? "", kind: gr.resource, name },
    message: `${what} is forbidden: ${why}`,
  });
}

/** A 429 `TooManyRequests` asking to retry after `retryAfterSeconds`. */
export function newTooManyRequests(message: string, retryAfterSeconds: number): StatusError {
  return new StatusError({
    code: 429,
    reason: "TooManyRequests",
    details: { retryAfterSeconds },
    message: `Too many requests: ${message}`,
  });
}

/** `Internal error occurred: <why>` (500). */
export function newInternalError(why: string): StatusError {
  return new StatusError({
    code: 500,
    reason: "InternalError",
    details: { causes: [{ message: why }] },
    message: `Internal error occurred: ${why}`,
  });
}

/** A 400 `BadRequest` with `message`. */
export function newBadRequest(message: string): StatusError {
  return new StatusError({ code: 400, reason: "BadRequest", message });
}
