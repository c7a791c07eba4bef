/**
 * meta/v1 API types: object metadata, `Status`, watch events, verb options.
 * @module
 */
export * from "./types.ts";
