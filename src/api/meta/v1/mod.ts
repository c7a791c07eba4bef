/**
 * meta/v1 API types: object metadata, `Status`, watch events, verb options; `metav1.Time` text.
 * @module
 */
export * from "./time.ts";
export * from "./types.ts";
