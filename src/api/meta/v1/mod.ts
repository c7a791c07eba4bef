/**
 * meta/v1 API types: object metadata, `Status`, watch events, verb options; `metav1.Time` text.
 * @module
 */
export { metav1Time } from "./time.ts";
export {
  type CreateOptions,
  type DeleteOptions,
  type DeletionPropagation,
  type GetOptions,
  type ListMeta,
  type ListOptions,
  type ManagedFieldsEntry,
  type MicroTime,
  type ObjectMeta,
  type OwnerReference,
  type PatchOptions,
  type Preconditions,
  type Status,
  type StatusCause,
  type StatusDetails,
  type StatusReason,
  type Time,
  type TypeMeta,
  type UpdateOptions,
  type WatchEvent,
  type WatchEventType,
} from "./types.ts";
