/**
 * How `deno task start` runs the agent, read from deno.json, so that tests and benchmarks start
 * probelet as its users do: the `deno run` flags before the entry module (V8's execution mode, the
 * code cache), without the permission flags each caller gives itself.
 * @module
 */
import { join } from "node:path";

const repo = new URL("../..", import.meta.url).pathname;

/**
 * The `deno run` flags of the `start` task in the checkout at `repoDir` (default: this one), in
 * order, leaving out `-A` and `--allow-*`; `[]` when the task has none.
 *
 * @example
 * ```ts
 * const flags = startTaskDenoFlags(); // ["--no-code-cache", "--v8-flags=--lite-mode"]
 * ```
 */
export function startTaskDenoFlags(repoDir: string = repo): string[] {
  const config = JSON.parse(Deno.readTextFileSync(join(repoDir, "deno.json")));
  return denoRunFlags(config.tasks?.start ?? "");
}

/**
 * The flags between `deno run` and the module in a task's command line, permission flags left
 * out.
 *
 * @example
 * ```ts
 * denoRunFlags("X=1 deno run --no-code-cache -A main.ts --port 1"); // ["--no-code-cache"]
 * ```
 */
export function denoRunFlags(command: string): string[] {
  const words = command.trim().split(/\s+/);
  const run = words.findIndex((w, i) => w === "run" && words[i - 1]?.endsWith("deno"));
  if (run < 0) return [];
  const flags: string[] = [];
  for (const word of words.slice(run + 1)) {
    if (!word.startsWith("-")) break;
    if (word === "-A" || word.startsWith("--allow-")) continue;
    flags.push(word);
  }
  return flags;
}
