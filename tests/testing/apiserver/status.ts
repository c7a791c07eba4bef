/**
 * API errors as kube-apiserver writes them: a meta/v1 `Status` body with the HTTP code, reason,
 * message and details that k8s.io/apimachinery/pkg/api/errors builds (NewNotFound, NewConflict, ...).
 * The messages are spelled the way the real server spells them, because clients and tests match on
 * them.
 * @module
 */

/** A JSON value as read from or written to the wire. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;
/** A JSON object. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** A group and resource, as `schema.GroupResource`. */
export interface GroupResource {
  group: string;
  resource: string;
}

/** `pods`, `leases.coordination.k8s.io`: GroupResource.String(). */
export function qualifiedResource(gr: GroupResource): string {
  return gr.group === "" ? gr.resource : `${gr.resource}.${gr.group}`;
}

/** One cause of an `Invalid` error (`metav1.StatusCause`). */
export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/** A failed request: the Status body and the HTTP code it is sent with. */
export class ApiError extends Error {
  /** The meta/v1 Status object, in the field order the real server writes. */
  readonly status: JsonObject;
  /** Extra response headers (Retry-After for 429). */
  readonly headers: Record<string, string>;

  /** Builds a Failure Status; `details` is omitted when not given, like the real server. */
  constructor(
    status: { code: number; reason: string; message: string },
    options: { details?: JsonObject; headers?: Record<string, string> } = {},
  ) {
    super(status.message);
    this.status = {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: status.message,
      ...(status.reason ? { reason: status.reason } : {}),
      ...(options.details ? { details: options.details } : {}),
      code: status.code,
    };
    this.headers = options.headers ?? {};
  }

  /** The HTTP status code. */
  get code(): number {
    return this.status.code as number;
  }
}

function details(gr: GroupResource, name: string): JsonObject {
  return {
    ...(name ? { name } : {}),
    ...(gr.group ? { group: gr.group } : {}),
    kind: gr.resource,
  };
}

/** 404: `pods "x" not found`. */
export function notFound(gr: GroupResource, name: string): ApiError {
  return new ApiError({
    code: 404,
    reason: "NotFound",
    message: `${qualifiedResource(gr)} "${name}" not found`,
  }, {
    details: details(gr, name),
  });
}

/** 409: `pods "x" already exists`. */
export function alreadyExists(gr: GroupResource, name: string): ApiError {
  return new ApiError({
    code: 409,
    reason: "AlreadyExists",
    message: `${qualifiedResource(gr)} "${name}" already exists`,
  }, {
    details: details(gr, name),
  });
}

/** The registry's optimistic-lock message (generic/registry OptimisticLockErrorMsg). */
export const optimisticLockErrorMsg =
  "the object has been modified; please apply your changes to the latest version and try again";

/** 409: `Operation cannot be fulfilled on pods "x": <why>`. */
export function conflict(gr: GroupResource, name: string, why: string): ApiError {
  return new ApiError({
    code: 409,
    reason: "Conflict",
    message: `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": ${why}`,
  }, { details: details(gr, name) });
}

/** 422: `Pod "x" is invalid: <field>: <message>` (one message per distinct cause, like ToAggregate). */
export function invalid(
  object: { kind: string; group: string; name: string },
  causes: StatusCause[],
): ApiError {
  const { kind, group, name } = object;
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  const messages = [...new Set(causes.map((c) => `${c.field}: ${c.message}`))];
  const aggregate = messages.length === 1 ? messages[0] : `[${messages.join(", ")}]`;
  return new ApiError({
    code: 422,
    reason: "Invalid",
    message: `${qualifiedKind} "${name}" is invalid: ${aggregate}`,
  }, {
    details: {
      name,
      ...(group ? { group } : {}),
      kind,
      causes: causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field })),
    },
  });
}

/** 400 BadRequest with the given message. */
export function badRequest(message: string): ApiError {
  return new ApiError({ code: 400, reason: "BadRequest", message: message });
}

/** 403: `pods "x" is forbidden: <why>` (`pods is forbidden: ...` without a name). */
export function forbidden(gr: GroupResource, name: string, why: string): ApiError {
  const subject = name ? `${qualifiedResource(gr)} "${name}"` : qualifiedResource(gr);
  return new ApiError({
    code: 403,
    reason: "Forbidden",
    message: `${subject} is forbidden: ${why}`,
  }, {
    details: details(gr, name),
  });
}

/** 401 as the authentication filter writes it. */
export function unauthorized(): ApiError {
  return new ApiError({ code: 401, reason: "Unauthorized", message: "Unauthorized" });
}

/** 405 for a verb a resource does not serve. */
export function methodNotSupported(gr: GroupResource, action: string): ApiError {
  return new ApiError({
    code: 405,
    reason: "MethodNotAllowed",
    message: `${action} is not supported on resources of kind "${qualifiedResource(gr)}"`,
  }, { details: details(gr, "") });
}

/** 415 for a PATCH content type the server does not apply (its words: "415: Unsupported Media Type"). */
export function unsupportedMediaType(): ApiError {
  return new ApiError({
    code: 415,
    reason: "UnsupportedMediaType",
    message: "415: Unsupported Media Type",
  }, { details: {} });
}

/** 410 Expired, as sent in a watch ERROR event or a list with a compacted continue token. */
export function expired(message: string): ApiError {
  return new ApiError({ code: 410, reason: "Expired", message: message });
}

/** 500 InternalError (fault injection and unexpected failures). */
export function internalError(message: string): ApiError {
  return new ApiError({
    code: 500,
    reason: "InternalError",
    message: `Internal error occurred: ${message}`,
  }, {
    details: { causes: [{ message }] },
  });
}

/** 429 TooManyRequests with Retry-After, as the max-in-flight filter answers. */
export function tooManyRequests(retryAfterSeconds: number): ApiError {
  return new ApiError({
    code: 429,
    reason: "TooManyRequests",
    message: "Too many requests, please try again later.",
  }, {
    details: { retryAfterSeconds },
    headers: { "Retry-After": String(retryAfterSeconds) },
  });
}

/** 404 for a path that names no served resource (the real server writes a plain "404 page not found"). */
export function pathNotFound(): ApiError {
  return new ApiError({
    code: 404,
    reason: "NotFound",
    message: "the server could not find the requested resource",
  }, {
    details: {},
  });
}
