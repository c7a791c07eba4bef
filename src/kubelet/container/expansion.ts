/**
 * `$(VAR)` expansion of container commands, as kubelet's third_party/forked/golang/expansion and
 * `ExpandContainerCommandOnlyStatic` (pkg/kubelet/container/helpers.go).
 * @module
 */
import type { EnvVar } from "../../api/core/v1/mod.ts";

/**
 * Expands `$(VAR)` in `input` through `mapping`; `$$` becomes `$`; a `$` followed by anything else,
 * or an unterminated `$(`, is kept verbatim.
 *
 * @example
 * ```ts
 * expand("echo $(A) $$(A) $(", (name) => name === "A" ? "x" : `$(${name})`); // "echo x $(A) $("
 * ```
 */
export function expand(input: string, mapping: (name: string) => string): string {
  let out = "";
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== "$" || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const { read, isVar, advance } = tryReadVariableName(input.slice(cursor + 1));
    out += isVar ? mapping(read) : read;
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

function tryReadVariableName(input: string): { read: string; isVar: boolean; advance: number } {
  switch (input[0]) {
    case "$":
      return { read: "$", isVar: false, advance: 1 };
    case "(":
      for (let i = 1; i < input.length; i++) {
        if (input[i] === ")") return { read: input.slice(1, i), isVar: true, advance: i + 1 };
      }
      // No closing parenthesis: keep "$(" and carry on after it.
      return { read: "$(", isVar: false, advance: 1 };
    default:
      return { read: "$" + input[0], isVar: false, advance: 1 };
  }
}

/**
 * A mapping that looks names up in `context` and leaves unknown names as `$(NAME)`.
 *
 * @example
 * ```ts
 * mappingFuncFor(new Map([["A", "1"]]))("B"); // "$(B)"
 * ```
 */
export function mappingFuncFor(context: Map<string, string>): (name: string) => string {
  return (name) => context.has(name) ? context.get(name)! : `$(${name})`;
}

/**
 * Expands a container command against the container's own env vars with literal values only:
 * a `valueFrom` variable maps to `""` (its empty `value`), an unknown one stays `$(VAR)`.
 * Exec probes see neither the pod environment nor the downward API, as in kubelet.
 *
 * @example
 * ```ts
 * expandContainerCommandOnlyStatic(["sh", "-c", "some $(A) $(B)"], [{ name: "A", value: "script" }]);
 * // ["sh", "-c", "some script $(B)"]
 * ```
 */
export function expandContainerCommandOnlyStatic(command: string[], envs?: EnvVar[]): string[] {
  const context = new Map<string, string>();
  for (const env of envs ?? []) context.set(env.name, env.value ?? "");
  const mapping = mappingFuncFor(context);
  return command.map((arg) => expand(arg, mapping));
}
