/**
 * The probe handlers kubelet's prober dispatches to (exec, HTTP, TCP, gRPC), their shared result
 * type, port resolution and the descriptor budget. Mirrors kubelet's pkg/probe.
 * @module
 */
export * from "./probe.ts";
export * from "./util.ts";
export * from "./budget.ts";
export * from "./exec/mod.ts";
export * from "./http/mod.ts";
export * from "./tcp/mod.ts";
export * from "./grpc/mod.ts";
