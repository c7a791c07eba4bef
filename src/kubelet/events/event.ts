/**
 * Event reasons and the recorder interface kubelet's prober emits through, plus two recorders: a fake
 * that keeps `"<type> <reason> <message>"` strings (as client-go's `record.FakeRecorder`) and one that
 * writes each event as a structured log line.
 * Mirrors kubelet's pkg/kubelet/events/event_reason.go and client-go's tools/record (the parts used here).
 * @module
 */
import type { ObjectReference } from "../../api/core/v1/mod.ts";
import { type LogFields, V } from "../../util/log.ts";

/** `Normal` or `Warning`, as core/v1's event types. */
export type EventType = "Normal" | "Warning";

/** The two event types by name. */
export const EventType = {
  Normal: "Normal",
  Warning: "Warning",
} as const satisfies Record<string, EventType>;

/** Reason of a failed or errored probe. */
export const ContainerUnhealthy = "Unhealthy";
/** Reason of a probe that succeeded with a warning (an HTTP probe stopped at a redirect). */
export const ContainerProbeWarning = "ProbeWarning";
/** Reason of a container killed by the runtime manager (e.g. after a liveness failure). */
export const KillingContainer = "Killing";

/** What one event says. */
export interface EventOptions {
  /** `Normal` or `Warning`. */
  type: EventType;
  /** A short CamelCase reason, such as `Unhealthy`. */
  reason: string;
  /** The human-readable text. */
  message: string;
}

/**
 * Records events about an object (client-go's `record.EventRecorder`, `Event` only).
 *
 * @example
 * ```ts
 * import type { ObjectReference } from "../../api/core/v1/mod.ts";
 *
 * declare const recorder: EventRecorder;
 * declare const ref: ObjectReference;
 *
 * recorder.event(ref, { type: "Warning", reason: "Unhealthy", message: "Liveness probe failed: ..." });
 * ```
 */
export interface EventRecorder {
  /** Records one event against `ref`. */
  event(ref: ObjectReference, options: EventOptions): void;
}

/**
 * Keeps every event as `"<type> <reason> <message>"`, like client-go's `FakeRecorder`.
 *
 * @example
 * ```ts
 * const recorder = new FakeRecorder();
 * recorder.event({}, { type: "Warning", reason: "Unhealthy", message: "Readiness probe failed: boom" });
 * recorder.events; // ["Warning Unhealthy Readiness probe failed: boom"]
 * ```
 */
export class FakeRecorder implements EventRecorder {
  /** Recorded events, oldest first. */
  readonly events: string[] = [];
  /** The references the events were recorded against, parallel to `events`. */
  readonly refs: ObjectReference[] = [];

  /** Appends the formatted event. */
  event(ref: ObjectReference, options: EventOptions): void {
    this.events.push(`${options.type} ${options.reason} ${options.message}`);
    this.refs.push(ref);
  }
}

/** The verbosity events are logged at: kubelet's `eventBroadcaster.StartStructuredLogging(3)`. */
export const eventLogVerbosity = 3;

/**
 * Writes each event as one structured log line (`"Event occurred"`) at verbosity
 * `eventLogVerbosity`, as client-go's event broadcaster does when kubelet starts it logging.
 *
 * @example
 * ```ts
 * import type { ObjectReference } from "../../api/core/v1/mod.ts";
 *
 * declare const ref: ObjectReference;
 *
 * new LogRecorder().event(ref, { type: "Normal", reason: "Killing", message: "..." });
 * // I1123 03:04:05.123456   12345 event.ts:97] "Event occurred" object="default/web" fieldPath="spec.containers{app}" kind="Pod" type="Normal" reason="Killing" message="..."
 * ```
 */
export class LogRecorder implements EventRecorder {
  /** Logs the event. */
  event(ref: ObjectReference, options: EventOptions): void {
    const fields: LogFields = {
      object: ref.namespace ? `${ref.namespace}/${ref.name ?? ""}` : ref.name ?? "",
    };
    if (ref.fieldPath) fields.fieldPath = ref.fieldPath;
    fields.kind = ref.kind ?? "";
    fields.type = options.type;
    fields.reason = options.reason;
    fields.message = options.message;
    V(eventLogVerbosity).info("Event occurred", fields);
  }
}
