/**
 * Event types, reasons and recorders used by the prober and the runtime manager.
 * @module
 */
export * from "./event.ts";
