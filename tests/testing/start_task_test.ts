import assert from "node:assert/strict";
import { denoRunFlags, startTaskDenoFlags } from "./start_task.ts";

Deno.test("denoRunFlags: the flags before the module, permissions left out", () => {
  assert.deepEqual(
    denoRunFlags(
      "MALLOC_ARENA_MAX=2 deno run --no-code-cache --v8-flags=--lite-mode --allow-all " +
        "src/cmd/probelet/main.ts --pod-manifest-path x",
    ),
    ["--no-code-cache", "--v8-flags=--lite-mode"],
  );
  assert.deepEqual(denoRunFlags("deno run -A main.ts --v8-flags=--not-ours"), []);
  assert.deepEqual(denoRunFlags("./denow run --allow-net -q main.ts"), []);
  assert.deepEqual(denoRunFlags("echo run"), []);
});

Deno.test("the start task runs the agent in V8's lite mode without the code cache", () => {
  // What the footprint figures (docs/benchmarks/README.md) were measured with.
  assert.deepEqual(startTaskDenoFlags(), ["--no-code-cache", "--v8-flags=--lite-mode"]);
});
