/**
 * Event types, reasons and recorders used by the prober and the runtime manager.
 * @module
 */
export {
  ContainerProbeWarning,
  ContainerUnhealthy,
  type EventOptions,
  type EventRecorder,
  EventType,
  FakeRecorder,
  KillingContainer,
  LogRecorder,
} from "./event.ts";
