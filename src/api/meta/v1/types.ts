/**
 * The meta/v1 types every API object and call shares: object and list metadata, owner references,
 * the `Status` an API server answers errors with, watch events, and the options of each verb.
 * JSON field names are the API's, times are kept as the strings the server sent (RFC 3339 for
 * `Time`, six fractional digits for `MicroTime`) so nothing is re-serialised on the way through.
 * Mirrors k8s.io/apimachinery/pkg/apis/meta/v1/types.go and watch.go.
 * @module
 */

/** `metav1.Time`: RFC 3339 with second precision, e.g. `2026-11-23T04:50:00Z`. */
export type Time = string;

/** `metav1.MicroTime`: RFC 3339 with six fractional digits, e.g. `2026-11-23T04:50:00.123456Z`. */
export type MicroTime = string;

/** `apiVersion` and `kind`, present on objects sent alone (absent on list items). */
export interface TypeMeta {
  apiVersion?: string;
  kind?: string;
}

/** Points from a dependent object to its owner (a mirror pod or a lease to its Node). */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** One entry of `metadata.managedFields` (kept as sent; probelet never writes these). */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: Time;
  fieldsType?: string;
  fieldsV1?: unknown;
  subresource?: string;
}

/** Standard object metadata. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  /** RFC 3339 time the server created the object. */
  creationTimestamp?: Time | null;
  /** RFC 3339 time at which graceful deletion was requested. */
  deletionTimestamp?: Time;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
}

/** Metadata of a list: the resourceVersion to watch from, and paging. */
export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
  selfLink?: string;
}

/** One cause of a failed request (a field that failed validation, say). */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** Extra data about a failed request: which object, and why. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/**
 * Machine-readable reasons of a failed request (`metav1.StatusReason`). The string is what the API
 * sends; unknown reasons pass through as plain strings.
 */
export type StatusReason =
  | ""
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Gone"
  | "Invalid"
  | "ServerTimeout"
  | "StoreReadError"
  | "Timeout"
  | "TooManyRequests"
  | "BadRequest"
  | "MethodNotAllowed"
  | "NotAcceptable"
  | "RequestEntityTooLarge"
  | "UnsupportedMediaType"
  | "InternalError"
  | "Expired"
  | "ServiceUnavailable"
  | (string & Record<never, never>);

/** The `Status` object an API server returns for errors (and for some deletes). */
export interface Status extends TypeMeta {
  metadata?: ListMeta;
  /** `Success` or `Failure`. */
  status?: "Success" | "Failure" | string;
  message?: string;
  reason?: StatusReason;
  details?: StatusDetails;
  /** The HTTP status code of this status. */
  code?: number;
}

/** `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`. */
export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

/** One line of a watch stream; `object` is a `Status` when `type` is `ERROR`. */
export interface WatchEvent<T = unknown> {
  type: WatchEventType;
  object: T;
}

/** Options of GET (`metav1.GetOptions`). */
export interface GetOptions {
  resourceVersion?: string;
}

/** Options of LIST and WATCH (`metav1.ListOptions`). */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** Set by the client for WATCH; kept in the type as Go has it. */
  watch?: boolean;
  allowWatchBookmarks?: boolean;
  resourceVersion?: string;
  /** `Exact` or `NotOlderThan`. */
  resourceVersionMatch?: string;
  /** Server-side limit on a WATCH's duration (or a LIST's). */
  timeoutSeconds?: number;
  limit?: number;
  continue?: string;
  sendInitialEvents?: boolean;
}

/** Options of POST (`metav1.CreateOptions`). */
export interface CreateOptions {
  dryRun?: string[];
  fieldManager?: string;
  fieldValidation?: string;
}

/** Options of PUT (`metav1.UpdateOptions`). */
export interface UpdateOptions {
  dryRun?: string[];
  fieldManager?: string;
  fieldValidation?: string;
}

/** Options of PATCH (`metav1.PatchOptions`). */
export interface PatchOptions {
  dryRun?: string[];
  force?: boolean;
  fieldManager?: string;
  fieldValidation?: string;
}

/** Conditions a DELETE must meet (`metav1.Preconditions`). */
export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/** `Orphan`, `Background` or `Foreground`. */
export type DeletionPropagation = "Orphan" | "Background" | "Foreground";

/** Body of a DELETE (`metav1.DeleteOptions`). */
export interface DeleteOptions extends TypeMeta {
  gracePeriodSeconds?: number;
  preconditions?: Preconditions;
  propagationPolicy?: DeletionPropagation;
  dryRun?: string[];
}
