/**
 * The exec probe handler: the prober, its writers and command interface, the errors it tells
 * apart, and a command runner for the host.
 * @module
 */
export * from "./exec.ts";
export * from "../../util/exec/errors.ts";
export * from "./host_runner.ts";
