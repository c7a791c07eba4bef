/**
 * The differential test's allow-list (tests/probe/differential_test.ts, `deno task fuzz:kubelet`).
 * @module
 */
import type { AllowEntry } from "../testing/differential/run.ts";

/** Differences kept on purpose. */
export const allowed: AllowEntry[] = [];

/** Known bugs, being fixed. */
export const knownBeingFixed: AllowEntry[] = [];
